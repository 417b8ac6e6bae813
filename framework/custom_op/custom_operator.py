"""The registered ``Custom`` operator (and ``_backward_Custom``) that runs a user's CustomOp.

Its parameters pick the registered property class (``op_type``) and pass every other keyword
to it; inference asks the property; compute is asynchronous: it hands the user's ``forward``
or ``backward`` to the custom-op threads (:mod:`.threads`) over NDArrays that borrow the
operator's memory under fresh engine variables, and completes once that work has finished.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .. import backend
from ..context import Context
from ..engine import Engine, NaiveEngine, Var
from ..library import OpenFields
from ..ndarray.chunk import Chunk
from ..ndarray.imperative import STATE
from ..ndarray.ndarray import NDArray, new_array
from ..operator import registry
from ..operator.grad import make_backward_node
from ..operator.infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..operator.kernel import OpContext, Req
from ..operator.node import Entry, Node, NodeAttrs
from ..operator.params import REQUIRED, OperatorParamError, Param, ParamSet
from ..shape_mode import is_np_shape
from .front_door import CustomOp, CustomOpError, CustomOpProp, registered
from .threads import custom_op_threads


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
        prop_cls = registered.get(op_type)
        if prop_cls is None:
            known = ", ".join(sorted(registered)) or "none"
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
        try:  # the declared names, asked once: every call needs their counts (MXNet asks once too)
            lists = tuple(list(getattr(prop, m)()) for m in ("list_arguments", "list_outputs", "list_auxiliary_states"))
        except Exception as err:
            raise OperatorParamError(
                f"Custom (op_type {op_type!r}): {prop_cls.__name__}.list_* raised {type(err).__name__}: {err}"
            ) from err
        inst = cls(values)
        object.__setattr__(inst, "_prop", prop)
        object.__setattr__(inst, "_lists", lists)
        object.__setattr__(inst, "_counts", tuple(len(names) for names in lists))
        object.__setattr__(inst, "_operators", {})
        object.__setattr__(inst, "_lock", threading.Lock())
        return inst

    def to_strings(self) -> dict[str, str]:
        return dict(self._values)


CustomParam.fields = OpenFields(CustomParam.fields)


def _prop(attrs: NodeAttrs) -> CustomOpProp:
    return attrs.parsed._prop  # type: ignore[union-attr]


def _counts(attrs: NodeAttrs) -> tuple[int, int, int]:
    """How many (arguments, outputs, auxiliary states) the property declared (asked once, at parse)."""
    return attrs.parsed._counts  # type: ignore[union-attr]


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


def _returned_shape(shape: Any) -> ShapeT:
    """A shape the property returned; ``[]`` means "still unknown" (MXNet's legacy ndim 0)."""
    shape = tuple(shape)
    return shape if shape or is_np_shape() else None


def _infer_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """Ask the property with the argument shapes known so far, as MXNet does.

    An unknown argument shape is passed as ``[]`` (and unknown dimensions as 0), so a
    property can fill in what follows from the others: a softmax loss returns its label's
    shape ``(data[0],)`` from the data's. The property is not asked while no argument shape
    is known at all (there is nothing to infer from yet; inference asks again later).
    """
    n_args, _, _ = _counts(attrs)
    if n_args and all(s is None for s in in_shapes[:n_args]):
        return False
    given = [[] if s is None else list(s) for s in in_shapes[:n_args]]
    args, outs, aux = _split3(attrs, "infer_shape", _ask_prop(attrs, "infer_shape", given))
    names = _input_names(attrs)
    for i, shape in enumerate(args):
        shape_assign(in_shapes, i, _returned_shape(shape), attrs.name, f"argument '{names[i]}'")
    for i, shape in enumerate(outs):
        shape_assign(out_shapes, i, _returned_shape(shape), attrs.name, f"output {i}")
    for i, shape in enumerate(aux):
        where = f"auxiliary state '{names[n_args + i]}'"
        shape_assign(in_shapes, n_args + i, _returned_shape(shape), attrs.name, where)
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
    arguments, _, auxiliary = attrs.parsed._lists  # type: ignore[union-attr]
    return arguments + auxiliary


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
                wrapped[key].append(new_array(tuple(raw.shape), ctx, np.dtype(raw.dtype).name))
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
        op = _operator(attrs, ctx, [a.shape for a in in_data], [np.dtype(a.dtype).type for a in in_data])
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

    custom_op_threads().submit(job)


def _operator(attrs: NodeAttrs, ctx: Context, shapes: list, dtypes: list) -> CustomOp:
    """The node's CustomOp for (device, argument shapes, dtypes), created once."""
    parsed = attrs.parsed
    key = (ctx, tuple(map(tuple, shapes)), tuple(dtypes))
    found = parsed._operators.get(key)  # type: ignore[union-attr]  # one dict read: atomic under the GIL
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
        .set_output_names(lambda attrs: list(attrs.parsed._lists[1]))
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
