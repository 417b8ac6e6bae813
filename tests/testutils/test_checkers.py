"""mx.test_utils checkers: MXNet's check_numeric_gradient(sym, ...), numeric_grad, check_consistency,
check_speed, simple_forward, compare_optimizer, same_symbol_structure, and the imperative checker."""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework import test_utils as tu
from framework.gluon import nn


def _net():
    data = mx.sym.var("data")
    return mx.sym.FullyConnected(data, num_hidden=3, name="fc")


def test_check_numeric_gradient_takes_the_symbol_first():
    x = np.random.randn(2, 4)
    w, b = np.random.randn(3, 4), np.random.randn(3)
    tu.check_numeric_gradient(_net(), [x, w, b])
    tu.check_numeric_gradient(sym=_net(), location={"data": x, "fc_weight": w, "fc_bias": b}, grad_nodes=["fc_weight"])


def test_check_numeric_gradient_refuses_a_function_and_points_to_the_imperative_one():
    with pytest.raises(TypeError, match="check_imperative_gradient"):
        tu.check_numeric_gradient(lambda v: v * 2, [np.ones(3)])
    with pytest.raises(mx.base.MXLabError, match="got a Symbol; use check_numeric_gradient"):
        tu.check_imperative_gradient(_net(), [np.ones((2, 4))])


def test_check_imperative_gradient_checks_a_function_and_fails_on_a_wrong_gradient():
    tu.check_imperative_gradient(lambda a, b: a * b + mx.nd.sin(a), [np.random.randn(3), np.random.randn(3)])

    def wrong(a):  # stops the gradient: autograd says 0, finite differences say 1
        return mx.nd.BlockGrad(a) + 0 * a

    with pytest.raises(
        AssertionError,
        match=r"(?s)check_imperative_gradient: gradient of input 0 is wrong: .*"
        r"Location of maximum error: \(\d,\), autograd=0\.0",
    ):
        tu.check_imperative_gradient(wrong, [np.random.randn(3)])


def test_numeric_grad_of_an_executor():
    x = mx.sym.var("x")
    y = x * x
    exe = y.simple_bind(mx.cpu(), x=(3,))
    point = np.array([1.0, -2.0, 0.5])
    grads = tu.numeric_grad(exe, {"x": point}, eps=1e-3, dtype=np.float64)
    np.testing.assert_allclose(grads["x"], 2 * point, rtol=1e-3)
    with pytest.raises(tu.SymbolCheckError, match="'z' is not an argument"):
        tu.numeric_grad(exe, {"z": point})


def test_check_symbolic_backward_positional_order_is_mxnets():
    x = mx.sym.var("x")
    point = np.array([1.0, 2.0])
    # ..., grad_req, ctx, grad_stypes, equal_nan, dtype
    tu.check_symbolic_backward(
        x * 3, [point], [np.ones(2)], [np.full(2, 3.0)], None, None, None, "write", None, None, False, np.float64
    )
    with pytest.raises(tu.SymbolCheckError, match="storage type 'row_sparse'"):
        tu.check_symbolic_backward(x * 3, [point], [np.ones(2)], [np.full(2, 3.0)], grad_stypes={"x": "row_sparse"})


def test_check_consistency_across_contexts_and_dtypes():
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
    ctx_list = [
        {"ctx": mx.cpu(0), "data": (2, 5), "type_dict": {"data": np.float64}},
        {"ctx": mx.cpu(1), "data": (2, 5), "type_dict": {"data": np.float32}},
        {"ctx": mx.cpu(0), "data": (2, 5), "type_dict": {"data": np.float32}},
    ]
    truth = tu.check_consistency(net, ctx_list)
    assert truth["fc_output"].dtype == np.float64 and truth["fc_weight"].shape == (4, 5)


def test_check_consistency_catches_a_difference():
    a = mx.sym.var("data")
    with mx.name.NameManager():
        double = a * 2
    with mx.name.NameManager():
        not_double = a * 2.5  # same node names, other numbers
    ctx_list = [{"ctx": mx.cpu(0), "data": (3,)}, {"ctx": mx.cpu(1), "data": (3,)}]
    with pytest.raises(AssertionError, match="check_consistency: forward output '.*' of run 1 .* differs"):
        tu.check_consistency([double, not_double], ctx_list, grad_req="null")
    with pytest.raises(tu.HelperArgumentError, match="at least 2 entries"):
        tu.check_consistency(double, ctx_list[:1])
    with pytest.raises(tu.HelperArgumentError, match="symbol 1 has other arguments"):
        tu.check_consistency([double, mx.sym.var("other") * 2], ctx_list)
    truth = tu.check_consistency([double, not_double], ctx_list, grad_req="null", raise_on_err=False)
    assert set(truth) == set(double.list_outputs())  # printed, not raised; grad_req="null": outputs only


def test_check_speed_and_simple_forward():
    net = _net()
    seconds = tu.check_speed(net, ctx=mx.cpu(), N=2, data=(2, 4))
    assert seconds >= 0
    assert (
        tu.check_speed(
            net,
            location={"data": np.ones((2, 4)), "fc_weight": np.ones((3, 4)), "fc_bias": np.zeros(3)},
            N=1,
            typ="forward",
        )
        >= 0
    )
    with pytest.raises(tu.HelperArgumentError, match='typ must be "whole" or "forward"'):
        tu.check_speed(net, N=1, typ="backward", data=(2, 4))
    out = tu.simple_forward(mx.sym.var("a") + 1, a=np.array([1.0, 2.0]))
    np.testing.assert_allclose(out, [2, 3])


def test_compare_optimizer():
    tu.compare_optimizer(
        mx.optimizer.SGD(learning_rate=0.1, momentum=0.9),
        mx.optimizer.SGD(learning_rate=0.1, momentum=0.9),
        (3, 4),
        np.float32,
    )
    with pytest.raises(AssertionError):
        tu.compare_optimizer(
            mx.optimizer.SGD(learning_rate=0.1), mx.optimizer.SGD(learning_rate=0.2), (3, 4), np.float32
        )
    with pytest.raises(tu.HelperArgumentError, match="sparse storage"):
        tu.compare_optimizer(mx.optimizer.SGD(), mx.optimizer.SGD(), (3,), np.float32, w_stype="row_sparse")


def test_same_symbol_structure():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    assert tu.same_symbol_structure(mx.sym.relu(a) + 1, mx.sym.relu(b) + 2)
    assert not tu.same_symbol_structure(mx.sym.relu(a), mx.sym.sigmoid(a))
    assert not tu.same_symbol_structure(mx.sym.relu(a), mx.sym.relu(mx.sym.relu(a)))


def test_check_gluon_hybridize_consistency_passes_a_block_and_catches_a_mismatch():
    def build():
        net = nn.HybridSequential()
        net.add(nn.Dense(4, activation="relu"), nn.Dense(2))
        return net

    data = [np.random.rand(3, 5).astype("float32")]
    mx.test_utils.check_gluon_hybridize_consistency(build, data)
    mx.test_utils.check_gluon_hybridize_consistency(build, data, numpy_func=None, test_grad=False)
    with pytest.raises(AssertionError, match="numpy_func output 0"):
        mx.test_utils.check_gluon_hybridize_consistency(build, data, numpy_func=lambda x: x[:, :2] + 100)
