"""Imperative execution: how ``mx.nd.<op>(...)`` turns into one engine push.

``invoke`` is the whole path of an imperative call:

1. parse the keyword arguments into the operator's parameters (cached per call pattern);
2. infer output shapes and dtypes from the inputs (and from ``out=``, when given);
3. allocate outputs (pooled storage + a fresh engine variable each);
4. push one function to the engine that reads the inputs' variables and writes the
   outputs' (plus any input the operator mutates and any resource it requested);
   asynchronous operators (``OpDef.is_async``) are pushed with ``push_async``;
5. if autograd is recording, remember the call on the tape.

An operator that is a whole graph (``OpDef.subgraph_exec``, the CachedOp) skips steps 2-4:
it runs on the calling thread and pushes its graph's own operations.

It returns as soon as the push is done: the computation happens on an engine worker.
"""

from __future__ import annotations

import threading
from typing import Any

from .. import backend
from ..base import MXLabError
from ..context import Context, current_context
from ..engine import Engine, FnProperty
from ..operator import registry
from ..operator.infer import InferenceError, dtype_name
from ..operator.kernel import WRITE, OpContext
from ..operator.node import NodeAttrs
from ..operator.registry import OpDef
from ..resource import ResourceManager
from .ndarray import NDArray, new_array


class _State(threading.local):
    """Per-thread autograd flags (set by ``mx.autograd``)."""

    def __init__(self) -> None:
        self.recording = False
        self.training = False


STATE = _State()
#: Installed by framework.autograd: called as ``record(op, attrs, inputs, outputs)``.
tape_hook: Any = None

_attr_cache: dict[tuple, NodeAttrs] = {}
_ATTR_CACHE_LIMIT = 4096
# (attrs, input shapes and types, given outputs) -> (output shapes, output types). Inference
# is a pure function of these, so a call pattern seen before skips it.
_infer_cache: dict[tuple, tuple[list, list]] = {}
_INFER_CACHE_LIMIT = 8192


def parse_attrs(op: OpDef, kwargs: dict[str, Any]) -> NodeAttrs:
    """Parse (or fetch from the cache) the node attributes for ``op`` called with ``kwargs``."""
    try:
        key = (op, *sorted(kwargs.items()))  # the record itself: a re-registration gets new keys
        hash(key)
    except TypeError:  # unhashable values (lists): parse without caching
        return op.parse_attrs(kwargs)
    attrs = _attr_cache.get(key)
    if attrs is None:
        attrs = op.parse_attrs(kwargs)
        if len(_attr_cache) < _ATTR_CACHE_LIMIT:
            _attr_cache[key] = attrs
    return attrs


def _plan(op: OpDef, attrs: NodeAttrs) -> tuple:
    """Facts about a call that depend only on the operator and its parameters, cached on attrs."""
    plan = attrs.plan
    if plan is None:
        plan = attrs.plan = (
            op.get_num_inputs(attrs),
            op.get_num_outputs(attrs),
            op.get_num_visible_outputs(attrs),
            tuple(op.mutate_inputs(attrs)),
            tuple(op.resource_request(attrs)),
        )
    return plan


def _infer(
    op: OpDef, attrs: NodeAttrs, in_shapes: list, in_types: list, outs: list, num_outputs: int
) -> tuple[list, list]:
    """Run the operator's shape and type inference; every output must end up known."""
    out_shapes: list[Any] = [o._data.shape for o in outs] + [None] * (num_outputs - len(outs))
    out_types: list[Any] = [dtype_name(o._data.dtype) for o in outs] + [None] * (num_outputs - len(outs))
    op.run_infer_shape(attrs, list(in_shapes), out_shapes)
    op.run_infer_type(attrs, list(in_types), out_types)
    for i in range(num_outputs):
        shape = out_shapes[i]
        # A 0 dimension means "unknown", unless an input is itself empty (then it is real).
        if shape is None or (0 in shape and in_shapes and 0 not in in_shapes_flat(in_shapes)):
            raise InferenceError(f"{op.name}: cannot infer the shape of output {i} from inputs {in_shapes}")
        if out_types[i] is None:
            raise InferenceError(f"{op.name}: cannot infer the type of output {i} from inputs {in_types}")
    return [tuple(shape) for shape in out_shapes], out_types


def invoke(
    op: OpDef | str,
    inputs: list[NDArray],
    kwargs: dict[str, Any] | None = None,
    out: NDArray | list[NDArray] | None = None,
    ctx: Context | None = None,
    attrs: NodeAttrs | None = None,
) -> list[NDArray]:
    """Run ``op`` on ``inputs`` asynchronously; returns the (visible) output arrays.

    ``attrs`` may be passed already parsed (the generated front-end functions do);
    otherwise ``kwargs`` are parsed.
    """
    if isinstance(op, str):
        op = registry.get(op)
    if attrs is None:
        attrs = parse_attrs(op, kwargs or {})
    num_inputs, num_outputs, num_visible, mutated, resources = _plan(op, attrs)

    # 1. check the inputs: count, type, one context
    if len(inputs) != num_inputs:
        raise MXLabError(f"{op.name}: expected {num_inputs} input array(s), got {len(inputs)}")
    for i, array in enumerate(inputs):
        if not isinstance(array, NDArray):
            names = op.list_input_names(attrs)
            label = names[i] if i < len(names) else str(i)
            raise MXLabError(f"{op.name}: input '{label}' must be an NDArray, got {type(array).__name__}")
    if inputs:
        ctx = inputs[0]._chunk.ctx
        for array in inputs:
            if array._chunk.ctx != ctx:
                raise MXLabError(
                    f"{op.name}: all inputs must be on one context, got {ctx} and {array._chunk.ctx}; "
                    "move them with .as_in_context(ctx)"
                )
    elif ctx is None:
        ctx = current_context()
    if op.subgraph_exec is not None:  # a whole graph: it pushes its own operations
        outputs = op.subgraph_exec(attrs, inputs, out)
        if STATE.recording and tape_hook is not None:
            tape_hook(op, attrs, inputs, outputs)
        return outputs

    # 2. infer output shapes and types (from out= too)
    outs: list[NDArray] = []
    if out is not None:
        outs = [out] if isinstance(out, NDArray) else list(out)
        if len(outs) != num_visible:
            raise MXLabError(f"{op.name}: out= must hold {num_visible} array(s), got {len(outs)}")
        for o in outs:
            if not isinstance(o, NDArray):
                raise MXLabError(f"{op.name}: out= must hold NDArrays, got {type(o).__name__}")
            if o._chunk.ctx != ctx:
                raise MXLabError(f"{op.name}: out= array is on {o._chunk.ctx}, inputs are on {ctx}")
    in_shapes = [a._data.shape for a in inputs]
    in_types = [dtype_name(a._data.dtype) for a in inputs]
    key = (attrs, *in_shapes, *in_types, *[(o._data.shape, o._data.dtype) for o in outs])
    cached = _infer_cache.get(key)
    if cached is None:
        cached = _infer(op, attrs, in_shapes, in_types, outs, num_outputs)
        if len(_infer_cache) < _INFER_CACHE_LIMIT:
            _infer_cache[key] = cached
    out_shapes, out_types = cached

    # 3. allocate the outputs not given
    if not inputs:
        backend.check_context(ctx)  # creation operators: the context came from the caller
    outputs = outs + [new_array(out_shapes[i], ctx, out_types[i]) for i in range(len(outs), num_outputs)]

    # 4. one push: read the inputs, write the outputs (+ mutated inputs, + resources)
    writes = [o._chunk.var for o in outputs]
    for index in mutated:
        var = inputs[index]._chunk.var
        if var not in writes:
            writes.append(var)
    requested = []
    if resources:
        manager = ResourceManager.get()
        requested = [manager.request(ctx, req) for req in resources]
        writes.extend(r.var for r in requested if r.var not in writes)
    reads = []
    for array in inputs:
        var = array._chunk.var
        if var not in writes and var not in reads:
            reads.append(var)

    compute = op.get_compute(ctx.device_type)
    in_data = [a._data for a in inputs]
    out_data = [o._data for o in outputs]
    reqs = [WRITE] * num_outputs
    is_train = STATE.training

    if op.is_async:
        # The compute function starts the work and returns; the engine counts the
        # operation done when it calls on_complete (MXNet's ExecType::kAsync).
        def run_async(run_ctx: Any, on_complete: Any) -> None:
            op_ctx = OpContext(is_train, ctx, run_ctx.stream, requested, on_complete)
            compute(attrs, op_ctx, in_data, reqs, out_data)

        Engine.get().push_async(run_async, ctx, reads, writes, prop=FnProperty.ASYNC, name=op.name)
    else:

        def run(run_ctx: Any) -> None:
            compute(attrs, OpContext(is_train, ctx, run_ctx.stream, requested), in_data, reqs, out_data)

        Engine.get().push_sync(run, ctx, reads, writes, name=op.name)

    # 5. the tape
    if STATE.recording and tape_hook is not None:
        tape_hook(op, attrs, inputs, outputs)
    return outputs if num_visible == num_outputs else outputs[:num_visible]


def in_shapes_flat(shapes: list[Any]) -> list[int]:
    """Every dimension of every input shape (zero-size inputs may give zero-size outputs)."""
    return [d for shape in shapes if shape is not None for d in shape]
