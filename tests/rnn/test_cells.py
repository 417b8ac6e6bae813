"""``mx.rnn`` cells: names and values as MXNet 1.9.1's, and the recurrences checked against NumPy.

tests/data/mxnet_1_9_1/rnn/reference.json was written by MXNet 1.9.1 (make_rnn_reference.py there):
the arguments, outputs and forward values of unrolled cells for fixed weights, and the packed
layout of FusedRNNCell. The NumPy references below are written from the equations, independently
of the symbols.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import framework as mx
from framework.rnn import RNNCellError

REFERENCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "mxnet_1_9_1", "rnn")


def _reference() -> dict:
    with open(os.path.join(REFERENCE, "reference.json"), encoding="utf-8") as handle:
        return json.load(handle)


def _stack_cell():
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(4, prefix="s0_"))
    stack.add(mx.rnn.DropoutCell(0.5, prefix="drop_"))
    stack.add(mx.rnn.RNNCell(3, prefix="s1_"))
    return stack


CELLS = {
    "rnn_tanh": lambda: mx.rnn.RNNCell(4, prefix="rnn_"),
    "rnn_relu": lambda: mx.rnn.RNNCell(4, activation="relu", prefix="rr_"),
    "lstm": lambda: mx.rnn.LSTMCell(4, prefix="lstm_"),
    "gru": lambda: mx.rnn.GRUCell(4, prefix="gru_"),
    "stack": _stack_cell,
    "bidirectional": lambda: mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(3, prefix="l_"), mx.rnn.GRUCell(3, prefix="r_")),
    "residual": lambda: mx.rnn.ResidualCell(mx.rnn.GRUCell(5, prefix="res_")),
    "fused_unfused": lambda: mx.rnn.FusedRNNCell(3, num_layers=2, mode="gru", bidirectional=True, prefix="f_").unfuse(),
}


def _flat(states):
    return [s for state in states for s in (state if isinstance(state, list) else [state])]


def _forward(group, shape, seed=7):
    """Forward values for weights drawn as the reference script draws them."""
    arg_shapes, _, _ = group.infer_shape(data=tuple(shape))
    rng = np.random.RandomState(seed)
    args = {
        name: mx.nd.array(rng.uniform(-0.5, 0.5, arg_shape).astype(np.float32))
        for name, arg_shape in zip(group.list_arguments(), arg_shapes, strict=True)
    }
    exe = group.bind(mx.cpu(), args)
    return [out.asnumpy() for out in exe.forward(is_train=False)], {k: v.asnumpy() for k, v in args.items()}


@pytest.mark.parametrize("case", sorted(CELLS))
def test_unrolled_cells_match_mxnet(case):
    reference = _reference()
    expected = reference["cases"][case]
    outputs, states = CELLS[case]().unroll(3, mx.sym.Variable("data"), layout="NTC", merge_outputs=False)
    group = mx.sym.Group(list(outputs) + _flat(states))
    assert group.list_arguments() == expected["arguments"]
    assert group.list_outputs() == expected["outputs"]
    values, _ = _forward(group, reference["shape"])
    assert len(values) == len(expected["values"])
    for got, want in zip(values, expected["values"], strict=True):
        np.testing.assert_allclose(got, np.array(want), rtol=1e-5, atol=1e-6)


CONV_CELLS = {
    "conv_rnn": lambda: mx.rnn.ConvRNNCell((2, 2, 5, 5), 3, prefix="crnn_"),
    "conv_lstm": lambda: mx.rnn.ConvLSTMCell((2, 2, 5, 5), 2, i2h_kernel=(3, 3), i2h_pad=(1, 1), prefix="clstm_"),
    "conv_gru": lambda: mx.rnn.ConvGRUCell((2, 2, 5, 5), 2, h2h_kernel=(5, 5), activation="tanh", prefix="cgru_"),
}


@pytest.mark.parametrize("case", sorted(CONV_CELLS))
def test_unrolled_convolutional_cells_match_mxnet(case):
    reference = _reference()
    expected = reference["conv_cases"][case]
    cell = CONV_CELLS[case]()
    assert cell.state_info[0]["shape"][0] == 0 and cell.state_info[0]["__layout__"] == "NCHW"
    outputs, states = cell.unroll(3, mx.sym.Variable("data"), layout="NTC", merge_outputs=False)
    group = mx.sym.Group(list(outputs) + _flat(states))
    assert group.list_arguments() == expected["arguments"]
    assert group.list_outputs() == expected["outputs"]
    values, _ = _forward(group, reference["conv_shape"])
    for got, want in zip(values, expected["values"], strict=True):
        np.testing.assert_allclose(got, np.array(want), rtol=1e-5, atol=1e-6)


def test_convolutional_cell_rejects_an_even_h2h_kernel():
    with pytest.raises(RNNCellError, match="h2h_kernel sizes must be odd"):
        mx.rnn.ConvRNNCell((1, 2, 5, 5), 3, h2h_kernel=(2, 3))


@pytest.mark.parametrize("index", [0, 1, 2])
def test_fused_packed_layout_matches_mxnet(index):
    layout = _reference()["fused_layouts"][index]
    cell = mx.rnn.FusedRNNCell(
        layout["num_hidden"],
        num_layers=layout["num_layers"],
        mode=layout["mode"],
        bidirectional=layout["bidirectional"],
        prefix="p_",
    )
    packed = mx.nd.arange(layout["total"])
    unpacked = cell.unpack_weights({"p_parameters": packed})
    assert [[name, list(arr.shape), float(arr.asnumpy().reshape(-1)[0])] for name, arr in unpacked.items()] == layout[
        "slices"
    ]
    repacked = cell.pack_weights(unpacked)
    assert list(repacked) == ["p_parameters"]
    np.testing.assert_array_equal(repacked["p_parameters"].asnumpy(), packed.asnumpy())


# ----------------------------------------------------------------------------- NumPy recurrences
def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _numpy_unroll(kind, args, prefix, data):
    w_i, b_i = args[f"{prefix}i2h_weight"], args[f"{prefix}i2h_bias"]
    w_h, b_h = args[f"{prefix}h2h_weight"], args[f"{prefix}h2h_bias"]
    hidden = w_h.shape[1]
    h = np.zeros((data.shape[0], hidden))
    c = np.zeros_like(h)
    outputs = []
    for t in range(data.shape[1]):
        x = data[:, t]
        xi, hh = x @ w_i.T + b_i, h @ w_h.T + b_h
        if kind == "rnn":
            h = np.tanh(xi + hh)
        elif kind == "lstm":
            i, f, g, o = np.split(xi + hh, 4, axis=1)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
            h = _sigmoid(o) * np.tanh(c)
        else:  # gru: gates r, z, n
            xr, xz, xn = np.split(xi, 3, axis=1)
            hr, hz, hn = np.split(hh, 3, axis=1)
            r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
            n = np.tanh(xn + r * hn)
            h = (1 - z) * n + z * h
        outputs.append(h)
    return np.stack(outputs, axis=1), h, c


@pytest.mark.parametrize(
    ("kind", "cell"),
    [
        ("rnn", lambda: mx.rnn.RNNCell(6, prefix="rnn_")),
        ("lstm", lambda: mx.rnn.LSTMCell(6, prefix="rnn_")),
        ("gru", lambda: mx.rnn.GRUCell(6, prefix="rnn_")),
    ],
)
def test_unroll_computes_the_recurrence(kind, cell):
    outputs, states = cell().unroll(5, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    group = mx.sym.Group([outputs, *states])
    values, args = _forward(group, (3, 5, 4), seed=11)
    want_outputs, want_h, want_c = _numpy_unroll(kind, args, "rnn_", args["data"])
    np.testing.assert_allclose(values[0], want_outputs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(values[1], want_h, rtol=1e-5, atol=1e-6)
    if kind == "lstm":
        np.testing.assert_allclose(values[2], want_c, rtol=1e-5, atol=1e-6)


def test_time_major_layout_gives_the_same_values():
    batch_major, _ = mx.rnn.LSTMCell(3, prefix="a_").unroll(4, mx.sym.Variable("data"), merge_outputs=True)
    time_major, _ = mx.rnn.LSTMCell(3, prefix="a_").unroll(4, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    values_nt, args = _forward(batch_major, (2, 4, 5))
    exe = time_major.bind(
        mx.cpu(), {k: mx.nd.array(v.transpose(1, 0, 2) if k == "data" else v) for k, v in args.items()}
    )
    np.testing.assert_allclose(exe.forward()[0].asnumpy().transpose(1, 0, 2), values_nt[0], rtol=1e-5, atol=1e-6)


def test_unpack_and_pack_weights_split_gates_in_mxnet_order():
    cell = mx.rnn.LSTMCell(2, prefix="lstm_")
    weights = {
        "lstm_i2h_weight": mx.nd.array(np.arange(24).reshape(8, 3)),
        "lstm_i2h_bias": mx.nd.arange(8),
        "lstm_h2h_weight": mx.nd.array(np.arange(16).reshape(8, 2)),
        "lstm_h2h_bias": mx.nd.arange(8),
    }
    unpacked = cell.unpack_weights(weights)
    assert sorted(unpacked) == sorted(
        f"lstm_{group}_{gate}_{kind}" for group in ("i2h", "h2h") for gate in "ifco" for kind in ("weight", "bias")
    )
    np.testing.assert_array_equal(unpacked["lstm_i2h_f_bias"].asnumpy(), [2, 3])
    packed = cell.pack_weights(unpacked)
    for name, value in weights.items():
        np.testing.assert_array_equal(packed[name].asnumpy(), value.asnumpy())


def test_lstm_forget_bias_is_initialised():
    cell = mx.rnn.LSTMCell(3, prefix="lstm_", forget_bias=2.5)
    out, _ = cell.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    mod = mx.mod.Module(out, data_names=["data"], label_names=None)
    mod.bind(data_shapes=[("data", (1, 2, 4))])
    mod.init_params(mx.init.Xavier())
    bias = mod.get_params()[0]["lstm_i2h_bias"].asnumpy()
    np.testing.assert_array_equal(bias, [0, 0, 0, 2.5, 2.5, 2.5, 0, 0, 0, 0, 0, 0])


def test_fused_initializer_sets_forget_bias_and_zero_biases():
    cell = mx.rnn.FusedRNNCell(2, num_layers=1, mode="lstm", prefix="f_", forget_bias=1.5)
    arr = mx.nd.zeros((cell.pack_weights(_named_zeros(cell, 3))["f_parameters"].shape[0],))
    # as a Module does it: the variable's __init__ attribute names the initializer (by its JSON)
    fused_init = mx.init.FusedRNN(mx.init.One(), 2, 1, "lstm", forget_bias=1.5)
    mx.init.Uniform()(mx.init.InitDesc("f_parameters", attrs={"__init__": fused_init.dumps()}), arr)
    unpacked = cell.unpack_weights({"f_parameters": arr})
    np.testing.assert_array_equal(unpacked["f_l0_i2h_f_bias"].asnumpy(), [1.5, 1.5])
    np.testing.assert_array_equal(unpacked["f_l0_h2h_i_bias"].asnumpy(), [0, 0])
    np.testing.assert_array_equal(unpacked["f_l0_i2h_c_weight"].asnumpy(), np.ones((2, 3)))


def _named_zeros(cell, num_input):
    slices, _ = cell._layout(num_input)
    return {name: mx.nd.zeros(shape) for name, _, _, shape in slices}


def test_fused_cell_weights_load_into_the_unfused_cells():
    """unpack (fused names) -> pack per unfused cell: the stack computes with the fused model's weights."""
    fused = mx.rnn.FusedRNNCell(3, num_layers=2, mode="lstm", prefix="f_")
    stack = fused.unfuse()
    named = {name: mx.nd.array(np.random.uniform(-1, 1, arr.shape)) for name, arr in _named_zeros(fused, 4).items()}
    unpacked = fused.unpack_weights(fused.pack_weights(named))
    per_cell = stack.pack_weights(unpacked)
    assert sorted(per_cell) == sorted(
        f"f_l{layer}_{group}_{kind}" for layer in (0, 1) for group in ("i2h", "h2h") for kind in ("weight", "bias")
    )
    np.testing.assert_array_equal(per_cell["f_l1_h2h_weight"].asnumpy()[3:6], named["f_l1_h2h_f_weight"].asnumpy())


# ----------------------------------------------------------------------------- modifiers and failures
def test_dropout_and_zoneout_are_identity_in_inference():
    base, _ = mx.rnn.GRUCell(3, prefix="g_").unroll(3, mx.sym.Variable("data"), merge_outputs=True)
    zoned, _ = mx.rnn.ZoneoutCell(mx.rnn.GRUCell(3, prefix="g_"), 0.5, 0.5).unroll(
        3, mx.sym.Variable("data"), merge_outputs=True
    )
    assert zoned.list_arguments() == base.list_arguments()
    values, args = _forward(base, (2, 3, 4))
    exe = zoned.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in args.items()})
    np.testing.assert_allclose(exe.forward(is_train=False)[0].asnumpy(), values[0], rtol=1e-6)


def test_zoneout_keeps_some_previous_outputs_in_training():
    cell = mx.rnn.ZoneoutCell(mx.rnn.RNNCell(50, prefix="z_"), zoneout_outputs=0.5)
    out, _ = cell.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    plain, _ = mx.rnn.RNNCell(50, prefix="z_").unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    values, args = _forward(plain, (4, 2, 3))
    exe = out.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in args.items()})
    got = exe.forward(is_train=True)[0].asnumpy()
    # step 0: a kept "previous output" is 0; about half the units are zoned out
    zoned_out = np.isclose(got[:, 0], 0.0) & ~np.isclose(values[0][:, 0], 0.0)
    assert 0.2 < zoned_out.mean() < 0.8


def test_modified_cell_cannot_be_used_directly():
    base = mx.rnn.LSTMCell(3)
    mx.rnn.ResidualCell(base)
    with pytest.raises(RNNCellError, match="modifier cell"):
        base.begin_state()


def test_bidirectional_and_fused_cells_cannot_be_stepped():
    bi = mx.rnn.BidirectionalCell(mx.rnn.RNNCell(2, prefix="l_"), mx.rnn.RNNCell(2, prefix="r_"))
    with pytest.raises(NotImplementedError, match="unroll"):
        bi(mx.sym.Variable("x"), bi.begin_state())
    with pytest.raises(RNNCellError, match="FusedRNNCell cannot be stepped"):
        mx.rnn.ZoneoutCell(mx.rnn.FusedRNNCell(2), 0.1)


def test_bad_sequences_are_named():
    cell = mx.rnn.RNNCell(2)
    with pytest.raises(RNNCellError, match="2 input symbols for length=3"):
        cell.unroll(3, [mx.sym.Variable("a"), mx.sym.Variable("b")])
    with pytest.raises(RNNCellError, match="layout"):
        cell.unroll(3, mx.sym.Variable("data"), layout="NC")
    with pytest.raises(RNNCellError, match="mode"):
        mx.rnn.FusedRNNCell(3, mode="lstmish")


def test_shared_params_tie_two_cells():
    params = mx.rnn.RNNParams("tied_")
    first, second = mx.rnn.LSTMCell(3, prefix="tied_", params=params), mx.rnn.LSTMCell(3, prefix="tied_", params=params)
    out1, _ = first.unroll(2, mx.sym.Variable("a"))
    out2, _ = second.unroll(2, mx.sym.Variable("b"))
    group = mx.sym.Group(out1 + out2)
    assert [n for n in group.list_arguments() if n.startswith("tied_")] == [
        "tied_i2h_weight",
        "tied_i2h_bias",
        "tied_h2h_weight",
        "tied_h2h_bias",
    ]
    with pytest.raises(RNNCellError, match="not both"):
        stack = mx.rnn.SequentialRNNCell(params=mx.rnn.RNNParams("s_"))
        stack.add(mx.rnn.LSTMCell(3, params=params))


@pytest.mark.parametrize(
    ("mode", "bidirectional", "num_layers"),
    [("lstm", False, 2), ("gru", True, 1), ("rnn_tanh", True, 2), ("rnn_relu", False, 1)],
)
@pytest.mark.filterwarnings("ignore:NTC layout detected")
def test_fused_cell_computes_what_its_unfused_stack_computes(mode, bidirectional, num_layers):
    fused = mx.rnn.FusedRNNCell(
        3, num_layers=num_layers, mode=mode, bidirectional=bidirectional, prefix="f_", get_next_state=True
    )
    fused_out, fused_states = fused.unroll(4, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    assert len(fused_states) == (2 if mode == "lstm" else 1)
    values, args = _forward(fused_out, (2, 4, 5))
    stack = fused.unfuse()
    stack_out, _ = stack.unroll(4, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    per_cell = stack.pack_weights(fused.unpack_weights({"f_parameters": mx.nd.array(args["f_parameters"])}))
    per_cell["data"] = mx.nd.array(args["data"])
    exe = stack_out.bind(mx.cpu(), {name: per_cell[name] for name in stack_out.list_arguments()})
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), values[0], rtol=1e-5, atol=1e-6)


def test_begin_state_as_variables_and_the_deprecated_rnn_unroll():
    cell = mx.rnn.LSTMCell(3, prefix="lstm_")
    assert cell.state_shape == [(0, 3), (0, 3)]
    states = cell.begin_state(func=mx.sym.Variable)
    assert [s.name for s in states] == ["lstm_begin_state_0", "lstm_begin_state_1"]
    assert states[0].attr("__layout__") == "NC"
    outputs, _ = cell.unroll(2, mx.sym.Variable("data"), begin_state=states, merge_outputs=True)
    assert "lstm_begin_state_1" in outputs.list_arguments()
    with pytest.warns(DeprecationWarning, match="rnn_unroll is deprecated"):
        outputs, _ = mx.rnn.rnn_unroll(mx.rnn.GRUCell(2, prefix="g_"), 2, mx.sym.Variable("data"))
    assert len(outputs) == 2
