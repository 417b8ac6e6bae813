"""``_foreach``: run a body once per step of axis 0 of its data, carrying states between steps.

MXNet's layout: the node's inputs are the data arrays, then the initial states, then the
other values the body reads (``remain``); ``in_data_locs``, ``in_state_locs`` and
``remain_locs`` say where each goes among the body's inputs. The body returns
``num_out_data`` per-step outputs (stacked along a new axis 0) and then the new states; the
node's outputs are the stacked outputs and the final states.
"""

from __future__ import annotations

from typing import Any

from ..infer import InferenceError, ShapeT, shape_assign, type_assign
from ..kernel import OpContext, Req, assign
from ..params import Param, Shape
from ..registry import NodeAttrs
from .subgraph import (
    SubgraphParams,
    check_locations,
    place,
    register_control_flow,
    runner,
    sliced,
    stacked,
)


class ForeachParam(SubgraphParams):
    num_args = Param(int, description="Number of inputs plus one for the body subgraph.", low=1)
    num_outputs = Param(int, description="Number of outputs: stacked outputs, then final states.", low=0)
    num_out_data = Param(int, description="Number of per-step outputs of the body.", low=0)
    in_state_locs = Param(Shape, description="Body input positions of the states.")
    in_data_locs = Param(Shape, description="Body input positions of the data slices.")
    remain_locs = Param(Shape, description="Body input positions of the other inputs.")


def _counts(p: Any) -> tuple[int, int, int]:
    return len(p.in_data_locs), len(p.in_state_locs), len(p.remain_locs)


def _check(attrs: NodeAttrs) -> Any:
    p = attrs.parsed
    body = p.subgraphs[0]
    n_data, n_state, n_remain = _counts(p)
    count = n_data + n_state + n_remain
    if count != len(body.inputs) or count != p.num_args - 1:
        raise InferenceError(
            f"_foreach: the body has {len(body.inputs)} inputs {body.input_names}, but num_args={p.num_args} and the "
            f"locations name {count} (data {list(p.in_data_locs)}, states {list(p.in_state_locs)}, "
            f"remain {list(p.remain_locs)})"
        )
    check_locations("_foreach", p, ("in_data_locs", "in_state_locs", "remain_locs"), count)
    if p.num_outputs != p.num_out_data + n_state or body.num_outputs != p.num_outputs:
        raise InferenceError(
            f"_foreach: the body returns {body.num_outputs} outputs; expected num_out_data={p.num_out_data} "
            f"outputs plus {n_state} new states (num_outputs={p.num_outputs})"
        )
    return p


def _body_inputs(p: Any, data: list, states: list, remain: list) -> list:
    values: list = [None] * (len(data) + len(states) + len(remain))
    place(p.in_data_locs, data, values)
    place(p.in_state_locs, states, values)
    place(p.remain_locs, remain, values)
    return values


def foreach_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    p = _check(attrs)
    n_data, n_state, _ = _counts(p)
    for j in range(n_state):  # a state keeps its shape: the final state is shaped like the initial one
        shape_assign(in_shapes, n_data + j, out_shapes[p.num_out_data + j], "_foreach", f"state {j}")
    lengths = {s[0] for s in in_shapes[:n_data] + out_shapes[: p.num_out_data] if s and s[0]}
    if len(lengths) > 1:
        shown = [in_shapes[:n_data], out_shapes[: p.num_out_data]]
        raise InferenceError(f"_foreach: data and outputs disagree on the number of steps: {shown}")
    length = lengths.pop() if lengths else 0
    data = [sliced(s) for s in in_shapes[:n_data]]
    body_in = _body_inputs(p, data, in_shapes[n_data : n_data + n_state], in_shapes[n_data + n_state :])
    ins, outs = runner("_foreach").infer_shapes(p.subgraphs[0], body_in)
    for i, loc in enumerate(p.in_data_locs):
        shape_assign(in_shapes, i, stacked(length, ins[loc]), "_foreach", f"data {i}")
    for j, loc in enumerate(p.in_state_locs):
        shape_assign(in_shapes, n_data + j, ins[loc], "_foreach", f"state {j}")
        shape_assign(in_shapes, n_data + j, outs[p.num_out_data + j], "_foreach", f"state {j} (as the body returns it)")
        shape_assign(out_shapes, p.num_out_data + j, in_shapes[n_data + j], "_foreach", f"final state {j}")
    for k, loc in enumerate(p.remain_locs):
        shape_assign(in_shapes, n_data + n_state + k, ins[loc], "_foreach", f"input {n_data + n_state + k}")
    for k in range(p.num_out_data):
        shape_assign(out_shapes, k, stacked(length, outs[k]), "_foreach", f"output {k}")
    return all(s is not None and 0 not in s for s in in_shapes + out_shapes)


def foreach_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    p = _check(attrs)
    n_data, n_state, _ = _counts(p)
    for j in range(n_state):
        type_assign(in_types, n_data + j, out_types[p.num_out_data + j], "_foreach", f"state {j}")
    body_in = _body_inputs(p, in_types[:n_data], in_types[n_data : n_data + n_state], in_types[n_data + n_state :])
    ins, outs = runner("_foreach").infer_types(p.subgraphs[0], body_in)
    locs = list(p.in_data_locs) + list(p.in_state_locs) + list(p.remain_locs)
    for i, loc in enumerate(locs):
        type_assign(in_types, i, ins[loc], "_foreach", f"input {i}")
    for k in range(p.num_outputs):
        type_assign(out_types, k, outs[k], "_foreach", f"output {k}")
    for j in range(n_state):
        type_assign(out_types, p.num_out_data + j, in_types[n_data + j], "_foreach", f"final state {j}")
    return all(t is not None for t in in_types + out_types)


def _split(p: Any, inputs: list) -> tuple[list, list, list]:
    n_data, n_state, _ = _counts(p)
    return inputs[:n_data], inputs[n_data : n_data + n_state], inputs[n_data + n_state :]


def foreach_forward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    p = attrs.parsed
    body, run = p.subgraphs[0], runner("_foreach")
    data, states, remain = _split(p, inputs)
    length = data[0].shape[0] if data else 0
    for t in range(length):
        results = run.forward(body, op_ctx, _body_inputs(p, [d[t] for d in data], states, remain))
        for k in range(p.num_out_data):
            assign(outputs[k][t, ...], req[k], results[k])  # [t, ...]: a view even of a 1-d output
        states = results[p.num_out_data :]
    for j, state in enumerate(states):
        assign(outputs[p.num_out_data + j], req[p.num_out_data + j], state)


def foreach_backward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """Re-run the steps to recover each step's states, then differentiate the body in reverse."""
    p = attrs.parsed
    body, run, xp = p.subgraphs[0], runner("_backward_foreach"), op_ctx.xp
    out_grads, forward_inputs = inputs[: p.num_outputs], inputs[p.num_outputs :]
    data, states, remain = _split(p, forward_inputs)
    length = data[0].shape[0] if data else 0
    states_at = [states]
    for t in range(length - 1):
        results = run.forward(body, op_ctx, _body_inputs(p, [d[t] for d in data], states_at[-1], remain))
        states_at.append(results[p.num_out_data :])
    data_grads = [xp.zeros_like(d) for d in data]
    remain_grads = [xp.zeros_like(r) for r in remain]
    state_grads = list(out_grads[p.num_out_data :])
    for t in reversed(range(length)):
        heads = [g[t] for g in out_grads[: p.num_out_data]] + state_grads
        grads = run.backward(body, op_ctx, _body_inputs(p, [d[t] for d in data], states_at[t], remain), heads)
        for i, loc in enumerate(p.in_data_locs):
            data_grads[i][t] = grads[loc]
        state_grads = [grads[loc] for loc in p.in_state_locs]
        for k, loc in enumerate(p.remain_locs):
            remain_grads[k] += grads[loc]
    for i, grad in enumerate(data_grads + state_grads + remain_grads):
        assign(outputs[i], req[i], grad)


def _input_names(attrs: NodeAttrs) -> list[str]:
    n_data, n_state, n_remain = _counts(attrs.parsed)
    return (
        [f"data{i}" for i in range(n_data)]
        + [f"state{j}" for j in range(n_state)]
        + [f"remain{k}" for k in range(n_remain)]
    )


register_control_flow(
    "_foreach",
    "Run a subgraph over axis 0 of the data, carrying states (mx.sym.contrib.foreach).",
    ForeachParam,
    foreach_shape,
    foreach_type,
    foreach_forward,
    foreach_backward,
    input_names=_input_names,
)
