"""The write-into helpers: _slice_assign(_scalar) and their _crop_assign aliases,
_scatter_set_nd, _set_value, _copyto and the dense _scatter_* maths."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import infer_shapes, seeded_rng, to_nd

import framework as mx
from framework.operator import ADD, NULL, WRITE, InferenceError, OpContext, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req

nd = mx.nd
I = nd._internal  # noqa: E741 - MXNet's name for the namespace of internal operators
DTYPES = ["float16", "float32", "float64", "int32"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_slice_assign(dtype):
    rng = seeded_rng(1)
    lhs = rng.uniform(0, 9, (4, 5, 2)).astype(dtype)
    rhs = rng.uniform(0, 9, (2, 2, 2)).astype(dtype)
    expected = lhs.copy()
    expected[1:3, 0:4:2] = rhs
    got = I._slice_assign(to_nd(lhs, dtype), to_nd(rhs, dtype), begin=(1, 0), end=(3, 4), step=(1, 2))
    assert_almost_equal(got, expected)
    got = I._crop_assign(to_nd(lhs, dtype), to_nd(rhs, dtype), begin=(1, 0), end=(3, 4), step=(1, 2))
    assert_almost_equal(got, expected)
    expected = lhs.copy()
    expected[::-2, 3:] = 7
    got = I._slice_assign_scalar(to_nd(lhs, dtype), scalar=7, begin=(None, 3), end=(None, None), step=(-2, 1))
    assert_almost_equal(got, expected)


def test_slice_assign_req_inference_and_errors():
    lhs, rhs = np.ones((3, 4), np.float32), np.zeros((3, 2), np.float32)
    check_req("_slice_assign", [lhs, rhs], begin=(None, 1), end=(None, 3))
    check_req("_crop_assign_scalar", [lhs], scalar=2.0, begin=(1,), end=(2,))
    ins, outs, done = infer_shapes("_slice_assign", {"begin": (0,), "end": (2,)}, [None, None], [(5, 3)])
    assert ins == [(5, 3), (2, 3)] and outs == [(5, 3)] and done
    with pytest.raises(InferenceError, match="does not match the slice"):
        I._slice_assign(nd.ones((3, 4)), nd.ones((2, 2)), begin=(0, 0), end=(3, 2))
    with pytest.raises(OperatorParamError, match="begin"):
        I._slice_assign_scalar(nd.ones((3, 4)), scalar=1.0, end=(1,))


def test_scatter_set_nd():
    lhs = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    got = I._scatter_set_nd(lhs, nd.array([9, 8]), nd.array([[0, 1], [1, 2]]), shape=(2, 3))
    assert got.asnumpy().tolist() == [[0, 9, 2], [3, 4, 8]]  # MXNet 1.9.1
    rows = I._scatter_set_nd(lhs, nd.array([[7, 7, 7]]), nd.array([[1]]), shape=(2, 3))
    assert rows.asnumpy().tolist() == [[0, 1, 2], [7, 7, 7]]
    check_req(
        "_scatter_set_nd", [lhs.asnumpy(), np.array([5.0, 6.0], np.float32), np.array([[0, 1], [2, 0]])], shape=(2, 3)
    )
    with pytest.raises(InferenceError, match="at most 2 rows"):
        I._scatter_set_nd(lhs, nd.array([1]), nd.array([[0], [1], [2]]), shape=(2, 3))


def test_set_value_and_copyto():
    out = nd.zeros((2, 2), dtype="float16")
    I._set_value(src=2.5, out=out)
    assert out.asnumpy().tolist() == [[2.5, 2.5], [2.5, 2.5]]
    with pytest.raises(InferenceError, match="shape"):
        I._set_value(src=1.0)  # the shape comes from out=
    with pytest.raises(OperatorParamError, match="src"):
        I._set_value(out=out)
    # check_req cannot size an output that only out= determines: call the compute directly
    compute = mx.operator.get("_set_value").get_compute("cpu")
    attrs = mx.operator.get("_set_value").parse_attrs({"src": 2.0})
    ctx = OpContext(False, mx.cpu(0), None, [])
    for req, expected in ((ADD, 3.0), (NULL, 1.0), (WRITE, 2.0)):
        buffer = np.ones((2, 2), np.float32)
        compute(attrs, ctx, [], [req], [buffer])
        assert (buffer == expected).all(), req
    rng = seeded_rng(2)
    x = rng.uniform(-1, 1, (2, 3))
    target = nd.zeros((2, 3), dtype="float32")
    I._copyto(to_nd(x), out=target)
    assert target.dtype == np.float32
    assert_almost_equal(target, x.astype(np.float32))
    check_imperative_gradient(I._copyto, [x])
    check_req("_copyto", [x.astype(np.float32)])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_dense_scatter_maths(dtype):
    rng = seeded_rng(3)
    a, b = rng.uniform(-1, 1, (3, 4)).astype(dtype), rng.uniform(1, 2, (3, 4)).astype(dtype)
    assert_almost_equal(I._scatter_elemwise_div(to_nd(a, dtype), to_nd(b, dtype)), (a / b).astype(dtype))
    assert_almost_equal(I._scatter_plus_scalar(to_nd(a, dtype), scalar=1.5), (a + 1.5).astype(dtype))
    assert_almost_equal(I._scatter_minus_scalar(to_nd(a, dtype), scalar=1.5), (a - 1.5).astype(dtype))


def test_dense_scatter_gradients_and_req():
    rng = seeded_rng(4)
    a, b = rng.uniform(-1, 1, (2, 3)), rng.uniform(1, 2, (2, 3))
    check_imperative_gradient(I._scatter_elemwise_div, [a, b])
    check_imperative_gradient(lambda x: I._scatter_plus_scalar(x, scalar=2), [a])
    check_imperative_gradient(lambda x: I._scatter_minus_scalar(x, scalar=2), [a])
    check_req("_scatter_elemwise_div", [a.astype(np.float32), b.astype(np.float32)])
    check_req("_scatter_plus_scalar", [a.astype(np.float32)], scalar=3.0)
    check_req("_scatter_minus_scalar", [a.astype(np.float32)], scalar=3.0)
