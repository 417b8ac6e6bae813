"""gluon.contrib layers and cells against NumPy, imperative against hybridized, and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework.gluon import BlockError, contrib
from framework.gluon import rnn as grnn

RNG = np.random.RandomState(3)


def _nd(*shape: int) -> mx.nd.NDArray:
    return mx.nd.array(RNG.uniform(-1, 1, shape).astype(np.float32))


def _values(block) -> dict[str, np.ndarray]:
    """The block's parameter values by name without the block's prefix."""
    return {k[len(block.prefix) :]: v.data().asnumpy() for k, v in block.collect_params().items()}


# ----------------------------------------------------------------------------- pixel shuffle
def test_pixel_shuffle_2d_places_each_channel_at_its_offset() -> None:
    x = _nd(2, 12, 3, 4)
    out = contrib.nn.PixelShuffle2D((2, 3))(x).asnumpy()
    data = x.asnumpy()
    expected = np.zeros((2, 2, 6, 12), np.float32)
    for c in range(2):
        for i in range(2):
            for j in range(3):
                expected[:, c, i::2, j::3] = data[:, c * 6 + i * 3 + j]
    np.testing.assert_array_equal(out, expected)


def test_pixel_shuffle_1d_and_3d_shapes_and_inverse_of_reshape() -> None:
    x = _nd(1, 6, 5)
    out = contrib.nn.PixelShuffle1D(2)(x).asnumpy()
    assert out.shape == (1, 3, 10)
    np.testing.assert_array_equal(out[0, 1, 1::2], x.asnumpy()[0, 3])
    y = contrib.nn.PixelShuffle3D(2)(_nd(1, 16, 2, 1, 3))
    assert y.shape == (1, 2, 4, 2, 6)


@pytest.mark.parametrize("layer", [contrib.nn.PixelShuffle1D(2), contrib.nn.PixelShuffle2D(2)])
def test_pixel_shuffle_hybridized_matches_imperative_with_gradient(layer) -> None:
    shape = (2, 8, 5) if isinstance(layer, contrib.nn.PixelShuffle1D) else (2, 8, 3, 3)
    x = _nd(*shape)
    grads = []
    for hybrid in (False, True):
        layer.hybridize(hybrid)
        x.attach_grad()
        with mx.autograd.record():
            out = layer(x)
            (out * out).sum().backward()
        grads.append((out.asnumpy(), x.grad.asnumpy()))
    np.testing.assert_array_equal(grads[0][0], grads[1][0])
    np.testing.assert_allclose(grads[1][1], 2 * x.asnumpy(), rtol=1e-6)


def test_pixel_shuffle_rejects_bad_factor_and_channels() -> None:
    with pytest.raises(BlockError, match="PixelShuffle2D: factor"):
        contrib.nn.PixelShuffle2D((2, 2, 2))
    with pytest.raises(BlockError, match="PixelShuffle1D: factor"):
        contrib.nn.PixelShuffle1D(0)
    with pytest.raises(BlockError, match="PixelShuffle2D: 6 channels are not a multiple of .* 4"):
        contrib.nn.PixelShuffle2D(2)(_nd(1, 6, 2, 2))
    with pytest.raises(BlockError, match=r"PixelShuffle3D: expects \(N, C, 3 spatial axes\)"):
        contrib.nn.PixelShuffle3D(2)(_nd(1, 8, 2, 2))


# ----------------------------------------------------------------------------- SyncBatchNorm
def test_sync_batch_norm_normalises_with_batch_statistics() -> None:
    layer = contrib.nn.SyncBatchNorm(in_channels=3, num_devices=1, momentum=0.5)
    layer.initialize()
    layer.gamma.set_data(mx.nd.array([1.0, 2.0, 0.5]))
    layer.beta.set_data(mx.nd.array([0.0, 1.0, -1.0]))
    x = _nd(4, 3, 2, 2)
    with mx.autograd.record():
        out = layer(x).asnumpy()
    data = x.asnumpy()
    mean, var = data.mean(axis=(0, 2, 3)), data.var(axis=(0, 2, 3))
    expected = (data - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    expected = (
        expected * np.array([1.0, 2.0, 0.5])[None, :, None, None] + np.array([0.0, 1.0, -1.0])[None, :, None, None]
    )
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(layer.running_mean.data().asnumpy(), 0.5 * mean, rtol=1e-4, atol=1e-6)
    assert list(layer.collect_params()) == [
        f"{layer.prefix}{n}" for n in ("gamma", "beta", "running_mean", "running_var")
    ]


def test_sync_batch_norm_hybridized_graph_uses_the_sync_operator() -> None:
    layer = contrib.nn.SyncBatchNorm(num_devices=1)
    layer.initialize()
    x = _nd(2, 3, 2, 2)
    expected = layer(x).asnumpy()
    layer.hybridize()
    np.testing.assert_allclose(layer(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    symbol = layer(mx.sym.var("data"))
    assert "_contrib_SyncBatchNorm" in symbol.tojson()


def test_sync_batch_norm_num_devices_warning_and_error() -> None:
    with pytest.warns(UserWarning, match="num_devices"):
        contrib.nn.SyncBatchNorm()
    with pytest.raises(BlockError, match="num_devices must be a positive int"):
        contrib.nn.SyncBatchNorm(num_devices=0)


# ----------------------------------------------------------------------------- deformable convolution
@pytest.mark.parametrize("layer_class", [contrib.cnn.DeformableConvolution, contrib.cnn.ModulatedDeformableConvolution])
def test_deformable_convolution_with_zero_offsets_is_a_convolution(layer_class) -> None:
    # offset weights start at zero: no shift, and the modulated mask 2*sigmoid(0) is 1
    layer = layer_class(5, kernel_size=3, padding=1, strides=2, in_channels=4)
    layer.initialize()
    x = _nd(2, 4, 7, 7)
    out = layer(x)
    expected = mx.nd.Convolution(
        x, layer.deformable_conv_weight.data(), layer.deformable_conv_bias.data(),
        kernel=(3, 3), pad=(1, 1), stride=(2, 2), num_filter=5,
    )  # fmt: skip
    np.testing.assert_allclose(out.asnumpy(), expected.asnumpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("layer_class", [contrib.cnn.DeformableConvolution, contrib.cnn.ModulatedDeformableConvolution])
def test_deformable_convolution_hybridized_gradients_match(layer_class) -> None:
    results = []
    for hybrid in (False, True):
        layer = layer_class(3, kernel_size=3, in_channels=2, use_bias=False, activation="relu", prefix="d_")
        mx.random.seed(11)  # the same weights in both runs
        layer.initialize(mx.init.Uniform(0.3))
        layer.hybridize(hybrid)
        x = mx.nd.array(np.random.RandomState(5).uniform(-1, 1, (1, 2, 5, 5)).astype(np.float32))
        with mx.autograd.record():
            out = layer(x)
        out.backward()
        grads = {k.split("_", 1)[1]: p.grad().asnumpy() for k, p in layer.collect_params().items()}
        results.append((out.asnumpy(), grads))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5, atol=1e-6)
    for name, grad in results[0][1].items():
        np.testing.assert_allclose(grad, results[1][1][name], rtol=1e-4, atol=1e-5, err_msg=name)


def test_deformable_convolution_parameter_shapes_order_and_errors() -> None:
    layer = contrib.cnn.ModulatedDeformableConvolution(
        6, kernel_size=(3, 1), groups=2, num_deformable_group=2, in_channels=4
    )
    shapes = {k.split("_", 3)[-1]: p.shape for k, p in layer.collect_params().items()}
    assert list(shapes) == ["deformable_conv_weight", "deformable_conv_bias", "offset_weight", "offset_bias"]
    assert shapes["offset_weight"] == (3 * 2 * 3, 2, 3, 1)
    assert shapes["deformable_conv_weight"] == (6, 2, 3, 1)
    with pytest.raises(BlockError, match="'NCHW' only"):
        contrib.cnn.DeformableConvolution(2, layout="NHWC")
    with pytest.raises(BlockError, match="adj belongs to transposed"):
        contrib.cnn.DeformableConvolution(2, adj=(1, 1))
    with pytest.raises(BlockError, match="DeformableConvolution: kernel_size must be an int or a tuple of 2 ints"):
        contrib.cnn.DeformableConvolution(2, kernel_size=(3, 3, 3))
    with pytest.raises(BlockError, match="in_channels 3 must be divisible by groups 2"):
        contrib.cnn.DeformableConvolution(2, groups=2, in_channels=3)


# ----------------------------------------------------------------------------- convolutional cells
def _conv1d(x: np.ndarray, w: np.ndarray, b: np.ndarray, pad: int) -> np.ndarray:
    """NCW cross-correlation, stride 1: out[n, o, t] = b[o] + sum_{c,k} w[o, c, k] * xpad[n, c, t + k]."""
    xpad = np.pad(x, ((0, 0), (0, 0), (pad, pad)))
    k = w.shape[2]
    width = xpad.shape[2] - k + 1
    cols = np.stack([xpad[:, :, t : t + k] for t in range(width)], axis=2)  # (N, C, T, K)
    return np.einsum("nctk,ock->not", cols, w) + b[None, :, None]


def test_conv1d_rnn_cell_step_matches_numpy() -> None:
    cell = contrib.rnn.Conv1DRNNCell((2, 6), 3, i2h_kernel=3, h2h_kernel=3)
    cell.initialize(mx.init.Uniform(0.5))
    x, h = _nd(2, 2, 6), _nd(2, 3, 4)  # no i2h padding: the state is 6 - 3 + 1 = 4 wide
    assert cell.state_info(2)[0]["shape"] == (2, 3, 4)
    out, states = cell(x, [h])
    p = _values(cell)
    expected = np.tanh(
        _conv1d(x.asnumpy(), p["i2h_weight"], p["i2h_bias"], 0)
        + _conv1d(h.asnumpy(), p["h2h_weight"], p["h2h_bias"], 1)
    )
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-4, atol=1e-5)
    assert states[0] is out


def test_conv1d_lstm_cell_step_matches_numpy() -> None:
    cell = contrib.rnn.Conv1DLSTMCell((2, 5), 2, i2h_kernel=3, h2h_kernel=1, i2h_pad=1)
    cell.initialize(mx.init.Uniform(0.5))
    x, h, c = _nd(1, 2, 5), _nd(1, 2, 5), _nd(1, 2, 5)
    out, (_, next_c) = cell(x, [h, c])
    p = _values(cell)
    gates = _conv1d(x.asnumpy(), p["i2h_weight"], p["i2h_bias"], 1) + _conv1d(
        h.asnumpy(), p["h2h_weight"], p["h2h_bias"], 0
    )
    i, f, g, o = np.split(gates, 4, axis=1)
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    expected_c = sig(f) * c.asnumpy() + sig(i) * np.tanh(g)
    np.testing.assert_allclose(next_c.asnumpy(), expected_c, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out.asnumpy(), sig(o) * np.tanh(expected_c), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "make",
    [
        lambda: contrib.rnn.Conv2DGRUCell((2, 4, 4), 2, 3, 3, i2h_pad=1, prefix="g_"),
        lambda: contrib.rnn.Conv2DLSTMCell((2, 4, 4), 2, 3, 3, i2h_pad=1, prefix="g_"),
    ],
    ids=["gru", "lstm"],
)
def test_conv_cell_hybridized_unroll_matches_imperative_with_gradients(make) -> None:
    x = mx.nd.array(np.random.RandomState(2).uniform(-1, 1, (2, 3, 2, 4, 4)).astype(np.float32))
    results = []
    for hybrid in (False, True):
        cell = make()
        mx.random.seed(11)  # the same weights in both runs
        cell.initialize(mx.init.Uniform(0.4))
        cell.hybridize(hybrid)
        with mx.autograd.record():
            outputs, _ = cell.unroll(3, x, merge_outputs=True)
        outputs.backward()
        results.append((outputs.asnumpy(), cell.i2h_weight.grad().asnumpy(), cell.h2h_weight.grad().asnumpy()))
    for imperative, hybridized in zip(*results, strict=True):
        np.testing.assert_allclose(imperative, hybridized, rtol=1e-4, atol=1e-5)


def test_conv_cell_argument_errors_name_the_cell() -> None:
    with pytest.raises(BlockError, match="Conv2DLSTMCell: h2h_kernel sizes must be odd"):
        contrib.rnn.Conv2DLSTMCell((2, 4, 4), 2, 3, (2, 3))
    with pytest.raises(BlockError, match="Conv1DGRUCell: i2h_kernel must be an int or a tuple of 1 ints"):
        contrib.rnn.Conv1DGRUCell((2, 4), 2, (3, 3), 3)
    with pytest.raises(BlockError, match="Conv3DRNNCell: input_shape is one step without the batch axis"):
        contrib.rnn.Conv3DRNNCell((1, 2, 4, 4, 4), 2, 1, 3)
    with pytest.raises(BlockError, match="Conv2DRNNCell: conv_layout"):
        contrib.rnn.Conv2DRNNCell((2, 4, 4), 2, 1, 3, conv_layout="NCW")


# ----------------------------------------------------------------------------- LSTMPCell
def test_lstmp_cell_step_matches_numpy() -> None:
    cell = contrib.rnn.LSTMPCell(4, 2, input_size=3)
    cell.initialize(mx.init.Uniform(0.5))
    x, r, c = _nd(2, 3), _nd(2, 2), _nd(2, 4)
    out, (next_r, next_c) = cell(x, [r, c])
    p = _values(cell)
    gates = x.asnumpy() @ p["i2h_weight"].T + p["i2h_bias"] + r.asnumpy() @ p["h2h_weight"].T + p["h2h_bias"]
    i, f, g, o = np.split(gates, 4, axis=1)
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    expected_c = sig(f) * c.asnumpy() + sig(i) * np.tanh(g)
    expected_r = (sig(o) * np.tanh(expected_c)) @ p["h2r_weight"].T
    np.testing.assert_allclose(next_c.asnumpy(), expected_c, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out.asnumpy(), expected_r, rtol=1e-4, atol=1e-5)
    assert next_r is out
    assert [s["shape"] for s in cell.state_info(5)] == [(5, 2), (5, 4)]
    with pytest.raises(BlockError, match="projection_size must be positive"):
        contrib.rnn.LSTMPCell(4, 0)


# ----------------------------------------------------------------------------- VariationalDropoutCell
@pytest.mark.parametrize("drop_states", [0.0, 0.3], ids=["unroll-path", "step-path"])
def test_variational_dropout_uses_one_mask_for_all_steps(drop_states: float) -> None:
    cell = contrib.rnn.VariationalDropoutCell(grnn.RNNCell(6, input_size=4), drop_outputs=0.5, drop_states=drop_states)
    cell.initialize(mx.init.Uniform(0.5))
    x = _nd(3, 5, 4)
    with mx.autograd.record(train_mode=True):
        outputs, _ = cell.unroll(5, x, merge_outputs=True)
    dropped = outputs.asnumpy() == 0  # (N, T, H): the same units are zero at every step
    assert dropped.any() and not dropped.all()
    for step in range(1, 5):
        np.testing.assert_array_equal(dropped[:, step], dropped[:, 0])


def test_variational_dropout_is_identity_when_predicting_and_masks_reset() -> None:
    base = grnn.GRUCell(3, input_size=2)
    cell = contrib.rnn.VariationalDropoutCell(base, drop_inputs=0.5, drop_outputs=0.5)
    cell.initialize()
    x = _nd(2, 4, 2)
    outputs, _ = cell.unroll(4, x, merge_outputs=True)
    base._modified = False  # only to compare with the bare cell in this test
    expected, _ = base.unroll(4, x, merge_outputs=True)
    np.testing.assert_allclose(outputs.asnumpy(), expected.asnumpy(), rtol=1e-6)
    base._modified = True
    with mx.autograd.record(train_mode=True):
        cell(x[:, 0], cell.begin_state(2))
    assert cell.drop_inputs_mask is not None
    cell.reset()
    assert cell.drop_inputs_mask is None and cell.drop_outputs_mask is None


def test_variational_dropout_errors() -> None:
    with pytest.raises(BlockError, match=r"drop_outputs must be in \[0, 1\)"):
        contrib.rnn.VariationalDropoutCell(grnn.RNNCell(2), drop_outputs=1.0)
    bidirectional = grnn.BidirectionalCell(grnn.RNNCell(2), grnn.RNNCell(2))
    with pytest.raises(BlockError, match="BidirectionalCell has no single state"):
        contrib.rnn.VariationalDropoutCell(bidirectional, drop_states=0.5)
