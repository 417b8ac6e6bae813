"""The CachedOp writes parameter gradients straight into their ``.grad`` (no copies) only where that is safe.

Each test compares a hybridized network's gradients with the imperative network's (the same
parameters), in the cases where writing ``.grad`` directly would go wrong if done blindly:
``autograd.grad`` (``.grad`` must stay untouched), ``grad_req='add'``, a block applied twice
in one ``record()``, two hybridized blocks sharing parameters, and a second backward.
"""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework.executor.cached_op import CachedOpError


def _pair(seed: int = 0, share: mx.gluon.ParameterDict | None = None):
    """The same Dense-tanh-Dense network twice: (imperative, hybridized), equal parameters."""
    nets = []
    for _ in range(2):
        mx.random.seed(seed)
        net = mx.gluon.nn.HybridSequential()
        with net.name_scope():
            net.add(mx.gluon.nn.Dense(6, activation="tanh", in_units=5), mx.gluon.nn.Dense(3, in_units=6))
        net.initialize(mx.init.Xavier())
        nets.append(net)
    nets[1].hybridize(static_alloc=True)
    return nets


def _batch(seed: int, rows: int = 4) -> mx.nd.NDArray:
    return mx.nd.array(np.random.default_rng(seed).standard_normal((rows, 5)).astype(np.float32))


def _grads(net) -> dict[str, np.ndarray]:
    return {name.split("_", 1)[1]: p.grad().asnumpy() for name, p in net.collect_params().items()}


def _assert_same_grads(imperative, hybridized) -> None:
    expected, got = _grads(imperative), _grads(hybridized)
    assert expected.keys() == got.keys()
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-4, atol=1e-5, err_msg=name)


def _train_step(net, x) -> None:
    with mx.autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward()


def test_backward_writes_the_parameter_gradients_in_place():
    imperative, hybridized = _pair()
    for seed in (1, 2):  # the second step reuses the executor, bound to the same .grad arrays
        x = _batch(seed)
        _train_step(imperative, x)
        _train_step(hybridized, x)
        _assert_same_grads(imperative, hybridized)
    (executor,) = hybridized._cached_op.executors()
    bound = [g for g in executor.grad_arrays if g is not None]
    for param in hybridized.collect_params().values():
        assert any(g is param.grad() for g in bound), f"{param.name}: its .grad is not the executor's gradient array"


def test_autograd_grad_leaves_dot_grad_untouched():
    imperative, hybridized = _pair()
    _train_step(hybridized, _batch(1))  # binds the executor to the .grad arrays
    before = _grads(hybridized)
    x = _batch(2)
    params = list(hybridized.collect_params().values())
    with mx.autograd.record():
        loss = (hybridized(x) ** 2).sum()
    grads = mx.autograd.grad(loss, [p.data() for p in params])
    after = _grads(hybridized)
    for name in before:
        np.testing.assert_array_equal(after[name], before[name], err_msg=f"autograd.grad changed {name}'s .grad")
    _train_step(imperative, x)
    for param, grad, reference in zip(params, grads, imperative.collect_params().values(), strict=True):
        assert grad is not param.grad()
        np.testing.assert_allclose(grad.asnumpy(), reference.grad().asnumpy(), rtol=1e-4, atol=1e-5)


def test_grad_req_add_accumulates():
    imperative, hybridized = _pair()
    for net in (imperative, hybridized):
        net.collect_params().setattr("grad_req", "add")
        net.collect_params().zero_grad()
        for seed in (1, 2):
            _train_step(net, _batch(seed))
    _assert_same_grads(imperative, hybridized)


def test_block_applied_twice_in_one_record_sums_both_gradients():
    imperative, hybridized = _pair()
    for _ in range(2):  # the second round reuses both executors
        for net in (imperative, hybridized):
            with mx.autograd.record():
                loss = (net(_batch(1)) ** 2).sum() + (net(_batch(2, rows=4)) * 3).sum()
            loss.backward()
        _assert_same_grads(imperative, hybridized)
    assert len(hybridized._cached_op.executors()) == 2


def test_two_hybridized_blocks_sharing_parameters():
    imperative, hybridized = _pair()
    twin = mx.gluon.nn.HybridSequential(params=hybridized.collect_params())
    with twin.name_scope():
        twin.add(mx.gluon.nn.Dense(6, activation="tanh", in_units=5), mx.gluon.nn.Dense(3, in_units=6))
    twin.hybridize(static_alloc=True)
    for _ in range(2):
        with mx.autograd.record():
            loss = (imperative(_batch(1)) ** 2).sum() + (imperative(_batch(2)) * 3).sum()
        loss.backward()
        with mx.autograd.record():
            loss = (hybridized(_batch(1)) ** 2).sum() + (twin(_batch(2)) * 3).sum()
        loss.backward()
        _assert_same_grads(imperative, hybridized)


def test_parameter_also_used_outside_the_cached_graph():
    imperative, hybridized = _pair()
    for net in (imperative, hybridized):
        weight = net[0].weight.data()
        with mx.autograd.record():
            loss = (net(_batch(1)) ** 2).sum() + (weight * weight).sum()
        loss.backward()
    _assert_same_grads(imperative, hybridized)


def test_retain_graph_backward_twice_gives_the_same_gradients():
    imperative, hybridized = _pair()
    x = _batch(3)
    _train_step(imperative, x)
    with mx.autograd.record():
        loss = (hybridized(x) ** 2).sum()
    loss.backward(retain_graph=True)
    first = _grads(hybridized)
    loss.backward()
    _assert_same_grads(imperative, hybridized)
    for name, values in _grads(hybridized).items():
        np.testing.assert_array_equal(values, first[name], err_msg=name)


def test_backward_after_the_executor_ran_again_is_still_refused():
    _, hybridized = _pair()
    with mx.autograd.record():
        stale = (hybridized(_batch(1)) ** 2).sum()
    stale.backward(retain_graph=True)
    _train_step(hybridized, _batch(2))  # the same executor runs the next call
    with pytest.raises(CachedOpError, match="forward state is gone"):
        stale.backward()
