"""mx.nd.CachedOp: a symbol run like one operator, cached per signature, one autograd node."""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework.executor.cached_op import CachedOpError


def _mlp_symbol():
    x, w, b = mx.sym.var("data"), mx.sym.var("w"), mx.sym.var("b")
    return mx.sym.relu(mx.sym.FullyConnected(x, w, b, num_hidden=3, name="fc"))


def _arrays(rng, batch=4):
    x = mx.nd.array(rng.standard_normal((batch, 5)).astype(np.float32))
    w = mx.nd.array(rng.standard_normal((3, 5)).astype(np.float32))
    b = mx.nd.array(rng.standard_normal(3).astype(np.float32))
    return x, w, b


def test_forward_matches_numpy_and_reuses_the_executor():
    rng = np.random.default_rng(0)
    op = mx.nd.CachedOp(_mlp_symbol())
    x, w, b = _arrays(rng)
    first = op(x, w, b)
    expected = np.maximum(x.asnumpy() @ w.asnumpy().T + b.asnumpy(), 0)
    np.testing.assert_allclose(first.asnumpy(), expected, rtol=1e-5, atol=1e-6)
    second = op(x * 2, w, b)  # same signature: the same executor, a fresh output array
    assert len(op.executors()) == 1
    np.testing.assert_allclose(first.asnumpy(), expected, rtol=1e-5, atol=1e-6)  # not overwritten
    np.testing.assert_allclose(
        second.asnumpy(), np.maximum(2 * x.asnumpy() @ w.asnumpy().T + b.asnumpy(), 0), rtol=1e-5, atol=1e-5
    )


def test_new_shapes_bind_again_and_static_alloc_keeps_both():
    rng = np.random.default_rng(1)
    plain = mx.nd.CachedOp(_mlp_symbol())
    static = mx.nd.CachedOp(_mlp_symbol(), flags=[("static_alloc", True)])
    for batch in (4, 6):
        x, w, b = _arrays(rng, batch)
        for op in (plain, static):
            assert op(x, w, b).shape == (batch, 3)
    assert len(plain.executors()) == 1  # only the latest signature is kept
    assert len(static.executors()) == 2


def test_autograd_records_one_node_with_the_planned_backward():
    rng = np.random.default_rng(2)
    op = mx.nd.CachedOp(_mlp_symbol())
    x, w, b = _arrays(rng)
    for a in (x, w, b):
        a.attach_grad()
    with mx.autograd.record():
        out = op(x, w, b)
        loss = (out * out).sum()
    assert out._entry.node.op.name == "_CachedOp"
    loss.backward()
    cached = [a.grad.asnumpy().copy() for a in (x, w, b)]
    with mx.autograd.record():
        ref = mx.nd.relu(mx.nd.FullyConnected(x, w, b, num_hidden=3))
        (ref * ref).sum().backward()
    for got, a in zip(cached, (x, w, b), strict=True):
        np.testing.assert_allclose(got, a.grad.asnumpy(), rtol=1e-5, atol=1e-5)


def test_forward_and_backward_bulk_sizes_apply_to_their_own_pass():
    x = mx.sym.var("data")
    for i in range(4):
        x = mx.sym.relu(mx.sym.sin(x, name=f"sin{i}"), name=f"relu{i}")
    rng = np.random.default_rng(4)
    data = mx.nd.array(rng.standard_normal((3, 4)).astype(np.float32))
    results = []
    for forward_size, backward_size in ((1, 100), (100, 1)):
        op = mx.nd.CachedOp(x, flags=[("forward_bulk_size", forward_size), ("backward_bulk_size", backward_size)])
        data.attach_grad()
        with mx.autograd.record():
            out = op(data)
        out.backward()
        (exe,) = op.executors()
        forward = [len(s.steps) for s in exe._forward_segments]
        backward = [len(s.steps) for s in exe._backward_segments]
        assert forward == ([8] if forward_size > 1 else [1] * 8)  # the chain of 8 nodes: one segment or eight
        assert sum(backward) > 1 and backward == ([1] * sum(backward) if backward_size == 1 else [sum(backward)])
        results.append((out.asnumpy(), data.grad.asnumpy().copy()))
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)
    inference = mx.nd.CachedOp(x, flags=[("forward_bulk_size", 1)])
    np.testing.assert_array_equal(inference(data).asnumpy(), results[0][0])
    (exe,) = inference.executors()  # a call outside record bulks its whole graph, as MXNet's CachedOp does
    assert [len(s.steps) for s in exe._forward_segments] == [8]


def test_two_recorded_calls_keep_their_own_state():
    rng = np.random.default_rng(3)
    op = mx.nd.CachedOp(_mlp_symbol(), flags=[("param_indices", [1, 2]), ("data_indices", [0])])
    x1, w, b = _arrays(rng)
    x2 = mx.nd.array(rng.standard_normal((4, 5)).astype(np.float32))
    w.attach_grad()
    with mx.autograd.record():
        loss = op(x1, w, b).sum() + (op(x2, w, b) * 3).sum()
    loss.backward()
    assert len(op.executors()) == 2  # the second call could not reuse the first one's activations
    got = w.grad.asnumpy().copy()
    with mx.autograd.record():
        f = lambda x: mx.nd.relu(mx.nd.FullyConnected(x, w, b, num_hidden=3))  # noqa: E731
        (f(x1).sum() + (f(x2) * 3).sum()).backward()
    np.testing.assert_allclose(got, w.grad.asnumpy(), rtol=1e-5, atol=1e-5)


def test_aux_states_are_updated_in_place_in_training():
    data = mx.sym.var("data")
    bn = mx.sym.BatchNorm(data, name="bn", fix_gamma=False, momentum=0.5)
    op = mx.nd.CachedOp(bn)
    names = bn.list_inputs()
    x = mx.nd.array(np.arange(12, dtype=np.float32).reshape(4, 3))
    arrays = {
        "data": x,
        "bn_gamma": mx.nd.ones(3),
        "bn_beta": mx.nd.zeros(3),
        "bn_moving_mean": mx.nd.zeros(3),
        "bn_moving_var": mx.nd.ones(3),
    }
    x.attach_grad()
    with mx.autograd.record():
        op(*[arrays[n] for n in names])
    np.testing.assert_allclose(arrays["bn_moving_mean"].asnumpy(), 0.5 * x.asnumpy().mean(axis=0), rtol=1e-5)


def test_backward_after_the_executor_was_reused_is_a_clear_error():
    rng = np.random.default_rng(4)
    op = mx.nd.CachedOp(_mlp_symbol())
    x, w, b = _arrays(rng)
    w.attach_grad()
    with mx.autograd.record():
        loss = op(x, w, b).sum()
    loss.backward(retain_graph=True)
    loss.backward(retain_graph=True)  # nothing ran in between: allowed
    with mx.autograd.record():
        op(x, w, b).sum()  # takes the now free executor
    with pytest.raises(CachedOpError, match="differentiate before calling the CachedOp again"):
        loss.backward()


def test_bad_flags_and_inputs_are_named():
    sym = _mlp_symbol()
    with pytest.raises(CachedOpError, match="unknown flag 'inline_everything'"):
        mx.nd.CachedOp(sym, flags=[("inline_everything", True)])
    with pytest.raises(CachedOpError, match="static_alloc"):
        mx.nd.CachedOp(sym, flags=[("static_alloc", "maybe")])
    with pytest.raises(CachedOpError, match="non-negative integer"):
        mx.nd.CachedOp(sym, flags=[("inline_limit", -1)])
    with pytest.raises(CachedOpError, match="exactly once"):
        mx.nd.CachedOp(sym, flags=[("data_indices", [0]), ("param_indices", [1])])
    op = mx.nd.CachedOp(sym)
    with pytest.raises(CachedOpError, match=r"expected 3 inputs \['data', 'w', 'b'\], got 1"):
        op(mx.nd.zeros((2, 5)))
    with pytest.raises(mx.MXLabError, match="FullyConnected"):
        op(mx.nd.zeros((2, 5)), mx.nd.zeros((3, 4)), mx.nd.zeros(3))
