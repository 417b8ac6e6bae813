"""How several gradient contributions to one entry are summed: MXNet's rule and its memory.

Fewer than ``MXNET_EXEC_INPLACE_GRAD_SUM_CAP`` (8) contributions make one ``ElementWiseSum``;
more make a chain of in-place ``_grad_add`` nodes, each contribution computed after the sum
so far. MXNet 1.9.1 plans 9 MB for the ten-step shared-weight network below (``debug_str``'s
"Total 9 MB allocated", 54 nodes); with one ``ElementWiseSum`` it plans 41 MB (the cap at 100).
"""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework import autograd
from framework import symbol as sym
from framework.executor import simple_bind

_CAP = ("MXLAB_EXEC_INPLACE_GRAD_SUM_CAP", "MXNET_EXEC_INPLACE_GRAD_SUM_CAP")


@pytest.fixture(autouse=True)
def _no_cap_set(monkeypatch):
    for name in _CAP:
        monkeypatch.delenv(name, raising=False)


def shared_weight_net(steps: int, hidden: int = 64) -> sym.Symbol:
    """One weight used by ``steps`` layers (an unrolled recurrence): ``steps`` contributions to its gradient."""
    h, w = sym.Variable("data"), sym.Variable("w")
    for t in range(steps):
        h = sym.tanh(sym.FullyConnected(h, weight=w, no_bias=True, num_hidden=hidden, name=f"fc{t}"))
    return sym.MakeLoss(sym.sum(h))


def _bind_and_run(steps: int, hidden: int = 64, batch: int = 4):
    exe = simple_bind(shared_weight_net(steps, hidden), mx.cpu(), data=(batch, hidden), w=(hidden, hidden))
    rng = np.random.default_rng(0)
    exe.arg_dict["data"][:] = rng.uniform(-1, 1, (batch, hidden)).astype(np.float32)
    exe.arg_dict["w"][:] = rng.uniform(-0.2, 0.2, (hidden, hidden)).astype(np.float32)
    exe.forward(is_train=True)
    exe.backward()
    return exe, exe.grad_dict["w"].asnumpy(), exe.grad_dict["data"].asnumpy()


def _ops(exe) -> list[str]:
    return [node.op.name for node in exe._graph.nodes if node.op is not None]


def test_many_contributions_are_a_chain_of_grad_add_with_the_same_gradient(monkeypatch):
    chain, w_chain, x_chain = _bind_and_run(10)
    assert _ops(chain).count("_grad_add") == 9 and "add_n" not in _ops(chain)
    assert any(n.name == "w_grad_sum_final" for n in chain._graph.nodes)
    monkeypatch.setenv("MXNET_EXEC_INPLACE_GRAD_SUM_CAP", "100")
    one_sum, w_sum, x_sum = _bind_and_run(10)
    assert _ops(one_sum).count("add_n") == 1 and "_grad_add" not in _ops(one_sum)
    np.testing.assert_allclose(w_chain, w_sum, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(x_chain, x_sum)  # the data gradient has one contribution either way
    # one running sum instead of ten weight-sized contributions alive at once
    assert chain.plan.bytes_planned < one_sum.plan.bytes_planned / 3


def test_the_chain_plans_what_mxnet_plans_for_a_shared_weight():
    exe, _, _ = _bind_and_run(10, hidden=1024, batch=32)  # MXNet's figures are for this binding
    assert 9 << 20 <= exe.plan.bytes_planned < 10 << 20  # MXNet 1.9.1: "Total 9 MB allocated"
    ops = [line for line in exe.debug_str().splitlines() if line.startswith("Op:")]
    assert len(ops) == 54  # MXNet's debug_str lists 54 "Op:" lines for it too


def test_fewer_than_the_cap_is_one_elementwise_sum(monkeypatch):
    exe, _, _ = _bind_and_run(7)
    assert _ops(exe).count("add_n") == 1 and "_grad_add" not in _ops(exe)
    monkeypatch.setenv("MXLAB_EXEC_INPLACE_GRAD_SUM_CAP", "2")  # MXLab's name; 2 contributions now chain
    monkeypatch.setenv("MXNET_EXEC_INPLACE_GRAD_SUM_CAP", "100")
    exe, _, _ = _bind_and_run(2)
    assert _ops(exe).count("_grad_add") == 1


def test_autograd_sums_a_variable_used_many_times():
    x = mx.nd.array(np.linspace(-1, 1, 6).astype(np.float32))
    x.attach_grad()
    with autograd.record():
        terms = [mx.nd.sin(x) * float(k) for k in range(1, 11)]  # ten contributions to x's gradient
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        loss = mx.nd.sum(total)
    loss.backward()
    expected = 55.0 * np.cos(np.linspace(-1, 1, 6))
    np.testing.assert_allclose(x.grad.asnumpy(), expected, rtol=1e-5)


def test_head_gradients_passed_through_make_no_cycle():
    x = sym.Variable("x")
    heads = [x + sym.Variable(f"c{k}") for k in range(5)] + [sym.tanh(x * float(k)) for k in range(1, 5)]
    group = sym.Group(heads)
    shapes = {"x": (3,), **{f"c{k}": (3,) for k in range(5)}}
    exe = simple_bind(group, mx.cpu(), **shapes)
    value = np.array([0.1, -0.3, 0.5], dtype=np.float32)
    exe.arg_dict["x"][:] = value
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((3,)) for _ in heads])
    expected = 5 + sum(k * (1 - np.tanh(k * value) ** 2) for k in range(1, 5))
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), expected, rtol=1e-5)
    assert "_grad_add" in _ops(exe)  # nine contributions: the chain, with the pass-through ones included


def test_a_malformed_cap_is_an_error_naming_it(monkeypatch):
    monkeypatch.setenv("MXNET_EXEC_INPLACE_GRAD_SUM_CAP", "-1")
    with pytest.raises(mx.config.ConfigError, match="MXNET_EXEC_INPLACE_GRAD_SUM_CAP"):
        _bind_and_run(3)
