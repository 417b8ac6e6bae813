"""The fused ``RNN`` operator and ``_rnn_param_concat``: forward against a step-by-step NumPy
reference, BPTT against finite differences, req, inference both ways, parameter errors,
variable lengths, clipping, dropout, the packed layout and the symbol front end.

Agreement with MXNet 1.9.1 itself is checked in test_rnn_mxnet.py.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.operator.rnn.layout import RNNShape, input_size_from_param_size, packed_slices, param_size, unpack
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req

nd = mx.nd
MODES = ["rnn_relu", "rnn_tanh", "lstm", "gru"]


# ----------------------------------------------------------------------------- NumPy reference
def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _reference(params: dict, data, packed, state, state_cell=None, lengths=None):
    """The fused RNN one sample and one step at a time (plain loops: slow and obvious)."""
    mode, layers = params["mode"], params["num_layers"]
    dirs = 2 if params.get("bidirectional") else 1
    clip = (params.get("lstm_state_clip_min"), params.get("lstm_state_clip_max"))
    spec = RNNShape(mode, layers, params["state_size"], data.shape[2], dirs == 2, params.get("projection_size"))
    weights = unpack(spec, packed)
    steps, batch = data.shape[:2]
    lengths = [steps] * batch if lengths is None else [int(n) for n in lengths]
    width = spec.output_size
    hy, cy = np.zeros(state.shape), None if state_cell is None else np.zeros(state_cell.shape)
    x = data.astype(np.float64)
    for layer in range(layers):
        y = np.zeros((steps, batch, dirs * width))
        for d in range(dirs):
            w = weights[(layer, d)]
            k = layer * dirs + d
            for b in range(batch):
                h = state[k, b].astype(np.float64)
                c = None if state_cell is None else state_cell[k, b].astype(np.float64)
                order = range(lengths[b] - 1, -1, -1) if d else range(lengths[b])
                for t in order:
                    gi = w["i2h_weight"] @ x[t, b] + w["i2h_bias"]
                    gh = w["h2h_weight"] @ h + w["h2h_bias"]
                    if mode == "rnn_tanh":
                        h = np.tanh(gi + gh)
                    elif mode == "rnn_relu":
                        h = np.maximum(gi + gh, 0)
                    elif mode == "lstm":
                        i, f, g, o = np.split(gi + gh, 4)
                        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
                        if clip[0] is not None:
                            c = np.clip(c, *clip)
                        h = _sigmoid(o) * np.tanh(c)
                        if "h2r_weight" in w:
                            h = w["h2r_weight"] @ h
                    else:
                        (xr, xz, xn), (hr, hz, hn) = np.split(gi, 3), np.split(gh, 3)
                        r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
                        n = np.tanh(xn + r * hn)
                        h = (1 - z) * n + z * h
                    y[t, b, d * width : (d + 1) * width] = h
                hy[k, b] = h
                if cy is not None:
                    cy[k, b] = c
        x = y
    return y, hy, cy


def _case(mode, rng, steps=4, batch=3, features=5, hidden=4, layers=2, bidirectional=False, projection=None):
    params = {"mode": mode, "state_size": hidden, "num_layers": layers, "bidirectional": bidirectional}
    if projection:
        params["projection_size"] = projection
    spec = RNNShape(mode, layers, hidden, features, bidirectional, projection)
    dirs = 2 if bidirectional else 1
    arrays = [
        rng.uniform(-1, 1, (steps, batch, features)),
        rng.uniform(-0.5, 0.5, param_size(spec)),
        rng.uniform(-0.5, 0.5, (layers * dirs, batch, spec.output_size)),
    ]
    if mode == "lstm":
        arrays.append(rng.uniform(-0.5, 0.5, (layers * dirs, batch, hidden)))
    return params, arrays


# ----------------------------------------------------------------------------- layout
@pytest.mark.parametrize(
    ("mode", "bidirectional", "projection", "size"),
    # MXNet 1.9.1's inferred parameter sizes for 2 layers, state_size 4, 3 input features
    [("lstm", False, None, 304), ("gru", False, None, 228), ("rnn_tanh", True, None, 184), ("lstm", False, 3, 280)]
    + [("lstm", True, 3, 656)],
)
def test_packed_size_matches_mxnet(mode, bidirectional, projection, size):
    spec = RNNShape(mode, 2, 4, 3, bidirectional, projection)
    assert param_size(spec) == size
    assert input_size_from_param_size(spec, size) == 3
    assert input_size_from_param_size(spec, size + 1) is None


def test_packed_order_is_weights_then_biases_per_layer_and_direction():
    pieces = packed_slices(RNNShape("lstm", 2, 4, 3, True, 2))
    names = [p.name for p in pieces]
    assert names[:6] == ["l0_i2h_weight", "l0_h2h_weight", "l0_h2r_weight", "r0_i2h_weight", "r0_h2h_weight"] + [
        "r0_h2r_weight"
    ]
    assert names[12:] == [f"{d}{layer}_{k}_bias" for layer in (0, 1) for d in "lr" for k in ("i2h", "h2h")]
    assert pieces[0].shape == (16, 3) and pieces[1].shape == (16, 2) and pieces[2].shape == (2, 4)
    assert pieces[6].shape == (16, 4)  # layer 1 reads both directions' projected outputs
    assert all(a.stop == b.offset for a, b in itertools.pairwise(pieces))


# ----------------------------------------------------------------------------- forward
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_forward_matches_reference(mode, bidirectional, dtype):
    rng = seeded_rng(MODES.index(mode) * 2 + bidirectional)
    steps, batch, features = (int(n) for n in rng.integers(2, 6, 3))
    params, arrays = _case(mode, rng, steps, batch, features, bidirectional=bidirectional)
    outs = nd.RNN(*[nd.array(a, dtype=dtype) for a in arrays], state_outputs=True, **params)
    ref = _reference(params, *arrays)
    assert len(outs) == (3 if mode == "lstm" else 2) and outs[0].dtype == np.dtype(dtype)
    tol = 1e-5 if dtype == "float32" else 1e-10
    for got, want in zip(outs, ref, strict=False):
        assert_almost_equal(got.asnumpy(), want, rtol=tol * 10, atol=tol)


def test_lstm_projection_forward_matches_reference():
    rng = seeded_rng(11)
    params, arrays = _case("lstm", rng, bidirectional=True, projection=3)
    outs = nd.RNN(*[nd.array(a, dtype=a.dtype) for a in arrays], state_outputs=True, **params)
    assert outs[0].shape == (4, 3, 6) and outs[1].shape == (4, 3, 3) and outs[2].shape == (4, 3, 4)
    for got, want in zip(outs, _reference(params, *arrays), strict=True):
        assert_almost_equal(got.asnumpy(), want, rtol=1e-9, atol=1e-10)


def test_float16_forward_is_close():
    rng = seeded_rng(12)
    params, arrays = _case("lstm", rng)
    out = nd.RNN(*[nd.array(a, dtype="float16") for a in arrays], **params)
    assert out.dtype == np.float16
    assert_almost_equal(out.asnumpy().astype(np.float64), _reference(params, *arrays)[0], rtol=2e-2, atol=2e-2)


def test_sequence_lengths_hold_states_and_zero_outputs():
    rng = seeded_rng(13)
    for mode in MODES:
        params, arrays = _case(mode, rng, steps=5, bidirectional=True)
        lengths = np.array([5, 2, 1])
        outs = nd.RNN(
            *[nd.array(a, dtype=a.dtype) for a in arrays],
            nd.array(lengths, dtype="int32"),
            use_sequence_length=True,
            state_outputs=True,
            **params,
        )
        ref = _reference(params, *arrays, lengths=lengths)
        for got, want in zip(outs, ref, strict=False):
            assert_almost_equal(got.asnumpy(), want, rtol=1e-9, atol=1e-10)
        assert not outs[0].asnumpy()[2:, 1].any() and not outs[0].asnumpy()[1:, 2].any()


def test_lstm_state_clipping():
    rng = seeded_rng(14)
    params, arrays = _case("lstm", rng)
    params.update(lstm_state_clip_min=-0.2, lstm_state_clip_max=0.25)
    outs = nd.RNN(*[nd.array(a, dtype=a.dtype) for a in arrays], state_outputs=True, **params)
    assert outs[2].asnumpy().min() >= -0.2 and outs[2].asnumpy().max() <= 0.25
    for got, want in zip(outs, _reference(params, *arrays), strict=True):
        assert_almost_equal(got.asnumpy(), want, rtol=1e-9, atol=1e-10)


def test_clip_nan_replaces_nan_cells():
    params, arrays = _case("lstm", seeded_rng(15), layers=1)
    arrays[3][0, 0, 0] = np.nan  # a NaN initial cell
    clip = {"lstm_state_clip_min": -1.0, "lstm_state_clip_max": 1.0}
    _, _, cy = nd.RNN(*[nd.array(a, dtype=a.dtype) for a in arrays], state_outputs=True, **params, **clip)
    assert np.isnan(cy.asnumpy()[0, 0, 0])
    _, _, cy = nd.RNN(
        *[nd.array(a, dtype=a.dtype) for a in arrays], state_outputs=True, lstm_state_clip_nan=True, **params, **clip
    )
    assert np.isfinite(cy.asnumpy()).all()


# ----------------------------------------------------------------------------- dropout
def test_dropout_between_layers_only_in_training():
    params, arrays = _case("gru", seeded_rng(16), layers=3)
    inputs = [nd.array(a, dtype=a.dtype) for a in arrays]
    plain = nd.RNN(*inputs, **params).asnumpy()
    assert_almost_equal(nd.RNN(*inputs, p=0.5, **params).asnumpy(), plain)  # inference: no dropout
    mx.random.seed(3)
    with mx.autograd.record():
        first = nd.RNN(*inputs, p=0.5, **params).asnumpy()
    mx.random.seed(3)
    with mx.autograd.record():
        again = nd.RNN(*inputs, p=0.5, **params).asnumpy()
    assert not np.allclose(first, plain)
    assert_almost_equal(first, again)  # the generator's seed fixes the masks


def test_full_dropout_cuts_lower_layers_from_the_gradient():
    params, arrays = _case("lstm", seeded_rng(17), layers=2)
    inputs = [nd.array(a, dtype=a.dtype) for a in arrays]
    for a in inputs:
        a.attach_grad()
    with mx.autograd.record():
        out = nd.RNN(*inputs, p=1.0, **params)
    out.backward()
    spec = RNNShape("lstm", 2, 4, 5)
    grads = unpack(spec, inputs[1].grad.asnumpy())
    assert not grads[(0, 0)]["i2h_weight"].any() and not inputs[0].grad.asnumpy().any()
    assert grads[(1, 0)]["h2h_weight"].any()


# ----------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_gradient_of_every_input_and_output(mode, bidirectional):
    rng = seeded_rng(20 + MODES.index(mode))
    params, arrays = _case(mode, rng, steps=3, batch=2, features=3, hidden=3, bidirectional=bidirectional)
    if mode == "rnn_relu":  # keep pre-activations away from relu's kink
        arrays[1] = np.abs(arrays[1]) + 0.05

    def fn(*inputs):
        return nd.RNN(*inputs, state_outputs=True, **params)

    check_imperative_gradient(fn, arrays, rtol=1e-4, atol=1e-6)


def test_gradient_with_projection_lengths_and_clipping():
    rng = seeded_rng(30)
    params, arrays = _case("lstm", rng, steps=4, batch=3, features=3, hidden=3, bidirectional=True, projection=2)
    params.update(lstm_state_clip_min=-5.0, lstm_state_clip_max=0.3, use_sequence_length=True)
    lengths = np.array([4, 2, 3])

    def fn(*inputs):
        return nd.RNN(*inputs, state_outputs=True, **params)

    check_imperative_gradient(fn, [*arrays, lengths], grad_nodes=[0, 1, 2, 3], rtol=1e-4, atol=1e-6)


def test_gru_gradient_with_lengths():
    params, arrays = _case("gru", seeded_rng(31), steps=4, batch=3, features=2, hidden=3)

    def fn(*inputs):
        return nd.RNN(*inputs, use_sequence_length=True, state_outputs=True, **params)

    check_imperative_gradient(fn, [*arrays, np.array([1, 4, 2])], grad_nodes=[0, 1, 2], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_req_write_add_null(mode):
    params, arrays = _case(mode, seeded_rng(40), steps=3, batch=2, features=3, hidden=2)
    check_req("RNN", arrays, state_outputs=True, **params)
    check_req("RNN", [*arrays, np.array([3.0, 1.0])], use_sequence_length=True, **params)


# ----------------------------------------------------------------------------- inference
def test_shapes_from_data():
    ins, outs, done = infer_shapes(
        "RNN", {"mode": "lstm", "state_size": 4, "num_layers": 2, "state_outputs": True}, [(5, 2, 3), None, None, None]
    )
    assert done and ins == [(5, 2, 3), (304,), (2, 2, 4), (2, 2, 4)]
    assert outs[:3] == [(5, 2, 4), (2, 2, 4), (2, 2, 4)] and outs[3][0] > 0  # the hidden reserve


def test_shapes_backwards_from_parameters_states_and_output():
    params = {"mode": "gru", "state_size": 4, "num_layers": 2, "bidirectional": True, "use_sequence_length": True}
    size = param_size(RNNShape("gru", 2, 4, 7, True))
    ins, outs, done = infer_shapes("RNN", params, [None, (size,), None, None], [(6, 0, 8), None])
    assert not done and ins[0] == (6, 0, 7)  # C from the parameters, T from the output
    ins, outs, done = infer_shapes("RNN", params, [None, (size,), None, (3,)], [(6, 0, 8), None])
    assert done and ins == [(6, 3, 7), (size,), (4, 3, 4), (3,)] and outs[0] == (6, 3, 8)


def test_shape_errors_name_the_input():
    params = {"mode": "lstm", "state_size": 4, "num_layers": 1}
    with pytest.raises(InferenceError, match="data"):
        infer_shapes("RNN", params, [(5, 3), None, None, None])
    with pytest.raises(InferenceError, match="parameters of length 10"):
        infer_shapes("RNN", params, [(5, 3, 0), (10,), None, None])
    with pytest.raises(InferenceError, match="state"):
        infer_shapes("RNN", params, [(5, 3, 2), None, (1, 4, 4), None])
    with pytest.raises(InferenceError, match="parameters"):
        infer_shapes("RNN", params, [(5, 3, 2), (10,), None, None])


def test_types_both_ways():
    params = {"mode": "lstm", "state_size": 4, "num_layers": 1, "use_sequence_length": True, "state_outputs": True}
    ins, outs = infer_types("RNN", params, [None, None, None, None, "int32"], ["float64", None, None, None])
    assert ins == ["float64"] * 4 + ["int32"] and outs == ["float64"] * 4
    ins, _ = infer_types("RNN", params, ["float16", None, None, None, None])
    assert ins == ["float16"] * 5  # lengths default to the data's type, as in MXNet
    with pytest.raises(InferenceError, match="int32"):
        infer_types("RNN", params, ["int32", None, None, None, None])


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"mode": "lstmp", "state_size": 2, "num_layers": 1}, "mode"),
        ({"mode": "lstm", "state_size": 0, "num_layers": 1}, "state_size"),
        ({"mode": "lstm", "state_size": 2, "num_layers": 0}, "num_layers"),
        ({"mode": "lstm", "state_size": 2, "num_layers": 1, "p": 1.5}, "'p'"),
        ({"mode": "gru", "state_size": 2, "num_layers": 1, "projection_size": 1}, "projection_size"),
        ({"mode": "lstm", "state_size": 2, "num_layers": 1, "lstm_state_clip_min": -1.0}, "lstm_state_clip_max"),
        ({"mode": "lstm", "state_size": 2, "num_layers": 1, "lstm_state_clip_max": 1.0}, "lstm_state_clip_min"),
        (
            {"mode": "lstm", "state_size": 2, "num_layers": 1, "lstm_state_clip_min": 1.0, "lstm_state_clip_max": 0.0},
            "lstm_state_clip_min",
        ),
        (
            {"mode": "gru", "state_size": 2, "num_layers": 1, "lstm_state_clip_min": 0.0, "lstm_state_clip_max": 1.0},
            "lstm_state_clip_min",
        ),
        ({"state_size": 2, "num_layers": 1}, "mode"),
    ],
)
def test_parameter_errors_name_the_parameter(params, name):
    with pytest.raises(OperatorParamError, match=name):
        mx.operator.get("RNN").parse_attrs(params)


# ----------------------------------------------------------------------------- symbols
def test_symbol_names_match_mxnet():
    sym = mx.sym.RNN(mode="lstm", state_size=4, num_layers=1, state_outputs=True, use_sequence_length=True, name="r")
    assert sym.list_arguments() == ["r_data", "r_parameters", "r_state", "r_state_cell", "r_sequence_length"]
    assert sym.list_outputs() == ["r_output", "r_state_output", "r_statecell_output"]
    gru = mx.sym.RNN(mode="gru", state_size=4, num_layers=1, name="g")
    assert gru.list_arguments() == ["g_data", "g_parameters", "g_state"] and gru.list_outputs() == ["g_output"]
    again = mx.sym.load_json(sym.tojson())
    assert again.list_outputs() == sym.list_outputs()


def test_executor_trains_with_the_reserve_kept_for_backward():
    params, arrays = _case("lstm", seeded_rng(50), bidirectional=True)
    sym = mx.sym.RNN(name="r", state_outputs=True, **params)
    names = sym.list_arguments()
    args = {n: nd.array(a, dtype=a.dtype) for n, a in zip(names, arrays, strict=True)}
    grads = {n: nd.zeros(a.shape, dtype="float64") for n, a in args.items()}
    ex = sym.bind(mx.cpu(), args, args_grad=grads)
    outs = ex.forward(is_train=True)
    ex.backward([nd.ones(o.shape, dtype="float64") for o in outs])
    ref = _reference(params, *arrays)
    assert_almost_equal(outs[0].asnumpy(), ref[0], rtol=1e-9, atol=1e-10)
    with mx.autograd.record():
        inputs = [nd.array(a, dtype=a.dtype) for a in arrays]
        for a in inputs:
            a.attach_grad()
        imperative = nd.RNN(*inputs, state_outputs=True, **params)
    mx.autograd.backward(list(imperative), [nd.ones(o.shape, dtype="float64") for o in imperative])
    for name, a in zip(names, inputs, strict=True):
        assert_almost_equal(grads[name].asnumpy(), a.grad.asnumpy(), rtol=1e-9, atol=1e-12)


# ----------------------------------------------------------------------------- _rnn_param_concat
def test_param_concat_joins_and_shares_unknown_lengths():
    rng = seeded_rng(60)
    parts = [rng.uniform(-1, 1, n) for n in (4, 6, 2)]
    out = nd._internal._rnn_param_concat(*[nd.array(p, dtype=p.dtype) for p in parts], num_args=3, dim=0)
    assert_almost_equal(out.asnumpy(), np.concatenate(parts))
    ins, outs, done = infer_shapes("_rnn_param_concat", {"num_args": 3, "dim": 0}, [(0,), (6,), (0,)], [(18,)])
    assert done and ins == [(6,), (6,), (6,)]
    ins, outs, done = infer_shapes("_rnn_param_concat", {"num_args": 2, "dim": 0}, [(4,), (6,)])
    assert done and outs == [(10,)]
    with pytest.raises(InferenceError, match="at most 2"):
        infer_shapes("_rnn_param_concat", {"num_args": 3, "dim": 0}, [None, None, None], [(9,)])
    with pytest.raises(InferenceError, match="leaves"):
        infer_shapes("_rnn_param_concat", {"num_args": 3, "dim": 0}, [(0,), (6,), (0,)], [(9,)])
    with pytest.raises(OperatorParamError, match="num_args"):
        mx.operator.get("_rnn_param_concat").parse_attrs({"dim": 0})


def test_param_concat_gradient_and_req():
    rng = seeded_rng(61)
    parts = [rng.uniform(-1, 1, (2, n)) for n in (3, 1)]
    check_imperative_gradient(lambda a, b: nd._internal._rnn_param_concat(a, b, num_args=2), parts)
    check_req("_rnn_param_concat", parts, num_args=2)


def test_param_concat_feeds_rnn_in_a_symbol():
    """Gluon's pattern: the layer-0 input weight's size is unknown until RNN infers the packed length."""
    packed = mx.sym._internal._rnn_param_concat(mx.sym.var("l0_i2h_weight"), mx.sym.var("rest"), num_args=2, dim=0)
    sym = mx.sym.RNN(
        data=mx.sym.var("data"), parameters=packed, state=mx.sym.var("h"), mode="gru", state_size=4, num_layers=1
    )
    rest_size = param_size(RNNShape("gru", 1, 4, 5)) - 12 * 5
    shapes, _, _ = sym.infer_shape(data=(3, 2, 5), rest=(rest_size,))
    assert dict(zip(sym.list_arguments(), shapes, strict=True))["l0_i2h_weight"] == (60,)
