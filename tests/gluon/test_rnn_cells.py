"""gluon.rnn cells: a fused layer equals the unrolled cell stack with its weights; hybridize; the modifiers."""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework import autograd
from framework.gluon import rnn
from framework.gluon.block import BlockError

CELLS = {
    "rnn_tanh": lambda h, n: rnn.RNNCell(h, input_size=n),
    "lstm": lambda h, n: rnn.LSTMCell(h, input_size=n),
    "gru": lambda h, n: rnn.GRUCell(h, input_size=n),
}


def _layer(mode, hidden, layers, bidirectional, features):
    if mode == "lstm":
        return rnn.LSTM(hidden, layers, bidirectional=bidirectional, input_size=features)
    if mode == "gru":
        return rnn.GRU(hidden, layers, bidirectional=bidirectional, input_size=features)
    return rnn.RNN(hidden, layers, activation="tanh", bidirectional=bidirectional, input_size=features)


def _stack_like(layer, mode, hybrid):
    """A cell stack with a copy of ``layer``'s weights (l0_i2h_weight -> stack[0](.l_cell).i2h_weight)."""
    stack = rnn.HybridSequentialRNNCell() if hybrid else rnn.SequentialRNNCell()
    hidden, features = layer._hidden_size, layer._input_size
    for index in range(layer._num_layers):
        width = features if index == 0 else hidden * layer._dir
        if layer._dir == 2:
            stack.add(rnn.BidirectionalCell(CELLS[mode](hidden, width), CELLS[mode](hidden, width)))
        else:
            stack.add(CELLS[mode](hidden, width))
    stack.initialize()
    for index in range(layer._num_layers):
        for direction in "lr"[: layer._dir]:
            cell = stack[index]
            if layer._dir == 2:
                cell = cell._children[f"{direction}_cell"]
            for name in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"):
                getattr(cell, name).set_data(getattr(layer, f"{direction}{index}_{name}").data())
    return stack


@pytest.mark.parametrize(
    ("mode", "layers", "bidirectional"),
    [("rnn_tanh", 2, False), ("lstm", 2, True), ("gru", 1, True), ("lstm", 1, False)],
    ids=["tanh-2", "lstm-2-bi", "gru-bi", "lstm"],
)
def test_fused_layer_equals_the_unrolled_cell_stack(mode, layers, bidirectional):
    layer = _layer(mode, 4, layers, bidirectional, 3)
    layer.initialize(mx.init.Normal(0.5))
    x = mx.nd.array(np.random.default_rng(4).standard_normal((5, 2, 3)).astype(np.float32))  # TNC
    out, states = layer(x, layer.begin_state(2))
    stack = _stack_like(layer, mode, hybrid=False)
    cell_out, cell_states = stack.unroll(5, x, layout="TNC", merge_outputs=True)
    np.testing.assert_allclose(cell_out.asnumpy(), out.asnumpy(), rtol=1e-4, atol=1e-5)
    # the layer stacks states per (layer, direction); the cells list them per cell
    hidden = np.stack([s.asnumpy() for s in cell_states[:: 2 if mode == "lstm" else 1]])
    np.testing.assert_allclose(hidden, states[0].asnumpy(), rtol=1e-4, atol=1e-5)


def test_stepping_cells_equals_unroll_and_hybridized_cells_agree():
    layer = rnn.GRU(3, 2, input_size=2)
    layer.initialize(mx.init.Normal(0.5))
    x = mx.nd.array(np.random.default_rng(5).standard_normal((2, 4, 2)).astype(np.float32))  # NTC
    stack = _stack_like(layer, "gru", hybrid=True)
    outputs, _ = stack.unroll(4, x, merge_outputs=False)
    assert isinstance(outputs, list) and len(outputs) == 4
    states = stack.begin_state(2)
    for t in range(4):
        step, states = stack(x[:, t, :], states)
        np.testing.assert_allclose(step.asnumpy(), outputs[t].asnumpy(), rtol=1e-5, atol=1e-6)
    stack.hybridize()
    hybrid_out, _ = stack.unroll(4, x, merge_outputs=True)
    np.testing.assert_allclose(hybrid_out.asnumpy(), np.stack([o.asnumpy() for o in outputs], 1), rtol=1e-5)
    np.testing.assert_allclose(
        hybrid_out.asnumpy(), layer(mx.nd.array(x.asnumpy().transpose(1, 0, 2))).asnumpy().transpose(1, 0, 2),
        rtol=1e-4, atol=1e-5,
    )  # fmt: skip


def test_gradients_flow_through_unroll():
    cell = rnn.LSTMCell(3, input_size=2)
    cell.initialize()
    x = mx.nd.ones((2, 4, 2))
    with autograd.record():
        out, _ = cell.unroll(4, x, merge_outputs=True)
        loss = out.sum()
    loss.backward()
    assert all(np.abs(p.grad().asnumpy()).sum() > 0 for p in cell.collect_params().values())


def test_valid_length_masks_outputs_and_picks_last_states():
    cell = rnn.RNNCell(3, input_size=2)
    cell.initialize(mx.init.Normal(0.5))
    x = mx.nd.array(np.random.default_rng(6).standard_normal((2, 4, 2)).astype(np.float32))
    full, _ = cell.unroll(4, x, merge_outputs=True)
    out, states = cell.unroll(4, x, merge_outputs=True, valid_length=mx.nd.array([2, 4]))
    out, full = out.asnumpy(), full.asnumpy()
    np.testing.assert_allclose(out[0, :2], full[0, :2], rtol=1e-6)
    assert np.all(out[0, 2:] == 0)
    np.testing.assert_allclose(out[1], full[1], rtol=1e-6)
    np.testing.assert_allclose(states[0].asnumpy(), np.stack([full[0, 1], full[1, 3]]), rtol=1e-6)


def test_modifier_cells():
    base = rnn.GRUCell(2, input_size=2)
    residual = rnn.ResidualCell(base)
    residual.initialize()
    x = mx.nd.ones((3, 2))
    out, _ = residual(x, residual.begin_state(3))
    plain, _ = base.__class__.hybrid_forward(
        base, mx.nd, x, [mx.nd.zeros((3, 2))], *[p.data() for p in base.collect_params().values()]
    )
    np.testing.assert_allclose(out.asnumpy(), plain.asnumpy() + 1, rtol=1e-6)
    with pytest.raises(BlockError, match="modifier cell"):
        base.begin_state(3)
    with pytest.raises(BlockError, match="modified twice"):
        rnn.ZoneoutCell(base)
    zoneout = rnn.ZoneoutCell(rnn.LSTMCell(2, input_size=2), zoneout_outputs=0.5, zoneout_states=0.5)
    zoneout.initialize()
    predicted, _ = zoneout.unroll(3, mx.nd.ones((1, 3, 2)), merge_outputs=True)  # predicting: nothing zoned out
    reference = zoneout.base_cell
    reference._modified = False
    expected, _ = reference.unroll(3, mx.nd.ones((1, 3, 2)), merge_outputs=True)
    np.testing.assert_allclose(predicted.asnumpy(), expected.asnumpy(), rtol=1e-6)
    dropout = rnn.DropoutCell(0.5)
    assert dropout.state_info() == []
    with autograd.record():
        dropped, _ = dropout(mx.nd.ones((100, 10)), [])
    values = set(np.unique(dropped.asnumpy()).tolist())
    assert values <= {0.0, 2.0} and len(values) == 2


def test_cell_names_and_errors_follow_mxnet():
    for cls, alias in ((rnn.RNNCell, "rnn"), (rnn.LSTMCell, "lstm"), (rnn.GRUCell, "gru")):
        names = list(cls(3).collect_params().keys())
        assert [n.split("_", 1)[1] for n in names] == ["i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"]
        assert names[0].startswith(alias) and names[0][len(alias)].isdigit()
    assert rnn.LSTMCell(3).state_info(2) == [{"shape": (2, 3), "__layout__": "NC"}] * 2
    bi = rnn.BidirectionalCell(rnn.GRUCell(2), rnn.GRUCell(2))
    with pytest.raises(BlockError, match="unroll"):
        bi(mx.nd.ones((1, 2)), bi.begin_state(1))
    with pytest.raises(BlockError, match="steps"):
        rnn.GRUCell(2).unroll(3, mx.nd.ones((1, 4, 2)))
    with pytest.raises(BlockError, match="rate"):
        rnn.DropoutCell(1.5)


def test_symbolic_unroll_builds_a_graph_that_infers_its_shapes():
    cell = rnn.LSTMCell(3, input_size=2)
    out, states = cell.unroll(4, mx.sym.var("data"), merge_outputs=True)
    assert out.list_arguments()[0] == "data" and len(states) == 2
    _, out_shapes, _ = out.infer_shape(data=(2, 4, 2))
    assert out_shapes == [(2, 4, 3)]


def test_zoneout_in_training_keeps_previous_values_at_random():
    cell = rnn.ZoneoutCell(rnn.GRUCell(4, input_size=3), zoneout_outputs=0.5)
    cell.initialize(mx.init.Normal(0.5))
    x = mx.nd.array(np.random.default_rng(7).standard_normal((200, 3)).astype(np.float32))
    cell.reset()
    predicted, _ = cell(x, cell.begin_state(200))
    cell.reset()
    with autograd.record():  # training: each output unit keeps its previous value (zeros at step 0) with p=0.5
        trained, _ = cell(x, cell.begin_state(200))
    predicted, trained = predicted.asnumpy(), trained.asnumpy()
    kept_old = trained == 0
    assert 0.3 < kept_old.mean() < 0.7
    np.testing.assert_allclose(trained[~kept_old], predicted[~kept_old], rtol=1e-6)
