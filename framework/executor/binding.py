"""``bind`` and ``simple_bind``: from a symbol and arrays (or shapes) to an :class:`Executor`.

``bind`` takes the arrays the user allocated; ``simple_bind`` infers every shape from the
input shapes, allocates zeroed arrays (reusing those of another executor or a shared
buffer by name, as Module's bucketing does) and then binds them. Both check what they
are given against the symbol's variables (:mod:`.arguments`) before the
:class:`~framework.executor.executor.Executor` builds its graph, plan and steps.
``Symbol.bind`` and ``Symbol.simple_bind`` call these functions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..context import Context, current_context
from ..errors import check_stype
from ..ndarray.creation import zeros
from ..ndarray.ndarray import NDArray
from . import plan_memory as planner
from .arguments import (
    ExecutorError,
    check_array,
    check_group2ctx,
    head_entries,
    infer_variables,
    ordered_arrays,
    parse_grad_reqs,
    variable_nodes,
)
from .executor import Executor
from .graph import IndexedGraph
from .segments import BulkSizes


def bind(
    symbol: Any,
    ctx: Context,
    args: Sequence[NDArray] | Mapping[str, NDArray],
    args_grad: Sequence[NDArray | None] | Mapping[str, NDArray] | None = None,
    grad_req: str | Sequence[str] | Mapping[str, str] = "write",
    aux_states: Sequence[NDArray] | Mapping[str, NDArray] | None = None,
    group2ctx: Mapping[str, Context] | None = None,
    shared_exec: Executor | None = None,
    *,
    mirror: str | bool | int | None = None,
    plan_options: planner.PlanOptions | None = None,
    bulk_size: BulkSizes = None,
    split_weight_gradients: bool | str | None = None,
) -> Executor:
    """Bind ``symbol`` to arrays (MXNet's ``Symbol.bind``).

    ``args``/``args_grad``/``aux_states`` are lists in ``list_arguments()`` /
    ``list_auxiliary_states()`` order or dicts by name; an argument without a gradient
    array gets no gradient whatever ``grad_req`` says. MXLab extras (keyword-only):
    ``mirror`` ("node", "segment" or None for ``MXLAB_BACKWARD_DO_MIRROR``),
    ``plan_options`` (planner switches), ``bulk_size`` (nodes per bulk segment: one number for
    both passes, or ``(forward, backward)``; None: the settings, :func:`.segments.bulk_sizes`) and
    ``split_weight_gradients`` (True, False or "auto", see :mod:`.split_backward`; None:
    ``MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS``).
    """
    ctx = ctx or current_context()
    if not isinstance(ctx, Context):
        raise ExecutorError(f"bind: ctx must be a Context such as mx.cpu(), got {ctx!r}")
    check_group2ctx(group2ctx, ctx)
    graph = IndexedGraph(head_entries(symbol))
    arg_nodes, aux_nodes = variable_nodes(symbol, graph)
    arg_names, aux_names = [n.name for n in arg_nodes], [n.name for n in aux_nodes]
    arg_arrays = [
        check_array(a, n, "argument", ctx)
        for a, n in zip(ordered_arrays(args, arg_names, "args", False), arg_names, strict=True)
    ]
    grad_list = ordered_arrays(args_grad, arg_names, "args_grad", True)
    grad_arrays = [
        None if g is None else check_array(g, n, "gradient of", ctx) for g, n in zip(grad_list, arg_names, strict=True)
    ]
    reqs = parse_grad_reqs(grad_req, arg_names)
    for name, arg, grad in zip(arg_names, arg_arrays, grad_arrays, strict=True):
        if grad is not None and tuple(grad.shape) != tuple(arg.shape):
            raise ExecutorError(
                f"bind: gradient array of {name!r} has shape {tuple(grad.shape)}, the argument has {tuple(arg.shape)}"
            )
    aux_arrays = [
        check_array(a, n, "auxiliary state", ctx)
        for a, n in zip(
            ordered_arrays(aux_states if aux_names else aux_states or [], aux_names, "aux_states", False),
            aux_names,
            strict=True,
        )
    ]
    return Executor(
        symbol,
        ctx,
        arg_arrays,
        grad_arrays,
        reqs,
        aux_arrays,
        mirror=mirror,
        plan_options=plan_options,
        shared_exec=shared_exec,
        bulk_size=bulk_size,
        split_weight_gradients=split_weight_gradients,
    )


def simple_bind(
    symbol: Any,
    ctx: Context,
    grad_req: str | Sequence[str] | Mapping[str, str] = "write",
    type_dict: Mapping[str, Any] | None = None,
    stype_dict: Mapping[str, str] | None = None,
    group2ctx: Mapping[str, Context] | None = None,
    shared_arg_names: Sequence[str] | None = None,
    shared_exec: Executor | None = None,
    shared_buffer: dict[str, NDArray] | None = None,
    *,
    mirror: str | bool | int | None = None,
    plan_options: planner.PlanOptions | None = None,
    bulk_size: BulkSizes = None,
    **shapes: Any,
) -> Executor:
    """Infer every shape from ``**shapes``, allocate the arrays, bind (MXNet's ``Symbol.simple_bind``).

    Arguments and auxiliary states start at zero; gradient arrays are allocated for the
    arguments whose ``grad_req`` is not ``null``. ``shared_arg_names`` reuse the arrays
    (and gradients) of ``shared_exec``; ``shared_buffer`` holds other arrays to reuse by
    name, and receives the ones allocated.
    """
    ctx = ctx or current_context()
    if not isinstance(ctx, Context):
        raise ExecutorError(f"simple_bind: ctx must be a Context such as mx.cpu(), got {ctx!r}")
    check_group2ctx(group2ctx, ctx)
    for name, stype in (stype_dict or {}).items():
        check_stype(stype, f"simple_bind: argument {name!r}")
    arg_shapes, aux_shapes, arg_types, aux_types = infer_variables(symbol, shapes, dict(type_dict or {}))
    arg_names = list(arg_shapes)
    reqs = parse_grad_reqs(grad_req, arg_names)
    shared_names = set(shared_arg_names or [])

    def reuse(name: str, shape: tuple, dtype: str, pool: Mapping[str, NDArray] | None) -> NDArray | None:
        found = (pool or {}).get(name)
        if found is None or found.dtype != np.dtype(dtype) or found.context != ctx:
            return None
        if tuple(found.shape) == shape:
            return found
        if found.size >= math.prod(shape):
            return NDArray(found._chunk, found._data.reshape(-1)[: math.prod(shape)].reshape(shape))
        return None

    args, grads = [], []
    for name, req in zip(arg_names, reqs, strict=True):
        shape, dtype = arg_shapes[name], arg_types[name]
        array = grad = None
        if shared_exec is not None and name in shared_names:
            array = reuse(name, shape, dtype, shared_exec.arg_dict)
            grad = reuse(name, shape, dtype, {k: v for k, v in shared_exec.grad_dict.items() if v is not None})
        elif shared_buffer is not None:
            array = reuse(name, shape, dtype, shared_buffer)
        if array is None:
            array = zeros(shape, ctx, dtype)
            if shared_buffer is not None and name not in shared_names:
                shared_buffer[name] = array
        if req != "null" and grad is None:
            grad = zeros(shape, ctx, dtype)
        args.append(array)
        grads.append(grad if req != "null" else None)
    aux = []
    for name, shape in aux_shapes.items():
        found = reuse(name, shape, aux_types[name], shared_exec.aux_dict) if shared_exec is not None else None
        aux.append(found if found is not None else zeros(shape, ctx, aux_types[name]))
    return Executor(
        symbol,
        ctx,
        args,
        grads,
        reqs,
        aux,
        mirror=mirror,
        plan_options=plan_options,
        shared_exec=shared_exec,
        bulk_size=bulk_size,
    )
