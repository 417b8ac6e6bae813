"""reshape_like: lhs takes rhs's shape (same number of elements); rhs only gives its shape."""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework.operator.infer import InferenceError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req


def test_reshape_like_forward_gradient_and_req():
    x, like = np.random.rand(2, 6), np.zeros((3, 4))
    assert_almost_equal(mx.nd.reshape_like(mx.nd.array(x), mx.nd.array(like)), x.reshape(3, 4))
    check_imperative_gradient(lambda a: mx.nd.reshape_like(a, mx.nd.array(like)), [x])
    check_req("reshape_like", [x, like])


def test_reshape_like_rhs_gets_a_zero_gradient():
    lhs, rhs = mx.nd.arange(6), mx.nd.ones((2, 3))
    rhs.attach_grad()
    lhs.attach_grad()
    with mx.autograd.record():
        (mx.nd.reshape_like(lhs, rhs) * 2).sum().backward()
    assert rhs.grad.asnumpy().tolist() == [[0, 0, 0], [0, 0, 0]]
    assert lhs.grad.asnumpy().tolist() == [2] * 6


def test_reshape_like_infers_and_rejects_element_count_mismatch():
    s = mx.sym.reshape_like(mx.sym.var("a"), mx.sym.var("b"))
    _, out_shapes, _ = s.infer_shape(a=(6,), b=(3, 2))
    assert out_shapes == [(3, 2)]
    with pytest.raises(InferenceError, match=r"cannot reshape lhs of shape \(6,\) to \(4,\)"):
        mx.nd.reshape_like(mx.nd.zeros(6), mx.nd.zeros(4))
