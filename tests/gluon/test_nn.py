"""gluon.nn layers: each against the operator it wraps or NumPy, and imperative against hybridized."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import framework as mx
from framework import autograd
from framework.gluon import nn
from framework.gluon.block import BlockError


def _x(shape, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return mx.nd.array(values)


# (factory, input shape, expected output shape)
LAYERS = [
    (lambda: nn.Dense(4), (3, 5), (3, 4)),
    (lambda: nn.Dense(4, flatten=False, use_bias=False), (2, 3, 5), (2, 3, 4)),
    (lambda: nn.Dense(4, activation="tanh", in_units=6), (2, 2, 3), (2, 4)),
    (nn.BatchNorm, (4, 3, 2), (4, 3, 2)),
    (lambda: nn.BatchNorm(axis=-1, center=False, scale=False), (4, 3), (4, 3)),
    (nn.Flatten, (2, 3, 4), (2, 12)),
    (nn.Identity, (2, 3), (2, 3)),
    (lambda: nn.Activation("sigmoid"), (2, 3), (2, 3)),
    (lambda: nn.LeakyReLU(0.1), (2, 3), (2, 3)),
    (nn.PReLU, (2, 3), (2, 3)),
    (nn.ELU, (2, 3), (2, 3)),
    (nn.SELU, (2, 3), (2, 3)),
    (nn.GELU, (2, 3), (2, 3)),
    (nn.Swish, (2, 3), (2, 3)),
    (lambda: nn.HybridLambda("tanh"), (2, 3), (2, 3)),
    (lambda: nn.HybridLambda(lambda F, x: F.relu(x) * 2), (2, 3), (2, 3)),
    (lambda: nn.Conv1D(4, 3), (2, 3, 8), (2, 4, 6)),
    (lambda: nn.Conv2D(4, (3, 3), padding=1, strides=2), (2, 3, 8, 8), (2, 4, 4, 4)),
    (lambda: nn.Conv2D(4, 3, groups=2, use_bias=False, activation="relu"), (1, 4, 5, 5), (1, 4, 3, 3)),
    (lambda: nn.Conv3D(2, 2), (1, 2, 4, 4, 4), (1, 2, 3, 3, 3)),
    (lambda: nn.Conv1DTranspose(3, 3, strides=2), (2, 2, 4), (2, 3, 9)),
    (lambda: nn.Conv2DTranspose(3, 3, strides=2, padding=1, output_padding=1), (1, 2, 4, 4), (1, 3, 8, 8)),
    (lambda: nn.Conv3DTranspose(2, 2), (1, 2, 3, 3, 3), (1, 2, 4, 4, 4)),
    (nn.MaxPool1D, (2, 3, 8), (2, 3, 4)),
    (lambda: nn.MaxPool2D(pool_size=3, strides=2, padding=1), (1, 2, 7, 7), (1, 2, 4, 4)),
    (nn.MaxPool3D, (1, 1, 4, 4, 4), (1, 1, 2, 2, 2)),
    (nn.AvgPool1D, (2, 3, 8), (2, 3, 4)),
    (lambda: nn.AvgPool2D(ceil_mode=True), (1, 2, 5, 5), (1, 2, 3, 3)),
    (nn.AvgPool3D, (1, 1, 4, 4, 4), (1, 1, 2, 2, 2)),
    (nn.GlobalMaxPool1D, (2, 3, 8), (2, 3, 1)),
    (nn.GlobalMaxPool2D, (2, 3, 4, 4), (2, 3, 1, 1)),
    (nn.GlobalMaxPool3D, (1, 2, 2, 2, 2), (1, 2, 1, 1, 1)),
    (nn.GlobalAvgPool1D, (2, 3, 8), (2, 3, 1)),
    (nn.GlobalAvgPool2D, (2, 3, 4, 4), (2, 3, 1, 1)),
    (nn.GlobalAvgPool3D, (1, 2, 2, 2, 2), (1, 2, 1, 1, 1)),
    (lambda: nn.ReflectionPad2D(2), (1, 2, 4, 5), (1, 2, 8, 9)),
]


def _run(block, x, hybridize):
    """Forward and backward (of sum(y * w) for a fixed w): the output, d/dx and every parameter gradient."""
    block.hybridize(hybridize)
    x = x.copy()
    x.attach_grad()
    with autograd.record():
        y = block(x)
        weights = mx.nd.array(np.linspace(-1, 1, y.size, dtype=np.float32).reshape(y.shape))
        loss = (y * weights).sum()
    loss.backward()
    grads = [p.grad().asnumpy().copy() for p in block.collect_params().values() if p.grad_req != "null"]
    return y.asnumpy(), x.grad.asnumpy().copy(), grads


@pytest.mark.parametrize("index", range(len(LAYERS)), ids=[str(i) for i in range(len(LAYERS))])
def test_imperative_and_hybridized_agree(index):
    factory, in_shape, out_shape = LAYERS[index]
    block = factory()
    block.initialize(mx.init.Xavier(magnitude=2) if index != 4 else None)
    x = _x(in_shape, seed=index)
    block(x)  # deferred initialization
    for p in block.collect_params().values():  # non-trivial statistics and shifts
        if p.name.endswith(("running_mean", "beta", "bias")):
            p.set_data(mx.nd.array(np.linspace(-0.5, 0.5, p.shape[0], dtype=np.float32)))
    y1, dx1, g1 = _run(block, x, False)
    y2, dx2, g2 = _run(block, x, True)
    assert y1.shape == out_shape
    np.testing.assert_allclose(y1, y2, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dx1, dx2, rtol=1e-4, atol=1e-5)
    for a, b in zip(g1, g2, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_dense_matches_numpy_with_mxnet_weight_layout():
    layer = nn.Dense(3, in_units=4)
    layer.initialize(mx.init.Normal(1.0))
    assert layer.weight.shape == (3, 4) and layer.bias.shape == (3,)
    x = _x((2, 4))
    w, b = layer.weight.data().asnumpy(), layer.bias.data().asnumpy()
    np.testing.assert_allclose(layer(x).asnumpy(), x.asnumpy() @ w.T + b, rtol=1e-5, atol=1e-6)
    assert repr(layer) == "Dense(4 -> 3, linear)"


def test_conv_and_pool_match_the_operators():
    conv = nn.Conv2D(5, 3, strides=(1, 2), padding=1, in_channels=2)
    conv.initialize(mx.init.Normal(1.0))
    assert conv.weight.shape == (5, 2, 3, 3)
    x = _x((1, 2, 6, 6))
    expected = mx.nd.Convolution(
        x, conv.weight.data(), conv.bias.data(), kernel=(3, 3), stride=(1, 2), pad=(1, 1), num_filter=5
    )
    np.testing.assert_allclose(conv(x).asnumpy(), expected.asnumpy(), rtol=1e-5)
    deconv = nn.Conv2DTranspose(4, 2, in_channels=2)
    deconv.initialize()
    assert deconv.weight.shape == (2, 4, 2, 2)  # (in_channels, channels, kh, kw) as MXNet
    pool = nn.AvgPool2D(pool_size=2, strides=1)
    np.testing.assert_allclose(
        pool(x).asnumpy(), mx.nd.Pooling(x, kernel=(2, 2), stride=(1, 1), pool_type="avg").asnumpy(), rtol=1e-6
    )


def test_activations_match_numpy():
    x = _x((3, 4))
    v = x.asnumpy()
    sigmoid = 1 / (1 + np.exp(-v))
    cases = [
        (nn.Activation("relu"), np.maximum(v, 0)),
        (nn.LeakyReLU(0.2), np.where(v > 0, v, 0.2 * v)),
        (nn.ELU(0.5), np.where(v > 0, v, 0.5 * (np.exp(v) - 1))),
        (nn.Swish(2.0), v / (1 + np.exp(-2 * v))),
        (nn.SELU(), 1.0507009873554805 * np.where(v > 0, v, 1.6732632423543772 * (np.exp(v) - 1))),
        (nn.GELU(), 0.5 * v * (1 + np.vectorize(math.erf)(v / math.sqrt(2)))),
        (nn.Activation("sigmoid"), sigmoid),
    ]
    for block, expected in cases:
        np.testing.assert_allclose(block(x).asnumpy(), expected, rtol=1e-4, atol=1e-5, err_msg=repr(block))
    prelu = nn.PReLU(in_channels=1)
    prelu.initialize()
    np.testing.assert_allclose(prelu(x).asnumpy(), np.where(v > 0, v, 0.25 * v), rtol=1e-6)


def test_batchnorm_training_updates_running_stats_and_inference_uses_them():
    bn = nn.BatchNorm(momentum=0.5, in_channels=3)
    bn.initialize()
    assert [p.name.split("_", 1)[1] for p in bn.collect_params().values()] == [
        "gamma",
        "beta",
        "running_mean",
        "running_var",
    ]
    x = _x((8, 3))
    v = x.asnumpy()
    for hybridize in (False, True):
        bn.running_mean.set_data(mx.nd.zeros(3))
        bn.running_var.set_data(mx.nd.ones(3))
        bn.hybridize(hybridize)
        with autograd.record():
            y = bn(x)
        normalized = (v - v.mean(0)) / np.sqrt(v.var(0) + 1e-5)
        np.testing.assert_allclose(y.asnumpy(), normalized, rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(bn.running_mean.data().asnumpy(), 0.5 * v.mean(0), rtol=1e-5, atol=1e-6)
        inference = bn(x).asnumpy()  # not recording: the running statistics
        mean, var = bn.running_mean.data().asnumpy(), bn.running_var.data().asnumpy()
        np.testing.assert_allclose(inference, (v - mean) / np.sqrt(var + 1e-5), rtol=1e-3, atol=1e-4)


def test_dropout_is_identity_in_inference_and_drops_in_training():
    drop = nn.Dropout(0.5)
    x = mx.nd.ones((100, 100))
    np.testing.assert_array_equal(drop(x).asnumpy(), x.asnumpy())
    with autograd.train_mode():
        y = drop(x).asnumpy()
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert 0.3 < (y == 0).mean() < 0.7  # wide margin around the rate
    drop.hybridize()
    with autograd.record():
        y = drop(x).asnumpy()
    assert 0.3 < (y == 0).mean() < 0.7


def test_embedding_and_lambda():
    emb = nn.Embedding(10, 3)
    emb.initialize(mx.init.Normal(1.0))
    idx = mx.nd.array([[1, 2], [9, 0]])
    np.testing.assert_allclose(emb(idx).asnumpy(), emb.weight.data().asnumpy()[[[1, 2], [9, 0]]], rtol=1e-6)
    assert nn.Lambda("relu")(mx.nd.array([-1.0, 2.0])).asnumpy().tolist() == [0.0, 2.0]
    with pytest.raises(BlockError, match="not found"):
        nn.Lambda("no_such_function")
    with pytest.raises(BlockError, match="sparse"):
        nn.Embedding(3, 2, sparse_grad=True)


def test_sequential_containers_and_bad_layouts():
    seq = nn.Sequential()
    seq.add(nn.Dense(4), nn.Dense(2))
    seq.initialize()
    assert seq(_x((3, 5))).shape == (3, 2)
    assert len(seq) == 2 and isinstance(seq[1], nn.Dense)
    assert len(seq[:1]) == 1
    with pytest.warns(UserWarning, match="Consider using HybridSequential"):
        seq.hybridize()
    with pytest.raises(BlockError, match="layout 'NCHW' only"):
        nn.Conv2D(2, 3, layout="NHWC")
    with pytest.raises(BlockError, match="kernel_size must be an int or a tuple of 2"):
        nn.Conv2D(2, (3, 3, 3))
    for fractional in (2.5, (3, 2.5)):  # never silently truncated
        with pytest.raises(BlockError, match=r"kernel_size must be an int or a tuple of 2 ints, got .*2\.5"):
            nn.Conv2D(2, fractional)
    assert nn.Conv2D(2, np.int64(3))._kwargs["kernel"] == (3, 3)


def test_reflection_pad_matches_numpy():
    x = _x((1, 2, 4, 5))
    expected = np.pad(x.asnumpy(), [(0, 0), (0, 0), (1, 1), (1, 1)], mode="reflect")
    np.testing.assert_array_equal(nn.ReflectionPad2D(1)(x).asnumpy(), expected)
    with pytest.raises(BlockError, match="8 numbers"):
        nn.ReflectionPad2D((1, 1))


def test_pooling_positional_arguments_follow_mxnet():
    x = _x((1, 1, 5, 5))
    # AvgPool2D(pool_size, strides, padding, ceil_mode, ...): ceil_mode is the 4th argument
    assert nn.AvgPool2D(2, 2, 0, True)(x).shape == (1, 1, 3, 3)
    # MaxPool2D(pool_size, strides, padding, layout, ceil_mode)
    assert nn.MaxPool2D(2, 2, 0, "NCHW", True)(x).shape == (1, 1, 3, 3)
    # AvgPool1D(pool_size, strides, padding, layout, ceil_mode, count_include_pad)
    assert nn.AvgPool1D(2, 2, 0, "NCW", True)(_x((1, 1, 5))).shape == (1, 1, 3)
    padded = nn.AvgPool1D(3, 1, 1, count_include_pad=False)(mx.nd.ones((1, 1, 4)))
    np.testing.assert_allclose(padded.asnumpy(), np.ones((1, 1, 4)))  # the zero padding is not averaged
    with pytest.raises(TypeError, match="multiple values"):
        nn.MaxPool2D(2, pool_size=3)
    with pytest.raises(TypeError, match="count_include_pad"):
        nn.MaxPool2D(count_include_pad=False)


def test_generated_layers_show_mxnets_signatures():
    conv = inspect.signature(nn.Conv2DTranspose.__init__)
    assert list(conv.parameters)[:6] == ["self", "channels", "kernel_size", "strides", "padding", "output_padding"]
    assert conv.parameters["dilation"].default == (1, 1)
    assert list(inspect.signature(nn.MaxPool3D.__init__).parameters)[4:6] == ["ceil_mode", "layout"]
    assert list(inspect.signature(nn.MaxPool2D.__init__).parameters)[4:6] == ["layout", "ceil_mode"]
    assert nn.MaxPool3D(2, 2, 0, True)(_x((1, 1, 3, 3, 3))).shape == (1, 1, 2, 2, 2)  # ceil_mode 4th


def test_conv_and_pool_reprs_read_as_mxnets():
    """The text MXNet 1.9.1 prints for these layers (checked side by side with the peer)."""
    assert repr(nn.Conv2D(6, 3, in_channels=3, strides=2, padding=1, groups=3, activation="relu")) == (
        "Conv2D(1 -> 6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), groups=3, Activation(relu))"
    )
    assert repr(nn.Conv3D(6, (1, 2, 3), dilation=2, use_bias=False)) == (
        "Conv3D(None -> 6, kernel_size=(1, 2, 3), stride=(1, 1, 1), dilation=(2, 2, 2), bias=False)"
    )
    transposed = nn.Conv2DTranspose(2, 3)
    assert repr(transposed).startswith("Conv2DTranspose(2 -> 0,")  # out -> in, MXNet's order for these
    transposed.initialize()
    transposed(mx.nd.ones((1, 5, 4, 4)))
    assert repr(transposed) == "Conv2DTranspose(2 -> 5, kernel_size=(3, 3), stride=(1, 1))"
    assert repr(nn.MaxPool2D(3, 2, ceil_mode=True)) == (
        "MaxPool2D(size=(3, 3), stride=(2, 2), padding=(0, 0), ceil_mode=True, global_pool=False, pool_type=max, "
        "layout=NCHW)"
    )
