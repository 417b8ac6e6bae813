"""gluon.rnn RNN, LSTM, GRU: MXNet's names, NumPy recurrences, MXNet 1.9.1's files, hybridize, states."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import framework as mx
from framework import autograd
from framework.gluon import rnn
from framework.gluon.block import BlockError

HERE = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "gluon_rnn"
_spec = importlib.util.spec_from_file_location("make_rnn_files", HERE / "make_rnn_files.py")
assert _spec is not None and _spec.loader is not None
references = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(references)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _numpy_layer(mode, params, prefix, x, h, c=None):
    """One direction of one layer over ``x`` (T, N, C), MXNet's gate orders; returns outputs and final states."""
    wi, wh = params[prefix + "i2h_weight"], params[prefix + "h2h_weight"]
    bi, bh = params[prefix + "i2h_bias"], params[prefix + "h2h_bias"]
    outs = []
    for x_t in x:
        gi, gh = x_t @ wi.T + bi, h @ wh.T + bh
        if mode == "lstm":
            i, f, g, o = np.split(gi + gh, 4, axis=1)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
            h = _sigmoid(o) * np.tanh(c)
        elif mode == "gru":
            ri, zi, ni = np.split(gi, 3, axis=1)
            rh, zh, nh = np.split(gh, 3, axis=1)
            r, z = _sigmoid(ri + rh), _sigmoid(zi + zh)
            n = np.tanh(ni + r * nh)
            h = (1 - z) * n + z * h
        else:
            h = np.tanh(gi + gh) if mode == "rnn_tanh" else np.maximum(gi + gh, 0)
        outs.append(h)
    return np.stack(outs), h, c


def _params_of(layer):
    return {name[len(layer.prefix) :]: p.data().asnumpy() for name, p in layer.collect_params().items()}


@pytest.mark.parametrize(
    ("factory", "mode"),
    [
        (lambda: rnn.RNN(4, num_layers=2), "rnn_relu"),
        (lambda: rnn.RNN(4, activation="tanh", bidirectional=True), "rnn_tanh"),
        (lambda: rnn.LSTM(4, num_layers=2, bidirectional=True), "lstm"),
        (lambda: rnn.GRU(4, num_layers=2), "gru"),
    ],
    ids=["relu", "tanh-bi", "lstm-2-bi", "gru-2"],
)
def test_layers_match_a_numpy_recurrence(factory, mode):
    layer = factory()
    layer.initialize(mx.init.Normal(0.5))
    x = np.random.default_rng(1).standard_normal((5, 2, 3)).astype(np.float32)
    out = layer(mx.nd.array(x)).asnumpy()
    params = _params_of(layer)
    seq = x
    for layer_index in range(layer._num_layers):
        outputs = []
        for direction in "lr"[: layer._dir]:
            zeros = np.zeros((2, 4), np.float32)
            inputs = seq if direction == "l" else seq[::-1]
            ys, _, _ = _numpy_layer(mode, params, f"{direction}{layer_index}_", inputs, zeros, zeros)
            outputs.append(ys if direction == "l" else ys[::-1])
        seq = np.concatenate(outputs, axis=2)
    np.testing.assert_allclose(out, seq, rtol=1e-4, atol=1e-5)


def test_parameter_names_and_shapes_follow_mxnet():
    layer = rnn.LSTM(5, num_layers=2, bidirectional=True, input_size=3)
    shapes = {name[len(layer.prefix) :]: p.shape for name, p in layer.collect_params().items()}
    assert shapes["l0_i2h_weight"] == (20, 3) and shapes["r0_h2h_weight"] == (20, 5)
    assert shapes["l1_i2h_weight"] == (20, 10) and shapes["r1_h2h_bias"] == (20,)
    assert len(shapes) == 16
    projected = rnn.LSTM(6, projection_size=2)
    assert projected.l0_h2r_weight.shape == (2, 6) and projected.l0_h2h_weight.shape == (24, 2)
    assert repr(rnn.GRU(7, num_layers=2, input_size=3)) == "GRU(3 -> 7, TNC, num_layers=2)"


@pytest.mark.parametrize("name", sorted(references.LAYERS))
def test_mxnet_1_9_1_parameter_files_load_and_agree(name):
    cls, kwargs = references.LAYERS[name]
    layer = getattr(rnn, cls)(**kwargs)
    layer.load_parameters(str(HERE / f"{name}.params"))
    out = layer(mx.nd.array(np.load(HERE / "x.npy")))
    np.testing.assert_allclose(out.asnumpy(), np.load(HERE / f"{name}_out.npy"), rtol=1e-4, atol=1e-5)


def test_saved_names_are_mxnets_unfused_ones(tmp_path):
    layer = rnn.GRU(3, bidirectional=True, input_size=2)
    layer.initialize()
    layer.save_parameters(str(tmp_path / "gru.params"))
    names = set(mx.nd.load(str(tmp_path / "gru.params")))
    assert "_unfused.0.l_cell.i2h_weight" in names and "_unfused.0.r_cell.h2h_bias" in names


def _run(layer, x, states, hybridize):
    layer.hybridize(hybridize)
    x = x.copy()
    x.attach_grad()
    with autograd.record():
        out, new_states = layer(x, states)
        total = (out * out).sum() + sum((s * s).sum() for s in new_states)
    total.backward()
    grads = [p.grad().asnumpy().copy() for p in layer.collect_params().values()]
    return [out.asnumpy(), *[s.asnumpy() for s in new_states], x.grad.asnumpy().copy(), *grads]


@pytest.mark.parametrize(
    "factory",
    [lambda: rnn.LSTM(4, layout="NTC", bidirectional=True), lambda: rnn.GRU(4, num_layers=2)],
)
def test_imperative_and_hybridized_agree_with_states(factory):
    layer = factory()
    layer.initialize(mx.init.Normal(0.3))
    x = mx.nd.array(np.random.default_rng(2).standard_normal((3, 5, 2)).astype(np.float32))
    batch = x.shape[layer._layout.find("N")]
    states = [mx.nd.array(np.full(info["shape"], 0.1, np.float32)) for info in layer.state_info(batch)]
    imperative = _run(layer, x, states, False)
    hybridized = _run(layer, x, states, True)
    for a, b in zip(imperative, hybridized, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_states_are_returned_only_when_given():
    layer = rnn.LSTM(4)
    layer.initialize()
    x = mx.nd.ones((3, 2, 5))
    assert isinstance(layer(x), mx.nd.NDArray)
    out, states = layer(x, layer.begin_state(2))
    assert out.shape == (3, 2, 4) and [s.shape for s in states] == [(1, 2, 4), (1, 2, 4)]
    # the final hidden state is the last output step
    np.testing.assert_allclose(states[0].asnumpy()[0], out.asnumpy()[-1], rtol=1e-6)


def test_bad_arguments_are_named():
    with pytest.raises(BlockError, match="layout"):
        rnn.GRU(4, layout="CTN")
    with pytest.raises(BlockError, match="activation"):
        rnn.RNN(4, activation="sigmoid")
    layer = rnn.RNN(4)
    layer.initialize()
    # before the first batch, the traced graph's shape inference meets the bad state
    with pytest.raises(BlockError, match="rnn.*RNN state has 3 along axis 1, expected 2"):
        layer(mx.nd.ones((3, 2, 5)), mx.nd.zeros((1, 3, 4)))
    layer(mx.nd.ones((3, 2, 5)))  # initialized: the layer's own check names the state
    with pytest.raises(BlockError, match="invalid recurrent state shape"):
        layer(mx.nd.ones((3, 2, 5)), mx.nd.zeros((1, 3, 4)))


@pytest.mark.parametrize("hybridize", [False, True])
def test_lstm_without_input_size_inside_a_container_infers_its_weights(hybridize):
    """The container is traced as a whole: the LSTM's input size comes through Reshape's reverse inference."""
    net = mx.gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(8, flatten=False), rnn.LSTM(6, num_layers=2, bidirectional=True))
        net.add(mx.gluon.nn.Dense(3, flatten=False))
    net.initialize()
    if hybridize:
        net.hybridize()
    x = mx.nd.array(np.random.rand(5, 2, 4))
    out = net(x)
    assert out.shape == (5, 2, 3)
    params = net.collect_params()
    assert params[net.prefix + "lstm0_l0_i2h_weight"].shape == (24, 8)
    assert params[net.prefix + "lstm0_r1_i2h_weight"].shape == (24, 12)
    imperative = mx.gluon.nn.HybridSequential(prefix=net.prefix)
    with imperative.name_scope():
        imperative.add(mx.gluon.nn.Dense(8, flatten=False, in_units=4), rnn.LSTM(6, 2, bidirectional=True))
        imperative.add(mx.gluon.nn.Dense(3, flatten=False, in_units=12))
    imperative.initialize()
    imperative(x)
    for name, param in imperative.collect_params().items():
        param.set_data(params[name].data())
    np.testing.assert_allclose(imperative(x).asnumpy(), out.asnumpy(), rtol=1e-4, atol=1e-6)
