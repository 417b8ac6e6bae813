"""``_while_loop``: run ``func`` while ``cond`` holds, at most ``max_iterations`` times.

MXNet's layout: the node's inputs are every value either subgraph reads; ``cond_input_locs``
and ``func_input_locs`` pick, for each subgraph input, the node input feeding it, and
``func_var_locs`` says which of ``func``'s inputs are the loop variables. ``func`` returns
``num_out_data`` per-step outputs and then the new loop variables, which replace the old ones
wherever either subgraph reads them. The node's outputs are the per-step outputs stacked to
``max_iterations`` steps (MXNet leaves the steps after the last one undefined; MXLab writes
zeros there) and the final loop variables.
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
    stacked,
)


class WhileLoopParam(SubgraphParams):
    num_subgraphs = 2
    num_args = Param(int, description="Number of inputs plus two for the cond and func subgraphs.", low=2)
    num_outputs = Param(int, description="Number of outputs: stacked outputs, then final loop variables.", low=0)
    num_out_data = Param(int, description="Number of per-step outputs of func.", low=0)
    max_iterations = Param(int, description="Most steps the loop runs; the stacked outputs have this length.", low=0)
    cond_input_locs = Param(Shape, description="Node input feeding each input of cond.")
    func_input_locs = Param(Shape, description="Node input feeding each input of func.")
    func_var_locs = Param(Shape, description="Positions among func's inputs of the loop variables.")


def _check(attrs: NodeAttrs) -> Any:
    p = attrs.parsed
    cond, func = p.subgraphs
    count = p.num_args - 2
    for name, graph, locs in (("cond", cond, p.cond_input_locs), ("func", func, p.func_input_locs)):
        if len(locs) != len(graph.inputs):
            raise InferenceError(
                f"_while_loop: {name} has {len(graph.inputs)} inputs {graph.input_names}, "
                f"but {name}_input_locs lists {len(locs)}"
            )
    check_locations("_while_loop", p, ("cond_input_locs", "func_input_locs"), count)
    check_locations("_while_loop", p, ("func_var_locs",), len(func.inputs))
    n_vars = len(p.func_var_locs)
    if p.num_outputs != p.num_out_data + n_vars or func.num_outputs != p.num_outputs:
        raise InferenceError(
            f"_while_loop: func returns {func.num_outputs} outputs; expected num_out_data={p.num_out_data} "
            f"outputs plus {n_vars} new loop variables (num_outputs={p.num_outputs})"
        )
    if cond.num_outputs != 1:
        raise InferenceError(f"_while_loop: cond must return one value, it returns {cond.num_outputs}")
    return p


def _var_inputs(p: Any) -> list[int]:
    """The node input holding each loop variable's initial value."""
    return [p.func_input_locs[loc] for loc in p.func_var_locs]


def while_loop_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    p = _check(attrs)
    cond, func = p.subgraphs
    var_inputs = _var_inputs(p)
    for j, k in enumerate(var_inputs):
        shape_assign(in_shapes, k, out_shapes[p.num_out_data + j], "_while_loop", f"loop variable {j}")
    ins, outs = runner("_while_loop").infer_shapes(func, [in_shapes[k] for k in p.func_input_locs])
    for m, k in enumerate(p.func_input_locs):
        shape_assign(in_shapes, k, ins[m], "_while_loop", f"input {k} (func input {func.input_names[m]!r})")
    for j, k in enumerate(var_inputs):
        try:
            shape_assign(in_shapes, k, outs[p.num_out_data + j], "_while_loop", f"loop variable {j}")
        except InferenceError:
            raise InferenceError(
                f"_while_loop: func returns loop variable {j} with shape {outs[p.num_out_data + j]}, "
                f"but it entered the loop with shape {in_shapes[k]}; a loop variable keeps its shape"
            ) from None
        shape_assign(out_shapes, p.num_out_data + j, in_shapes[k], "_while_loop", f"final loop variable {j}")
    cond_ins, _ = runner("_while_loop").infer_shapes(cond, [in_shapes[k] for k in p.cond_input_locs])
    for m, k in enumerate(p.cond_input_locs):
        shape_assign(in_shapes, k, cond_ins[m], "_while_loop", f"input {k} (cond input {cond.input_names[m]!r})")
    for k in range(p.num_out_data):
        shape_assign(out_shapes, k, stacked(p.max_iterations, outs[k]), "_while_loop", f"output {k}")
    return all(s is not None and 0 not in s for s in in_shapes + out_shapes)


def while_loop_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    p = _check(attrs)
    cond, func = p.subgraphs
    var_inputs = _var_inputs(p)
    for j, k in enumerate(var_inputs):
        type_assign(in_types, k, out_types[p.num_out_data + j], "_while_loop", f"loop variable {j}")
    ins, outs = runner("_while_loop").infer_types(func, [in_types[k] for k in p.func_input_locs])
    for m, k in enumerate(p.func_input_locs):
        type_assign(in_types, k, ins[m], "_while_loop", f"input {k}")
    for j, k in enumerate(var_inputs):
        type_assign(in_types, k, outs[p.num_out_data + j], "_while_loop", f"loop variable {j}")
        type_assign(out_types, p.num_out_data + j, in_types[k], "_while_loop", f"final loop variable {j}")
    cond_ins, _ = runner("_while_loop").infer_types(cond, [in_types[k] for k in p.cond_input_locs])
    for m, k in enumerate(p.cond_input_locs):
        type_assign(in_types, k, cond_ins[m], "_while_loop", f"input {k}")
    for k in range(p.num_out_data):
        type_assign(out_types, k, outs[k], "_while_loop", f"output {k}")
    return all(t is not None for t in in_types + out_types)


def _run_steps(p: Any, op_ctx: OpContext, inputs: list, on_step: Any) -> list:
    """Run the loop from ``inputs``; ``on_step(t, values, outputs)`` sees each step. The last values."""
    cond, func = p.subgraphs
    run = runner("_while_loop")
    values = list(inputs)
    var_inputs = _var_inputs(p)
    for t in range(p.max_iterations):
        (flag,) = run.forward(cond, op_ctx, [values[k] for k in p.cond_input_locs])
        if not check_scalar_condition("_while_loop", flag):
            break
        results = run.forward(func, op_ctx, [values[k] for k in p.func_input_locs])
        on_step(t, values, results[: p.num_out_data])
        values = list(values)
        for j, k in enumerate(var_inputs):
            values[k] = results[p.num_out_data + j]
    return values


def while_loop_forward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    p = attrs.parsed
    steps = [0]

    def write(t: int, values: list, step_outputs: list) -> None:
        for k, value in enumerate(step_outputs):
            assign(outputs[k][t, ...], req[k], value)  # [t, ...]: a view even of a 1-d output
        steps[0] = t + 1

    final = _run_steps(p, op_ctx, inputs, write)
    for k in range(p.num_out_data):  # the steps never run: zeros (MXNet leaves them undefined)
        assign(outputs[k][steps[0] :], req[k], 0)
    for j, k in enumerate(_var_inputs(p)):
        assign(outputs[p.num_out_data + j], req[p.num_out_data + j], final[k])


def while_loop_backward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """Re-run the loop to record each step's values, then differentiate ``func`` step by step in reverse."""
    p = attrs.parsed
    _, func = p.subgraphs
    xp = op_ctx.xp
    out_grads, forward_inputs = inputs[: p.num_outputs], inputs[p.num_outputs :]
    values_at: list[list] = []
    _run_steps(p, op_ctx, forward_inputs, lambda t, values, _: values_at.append(values))
    var_inputs = _var_inputs(p)
    var_of = {k: j for j, k in enumerate(var_inputs)}
    input_grads = [xp.zeros_like(x) for x in forward_inputs]
    var_grads = list(out_grads[p.num_out_data :])
    run = runner("_backward_while_loop")
    for t in reversed(range(len(values_at))):
        values = values_at[t]
        heads = [g[t] for g in out_grads[: p.num_out_data]] + var_grads
        grads = run.backward(func, op_ctx, [values[k] for k in p.func_input_locs], heads)
        var_grads = [xp.zeros_like(g) for g in var_grads]
        for m, k in enumerate(p.func_input_locs):
            if k in var_of:
                var_grads[var_of[k]] = var_grads[var_of[k]] + grads[m]
            else:
                input_grads[k] += grads[m]
    for j, k in enumerate(var_inputs):
        input_grads[k] += var_grads[j]
    for i, grad in enumerate(input_grads):
        assign(outputs[i], req[i], grad)


register_control_flow(
    "_while_loop",
    "Run the func subgraph while the cond subgraph holds (mx.sym.contrib.while_loop).",
    WhileLoopParam,
    while_loop_shape,
    while_loop_type,
    while_loop_forward,
    while_loop_backward,
)
