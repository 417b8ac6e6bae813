"""Operators written in Python on NDArrays: MXNet 1.x's ``mx.operator.CustomOp`` front door.

A custom operator is two classes and a registration, exactly as in MXNet::

    class Sigmoid(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            y = 1 / (1 + mx.nd.exp(-in_data[0]))
            self.assign(out_data[0], req[0], y)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            y = out_data[0]
            self.assign(in_grad[0], req[0], out_grad[0] * y * (1 - y))

    @mx.operator.register("sigmoid")
    class SigmoidProp(mx.operator.CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=True)
        def create_operator(self, ctx, shapes, dtypes):
            return Sigmoid()

    y = mx.nd.Custom(x, op_type="sigmoid")          # or mx.sym.Custom(data, op_type=...)

Every ``Custom`` call is one record of the operator registry named ``Custom`` (plus
``_backward_Custom``): the keyword ``op_type`` picks the registered property class and
every other keyword is handed, as a string, to the property's constructor (MXNet does the
same). The property answers the registry's questions (argument, output and auxiliary-state
names, shape and type inference); ``create_operator`` builds the computing object once per
node (or imperative call pattern), device, input shapes and dtypes.

**How it runs (MXNet 1.x's design).** ``Custom`` is an *asynchronous* operator
(``OpDef.set_is_async``): the engine pushes it with ``push_async`` and
``FnProperty.ASYNC``, and its compute function only queues a job for the custom-op
thread and returns, so the engine worker (or the pushing thread) is free at once. On the
custom-op thread your ``forward``/``backward`` receive NDArrays over the operator's real
arrays, on their real context, each with a fresh engine variable (the real ones are held
by the running operation). Your ``mx.nd`` calls push work normally; when your code
returns, the thread waits until every operation pushed on those arrays has finished,
then calls ``on_complete``, and only then does the engine run what depends on the
outputs. An exception (yours, or one raised by work you pushed) becomes a
:class:`CustomOpError` naming the operator type and the step, raised at the next wait.
With the ``NaiveEngine`` the code runs inline and completes synchronously, as in MXNet.
The arrays you receive are valid only during the call (keep a ``.copy()`` if needed).

**Backward dependencies.** ``declare_backward_dependency`` is honoured for what your
``backward`` receives (undeclared ``in_data``/``out_data`` entries are still passed, as in
MXNet, so do not rely on them being None), but the ``_backward_Custom`` node always keeps
all of them alive: the memory planner cannot free them early (an MXLab simplification).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from . import backend, config
from .base import MXLabError
from .context import Context
from .engine import Engine, NaiveEngine, Var
from .library import OpenFields
from .ndarray.chunk import Chunk
from .ndarray.imperative import STATE
from .ndarray.ndarray import NDArray, new_array
from .operator import registry
from .operator.grad import make_backward_node
from .operator.infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from .operator.kernel import OpContext, Req
from .operator.node import Entry, Node, NodeAttrs
from .operator.params import REQUIRED, OperatorParamError, Param, ParamSet

__all__ = ["CustomOp", "CustomOpProp", "CustomOpError", "get_all_registered_operators", "register"]


class CustomOpError(MXLabError, ValueError):
    """A Python custom operator is unknown, misdeclared, or raised in forward/backward."""


class CustomOp:
    """The computing half: ``forward`` and ``backward`` on NDArrays (MXNet's ``CustomOp``)."""

    def forward(self, is_train: bool, req: list[str], in_data: list, out_data: list, aux: list) -> None:
        """Compute ``out_data`` from ``in_data``; write with ``self.assign(out_data[i], req[i], value)``."""
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def backward(self, req: list[str], out_grad: list, in_data: list, out_data: list, in_grad: list, aux: list) -> None:
        """Compute ``in_grad`` (one per argument) with ``self.assign(in_grad[i], req[i], value)``."""
        raise NotImplementedError(f"{type(self).__name__} has no backward()")

    @staticmethod
    def assign(dst: NDArray, req: str, src: Any) -> None:
        """Write ``src`` into ``dst`` as ``req`` ('null', 'write', 'inplace', 'add') says."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] = dst + src
        else:
            raise CustomOpError(f"assign: unknown req {req!r}; expected 'null', 'write', 'inplace' or 'add'")

    @staticmethod
    def as_array(array: NDArray) -> Any:
        """The NumPy/CuPy array behind ``array`` (waits for pending writes): for raw kernels.

        An MXLab extension; writes through it land in ``array`` directly.
        """
        array.wait_to_read()
        return array._data


class CustomOpProp:
    """The describing half (MXNet's ``CustomOpProp``); defaults: one input, one output, same shape."""

    def __init__(self, need_top_grad: bool = True) -> None:
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape: list) -> tuple:
        """(argument shapes, output shapes, auxiliary shapes) from the argument shapes."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type: list) -> tuple:
        """(argument, output, auxiliary) dtypes; by default all take the first argument's."""
        return (
            in_type,
            [in_type[0]] * len(self.list_outputs()),
            [in_type[0]] * len(self.list_auxiliary_states()),
        )

    def infer_storage_type(self, in_stype: list) -> tuple:
        """Storage types; MXLab is dense only, so anything but 'default' is rejected."""
        return (
            in_stype,
            ["default"] * len(self.list_outputs()),
            ["default"] * len(self.list_auxiliary_states()),
        )

    def list_arguments(self) -> list[str]:
        return ["data"]

    def list_outputs(self) -> list[str]:
        return ["output"]

    def list_auxiliary_states(self) -> list[str]:
        return []

    def declare_backward_dependency(self, out_grad: list[int], in_data: list[int], out_data: list[int]) -> list[int]:
        """What backward reads: out_grad when need_top_grad, then in_data and out_data."""
        deps: list[int] = []
        if self.need_top_grad_:
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def create_operator(self, ctx: Context, in_shapes: list, in_dtypes: list) -> CustomOp:
        """Build the :class:`CustomOp` for device ``ctx``."""
        raise NotImplementedError(f"{type(self).__name__} must implement create_operator()")


_registered: dict[str, type[CustomOpProp]] = {}


class _Registration:
    """What ``register(name)`` returns: the decorator, which also explains a seed-004 style chain."""

    def __init__(self, reg_name: str) -> None:
        self.reg_name = reg_name

    def __call__(self, prop_cls: type[CustomOpProp]) -> type[CustomOpProp]:
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise CustomOpError(f"register({self.reg_name!r}): expected a CustomOpProp subclass, got {prop_cls!r}")
        _registered[self.reg_name] = prop_cls
        return prop_cls

    def __getattr__(self, name: str) -> Any:
        if name.startswith("set_"):  # register("x").set_num_inputs(...): the native registry's chain
            raise AttributeError(
                f"mx.operator.register({self.reg_name!r}) is MXNet's decorator for CustomOpProp classes; "
                f"the native registration chain is mx.operator.register_op({self.reg_name!r}).{name}(...)"
            )
        raise AttributeError(name)


def register(reg_name: str) -> Callable[[type[CustomOpProp]], type[CustomOpProp]]:
    """Class decorator: make a CustomOpProp subclass available as ``Custom(op_type=reg_name)``."""
    if not isinstance(reg_name, str) or not reg_name:
        raise CustomOpError(f"register: the name must be a non-empty string, got {reg_name!r}")
    return _Registration(reg_name)


def get_all_registered_operators() -> list[str]:
    """Names registered with :func:`register`."""
    return sorted(_registered)


# ------------------------------------------------------------------------------ parameters
class CustomParam(ParamSet):
    """``op_type`` plus any keywords, kept as strings for the property's constructor."""

    op_type = Param(str, REQUIRED, "Name of the custom operator, as given to mx.operator.register.")

    @classmethod
    def parse(cls, op_name: str, kwargs: Mapping[str, Any]) -> ParamSet:
        values = {str(k): (v if isinstance(v, str) else str(v)) for k, v in kwargs.items()}
        values.pop("num_args", None)  # the front ends' count of positional inputs (Custom is variadic)
        op_type = values.get("op_type")
        if op_type is None:
            raise OperatorParamError("Custom: required parameter 'op_type' is missing (the registered name)")
        prop_cls = _registered.get(op_type)
        if prop_cls is None:
            known = ", ".join(sorted(_registered)) or "none"
            raise OperatorParamError(
                f"Custom: op_type {op_type!r} is not registered (registered: {known}); "
                "decorate its CustomOpProp with @mx.operator.register"
            )
        extra = {k: v for k, v in values.items() if k != "op_type"}
        try:
            prop = prop_cls(**extra)
        except TypeError as err:
            raise OperatorParamError(
                f"Custom (op_type {op_type!r}): {prop_cls.__name__}({extra}) failed: {err}"
            ) from None
        inst = cls(values)
        object.__setattr__(inst, "_prop", prop)
        object.__setattr__(inst, "_operators", {})
        object.__setattr__(inst, "_lock", threading.Lock())
        return inst

    def to_strings(self) -> dict[str, str]:
        return dict(self._values)


CustomParam.fields = OpenFields(CustomParam.fields)


def _prop(attrs: NodeAttrs) -> CustomOpProp:
    return attrs.parsed._prop  # type: ignore[union-attr]


def _counts(attrs: NodeAttrs) -> tuple[int, int, int]:
    prop = _prop(attrs)
    return len(prop.list_arguments()), len(prop.list_outputs()), len(prop.list_auxiliary_states())


def _label(attrs: NodeAttrs) -> str:
    return f"Custom operator {attrs.parsed.op_type!r} (node {attrs.name!r})"  # type: ignore[union-attr]


def _ask_prop(attrs: NodeAttrs, method: str, *args: Any) -> Any:
    """Call the user's ``CustomOpProp.<method>``; what it raises becomes an InferenceError naming the op.

    Shape and type inference run while a symbol is bound or an imperative call is prepared,
    far from the user's class: the message says which operator and which method failed, and
    the user's own exception stays attached as the cause.
    """
    try:
        return getattr(_prop(attrs), method)(*args)
    except InferenceError:
        raise
    except Exception as err:
        raise InferenceError(f"{_label(attrs)}: {method} raised {type(err).__name__}: {err}") from err


def _split3(attrs: NodeAttrs, method: str, result: Any) -> tuple[list, list, list]:
    n_args, n_out, n_aux = _counts(attrs)
    if not isinstance(result, tuple | list) or len(result) not in (2, 3):
        raise InferenceError(f"{_label(attrs)}: {method} must return (in, out, aux) lists, got {result!r}")
    args, outs = list(result[0]), list(result[1])
    aux = list(result[2]) if len(result) == 3 else []
    for what, got, want in (("arguments", args, n_args), ("outputs", outs, n_out), ("aux", aux, n_aux)):
        if len(got) != want:
            raise InferenceError(f"{_label(attrs)}: {method} returned {len(got)} {what}, expected {want}")
    return args, outs, aux


def _infer_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    n_args, _, _ = _counts(attrs)
    if not all(shape_known(s) for s in in_shapes[:n_args]):
        return False  # the property's infer_shape needs every argument shape
    given = [list(s) for s in in_shapes[:n_args]]
    args, outs, aux = _split3(attrs, "infer_shape", _ask_prop(attrs, "infer_shape", given))
    names = _input_names(attrs)
    for i, shape in enumerate(args):
        shape_assign(in_shapes, i, tuple(shape), attrs.name, f"argument '{names[i]}'")
    for i, shape in enumerate(outs):
        shape_assign(out_shapes, i, tuple(shape), attrs.name, f"output {i}")
    for i, shape in enumerate(aux):
        shape_assign(in_shapes, n_args + i, tuple(shape), attrs.name, f"auxiliary state '{names[n_args + i]}'")
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))


def _dtype_name(value: Any) -> str | None:
    return None if value is None else np.dtype(value).name


def _infer_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    n_args, _, _ = _counts(attrs)
    if any(t is None for t in in_types[:n_args]):
        return False

    given = [np.dtype(t).type for t in in_types[:n_args]]  # MXNet hands NumPy types
    args, outs, aux = _split3(attrs, "infer_type", _ask_prop(attrs, "infer_type", given))
    names = _input_names(attrs)
    for i, t in enumerate(args):
        type_assign(in_types, i, _dtype_name(t), attrs.name, f"argument '{names[i]}'")
    for i, t in enumerate(outs):
        type_assign(out_types, i, _dtype_name(t), attrs.name, f"output {i}")
    for i, t in enumerate(aux):
        type_assign(in_types, n_args + i, _dtype_name(t), attrs.name, f"auxiliary state '{names[n_args + i]}'")
    return all(t is not None for t in list(in_types) + list(out_types))


def _input_names(attrs: NodeAttrs) -> list[str]:
    prop = _prop(attrs)
    return list(prop.list_arguments()) + list(prop.list_auxiliary_states())


# backward node inputs: out_grad (n_out), in_data (n_args), out_data (n_out), aux (n_aux)
def _backward_infer(attrs: NodeAttrs, ins: list, outs: list, assign_fn: Callable) -> None:
    n_args, n_out, _ = _counts(attrs)
    for i in range(n_out):
        assign_fn(ins, i, ins[n_out + n_args + i], attrs.name, f"output gradient {i}")
        assign_fn(ins, n_out + n_args + i, ins[i], attrs.name, f"output {i}")
    for i in range(n_args):
        assign_fn(outs, i, ins[n_out + i], attrs.name, f"gradient of argument {i}")
        assign_fn(ins, n_out + i, outs[i], attrs.name, f"argument {i}")


def _backward_infer_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    _backward_infer(attrs, in_shapes, out_shapes, shape_assign)
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))


def _backward_infer_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    _backward_infer(attrs, in_types, out_types, type_assign)
    return all(t is not None for t in list(in_types) + list(out_types))


def _gradient(node: Node, out_grads: list[Entry]) -> list[Entry | None]:
    n_args, n_out, _ = _counts(node.attrs)
    if not _prop(node.attrs).need_top_grad_:
        # A loss layer (need_top_grad=False) ignores the gradient from above: backward gets
        # zeros instead, so executors need no head gradient for it (like SoftmaxOutput).
        zeros = registry.get("zeros_like")
        out_grads = [
            Entry(Node(zeros, zeros.parse_attrs({}, name=f"{node.name}_no_top_grad{i}"), [Entry(node, i)]))
            for i in range(n_out)
        ]
    inputs = list(out_grads) + list(node.inputs[:n_args]) + [Entry(node, i) for i in range(n_out)]
    inputs += list(node.inputs[n_args:])
    backward = make_backward_node(node, "_backward_Custom", inputs)
    return [Entry(backward, i) for i in range(n_args)] + [None] * (len(node.inputs) - n_args)


# ------------------------------------------------------------------------------ running user code
class _CustomOpThreads:
    """The threads Python ``forward``/``backward`` run on (MXNet's ``CustomOperator`` worker).

    ``Custom`` is an asynchronous operator: its compute function, called by the engine in
    whatever thread made it ready, only queues a job here and returns, so no engine worker
    ever waits for Python code. One thread takes the jobs in order. Because user code may
    itself wait for another custom operator (a ``forward`` that calls ``mx.nd.Custom`` and
    reads the result), a further thread is started when a job is queued and no thread is
    idle, up to ``MXLAB_CUSTOM_OP_NUM_THREADS`` (default 16).
    """

    def __init__(self, max_threads: int) -> None:
        self.max_threads = max_threads
        self._jobs: queue.SimpleQueue[Callable[[], Callable[[], None]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0  # threads waiting for a job
        self._queued = 0  # jobs not taken yet

    def submit(self, job: Callable[[], Callable[[], None]]) -> None:
        """Queue ``job``: it runs the user code and returns the completion to call."""
        with self._lock:
            self._queued += 1
            if self._queued > self._idle and len(self._threads) < self.max_threads:
                name = f"mxlab-custom-op/{len(self._threads)}"
                thread = threading.Thread(target=self._loop, name=name, daemon=True)
                self._threads.append(thread)
                self._idle += 1
                thread.start()
        self._jobs.put(job)

    @property
    def num_threads(self) -> int:
        return len(self._threads)

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            with self._lock:
                self._queued -= 1
                self._idle -= 1
            complete = job()
            # Idle again *before* completing: the completion may make the next custom
            # operator of a chain ready, and its job should go to this thread, not a new one.
            with self._lock:
                self._idle += 1
            complete()


_threads: _CustomOpThreads | None = None
_threads_lock = threading.Lock()


def _custom_op_threads() -> _CustomOpThreads:
    global _threads
    with _threads_lock:
        if _threads is None:
            _threads = _CustomOpThreads(config.get("MXLAB_CUSTOM_OP_NUM_THREADS"))
        return _threads


_REQ_NAMES = {Req.NULL: "null", Req.WRITE: "write", Req.INPLACE: "inplace", Req.ADD: "add"}


def _borrowed_chunk(ctx: Context, engine: Engine, name: str) -> Chunk:
    """A chunk over memory the operator's caller owns, with an engine variable of its own.

    The engine operation running ``Custom`` holds the real arrays' variables until it
    completes, so user code pushing work on them would wait for itself. The NDArrays handed
    to user code therefore view the *same memory* under *fresh* variables (MXNet does the
    same); the operation completes only after every push on those variables has finished.
    The chunk owns no storage block: its variable is deleted by :func:`_retire`, never
    returned to the pool.
    """
    chunk = Chunk.__new__(Chunk)
    chunk.engine, chunk.ctx, chunk.handle = engine, ctx, None
    chunk.var = engine.new_variable(name)
    return chunk


def _borrow(
    arrays: dict[str, list], scratch: dict[str, list[bool]], ctx: Context, engine: Engine, label: str
) -> tuple[dict[str, list], list[Var]]:
    """NDArrays over the raw arrays (see :func:`_borrowed_chunk`) and their variables.

    Arrays that overlap in memory share one variable, so the user's operations on them
    stay ordered. Arrays marked in ``scratch`` (outputs nobody reads, ``req='null'``, which
    may be read-only placeholders) are replaced by fresh arrays the user may write freely.
    """
    xp = backend.array_module(ctx)
    seen: list[tuple[Any, Chunk]] = []
    wrapped: dict[str, list] = {}
    for key, raws in arrays.items():
        wrapped[key] = []
        for i, raw in enumerate(raws):
            if scratch.get(key, [False] * len(raws))[i]:
                wrapped[key].append(new_array(tuple(raw.shape), ctx, raw.dtype.name))
                continue
            chunk = next((c for other, c in seen if xp.may_share_memory(other, raw)), None)
            if chunk is None:
                chunk = _borrowed_chunk(ctx, engine, f"{key}[{i}] of {label} (valid only during the call)")
            seen.append((raw, chunk))
            wrapped[key].append(NDArray(chunk, raw))
    variables = list({id(c.var): c.var for _, c in seen}.values())
    return wrapped, variables


def _retire(engine: Engine, ctx: Context, variables: list[Var]) -> BaseException | None:
    """Wait until every operation pushed on ``variables`` (reads and writes) has run; delete them.

    ``delete_variable`` runs its function after all earlier operations on the variable,
    so its completion is the moment the user's work on that memory is over. Returns the
    first error those operations raised (each is reported here, not at a later wait).
    """
    if not variables:
        return None
    errors: list[BaseException] = []
    remaining = [len(variables)]
    lock, finished = threading.Lock(), threading.Event()

    def retired(var: Var) -> None:
        try:
            engine.throw(var)
        except BaseException as err:
            errors.append(err)
        with lock:
            remaining[0] -= 1
            if remaining[0] == 0:
                finished.set()

    for var in variables:
        engine.delete_variable(lambda run_ctx, var=var: retired(var), ctx, var)
    finished.wait()
    return errors[0] if errors else None


def _run_user_code(
    attrs: NodeAttrs,
    op_ctx: OpContext,
    step: str,
    arrays: dict[str, list],
    scratch: dict[str, list[bool]],
    body: Callable[[CustomOp, dict[str, list]], None],
) -> BaseException | None:
    """Run ``body`` (the user's forward or backward) on NDArrays over the raw arrays.

    Returns the error to report (None on success), after every operation the user code
    pushed on those arrays has finished: only then may the engine hand them on.
    """
    ctx = op_ctx.ctx
    engine = Engine.get()
    label = _label(attrs)
    in_data = arrays["in_data"]
    saved = STATE.recording, STATE.training
    STATE.recording, STATE.training = False, op_ctx.is_train
    try:
        op = _operator(attrs, ctx, [a.shape for a in in_data], [a.dtype.type for a in in_data])
    except CustomOpError as err:
        STATE.recording, STATE.training = saved
        return err
    variables: list[Var] = []
    error: BaseException | None = None
    try:
        wrapped, variables = _borrow(arrays, scratch, ctx, engine, label)
        with ctx:  # arrays the user creates land beside the inputs
            body(op, wrapped)
    except BaseException as err:
        error = err
    finally:
        STATE.recording, STATE.training = saved
    pushed_error = _retire(engine, ctx, variables)
    if ctx.device_type == "gpu":
        backend.synchronize(ctx)  # raw kernels launched on the arrays from as_array()
    error = error if error is not None else pushed_error
    if isinstance(error, Exception):
        return _named(CustomOpError(f"{label}: {step} raised {type(error).__name__}: {error}"), error)
    return error  # None, or KeyboardInterrupt and friends, passed on as they are


def _named(error: CustomOpError, cause: BaseException) -> CustomOpError:
    """``error`` with ``cause`` attached (``raise ... from cause`` without raising)."""
    error.__cause__ = cause
    return error


def _launch(
    attrs: NodeAttrs,
    op_ctx: OpContext,
    step: str,
    arrays: dict[str, list],
    scratch: dict[str, list[bool]],
    body: Callable[[CustomOp, dict[str, list]], None],
) -> None:
    """Run the user code where it cannot block the engine, then report to the engine.

    With threaded engines the job goes to the custom-op thread and this returns at once
    (the engine's worker is free); ``on_complete`` fires from that thread. With the
    ``NaiveEngine``, or when called outside the engine (no ``async_on_complete``), the
    code runs here and now, as in MXNet.
    """
    on_complete = op_ctx.async_on_complete
    if on_complete is None or isinstance(Engine.get(), NaiveEngine):
        error = _run_user_code(attrs, op_ctx, step, arrays, scratch, body)
        if on_complete is not None:
            on_complete(error)
        elif error is not None:
            raise error
        return

    def job() -> Callable[[], None]:
        error = _run_user_code(attrs, op_ctx, step, arrays, scratch, body)
        return lambda: on_complete(error)

    _custom_op_threads().submit(job)


def _operator(attrs: NodeAttrs, ctx: Context, shapes: list, dtypes: list) -> CustomOp:
    """The node's CustomOp for (device, argument shapes, dtypes), created once."""
    parsed = attrs.parsed
    key = (ctx, tuple(map(tuple, shapes)), tuple(dtypes))
    with parsed._lock:  # type: ignore[union-attr]
        found = parsed._operators.get(key)  # type: ignore[union-attr]
    if found is None:
        try:
            found = _prop(attrs).create_operator(ctx, [list(s) for s in shapes], list(dtypes))
        except Exception as err:
            message = f"{_label(attrs)}: create_operator raised {type(err).__name__}: {err}"
            raise CustomOpError(message) from err
        if not isinstance(found, CustomOp):
            raise CustomOpError(f"{_label(attrs)}: create_operator must return a CustomOp, got {type(found).__name__}")
        with parsed._lock:  # type: ignore[union-attr]
            found = parsed._operators.setdefault(key, found)  # type: ignore[union-attr]
    return found


def _forward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list, outputs: list) -> None:
    n_args, _, _ = _counts(attrs)
    reqs = [_REQ_NAMES[r] for r in req]
    # auxiliary states are mutable inputs of the node: forward writes them in place
    arrays = {"in_data": list(inputs[:n_args]), "out_data": list(outputs), "aux": list(inputs[n_args:])}
    scratch = {"out_data": [r is Req.NULL for r in req]}

    def body(op: CustomOp, w: dict[str, list]) -> None:
        op.forward(op_ctx.is_train, reqs, w["in_data"], w["out_data"], w["aux"])

    _launch(attrs, op_ctx, "forward", arrays, scratch, body)


def _backward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list, outputs: list) -> None:
    n_args, n_out, _ = _counts(attrs)
    reqs = [_REQ_NAMES[r] for r in req]
    arrays = {
        "in_data": list(inputs[n_out : n_out + n_args]),
        "out_grad": list(inputs[:n_out]),
        "out_data": list(inputs[n_out + n_args : 2 * n_out + n_args]),
        "aux": list(inputs[2 * n_out + n_args :]),
        "in_grad": list(outputs),
    }
    scratch = {"in_grad": [r is Req.NULL for r in req]}

    def body(op: CustomOp, w: dict[str, list]) -> None:
        op.backward(reqs, w["out_grad"], w["in_data"], w["out_data"], w["in_grad"], w["aux"])

    _launch(attrs, op_ctx, "backward", arrays, scratch, body)


def _register() -> None:
    if registry.exists("Custom"):
        return
    op = (
        registry.register("Custom")
        .describe("Apply a custom operator implemented in Python (mx.operator.CustomOp); op_type picks it.")
        .set_params(CustomParam)
        .set_num_inputs(lambda attrs: len(_input_names(attrs)))
        .set_num_outputs(lambda attrs: _counts(attrs)[1])
        .set_key_var_num_args("num_args")  # mx.sym.Custom(*inputs, op_type=...)
        .set_input_names(_input_names)
        .set_output_names(lambda attrs: list(_prop(attrs).list_outputs()))
        .set_mutate_inputs(lambda attrs: list(range(_counts(attrs)[0], sum(_counts(attrs)[::2]))))
        .set_infer_shape(_infer_shape)
        .set_infer_type(_infer_type)
        .set_compute(_forward)
        .set_is_async()  # forward runs on the custom-op thread (see _launch)
        .set_gradient(_gradient)
    )
    op.front_door = "CustomOp"
    op.create_state = lambda attrs, ctx, shapes=None, dtypes=None: _operator(attrs, ctx, shapes or [], dtypes or [])
    backward = (
        registry.register("_backward_Custom")
        .describe("Backward of Custom.")
        .set_params(CustomParam)
        .set_num_inputs(lambda attrs: 2 * _counts(attrs)[1] + _counts(attrs)[0] + _counts(attrs)[2])
        .set_num_outputs(lambda attrs: _counts(attrs)[0])
        .set_infer_shape(_backward_infer_shape)
        .set_infer_type(_backward_infer_type)
        .set_compute(_backward)
        .set_is_async()
        .set_is_backward()
    )
    backward.front_door = "CustomOp"


_register()
