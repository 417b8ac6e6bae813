"""``mx.nd.contrib.foreach``, ``while_loop`` and ``cond``: control flow run by Python, recorded by autograd.

Imperatively there is nothing to plan: the body is a Python function of NDArrays, so each
front end simply calls it, step after step, and stacks the per-step outputs with ``stack``.
Every operator the body runs is pushed and (under ``autograd.record()``) recorded as usual, so
gradients flow through all iterations without a special operator. The symbolic twins in
``framework/symbol/control_flow.py`` build ``_foreach``/``_while_loop``/``_cond`` nodes instead.
"""

from __future__ import annotations

from typing import Any

from ..operator.control_flow.structure import (
    ControlFlowError,
    check_callable,
    check_same_count,
    check_while_loop_args,
    flatten,
    regroup,
    split_pair,
)
from . import op
from .ndarray import NDArray


def _is_array(value: Any) -> bool:
    return isinstance(value, NDArray)


def _check_shapes(before: list[NDArray], after: list[NDArray], what: str) -> None:
    for i, (a, b) in enumerate(zip(before, after, strict=True)):
        if not isinstance(b, NDArray):
            raise ControlFlowError(f"{what} {i} must be an NDArray, got {type(b).__name__}")
        if a.shape != b.shape:
            raise ControlFlowError(f"{what} {i} changed shape from {a.shape} to {b.shape}; it must keep its shape")


def _stack(steps: list[list[NDArray]], pad_to: int = 0) -> list[NDArray]:
    """Per-step outputs stacked along a new axis 0, padded with zero steps up to ``pad_to`` steps."""
    stacked = []
    for k in range(len(steps[0])):
        column = [step[k] for step in steps]
        column += [op.zeros_like(column[0])] * max(pad_to - len(column), 0)
        stacked.append(op.stack(*column, axis=0, num_args=len(column)))
    return stacked


def foreach(body: Any, data: Any, init_states: Any) -> tuple[Any, Any]:
    """Run ``body(data[t], states) -> (outputs, states)`` for each ``t`` along axis 0 of ``data``.

    ``data`` and ``init_states`` are NDArrays or (nested) lists of them; returns the per-step
    outputs stacked along axis 0 (in the structure ``body`` returns) and the final states.
    """
    check_callable(body, "foreach: body")
    data_leaves, data_structure = flatten(data, _is_array, "foreach: data")
    states, state_structure = flatten(init_states, _is_array, "foreach: init_states")
    if not data_leaves:
        raise ControlFlowError("foreach: data must hold at least one NDArray")
    length = data_leaves[0].shape[0] if data_leaves[0].ndim else 0
    for i, d in enumerate(data_leaves):
        if d.ndim == 0 or d.shape[0] != length:
            raise ControlFlowError(
                f"foreach: every data array must have the same length along axis 0; data {i} has shape {d.shape}, "
                f"data 0 has {data_leaves[0].shape}"
            )
    steps: list[list[NDArray]] = []
    out_structure: Any = None
    for t in range(length):
        step_data = regroup([d[t] for d in data_leaves], data_structure)
        outs, new_states = split_pair(body(step_data, regroup(states, state_structure)), "foreach: body")
        out_leaves, out_structure = flatten(outs, _is_array, "foreach: the body's outputs")
        new_leaves, _ = flatten(new_states, _is_array, "foreach: the body's states")
        check_same_count(states, new_leaves, "foreach: the number of states")
        _check_shapes(states, new_leaves, "foreach: state")
        if steps and len(out_leaves) != len(steps[0]):
            raise ControlFlowError(f"foreach: step {t} returned {len(out_leaves)} outputs, step 0 {len(steps[0])}")
        steps.append(out_leaves)
        states = new_leaves
    outputs = regroup(_stack(steps), out_structure) if steps and steps[0] else []
    return outputs, regroup(states, state_structure)


def while_loop(cond: Any, func: Any, loop_vars: Any, max_iterations: int | None = None) -> tuple[Any, Any]:
    """Run ``func(*loop_vars) -> (outputs, new_loop_vars)`` while ``cond(*loop_vars)`` is true.

    At most ``max_iterations`` steps (required, as in MXNet); the per-step outputs are stacked
    along axis 0 and padded with zeros to ``max_iterations`` steps (MXNet leaves the padding
    undefined). When no step runs there are no outputs (``[]``), as in MXNet.
    """
    check_while_loop_args(cond, func, max_iterations)
    variables, var_structure = flatten(loop_vars, _is_array, "while_loop: loop_vars")
    steps: list[list[NDArray]] = []
    out_structure: Any = None
    while len(steps) < max_iterations:
        flag = cond(*variables)
        if not isinstance(flag, NDArray) or flag.size != 1:
            raise ControlFlowError(f"while_loop: cond must return an NDArray of one element, got {flag!r:.60}")
        if not bool(flag.asscalar()):
            break
        outs, new_vars = split_pair(func(*variables), "while_loop: func")
        out_leaves, out_structure = flatten([] if outs is None else outs, _is_array, "while_loop: func's outputs")
        new_leaves, _ = flatten(new_vars, _is_array, "while_loop: func's loop variables")
        check_same_count(variables, new_leaves, "while_loop: the number of loop variables")
        _check_shapes(variables, new_leaves, "while_loop: loop variable")
        steps.append(out_leaves)
        variables = new_leaves
    outputs = regroup(_stack(steps, max_iterations), out_structure) if steps and steps[0] else []
    return outputs, regroup(variables, var_structure)


def cond(pred: NDArray, then_func: Any, else_func: Any) -> Any:
    """``then_func()`` if the one-element ``pred`` is non-zero, else ``else_func()``."""
    check_callable(then_func, "cond: then_func")
    check_callable(else_func, "cond: else_func")
    if not isinstance(pred, NDArray) or pred.size != 1:
        raise ControlFlowError(f"cond: pred must be an NDArray of one element, got {pred!r:.60}")
    return then_func() if bool(pred.asscalar()) else else_func()


#: The functions ``mx.nd.contrib`` gains (by name).
FUNCTIONS = {"foreach": foreach, "while_loop": while_loop, "cond": cond}
