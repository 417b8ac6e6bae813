"""gluon.nn LayerNorm, InstanceNorm, GroupNorm: MXNet's names and defaults, NumPy values, hybridize agreement."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import framework as mx
from framework import autograd
from framework.gluon import nn
from framework.gluon.block import BlockError


def _data(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _standardize(x, axes, eps=1e-5):
    mean = x.mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)


def _set_affine(block, gamma, beta):
    block.gamma.set_data(mx.nd.array(gamma))
    block.beta.set_data(mx.nd.array(beta))


def test_signatures_and_parameter_names_follow_mxnet():
    layer = inspect.signature(nn.LayerNorm).parameters
    assert layer["axis"].default == -1 and layer["epsilon"].default == 1e-5 and layer["in_channels"].default == 0
    instance = inspect.signature(nn.InstanceNorm).parameters
    assert instance["axis"].default == 1 and instance["scale"].default is False
    group = inspect.signature(nn.GroupNorm).parameters
    assert group["num_groups"].default == 1 and group["center"].default is True
    for cls, prefix in ((nn.LayerNorm, "layernorm"), (nn.InstanceNorm, "instancenorm"), (nn.GroupNorm, "groupnorm")):
        names = list(cls().collect_params().keys())
        assert [n.split("_", 1)[1] for n in names] == ["gamma", "beta"]
        assert all(n.startswith(prefix) for n in names)


def test_layer_norm_matches_numpy_on_any_axis():
    x = _data((2, 3, 4))
    for axis in (-1, 1):
        block = nn.LayerNorm(axis=axis)
        block.initialize()
        block(mx.nd.array(x))
        size = x.shape[axis]
        gamma, beta = np.linspace(0.5, 1.5, size, dtype=np.float32), np.linspace(-1, 1, size, dtype=np.float32)
        _set_affine(block, gamma, beta)
        shape = [1, 1, 1]
        shape[axis] = size
        expected = _standardize(x, axis) * gamma.reshape(shape) + beta.reshape(shape)
        np.testing.assert_allclose(block(mx.nd.array(x)).asnumpy(), expected, rtol=1e-4, atol=1e-5)
        assert block.gamma.shape == (size,)


def test_instance_norm_normalizes_spatial_axes_per_channel_even_off_axis_one():
    x = _data((2, 3, 5), seed=1)
    block = nn.InstanceNorm(in_channels=3)
    block.initialize()
    beta = np.array([0.1, -0.2, 0.3], dtype=np.float32)
    _set_affine(block, np.ones(3, np.float32), beta)
    np.testing.assert_allclose(
        block(mx.nd.array(x)).asnumpy(), _standardize(x, 2) + beta.reshape(1, 3, 1), rtol=1e-4, atol=1e-5
    )
    assert block.gamma.grad_req == "null" and block.beta.grad_req == "write"  # scale=False by default
    last = nn.InstanceNorm(axis=2)  # channels last: the statistics run over axis 1
    last.initialize()
    np.testing.assert_allclose(last(mx.nd.array(x)).asnumpy(), _standardize(x, 1), rtol=1e-4, atol=1e-5)
    assert last.gamma.shape == (5,)


def test_group_norm_has_one_gamma_per_group():
    x = _data((2, 4, 3), seed=2)
    block = nn.GroupNorm(num_groups=2)
    block.initialize()
    block(mx.nd.array(x))
    assert block.gamma.shape == (2,) and block.beta.shape == (2,)
    gamma, beta = np.array([2.0, 0.5], np.float32), np.array([1.0, -1.0], np.float32)
    _set_affine(block, gamma, beta)
    grouped = _standardize(x.reshape(2, 2, 6), 2).reshape(2, 2, 2, 3)
    expected = (grouped * gamma.reshape(1, 2, 1, 1) + beta.reshape(1, 2, 1, 1)).reshape(x.shape)
    np.testing.assert_allclose(block(mx.nd.array(x)).asnumpy(), expected, rtol=1e-4, atol=1e-5)


def test_switched_off_affine_parameters_are_not_trained():
    block = nn.LayerNorm(center=False, scale=False)
    assert block.gamma.grad_req == "null" and block.beta.grad_req == "null"
    block = nn.GroupNorm(scale=False)
    assert block.gamma.grad_req == "null" and block.beta.grad_req == "write"


def test_group_norm_rejects_a_bad_group_count():
    with pytest.raises(BlockError, match="num_groups"):
        nn.GroupNorm(num_groups=0)
    block = nn.GroupNorm(num_groups=3)
    block.initialize()
    with pytest.raises(Exception, match="(?i)group"):
        block(mx.nd.array(_data((2, 4, 3)))).wait_to_read()


def _forward_backward(block, x, hybridize):
    block.hybridize(hybridize)
    x = x.copy()
    x.attach_grad()
    with autograd.record():
        y = block(x)
        loss = (y * mx.nd.array(np.linspace(-1, 1, y.size, dtype=np.float32).reshape(y.shape))).sum()
    loss.backward()
    grads = [p.grad().asnumpy().copy() for p in block.collect_params().values() if p.grad_req != "null"]
    return [y.asnumpy(), x.grad.asnumpy().copy(), *grads]


@pytest.mark.parametrize(
    "factory",
    [
        nn.LayerNorm,
        lambda: nn.LayerNorm(axis=1, in_channels=3),
        lambda: nn.InstanceNorm(scale=True),
        lambda: nn.InstanceNorm(axis=-1),
        lambda: nn.GroupNorm(num_groups=3),
    ],
    ids=["layer", "layer-axis1", "instance", "instance-last", "group"],
)
def test_imperative_and_hybridized_agree(factory):
    block = factory()
    block.initialize()
    x = mx.nd.array(_data((2, 3, 4), seed=3))
    block(x)
    block.beta.set_data(mx.nd.array(np.linspace(-0.5, 0.5, block.beta.shape[0], dtype=np.float32)))
    imperative = _forward_backward(block, x, False)
    hybridized = _forward_backward(block, x, True)
    assert len(imperative) == len(hybridized)
    for a, b in zip(imperative, hybridized, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_batch_norm_relu_is_batch_norm_then_relu_in_both_modes():
    x = mx.nd.array(_data((4, 3, 2), seed=5))
    fused = nn.BatchNormReLU(in_channels=3)
    plain = nn.BatchNorm(in_channels=3)
    assert sorted(fused.collect_params()) == sorted(
        f"{fused.prefix}{n}" for n in ("gamma", "beta", "running_mean", "running_var")
    )
    assert fused.prefix.startswith("batchnormrelu")
    for block in (fused, plain):
        block.initialize()
        block(x)
        block.beta.set_data(mx.nd.array([-0.5, 0.0, 0.5]))
    expected = np.maximum(_forward_backward(plain, x, False)[0], 0)
    imperative = _forward_backward(fused, x, False)
    hybridized = _forward_backward(fused, x, True)
    np.testing.assert_allclose(imperative[0], expected, rtol=1e-5, atol=1e-6)
    assert (imperative[0] == 0).any() and (imperative[0] > 0).any()
    for a, b in zip(imperative, hybridized, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert repr(fused).startswith("BatchNormReLU(axis=1, eps=1e-05, momentum=0.9, fix_gamma=False")
