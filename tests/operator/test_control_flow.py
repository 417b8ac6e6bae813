"""Control flow: mx.nd.contrib / mx.sym.contrib foreach, while_loop and cond, and their operators.

Imperatively the body is Python run step by step (autograd records each step); symbolically
``_foreach``, ``_while_loop`` and ``_cond`` hold their bodies as subgraphs that nested executors
run. Both are checked against plain Python/NumPy loops, gradients against finite differences,
and every bad input against a clear error. Agreement with MXNet 1.9.1 itself is in
test_control_flow_mxnet.py.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import framework as mx
from framework.imperative_test_utils import check_req
from framework.operator.control_flow import Subgraph
from framework.operator.control_flow.structure import ControlFlowError
from framework.operator.infer import InferenceError
from framework.operator.params import OperatorParamError
from framework.symbol.json_format import SymbolJSONError
from framework.symbol_test_utils import check_numeric_gradient
from framework.test_utils import assert_almost_equal


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _numpy_rnn(data, h, wx, wh):
    outs = []
    for x in data:
        h = np.tanh(x @ wx + h @ wh)
        outs.append(h)
    return np.stack(outs), h


# ----------------------------------------------------------------------------- imperative
def test_nd_foreach_matches_a_python_loop():
    rng = _rng(1)
    data, h0 = rng.uniform(-1, 1, (5, 3, 2)), rng.uniform(-1, 1, (3, 4))
    wx, wh = rng.uniform(-1, 1, (2, 4)), rng.uniform(-1, 1, (4, 4))
    nd_wx, nd_wh = mx.nd.array(wx, dtype="float64"), mx.nd.array(wh, dtype="float64")

    def body(x, states):
        h = mx.nd.tanh(mx.nd.dot(x, nd_wx) + mx.nd.dot(states[0], nd_wh))
        return h, [h]

    outs, states = mx.nd.contrib.foreach(body, mx.nd.array(data, dtype="float64"), [mx.nd.array(h0, dtype="float64")])
    want_outs, want_h = _numpy_rnn(data, h0, wx, wh)
    assert isinstance(outs, mx.nd.NDArray) and isinstance(states, list) and len(states) == 1
    assert_almost_equal(outs.asnumpy(), want_outs, rtol=1e-10)
    assert_almost_equal(states[0].asnumpy(), want_h, rtol=1e-10)


def test_nd_foreach_keeps_nested_structures():
    a, b = mx.nd.arange(6).reshape((3, 2)), mx.nd.arange(3).reshape((3, 1))

    def body(xs, states):
        x, y = xs
        (s, (t,)) = states
        return [x + s, [y * t]], [s + 1, [t * 2]]

    outs, states = mx.nd.contrib.foreach(body, [a, b], [mx.nd.zeros((2,)), [mx.nd.ones((1,))]])
    assert_almost_equal(outs[0].asnumpy(), np.array([[0, 1], [3, 4], [6, 7]], np.float32))
    assert_almost_equal(outs[1][0].asnumpy(), np.array([[0], [2], [8]], np.float32))
    assert_almost_equal(states[0].asnumpy(), np.full(2, 3, np.float32))
    assert_almost_equal(states[1][0].asnumpy(), np.array([8], np.float32))


def _central_differences(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[i] += eps
        minus[i] -= eps
        grad[i] = (f(plus) - f(minus)) / (2 * eps)
    return grad


def test_nd_foreach_gradients_flow_through_every_step():
    rng = _rng(2)
    data, h0, wx, wh = (rng.uniform(-1, 1, s) for s in ((4, 2, 3), (2, 3), (3, 3), (3, 3)))
    arrays = [mx.nd.array(v, dtype="float64") for v in (data, h0, wx, wh)]
    for a in arrays:
        a.attach_grad()
    with mx.autograd.record():

        def body(x, states):
            h = mx.nd.tanh(mx.nd.dot(x, arrays[2]) + mx.nd.dot(states[0], arrays[3]))
            return h, [h]

        outs, states = mx.nd.contrib.foreach(body, arrays[0], [arrays[1]])
        loss = outs.sum() + (states[0] * states[0]).sum()
    loss.backward()

    def total(values):
        outs, h = _numpy_rnn(*values)
        return outs.sum() + (h * h).sum()

    originals = [data, h0, wx, wh]
    for k, array in enumerate(arrays):

        def f(v, k=k):
            return total([v if i == k else originals[i] for i in range(4)])

        assert_almost_equal(array.grad.asnumpy(), _central_differences(f, originals[k]), rtol=1e-5, atol=1e-7)


def test_nd_while_loop_pads_outputs_to_max_iterations_and_returns_final_vars():
    i, s = mx.nd.array([0]), mx.nd.array([1.0, 2.0])
    outs, (last_i, last_s) = mx.nd.contrib.while_loop(
        lambda i, s: i < 3, lambda i, s: ([s * i, s], [i + 1, s * 2]), [i, s], max_iterations=5
    )
    assert outs[0].shape == (5, 2) and outs[1].shape == (5, 2)
    want = np.array([[0, 0], [2, 4], [8, 16], [0, 0], [0, 0]], np.float32)  # zeros after the third step
    assert_almost_equal(outs[0].asnumpy(), want)
    assert_almost_equal(last_i.asnumpy(), np.array([3], np.float32))
    assert_almost_equal(last_s.asnumpy(), np.array([8, 16], np.float32))


def test_nd_while_loop_stops_at_max_iterations_and_may_run_no_step():
    outs, last = mx.nd.contrib.while_loop(lambda i: i < 100, lambda i: (i * 10, i + 1), mx.nd.array([0]), 4)
    assert isinstance(last, mx.nd.NDArray) and last.asscalar() == 4
    assert_almost_equal(outs.asnumpy(), np.array([[0], [10], [20], [30]], np.float32))
    outs, last = mx.nd.contrib.while_loop(lambda i: i < 0, lambda i: (i * 10, i + 1), mx.nd.array([5]), 4)
    assert outs == [] and last.asscalar() == 5


def test_nd_while_loop_gradient():
    x = mx.nd.array([0.5, -0.25], dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        outs, (_, last) = mx.nd.contrib.while_loop(
            lambda i, v: i < 3, lambda i, v: ([v * v], [i + 1, v * 1.5 + 0.1]), [mx.nd.array([0]), x], 6
        )
        loss = outs[0].sum() + last.sum()
    loss.backward()

    def total(v):
        result = 0.0
        for _ in range(3):
            result += (v * v).sum()
            v = v * 1.5 + 0.1
        return result + v.sum()

    assert_almost_equal(x.grad.asnumpy(), _central_differences(total, x.asnumpy()), rtol=1e-6)


@pytest.mark.parametrize("flag", [1.0, 0.0])
def test_nd_cond_takes_the_right_branch_and_differentiates_it(flag):
    a = mx.nd.array([1.0, 2.0])
    a.attach_grad()
    with mx.autograd.record():
        out = mx.nd.contrib.cond(mx.nd.array([flag]), lambda: a * a, lambda: a * 3)
    out.backward()
    want = [1.0, 4.0] if flag else [3.0, 6.0]
    assert_almost_equal(out.asnumpy(), np.array(want, np.float32))
    assert_almost_equal(a.grad.asnumpy(), np.array([2.0, 4.0] if flag else [3.0, 3.0], np.float32))


@pytest.mark.parametrize("front", ["nd", "sym"])
def test_bad_inputs_raise_clear_errors(front):
    mod = mx.nd if front == "nd" else mx.sym
    data = mx.nd.ones((3, 2)) if front == "nd" else mx.sym.var("data")
    state = mx.nd.zeros((2,)) if front == "nd" else mx.sym.var("s")
    with pytest.raises(ControlFlowError, match="foreach: body must be a callable"):
        mod.contrib.foreach(5, data, state)
    with pytest.raises(ControlFlowError, match="body must return a pair"):
        mod.contrib.foreach(lambda x, s: x + s, data, state)
    with pytest.raises(ControlFlowError, match="the number of states: 1 were given, but the function returned 2"):
        mod.contrib.foreach(lambda x, s: (x + s, [s, s]), data, state)
    with pytest.raises(ControlFlowError, match="data must be an array or a"):
        mod.contrib.foreach(lambda x, s: (x, s), "data", state)
    with pytest.raises(ControlFlowError, match="max_iterations must be given"):
        mod.contrib.while_loop(lambda s: s, lambda s: ([], [s]), state)
    with pytest.raises(ControlFlowError, match="max_iterations must be an int >= 0"):
        mod.contrib.while_loop(lambda s: s, lambda s: ([], [s]), state, max_iterations=-1)
    with pytest.raises(ControlFlowError, match="cond: then_func must be a callable"):
        mod.contrib.cond(state, None, lambda: state)


def test_nd_shape_changes_and_bad_predicates_are_errors():
    with pytest.raises(ControlFlowError, match=r"state 0 changed shape from \(2,\) to \(3,\)"):
        mx.nd.contrib.foreach(lambda x, s: (x, mx.nd.ones((3,))), mx.nd.ones((3, 2)), mx.nd.zeros((2,)))
    with pytest.raises(ControlFlowError, match="same length along axis 0"):
        mx.nd.contrib.foreach(lambda x, s: (x[0], s), [mx.nd.ones((3, 2)), mx.nd.ones((4, 2))], mx.nd.zeros((2,)))
    with pytest.raises(ControlFlowError, match="cond must return an NDArray of one element"):
        mx.nd.contrib.while_loop(lambda s: s, lambda s: ([], [s]), mx.nd.ones((2,)), max_iterations=2)
    with pytest.raises(ControlFlowError, match="pred must be an NDArray of one element"):
        mx.nd.contrib.cond(mx.nd.ones((2,)), lambda: 1, lambda: 2)


# ----------------------------------------------------------------------------- symbolic
def _rnn_symbol():
    data, h0, wx, wh = (mx.sym.var(n) for n in ("data", "h0", "wx", "wh"))

    def body(x, states):
        h = mx.sym.tanh(mx.sym.dot(x, wx) + mx.sym.dot(states[0], wh))
        return h, [h]

    return mx.sym.contrib.foreach(body, data, [h0])


def test_sym_foreach_forward_matches_numpy_and_infers_shapes():
    outs, states = _rnn_symbol()
    group = mx.sym.Group([outs, states[0]])
    assert group.list_arguments() == ["data", "h0", "wx", "wh"]
    arg_shapes, out_shapes, _ = group.infer_shape(data=(6, 3, 2), wx=(2, 4), wh=(4, 4))
    assert out_shapes == [(6, 3, 4), (3, 4)]
    assert arg_shapes == [(6, 3, 2), (3, 4), (2, 4), (4, 4)]  # the state's shape comes from the body
    rng = _rng(3)
    values = {n: rng.uniform(-1, 1, s) for n, s in zip(group.list_arguments(), arg_shapes, strict=True)}
    ex = group.bind(mx.cpu(), {n: mx.nd.array(v) for n, v in values.items()})
    got = [o.asnumpy() for o in ex.forward()]
    want = _numpy_rnn(values["data"], values["h0"], values["wx"], values["wh"])
    for g, w in zip(got, want, strict=True):
        assert_almost_equal(g, w.astype(np.float32), rtol=1e-5, atol=1e-6)


def test_sym_foreach_numeric_gradient():
    outs, _ = _rnn_symbol()
    rng = _rng(4)
    location = {
        n: rng.uniform(-1, 1, s) for n, s in (("data", (3, 2, 2)), ("h0", (2, 3)), ("wx", (2, 3)), ("wh", (3, 3)))
    }
    check_numeric_gradient(outs, location)


def test_sym_while_loop_numeric_gradient_and_max_iterations():
    i, v, w = mx.sym.var("i"), mx.sym.var("v"), mx.sym.var("w")
    outs, _ = mx.sym.contrib.while_loop(
        lambda i, v: i < 3, lambda i, v: ([mx.sym.sin(v) * w], [i + 1, v * w + 0.5]), [i, v], max_iterations=4
    )
    rng = _rng(5)
    location = {"i": np.zeros(1), "v": rng.uniform(-1, 1, (2, 2)), "w": rng.uniform(-1, 1, (2, 2))}
    ex = outs[0].bind(mx.cpu(), {k: mx.nd.array(x, dtype="float64") for k, x in location.items()})
    got = ex.forward()[0].asnumpy()
    value, want = location["v"], []
    for _ in range(3):
        want.append(np.sin(value) * location["w"])
        value = value * location["w"] + 0.5
    assert got.shape == (4, 2, 2)
    assert_almost_equal(got[:3], np.stack(want), rtol=1e-10)
    assert not got[3].any()  # the fourth step never ran
    check_numeric_gradient(outs[0], location, grad_nodes=["v", "w"])


@pytest.mark.parametrize("flag", [2.0, -2.0])
def test_sym_cond_both_branches(flag):
    p, a, w = mx.sym.var("p"), mx.sym.var("a"), mx.sym.var("w")
    out = mx.sym.contrib.cond(mx.sym.sum(p) > 0, lambda: a * w + 1, lambda: mx.sym.exp(a) - w)
    rng = _rng(6)
    location = {"p": np.array([flag]), "a": rng.uniform(-1, 1, (2, 3)), "w": rng.uniform(-1, 1, (2, 3))}
    ex = out.bind(mx.cpu(), {k: mx.nd.array(x, dtype="float64") for k, x in location.items()})
    a_val, w_val = location["a"], location["w"]
    want = a_val * w_val + 1 if flag > 0 else np.exp(a_val) - w_val
    assert_almost_equal(ex.forward()[0].asnumpy(), want, rtol=1e-12)
    check_numeric_gradient(out, location, grad_nodes=["a", "w"])


def test_sym_cond_nested_in_foreach_matches_numpy():
    data, s = mx.sym.var("data"), mx.sym.var("s")

    def body(x, states):
        state = states[0]
        new = mx.sym.contrib.cond(mx.sym.sum(x) > 0, lambda: state + x, lambda: state * x)
        return [new * 2], [new]

    outs, final = mx.sym.contrib.foreach(body, data, [s])
    values = _rng(7).uniform(-1, 1, (6, 3))
    ex = mx.sym.Group(outs + final).bind(mx.cpu(), {"data": mx.nd.array(values), "s": mx.nd.ones((3,))})
    got = [o.asnumpy() for o in ex.forward()]
    state, want = np.ones(3, np.float32), []
    for x in values.astype(np.float32):
        state = state + x if x.sum() > 0 else state * x
        want.append(state * 2)
    assert_almost_equal(got[0], np.stack(want), rtol=1e-6)
    assert_almost_equal(got[1], state, rtol=1e-6)


def test_sym_inference_errors_name_the_problem():
    v = mx.sym.var("v")
    _, final = mx.sym.contrib.while_loop(
        lambda v: mx.sym.sum(v) < 3, lambda v: ([v], [mx.sym.concat(v, v, dim=0)]), [v], max_iterations=2
    )
    with pytest.raises(InferenceError, match="loop variable 0 with shape .*a loop variable keeps its shape"):
        final[0].infer_shape(v=(2,))
    p, a, b = mx.sym.var("p"), mx.sym.var("a"), mx.sym.var("b")
    out = mx.sym.contrib.cond(p > 0, lambda: a + 1, lambda: b * 2)
    with pytest.raises(InferenceError, match="then and else branches disagree on the shape of output 0"):
        out.infer_shape(p=(1,), a=(2,), b=(3,))
    with pytest.raises(ControlFlowError, match="then_func returns 1 outputs but else_func returns 2"):
        mx.sym.contrib.cond(p > 0, lambda: a, lambda: [a, b])


def test_sym_json_round_trip_keeps_subgraphs_and_results():
    outs, states = _rnn_symbol()
    group = mx.sym.Group([outs, states[0]])
    text = group.tojson()
    node = next(n for n in json.loads(text)["nodes"] if n["op"] == "_foreach")
    assert len(node["subgraphs"]) == 1 and node["attrs"]["in_data_locs"] == "[0]"
    loaded = mx.sym.load_json(text)
    assert loaded.tojson() == text
    rng = _rng(8)
    values = {
        n: mx.nd.array(rng.uniform(-1, 1, s))
        for n, s in (("data", (2, 1, 2)), ("h0", (1, 3)), ("wx", (2, 3)), ("wh", (3, 3)))
    }
    first = [o.asnumpy() for o in group.bind(mx.cpu(), values).forward()]
    second = [o.asnumpy() for o in loaded.bind(mx.cpu(), values).forward()]
    for x, y in zip(first, second, strict=True):
        assert_almost_equal(x, y)


def test_bad_subgraphs_in_json_are_errors():
    outs, _ = _rnn_symbol()
    doc = json.loads(outs.tojson())
    foreach = next(n for n in doc["nodes"] if n["op"] == "_foreach")
    without = json.loads(json.dumps(doc))
    del next(n for n in without["nodes"] if n["op"] == "_foreach")["subgraphs"]
    with pytest.raises(SymbolJSONError, match="needs its 'subgraphs'"):
        mx.sym.load_json(json.dumps(without))
    misplaced = json.loads(json.dumps(doc))
    tanh = next(n for n in foreach["subgraphs"][0]["nodes"] if n["op"] == "tanh")
    misplaced["nodes"].insert(1, {**tanh, "inputs": [[0, 0, 0]], "subgraphs": foreach["subgraphs"]})
    with pytest.raises(SymbolJSONError, match="operator tanh takes no subgraphs"):
        mx.sym.load_json(json.dumps(misplaced))


def test_operator_parameters_and_missing_subgraphs():
    with pytest.raises(OperatorParamError, match="num_args"):
        mx.operator.get("_foreach").params.parse(
            "_foreach",
            {
                "num_args": 0,
                "num_outputs": 1,
                "num_out_data": 1,
                "in_state_locs": (),
                "in_data_locs": (0,),
                "remain_locs": (),
            },
        )
    parsed = mx.operator.get("_cond").params.parse(
        "_cond",
        {"num_args": 4, "num_outputs": 1, "cond_input_locs": (0,), "then_input_locs": (0,), "else_input_locs": (0,)},
    )
    with pytest.raises(OperatorParamError, match="given no subgraphs"):
        parsed.subgraphs  # noqa: B018 - reading the property is the check
    with pytest.raises(OperatorParamError, match="expects 3 subgraph"):
        parsed.with_subgraphs([])


# ----------------------------------------------------------------------------- the operators directly
def _graph(sym) -> Subgraph:
    return Subgraph(sym.outputs)


def test_foreach_while_loop_cond_operators_honour_req():
    x, s, w = mx.sym.var("x"), mx.sym.var("s"), mx.sym.var("w")
    body = _graph(mx.sym.Group([x * w + s, mx.sym.sin(s) + x]))  # inputs x, w, s
    rng = _rng(9)
    check_req(
        "_foreach",
        [rng.uniform(-1, 1, (3, 2)), rng.uniform(-1, 1, (2,)), rng.uniform(-1, 1, (2,))],
        num_args=4,
        num_outputs=2,
        num_out_data=1,
        in_data_locs=(0,),
        in_state_locs=(2,),
        remain_locs=(1,),
        subgraphs=[body],
    )
    i, v = mx.sym.var("i"), mx.sym.var("v")
    cond_graph = _graph(i < 2)
    func = _graph(mx.sym.Group([v * 2, i + 1, mx.sym.cos(v)]))  # inputs v, i
    check_req(
        "_while_loop",
        [np.zeros(1), rng.uniform(-1, 1, (2,))],
        num_args=4,
        num_outputs=3,
        num_out_data=1,
        max_iterations=3,
        cond_input_locs=(0,),
        func_input_locs=(1, 0),
        func_var_locs=(1, 0),
        subgraphs=[cond_graph, func],
    )
    p, a = mx.sym.var("p"), mx.sym.var("a")
    for flag in (1.0, -1.0):
        check_req(
            "_cond",
            [np.array([flag]), rng.uniform(-1, 1, (3,))],
            num_args=5,
            num_outputs=1,
            cond_input_locs=(0,),
            then_input_locs=(1,),
            else_input_locs=(1,),
            subgraphs=[_graph(p > 0), _graph(a * a), _graph(mx.sym.exp(a))],
        )


def test_types_are_inferred_through_the_body():
    outs, states = _rnn_symbol()
    _, out_types, _ = mx.sym.Group([outs, states[0]]).infer_type(data="float64")
    assert out_types == [np.float64, np.float64]


# ----------------------------------------------------------------------------- Gluon
class _Recurrent(mx.gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.cell = mx.gluon.nn.Dense(3, in_units=5, flatten=False)

    def hybrid_forward(self, F, data, state):
        def body(x, states):
            h = F.tanh(self.cell(F.concat(x, states[0], dim=-1)))
            return h, [h]

        outs, states = F.contrib.foreach(body, data, [state])
        return F.broadcast_add(outs, states[0].expand_dims(0))


def test_gluon_hybridized_foreach_matches_imperative_and_trains():
    net = _Recurrent()
    net.initialize(mx.init.Xavier())
    data, state = mx.nd.array(_rng(10).uniform(-1, 1, (4, 2, 2))), mx.nd.zeros((2, 3))
    imperative = net(data, state).asnumpy()
    net.hybridize()
    with mx.autograd.record():
        hybrid = net(data, state)
        loss = (hybrid * hybrid).sum()
    loss.backward()
    assert_almost_equal(hybrid.asnumpy(), imperative, rtol=1e-5, atol=1e-6)
    grad_hybrid = net.cell.weight.grad().asnumpy().copy()
    net2 = _Recurrent(prefix=net.prefix)
    net2.initialize()
    net2.cell.weight.set_data(net.cell.weight.data())
    net2.cell.bias.set_data(net.cell.bias.data())
    with mx.autograd.record():
        out = net2(data, state)
        loss = (out * out).sum()
    loss.backward()
    assert_almost_equal(grad_hybrid, net2.cell.weight.grad().asnumpy(), rtol=1e-4, atol=1e-6)


def test_nested_executors_are_kept_per_signature_and_bounded():
    from framework.executor import subgraph_runner  # noqa: PLC0415 - the runner's cache is the subject

    x = mx.sym.var("x")
    outs, _ = mx.sym.contrib.foreach(lambda d, s: (d * s[0], [s[0] + d]), x, [mx.sym.var("s")])
    graph = outs.outputs[0].node.attrs.parsed.subgraphs[0]
    for width in range(1, subgraph_runner.MAX_SIGNATURES + 3):
        ex = outs.bind(mx.cpu(), {"x": mx.nd.ones((2, width)), "s": mx.nd.ones((width,))})
        assert ex.forward()[0].asnumpy().shape == (2, width)  # asnumpy waits for the run
    assert len(graph.cache) == subgraph_runner.MAX_SIGNATURES
    ex.forward()[0].wait_to_read()  # the same signature again reuses its executor
    assert len(graph.cache) == subgraph_runner.MAX_SIGNATURES
    assert list(graph.cache)[-1][2] == (((subgraph_runner.MAX_SIGNATURES + 2,), "float32"),) * 2


def test_foreach_without_states():
    x = mx.sym.var("x")
    outs, states = mx.sym.contrib.foreach(lambda d, s: (d * 2, s), x, [])
    assert states == []
    got = outs.bind(mx.cpu(), {"x": mx.nd.arange(6).reshape((3, 2))}).forward()[0].asnumpy()
    assert_almost_equal(got, np.arange(6, dtype=np.float32).reshape(3, 2) * 2)
    outs, states = mx.nd.contrib.foreach(lambda d, s: (d * 2, s), mx.nd.arange(6).reshape((3, 2)), [])
    assert states == []
    assert_almost_equal(outs.asnumpy(), got)
