"""Imperative execution: how ``mx.nd.<op>(...)`` turns into one engine push.

``invoke`` is the whole path of an imperative call:

1. parse the keyword arguments into the operator's parameters (cached per call pattern);
2. infer output shapes and dtypes from the inputs (and from ``out=``, when given); an operator
   whose output shapes depend on the input *values* (``OpDef.shape_from_values``, such as
   ``boolean_mask``) waits for its inputs and computes the shapes from them instead;
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

import math
import threading
from typing import Any

import numpy as np

from .. import backend
from ..base import EngineError, MXLabError
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
    """Per-thread autograd flags (set by ``mx.autograd``).

    Reading an attribute of a thread-local object costs several times a plain one (it first
    finds the calling thread's own dictionary), and the direct paths would read two per call.
    So setting ``recording`` or ``training`` also keeps a process-wide count of the threads
    whose flag is on (:data:`FLAGS_ON`): while a count is zero, no thread, this one included,
    has that flag set, and the hot path skips the read. A thread that ends with a flag on leaves
    its count above zero: correct, only the reads come back.
    """

    def __init__(self) -> None:
        self.recording = False
        self.training = False
        #: While ``autograd.backward`` runs: the ids of the arrays whose ``.grad`` it overwrites
        #: (``grad_req='write'``). A graph operator (the CachedOp) may write such a gradient
        #: straight into ``.grad``; outside this set ``.grad`` must stay untouched.
        self.grads_written: frozenset[int] = frozenset()

    def __setattr__(self, name: str, value: Any) -> None:
        if name in FLAGS_ON:
            with _flags_lock:
                was_on = bool(getattr(self, name, False))
                if bool(value) != was_on:
                    FLAGS_ON[name] += -1 if was_on else 1
                super().__setattr__(name, value)
            return
        super().__setattr__(name, value)


#: How many threads have each autograd flag on (see _State); read without a lock on the hot path,
#: changed only under ``_flags_lock`` together with the flag itself.
FLAGS_ON: dict[str, int] = {"recording": 0, "training": 0}
_flags_lock = threading.Lock()
STATE = _State()
#: Installed by framework.autograd: called as ``record(op, attrs, inputs, outputs)``.
tape_hook: Any = None

_attr_cache: dict[tuple, NodeAttrs] = {}
_ATTR_CACHE_LIMIT = 4096
# (attrs, device type and id, input shapes and dtypes, given outputs) -> CallPlan. Inference is a
# pure function of these, so a call pattern seen before skips it and everything derived from it.
_call_cache: dict[tuple, CallPlan] = {}
_CALL_CACHE_LIMIT = 8192


class CallPlan:
    """What one call pattern of an operator needs, worked out once and reused by every repeat.

    A call pattern is the parsed attributes plus the device (type and id), the shapes and dtypes of the
    inputs (and of the ``out=`` arrays). Everything here follows from those alone: the
    output shapes and dtypes (inference), the write requests, and the number of elements the
    call touches, which decides whether the engine may run it inline.
    """

    __slots__ = (
        "out_shapes",
        "out_types",
        "out_nbytes",
        "reqs",
        "elements",
        "trivial_deps",
        "cpu_op_contexts",
        "direct_compute",
    )

    def __init__(self, out_shapes: list[tuple], out_types: list[str], in_shapes: list[tuple], plain: bool) -> None:
        self.out_shapes = out_shapes
        self.out_types = out_types
        #: The bytes of each output (what its allocation asks the pool for).
        self.out_nbytes = [
            math.prod(shape) * np.dtype(name).itemsize for shape, name in zip(out_shapes, out_types, strict=True)
        ]
        #: One write request per output; shared by every call (compute functions only read it).
        self.reqs = [WRITE] * len(out_shapes)
        self.elements = sum(math.prod(shape) for shape in (*in_shapes, *out_shapes))
        #: No mutated inputs and no resources: the variables are just the arrays' own.
        self.trivial_deps = plain
        #: For such calls on a CPU, the OpContext of (not training, training), made on first
        #: use: it holds nothing that varies between calls (a CPU runs without a stream), and
        #: compute functions only read it.
        self.cpu_op_contexts: list[OpContext | None] = [None, None]
        #: The CPU compute function when this pattern may take a direct path (set by
        #: :func:`invoke`, which knows the operator and the device), else None: one input, one
        #: output, plain. Without ``out=`` in the key that path is :func:`invoke_single`'s, with
        #: one ``out=`` array :func:`invoke_in_place`'s (which only takes it for ``out=`` the input).
        self.direct_compute: Any = None

    def cpu_op_context(self, is_train: bool, ctx: Context) -> OpContext:
        """The shared OpContext of this CPU call pattern (the key holds the device id)."""
        op_ctx = self.cpu_op_contexts[is_train]
        if op_ctx is None:
            op_ctx = self.cpu_op_contexts[is_train] = OpContext(is_train, ctx, None, [])
        return op_ctx


def _key_part(value: Any) -> Any:
    """A parameter value as a cache key that tells apart what parses differently.

    Python's equality would merge values the operator must not see merged: ``0.0 == -0.0``
    (``x * -0.0`` would reuse ``x * 0.0``'s attributes and lose the sign), ``1 == 1.0 ==
    True`` (a string parameter stores ``"1"`` or ``"1.0"``), and a NaN is equal to nothing,
    so NaN parameters never hit and fill the cache. Tagging each value with its type and
    spelling floats by their exact hex form (``-0x0.0p+0``, ``nan``) keeps them apart and
    makes NaN keys equal.
    """
    kind = type(value)
    if kind is float:
        return (kind, value.hex())
    if kind is str or kind is int or kind is bool:
        return (kind, value)
    if isinstance(value, np.floating):
        return (kind, float(value).hex())
    if kind is tuple or kind is list:
        return (kind, tuple([_key_part(item) for item in value]))
    return (kind, value)


def parse_attrs(op: OpDef, kwargs: dict[str, Any]) -> NodeAttrs:
    """Parse (or fetch from the cache) the node attributes for ``op`` called with ``kwargs``."""
    # The record itself: a re-registration gets new keys. Sorted by name, values tagged;
    # one argument (``a + 1``'s scalar) is the common case and needs no sorting.
    if len(kwargs) == 1:
        ((name, value),) = kwargs.items()
        # A float other than 0.0, -0.0 and NaN is its own key (no other key part equals a bare
        # float): ``a + 1`` skips the tagging.
        if type(value) is float and value and value == value:  # noqa: PLR0124 - False for NaN
            key: tuple = (op, name, value)
        else:
            key = (op, name, _key_part(value))
    else:
        key = (op, *[(name, _key_part(value)) for name, value in sorted(kwargs.items())])
    try:
        attrs = _attr_cache.get(key)
    except TypeError:  # unhashable values (dicts): parse without caching
        return op.parse_attrs(kwargs)
    if attrs is None:
        attrs = op.parse_attrs(kwargs)
        if len(_attr_cache) < _ATTR_CACHE_LIMIT:
            _attr_cache[key] = attrs
    return attrs


def scalar_attrs(op: OpDef, scalar: float) -> NodeAttrs:
    """``parse_attrs(op, {"scalar": scalar})`` for the scalar operators (``a + 1``, ``a += 1``).

    A nonzero, non-NaN float is its own key part (see :func:`parse_attrs`), so a repeat is one
    lookup of the key :func:`parse_attrs` stored, without building the keyword dict first.
    """
    if scalar and scalar == scalar:  # noqa: PLR0124 - False for NaN
        attrs = _attr_cache.get((op, "scalar", scalar))
        if attrs is not None:
            return attrs
    return parse_attrs(op, {"scalar": scalar})


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


def make_call_plan(op: OpDef, attrs: NodeAttrs, inputs: list[NDArray], outs: list[NDArray], plan: tuple) -> CallPlan:
    """Infer a new call pattern and record what it needs (the slow path, once per pattern).

    ``plan`` is ``_plan(op, attrs)``. Public so that benchmarks/ndarray_dispatch.py can time
    what the call-pattern cache saves.
    """
    num_outputs, mutated, resources = plan[1], plan[3], plan[4]
    in_shapes = [a._data.shape for a in inputs]
    in_types = [dtype_name(a._data.dtype) for a in inputs]
    out_shapes, out_types = _infer(op, attrs, in_shapes, in_types, outs, num_outputs)
    return CallPlan(out_shapes, out_types, in_shapes, not mutated and not resources)


def value_shaped_call_plan(
    op: OpDef, attrs: NodeAttrs, inputs: list[NDArray], outs: list[NDArray], plan: tuple
) -> CallPlan:
    """The call plan of an operator whose output shapes depend on its input values.

    Waits until the inputs are computed (the calling thread blocks, as reading an NDArray
    does), asks ``op.shape_from_values`` for the output shapes and takes the dtypes from
    type inference; ``out=`` arrays must have exactly those shapes.
    """
    num_outputs, mutated, resources = plan[1], plan[3], plan[4]
    for array in inputs:
        array.wait_to_read()
    out_shapes = [tuple(int(d) for d in s) for s in op.shape_from_values(attrs, [a._data for a in inputs])]
    for i, o in enumerate(outs):
        if o._data.shape != out_shapes[i]:
            raise InferenceError(
                f"{op.name}: out= array {i} has shape {o._data.shape}, but the values of the inputs "
                f"give the output shape {out_shapes[i]}"
            )
    in_types = [dtype_name(a._data.dtype) for a in inputs]
    out_types: list[Any] = [dtype_name(o._data.dtype) for o in outs] + [None] * (num_outputs - len(outs))
    op.run_infer_type(attrs, in_types, out_types)
    for i, dtype in enumerate(out_types):
        if dtype is None:
            raise InferenceError(f"{op.name}: cannot infer the type of output {i} from inputs {in_types}")
    return CallPlan(out_shapes, out_types, [a._data.shape for a in inputs], not mutated and not resources)


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
    plan = attrs.plan
    if plan is None:
        plan = _plan(op, attrs)
    num_inputs, num_outputs, num_visible, mutated, resources = plan

    # 1. check the inputs (count, type, one context) and 2. build the call pattern's key
    # from their shapes and dtypes, in one pass: this runs for every call.
    if len(inputs) != num_inputs:
        raise MXLabError(f"{op.name}: expected {num_inputs} input array(s), got {len(inputs)}")
    if num_inputs == 1:  # the common case, spelled out
        array = inputs[0]
        if not isinstance(array, NDArray):
            names = op.list_input_names(attrs)
            label = names[0] if names else "0"
            raise MXLabError(f"{op.name}: input '{label}' must be an NDArray, got {type(array).__name__}")
        ctx = array._chunk.ctx
        data = array._data
        key: list | tuple = [attrs, ctx.device_type, ctx.device_id, data.shape, data.dtype]
        if out is None:  # the key is complete: build the tuple at once
            key = (attrs, ctx.device_type, ctx.device_id, data.shape, data.dtype)
    elif inputs:
        ctx = None
        key = [attrs]
        for i, array in enumerate(inputs):
            if not isinstance(array, NDArray):
                names = op.list_input_names(attrs)
                label = names[i] if i < len(names) else str(i)
                raise MXLabError(f"{op.name}: input '{label}' must be an NDArray, got {type(array).__name__}")
            array_ctx = array._chunk.ctx
            if ctx is None:
                ctx = array_ctx
                key.append(ctx.device_type)
                key.append(ctx.device_id)
            elif array_ctx is not ctx and array_ctx != ctx:
                raise MXLabError(
                    f"{op.name}: all inputs must be on one context, got {ctx} and {array_ctx}; "
                    "move them with .as_in_context(ctx)"
                )
            data = array._data
            key.append(data.shape)
            key.append(data.dtype)
    else:
        if ctx is None:
            ctx = current_context()
        key = [attrs, ctx.device_type, ctx.device_id]
    if op.subgraph_exec is not None:  # a whole graph: it pushes its own operations
        outputs = op.subgraph_exec(attrs, inputs, out)
        if STATE.recording and tape_hook is not None:
            tape_hook(op, attrs, inputs, outputs)
        return outputs
    outs: list[NDArray] = []
    if out is not None:
        outs = [out] if isinstance(out, NDArray) else list(out)
        if len(outs) != num_visible:
            raise MXLabError(f"{op.name}: out= must hold {num_visible} array(s), got {len(outs)}")
        for o in outs:
            if not isinstance(o, NDArray):
                raise MXLabError(f"{op.name}: out= must hold NDArrays, got {type(o).__name__}")
            if o._chunk.ctx is not ctx and o._chunk.ctx != ctx:
                raise MXLabError(f"{op.name}: out= array is on {o._chunk.ctx}, inputs are on {ctx}")
            key.append((o._data.shape, o._data.dtype))
    if op.shape_from_values is not None:  # the output shapes follow from the input values
        call = value_shaped_call_plan(op, attrs, inputs, outs, plan)
    else:
        if type(key) is list:
            key = tuple(key)
        call = _call_cache.get(key)
        if call is None:
            call = make_call_plan(op, attrs, inputs, outs, plan)
            if (
                num_inputs == 1
                and num_outputs == 1
                and num_visible == 1
                and call.trivial_deps
                and not op.is_async
                and ctx.device_type == "cpu"
            ):
                call.direct_compute = op.get_compute("cpu")
            if len(_call_cache) < _CALL_CACHE_LIMIT:
                _call_cache[key] = call

    # 3. allocate the outputs not given
    if not inputs:
        backend.check_context(ctx)  # creation operators: the context came from the caller
    outputs = outs
    if len(outs) < num_outputs:
        shapes, types = call.out_shapes, call.out_types
        if num_outputs == 1:
            outputs = [new_array(shapes[0], ctx, types[0])]
        else:
            outputs = outs + [new_array(shapes[i], ctx, types[i]) for i in range(len(outs), num_outputs)]

    # 4. one push: read the inputs, write the outputs (+ mutated inputs, + resources)
    requested: list = []
    if call.trivial_deps and num_outputs == 1 and len(inputs) == 1:  # the common case, spelled out
        write = outputs[0]._chunk.var
        writes: tuple = (write,)
        read = inputs[0]._chunk.var
        reads: tuple = () if read is write else (read,)
        in_data = [inputs[0]._data]
        out_data = [outputs[0]._data]
    else:
        write_list = [o._chunk.var for o in outputs]
        for index in mutated:
            var = inputs[index]._chunk.var
            if var not in write_list:
                write_list.append(var)
        if resources:
            manager = ResourceManager.get()
            requested = [manager.request(ctx, req) for req in resources]
            write_list.extend(r.var for r in requested if r.var not in write_list)
        writes = tuple(write_list)
        if len(set(writes)) != len(writes):
            # EngineError, as when the engine itself refused the duplicate variable before
            raise EngineError(f"{op.name}: out= holds the same array (or views of one array) more than once")
        reads = tuple(dict.fromkeys(var for a in inputs if (var := a._chunk.var) not in writes))
        in_data = [a._data for a in inputs]
        out_data = [o._data for o in outputs]

    compute = op.compute.get(ctx.device_type) or op.get_compute(ctx.device_type)  # the latter raises
    reqs = call.reqs
    is_train = STATE.training if FLAGS_ON["training"] else False  # see _State
    engine = Engine._default or Engine.get()

    if op.is_async:
        # The compute function starts the work and returns; the engine counts the
        # operation done when it calls on_complete (MXNet's ExecType::kAsync).
        def run_async(run_ctx: Any, on_complete: Any) -> None:
            op_ctx = OpContext(is_train, ctx, run_ctx.stream, requested, on_complete)
            compute(attrs, op_ctx, in_data, reqs, out_data)

        engine.push_async(run_async, ctx, reads, writes, prop=FnProperty.ASYNC, name=op.name)
    elif call.trivial_deps and ctx.device_type == "cpu":
        op_ctx = call.cpu_op_contexts[is_train]
        if op_ctx is None:
            op_ctx = call.cpu_op_context(is_train, ctx)

        def run(run_ctx: Any) -> None:
            compute(attrs, op_ctx, in_data, reqs, out_data)

        engine.push_prepared(run, ctx, reads, writes, op.name, call.elements <= engine.inline_max_elements)
    else:

        def run(run_ctx: Any) -> None:
            compute(attrs, OpContext(is_train, ctx, run_ctx.stream, requested), in_data, reqs, out_data)

        engine.push_prepared(run, ctx, reads, writes, op.name, call.elements <= engine.inline_max_elements)

    # 5. the tape
    if FLAGS_ON["recording"] and STATE.recording and tape_hook is not None:
        tape_hook(op, attrs, inputs, outputs)
    return outputs if num_visible == num_outputs else outputs[:num_visible]


def invoke_single(op: OpDef, attrs: NodeAttrs, array: NDArray) -> NDArray:
    """``op(array)`` for a one-input, one-output operator without ``out=``: ``b = a + 1``.

    The same call as ``invoke(op, [array], attrs=attrs)[0]``, with every layer this common
    case does not need skipped: once :func:`invoke` has seen the call pattern (and found it
    plain: no mutated input, no resource, synchronous, on a CPU), a repeat is one cache
    lookup, one allocation and one engine call that runs the compute function at once with
    the output's variable left ungranted (nobody else can see it yet:
    ``Engine.run_now_into_new``). Anything else (a first call, autograd recording, a busy
    input, events watched by a subscriber other than the server's combining buffer, a large
    array) goes through :func:`invoke`'s general path or the engine's ordinary push, so the
    behaviour is the same.
    """
    try:
        chunk, data = array._chunk, array._data
    except AttributeError:  # not an NDArray: invoke names the problem
        return invoke(op, [array], None, None, None, attrs)[0]
    ctx = chunk.ctx
    # invoke's key for one input without out= (tests/ndarray/test_direct_path.py fails if the two differ)
    call = _call_cache.get((attrs, ctx.device_type, ctx.device_id, data.shape, data.dtype))
    flags_on = FLAGS_ON  # while a count is zero, no thread has that flag on (see _State)
    if call is None or call.direct_compute is None or (flags_on["recording"] and STATE.recording):
        return invoke(op, [array], None, None, None, attrs)[0]
    output = new_array(call.out_shapes[0], ctx, call.out_types[0], call.out_nbytes[0])
    is_train = STATE.training if flags_on["training"] else False
    op_ctx = call.cpu_op_contexts[is_train]
    if op_ctx is None:
        op_ctx = call.cpu_op_context(is_train, ctx)
    compute, reqs, in_data, out_data = call.direct_compute, call.reqs, [data], [output._data]
    out_chunk = output._chunk
    engine = out_chunk.engine
    inline = call.elements <= engine.inline_max_elements
    read, write = chunk.var, out_chunk.var
    if inline and engine.run_now_into_new(compute, (attrs, op_ctx, in_data, reqs, out_data), ctx, read, write, op.name):
        return output

    def run(run_ctx: Any) -> None:
        compute(attrs, op_ctx, in_data, reqs, out_data)

    engine.push_prepared(run, ctx, (read,), (write,), op.name, inline)
    return output


def invoke_in_place(op: OpDef, attrs: NodeAttrs, array: NDArray) -> None:
    """``op(array, out=array)`` for a one-input, one-output operator: ``a += 1``.

    The same call as ``invoke(op, [array], out=array, attrs=attrs)``, as :func:`invoke_single`
    is for ``b = a + 1``: once :func:`invoke` has seen the pattern (with the array as its own
    ``out=``) and found it plain, a repeat is one cache lookup and one engine call that grants
    the array's variable for writing and runs the compute function at once
    (``Engine.run_now_in_place``); nothing is allocated. Everything else (a first call,
    autograd recording, a busy array, bulking, events watched by another subscriber than the
    server's combining buffer, a large array) takes :func:`invoke`'s path or the ordinary push.
    """
    try:
        chunk, data = array._chunk, array._data
    except AttributeError:  # not an NDArray: invoke names the problem
        invoke(op, [array], None, array, None, attrs)
        return
    ctx = chunk.ctx
    shape, dtype = data.shape, data.dtype
    # invoke's key for one input and one out= array (tests/ndarray/test_direct_path.py fails if the two differ)
    call = _call_cache.get((attrs, ctx.device_type, ctx.device_id, shape, dtype, (shape, dtype)))
    flags_on = FLAGS_ON  # while a count is zero, no thread has that flag on (see _State)
    if call is None or call.direct_compute is None or (flags_on["recording"] and STATE.recording):
        invoke(op, [array], None, array, None, attrs)
        return
    is_train = STATE.training if flags_on["training"] else False
    op_ctx = call.cpu_op_contexts[is_train]
    if op_ctx is None:
        op_ctx = call.cpu_op_context(is_train, ctx)
    compute, reqs, in_data, out_data = call.direct_compute, call.reqs, [data], [data]
    engine = Engine._default or Engine.get()  # invoke's engine: it refuses an array of another engine instance
    var = chunk.var
    inline = call.elements <= engine.inline_max_elements
    if inline and engine.run_now_in_place(compute, (attrs, op_ctx, in_data, reqs, out_data), ctx, var, op.name):
        return

    def run(run_ctx: Any) -> None:
        compute(attrs, op_ctx, in_data, reqs, out_data)

    engine.push_prepared(run, ctx, (), (var,), op.name, inline)


def in_shapes_flat(shapes: list[Any]) -> list[int]:
    """Every dimension of every input shape (zero-size inputs may give zero-size outputs)."""
    return [d for shape in shapes if shape is not None for d in shape]
