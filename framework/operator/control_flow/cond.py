"""``_cond``: evaluate a predicate subgraph, then run the ``then`` or the ``else`` subgraph.

MXNet's layout: the node's inputs are every value the three subgraphs read;
``cond_input_locs``, ``then_input_locs`` and ``else_input_locs`` pick the node input feeding
each subgraph input. Both branches must return the same number of outputs with the same
shapes and dtypes (shape inference checks it); only the taken branch runs, and only its
inputs get gradients.
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
    check_scalar_condition,
    register_control_flow,
    runner,
)


class CondParam(SubgraphParams):
    num_subgraphs = 3
    num_args = Param(int, description="Number of inputs plus three for the cond, then and else subgraphs.", low=3)
    num_outputs = Param(int, description="Number of outputs of each branch.", low=1)
    cond_input_locs = Param(Shape, description="Node input feeding each input of the predicate.")
    then_input_locs = Param(Shape, description="Node input feeding each input of the then branch.")
    else_input_locs = Param(Shape, description="Node input feeding each input of the else branch.")


_PARTS = (("cond", "cond_input_locs"), ("then", "then_input_locs"), ("else", "else_input_locs"))


def _check(attrs: NodeAttrs) -> Any:
    p = attrs.parsed
    for (name, locs), graph in zip(_PARTS, p.subgraphs, strict=True):
        if len(getattr(p, locs)) != len(graph.inputs):
            raise InferenceError(
                f"_cond: the {name} subgraph has {len(graph.inputs)} inputs {graph.input_names}, "
                f"but {locs} lists {len(getattr(p, locs))}"
            )
    check_locations("_cond", p, [locs for _, locs in _PARTS], p.num_args - 3)
    if p.subgraphs[0].num_outputs != 1:
        raise InferenceError(f"_cond: the predicate must return one value, it returns {p.subgraphs[0].num_outputs}")
    for (name, _), graph in zip(_PARTS[1:], p.subgraphs[1:], strict=True):
        if graph.num_outputs != p.num_outputs:
            raise InferenceError(
                f"_cond: the {name} branch returns {graph.num_outputs} outputs, expected num_outputs={p.num_outputs}"
            )
    return p


def _infer(attrs: NodeAttrs, in_values: list, out_values: list, kind: str) -> bool:
    p = _check(attrs)
    assign_value = shape_assign if kind == "shape" else type_assign
    run = runner("_cond")
    infer = run.infer_shapes if kind == "shape" else run.infer_types
    for (name, locs_name), graph in zip(_PARTS, p.subgraphs, strict=True):
        locs = getattr(p, locs_name)
        ins, outs = infer(graph, [in_values[k] for k in locs])
        for m, k in enumerate(locs):
            assign_value(in_values, k, ins[m], "_cond", f"input {k} ({name} input {graph.input_names[m]!r})")
        if name == "cond":
            continue
        for i, value in enumerate(outs):
            try:
                assign_value(out_values, i, value, "_cond", f"output {i}")
            except InferenceError:
                raise InferenceError(
                    f"_cond: the then and else branches disagree on the {kind} of output {i}: "
                    f"{out_values[i]} versus {value} (from the {name} branch)"
                ) from None
    if kind == "shape":
        return all(s is not None and 0 not in s for s in in_values + out_values)
    return all(t is not None for t in in_values + out_values)


def cond_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    return _infer(attrs, in_shapes, out_shapes, "shape")


def cond_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    return _infer(attrs, in_types, out_types, "type")


def _branch(p: Any, op_ctx: OpContext, inputs: list) -> tuple[Any, Any]:
    """The branch the predicate picks and its input locations."""
    (flag,) = runner("_cond").forward(p.subgraphs[0], op_ctx, [inputs[k] for k in p.cond_input_locs])
    if check_scalar_condition("_cond", flag):
        return p.subgraphs[1], p.then_input_locs
    return p.subgraphs[2], p.else_input_locs


def cond_forward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    p = attrs.parsed
    graph, locs = _branch(p, op_ctx, inputs)
    results = runner("_cond").forward(graph, op_ctx, [inputs[k] for k in locs])
    for i, value in enumerate(results):
        assign(outputs[i], req[i], value)


def cond_backward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """Re-evaluate the predicate and differentiate the branch it picks; other inputs get zeros."""
    p = attrs.parsed
    out_grads, forward_inputs = inputs[: p.num_outputs], inputs[p.num_outputs :]
    graph, locs = _branch(p, op_ctx, forward_inputs)
    grads = runner("_backward_cond").backward(graph, op_ctx, [forward_inputs[k] for k in locs], list(out_grads))
    input_grads = [op_ctx.xp.zeros_like(x) for x in forward_inputs]
    for m, k in enumerate(locs):
        input_grads[k] += grads[m]
    for i, grad in enumerate(input_grads):
        assign(outputs[i], req[i], grad)


register_control_flow(
    "_cond",
    "Run the then or the else subgraph, as the cond subgraph says (mx.sym.contrib.cond).",
    CondParam,
    cond_shape,
    cond_type,
    cond_forward,
    cond_backward,
)
