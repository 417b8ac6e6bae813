"""The scalar operators' fast path (``a + 1``): a 0-d array of the input's dtype stands in for the float.

The compute function remembers the last (attrs, dtype) it converted the scalar for; these
tests check that the results are NumPy's with the plain float, whatever the dtype, the sign
of zero, the side of the scalar or the order in which different scalars and dtypes alternate.
"""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx

VALUES = np.array([-2.5, -0.0, 0.0, 0.1, 1.0, 3.75, 65504.0, -1e-3], dtype=np.float64)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_scalar_operators_match_numpy_with_the_plain_float(dtype):
    x = VALUES.astype(dtype)
    a = mx.nd.array(x, dtype=dtype)
    cases = [
        (lambda: a + 0.1, np.add(x, 0.1)),
        (lambda: a - 0.1, np.subtract(x, 0.1)),
        (lambda: 0.1 - a, np.subtract(0.1, x)),
        (lambda: a * -0.0, np.multiply(x, -0.0)),
        (lambda: a * 0.0, np.multiply(x, 0.0)),
        (lambda: a / 3.0, np.divide(x, 3.0)),
        (lambda: 3.0 / (a + 10.0), np.divide(3.0, np.add(x, 10.0))),
        (lambda: a + 1, np.add(x, 1.0)),
        (lambda: a + 0.1, np.add(x, 0.1)),  # back to an earlier scalar: not the remembered one
    ]
    for run, expected in cases:
        got = run().asnumpy()
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, expected.astype(dtype))
        np.testing.assert_array_equal(np.signbit(got), np.signbit(expected.astype(dtype)))


def test_alternating_dtypes_with_one_scalar_keep_each_dtype():
    halves = mx.nd.array([0.1, 0.2], dtype="float16")
    doubles = mx.nd.array([0.1, 0.2], dtype="float64")
    for _ in range(3):
        h, d = halves + 0.1, doubles + 0.1
        assert h.dtype == np.float16 and d.dtype == np.float64
        np.testing.assert_array_equal(h.asnumpy(), np.array([0.1, 0.2], np.float16) + 0.1)
        np.testing.assert_array_equal(d.asnumpy(), np.array([0.1, 0.2]) + 0.1)


def test_integer_arrays_and_accumulating_writes_still_take_the_general_path():
    ints = mx.nd.array([1, 2, 7], dtype="int32")
    np.testing.assert_array_equal((ints / 2).asnumpy(), np.array([0, 1, 3], np.int32))  # truncated as in MXNet
    x = mx.nd.ones((3,))
    x.attach_grad(grad_req="add")
    for _ in range(2):
        with mx.autograd.record():
            y = x * 3.0
        y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [6.0, 6.0, 6.0])
