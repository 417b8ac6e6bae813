"""Broadcasting operators: ``broadcast_add`` and friends, ``broadcast_to/like/axis``, ``clip``, ``where``.

Broadcasting lets an array of size 1 along an axis stand for an array repeated along it:
``(2, 3) + (1, 3)`` adds the single row to both rows. MXNet 1.x's rule for the binary
``broadcast_*`` operators (``BinaryBroadcastShape``) is NumPy's: shapes are aligned on the
right, the shorter one is padded with leading 1s, and each pair of dimensions must be equal
or contain a 1. So ``broadcast_add((2, 3), (3,))`` works and gives ``(2, 3)``, while
``(2, 3)`` and ``(2, 4)`` fail. ``broadcast_to`` and ``broadcast_like`` are stricter: they
need the same number of dimensions (``broadcast_to((3,), shape=(2, 3))`` is an error in
MXNet 1.x); a 0 in ``broadcast_to``'s ``shape`` keeps the input's dimension.

The gradient of a broadcast is a *sum*: every output element that reused input element
``i`` sends its gradient back to ``i``. :func:`sum_to` sums a gradient over the broadcast
axes (the padded leading ones and those where the input had size 1) back to the input's
shape. To know those shapes, the backward operators take the forward inputs as inputs
(``_backward_broadcast_add(out_grad, lhs, rhs)``), even when the maths only needs
``out_grad``.

``clip(data, a_min, a_max)`` passes the gradient where ``a_min <= x <= a_max`` (ends
included, as MXNet); ``where(condition, x, y)`` sends the gradient to ``x`` where the
condition is non-zero and to ``y`` elsewhere (``condition`` may also be 1-D, selecting
whole rows along the first axis).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..grad import elemwise_grad_use_in, make_backward_node
from ..infer import (
    InferenceError,
    ShapeT,
    elemwise_shape,
    elemwise_type,
    merge_shapes,
    shape_assign,
    shape_known,
    type_assign,
)
from ..kernel import NULL, assign
from ..node import Entry, Node, NodeAttrs
from ..params import REQUIRED, Param, ParamSet, Shape
from ..registry import alias, get, register
from .binary_family import BinaryFamily, register_binary
from .binary_maths import BINARY_MATHS
from .elemwise_unary import backward_gradient, compute_into, flat, put

# ---------------------------------------------------------------------------- helpers


def broadcast_shape(op_name: str, lhs: Sequence[int], rhs: Sequence[int]) -> tuple[int, ...]:
    """The broadcast of two shapes (0 = unknown dimension), or an InferenceError naming both."""
    ndim = max(len(lhs), len(rhs))
    left = (1,) * (ndim - len(lhs)) + tuple(lhs)
    right = (1,) * (ndim - len(rhs)) + tuple(rhs)
    out = []
    for a, b in zip(left, right, strict=True):
        if b in (a, 1):
            out.append(a)
        elif a in (0, 1):
            out.append(b)
        elif b == 0:
            out.append(a)
        else:
            raise InferenceError(
                f"{op_name}: operands could not be broadcast together with shapes {tuple(lhs)} {tuple(rhs)}: "
                f"dimension {a} vs {b} (each pair of dimensions must be equal or one of them 1)"
            )
    return tuple(out)


def sum_to(xp: Any, grad: Any, shape: Sequence[int]) -> Any:
    """Sum ``grad`` over the axes along which an array of ``shape`` was broadcast to it."""
    shape = tuple(shape)
    if grad.shape == shape:
        return grad
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and grad.shape[lead + i] != 1)
    # float16 sums accumulate in float32 (as MXNet's reductions do), then round once.
    acc = np.float32 if grad.dtype == np.float16 else None
    total = grad.sum(axis=axes, dtype=acc) if axes else grad
    return total.reshape(shape).astype(grad.dtype, copy=False)


def _zeros_for(node: Node, index: int) -> Entry:
    """A zero gradient for input ``index`` of ``node`` (labels, indices, conditions)."""
    op = get("zeros_like")
    attrs = NodeAttrs(f"{node.name}_in{index}_zero_grad", op, op.params.parse("zeros_like", {}))
    return Entry(Node(op, attrs, [node.inputs[index]]), 0)


def _same_type_first(attrs, in_types, out_types) -> bool:
    """Output dtype = input 0 dtype (and back)."""
    type_assign(out_types, 0, in_types[0], attrs.name, "output")
    type_assign(in_types, 0, out_types[0], attrs.name, "input")
    return out_types[0] is not None


# ---------------------------------------------------------------------------- binary broadcast ops
def _broadcast_binary_shape(attrs, in_shapes, out_shapes) -> bool:
    lhs, rhs = in_shapes
    if lhs is None or rhs is None:
        return False
    shape_assign(out_shapes, 0, broadcast_shape(attrs.name, lhs, rhs), attrs.name, "output")
    return shape_known(lhs) and shape_known(rhs) and shape_known(out_shapes[0])


def _broadcast_backward_shape(attrs, in_shapes, out_shapes) -> bool:
    """Inputs (out_grad, lhs, rhs): the gradients take the shapes of lhs and rhs."""
    for i in (0, 1):
        shape_assign(out_shapes, i, in_shapes[i + 1], attrs.name, f"gradient of input {i}")
        shape_assign(in_shapes, i + 1, out_shapes[i], attrs.name, f"input {i}")
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))


BROADCASTING = BinaryFamily(
    description_suffix=", with broadcasting (shapes aligned on the right; size-1 dims stretch).",
    infer_shape=_broadcast_binary_shape,
    backward_infer_shape=_broadcast_backward_shape,
    backward_description="Gradients of {name}, summed over the broadcast axes back to each input's shape.",
    backward_name=lambda kind, name: f"_backward_{name}",
    reduce=sum_to,
    backward_needs_input_shapes=True,
    backward_inplace=False,
)

_BROADCAST_ALIASES = {"add": ("broadcast_plus",), "sub": ("broadcast_minus",)}

for _kind in BINARY_MATHS:  # every binary operation has a broadcast_<kind> operator
    register_binary(BROADCASTING, _kind, f"broadcast_{_kind}", _BROADCAST_ALIASES.get(_kind, ()))


# ---------------------------------------------------------------------------- broadcast_to / axis / like
def _broadcast_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    # A broadcast view of the input, written without materialising a temporary.
    assign(outputs[0], req[0], op_ctx.xp.broadcast_to(inputs[0], outputs[0].shape))


def _sum_back_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    # inputs: (out_grad, forward data); the gradient is summed back to the data's shape
    if req[0] is not NULL:
        put(outputs[0], req[0], sum_to(op_ctx.xp, inputs[0], outputs[0].shape))


def _sum_back_shape(attrs, in_shapes, out_shapes) -> bool:
    shape_assign(out_shapes, 0, in_shapes[1], attrs.name, "gradient of data")
    shape_assign(in_shapes, 1, out_shapes[0], attrs.name, "data")
    return shape_known(out_shapes[0]) and shape_known(in_shapes[0])


def _sum_back_gradient(backward: str):
    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        bw = make_backward_node(node, backward, [out_grads[0], node.inputs[0]])
        grads = [Entry(bw, 0)]
        grads += [_zeros_for(node, i) for i in range(1, len(node.inputs))]
        return grads

    return gradient


def _register_sum_back(backward: str, params: type[ParamSet]) -> None:
    (
        register(backward)
        .describe("Sums the output gradient over the broadcast axes back to the input's shape.")
        .set_params(params)
        .set_num_inputs(2)
        .set_num_outputs(1)
        .set_infer_shape(_sum_back_shape)
        .set_infer_type(elemwise_type)
        .set_compute(_sum_back_compute)
        .set_is_backward()
    )


class BroadcastToParam(ParamSet):
    shape = Param(Shape, Shape(), "The target shape; a 0 keeps the input's dimension (same ndim as the input).")


def _broadcast_to_shape(attrs, in_shapes, out_shapes) -> bool:
    name, target, src = attrs.name, tuple(attrs.parsed.shape), in_shapes[0]
    if any(t < 0 for t in target):
        raise InferenceError(f"{name}: shape={target} has a negative dimension; use 0 to keep a dimension")
    # Dimensions given in ``shape`` are known even before the input is.
    shape_assign(out_shapes, 0, target, name, "output")
    if src is None:
        out = out_shapes[0]
        if out is not None:  # dimensions kept from the input can be read back from the output
            shape_assign(
                in_shapes, 0, tuple(o if t == 0 else 0 for o, t in zip(out, target, strict=True)), name, "data"
            )
        return False
    if len(src) != len(target):
        raise InferenceError(
            f"{name}: operand of shape {src} cannot be broadcast to {target}: broadcast_to needs the same "
            "number of dimensions (add axes with expand_dims or reshape first)"
        )
    out = []
    for s, t in zip(src, target, strict=True):
        if t in (0, s):
            out.append(s)
        elif s in (0, 1):
            out.append(t)
        else:
            raise InferenceError(
                f"{name}: array cannot be broadcast from {src} to {target}: a dimension of size {s} "
                f"can only broadcast to itself, not {t} (only size-1 dimensions stretch)"
            )
    shape_assign(out_shapes, 0, out, name, "output")
    kept = tuple(o if t == 0 else s for o, s, t in zip(out_shapes[0], src, target, strict=True))
    shape_assign(in_shapes, 0, kept, name, "data")
    return shape_known(in_shapes[0]) and shape_known(out_shapes[0])


(
    register("broadcast_to")
    .describe("Broadcasts the input to ``shape`` (size-1 dimensions stretch; 0 keeps a dimension).")
    .set_params(BroadcastToParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_broadcast_to_shape)
    .set_infer_type(_same_type_first)
    .set_compute(_broadcast_compute)
    .set_gradient(_sum_back_gradient("_backward_broadcast_to"))
)
_register_sum_back("_backward_broadcast_to", BroadcastToParam)


class BroadcastAxisParam(ParamSet):
    axis = Param(Shape, Shape(), "The axes to broadcast along (each of size 1 in the input).")
    size = Param(Shape, Shape(), "Target sizes of the broadcast axes.")


def _broadcast_axis_shape(attrs, in_shapes, out_shapes) -> bool:
    name, axes, sizes = attrs.name, tuple(attrs.parsed.axis), tuple(attrs.parsed.size)
    if len(axes) != len(sizes):
        raise InferenceError(f"{name}: axis={axes} and size={sizes} must have the same length")
    src = in_shapes[0]
    if src is None:
        out = out_shapes[0]
        if out is not None and all(0 <= a < len(out) for a in axes):
            # every other dimension is the output's; the broadcast ones were 1
            shape_assign(in_shapes, 0, tuple(1 if i in axes else d for i, d in enumerate(out)), name, "data")
            return _broadcast_axis_shape(attrs, in_shapes, out_shapes)
        return False
    out = list(src)
    for a, s in zip(axes, sizes, strict=True):
        if not 0 <= a < len(src):
            raise InferenceError(
                f"{name}: axis {a} is out of range for an input of shape {src} (use 0..{len(src) - 1})"
            )
        if out[a] not in (0, 1):
            raise InferenceError(
                f"{name}: broadcasting axis {a} must have size 1, but it has size {out[a]} (input shape {src})"
            )
        out[a] = s
    shape_assign(out_shapes, 0, out, name, "output")
    return shape_known(src) and shape_known(out_shapes[0])


(
    register("broadcast_axis")
    .describe("Broadcasts the input along the given size-1 ``axis`` (axes) to ``size``.")
    .set_params(BroadcastAxisParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_broadcast_axis_shape)
    .set_infer_type(_same_type_first)
    .set_compute(_broadcast_compute)
    .set_gradient(_sum_back_gradient("_backward_broadcast_axis"))
)
alias("broadcast_axes", "broadcast_axis")
_register_sum_back("_backward_broadcast_axis", BroadcastAxisParam)


class BroadcastLikeParam(ParamSet):
    lhs_axes = Param(Shape, None, "Axes of lhs to broadcast (None: broadcast lhs to rhs's whole shape).")
    rhs_axes = Param(Shape, None, "Axes of rhs whose sizes are copied (None: the whole shape).")


def _broadcast_like_shape(attrs, in_shapes, out_shapes) -> bool:
    name, (lhs, rhs) = attrs.name, in_shapes
    p = attrs.parsed
    if lhs is None or rhs is None:
        return False
    if p.lhs_axes is None or p.rhs_axes is None:
        if len(lhs) != len(rhs):
            raise InferenceError(
                f"{name}: operand of shape {lhs} cannot be broadcast like {rhs}: the number of dimensions must match"
            )
        out = []
        for a, b in zip(lhs, rhs, strict=True):
            if a not in (0, 1) and b not in (0, a):
                raise InferenceError(f"{name}: array cannot be broadcast from {lhs} to {rhs}")
            out.append(b if a in (0, 1) else a)
    else:
        la, ra = tuple(p.lhs_axes), tuple(p.rhs_axes)
        if len(la) != len(ra):
            raise InferenceError(f"{name}: lhs_axes={la} and rhs_axes={ra} must have the same length")
        out = list(lhs)
        for given_l, given_r in zip(la, ra, strict=True):
            if not (-len(lhs) <= given_l < len(lhs) and -len(rhs) <= given_r < len(rhs)):
                raise InferenceError(f"{name}: axes ({given_l}, {given_r}) out of range for shapes {lhs} and {rhs}")
            a, b = given_l % len(lhs), given_r % len(rhs)
            if lhs[a] not in (0, 1):
                raise InferenceError(
                    f"{name}: lhs axis {a} of shape {lhs} has size {lhs[a]} and cannot be broadcast to {rhs[b]} "
                    "(broadcast axes must have size 1)"
                )
            out[a] = rhs[b]
    shape_assign(out_shapes, 0, out, name, "output")
    return shape_known(lhs) and shape_known(rhs) and shape_known(out_shapes[0])


def _broadcast_like_type(attrs, in_types, out_types) -> bool:
    _same_type_first(attrs, in_types, out_types)
    return out_types[0] is not None and in_types[1] is not None


(
    register("broadcast_like")
    .describe("Broadcasts lhs to the shape of rhs (or copies the sizes of rhs_axes onto lhs_axes).")
    .set_params(BroadcastLikeParam)
    .set_num_inputs(2)
    .set_input_names(["lhs", "rhs"])
    .set_infer_shape(_broadcast_like_shape)
    .set_infer_type(_broadcast_like_type)
    .set_compute(_broadcast_compute)
    .set_gradient(_sum_back_gradient("_backward_broadcast_like"))
)
_register_sum_back("_backward_broadcast_like", BroadcastLikeParam)


# ---------------------------------------------------------------------------- clip
class ClipParam(ParamSet):
    a_min = Param(float, REQUIRED, "Minimum value.")
    a_max = Param(float, REQUIRED, "Maximum value.")


def _clip_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    p, xp, x = attrs.parsed, op_ctx.xp, inputs[0]
    if p.a_min <= p.a_max:
        compute_into(outputs[0], req[0], xp.clip, x, p.a_min, p.a_max)
    elif req[0] is not NULL:
        # MXNet tests a_max first: x > a_max -> a_max, else x < a_min -> a_min.
        put(outputs[0], req[0], xp.where(x > p.a_max, p.a_max, xp.where(x < p.a_min, p.a_min, x)))


def _clip_backward_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    g, x, p = inputs[0], inputs[1], attrs.parsed
    if req[0] is not NULL:
        put(outputs[0], req[0], g * ((x >= p.a_min) & (x <= p.a_max)))


(
    register("clip")
    .describe("Clips values to [a_min, a_max]; the gradient passes where a_min <= x <= a_max.")
    .set_params(ClipParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(elemwise_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_clip_compute)
    .set_gradient(elemwise_grad_use_in("_backward_clip"))
    .set_inplace_option(lambda attrs: [(0, 0)])
)
(
    register("_backward_clip")
    .set_params(ClipParam)
    .set_num_inputs(2)
    .set_infer_shape(elemwise_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_clip_backward_compute)
    .set_inplace_option(lambda attrs: [(0, 0)])
    .set_is_backward()
    # linear in g (the same mask on the head gradient), flat in x: MXNet 1.9.1's second order of clip
    .set_gradient(backward_gradient("_backward_clip", flat))
)


# ---------------------------------------------------------------------------- where
def _check_condition(name: str, shapes: list[ShapeT], index: int, data: ShapeT) -> bool:
    """MXNet's rule: condition has x's shape, or is 1-D with x.shape[0] entries (row selection)."""
    cond = shapes[index]
    if cond is None or data is None:
        return False
    if len(cond) == len(data):
        shape_assign(shapes, index, data, name, "condition")
        return shape_known(shapes[index])
    if len(cond) == 1 and len(data) >= 1:
        if cond[0] and data[0] and cond[0] != data[0]:
            raise InferenceError(f"{name}: a 1-D condition of shape {cond} must have x.shape[0] = {data[0]} entries")
        return bool(cond[0])
    raise InferenceError(
        f"{name}: condition of shape {cond} must have the shape of x {data} or be 1-D with x.shape[0] entries"
    )


def _where_shape(attrs, in_shapes, out_shapes) -> bool:
    name = attrs.name
    common: ShapeT = None
    for shape in (in_shapes[1], in_shapes[2], out_shapes[0]):
        try:
            common = merge_shapes(common, shape)
        except ValueError:
            raise InferenceError(
                f"{name}: x, y and the output must have one shape, got x {in_shapes[1]}, y {in_shapes[2]}, "
                f"output {out_shapes[0]}"
            ) from None
    in_shapes[1] = in_shapes[2] = out_shapes[0] = common
    cond_ok = _check_condition(name, in_shapes, 0, common)
    return cond_ok and shape_known(common)


def _where_type(attrs, in_types, out_types) -> bool:
    data_types, data_out = [in_types[1], in_types[2]], [out_types[0]]
    elemwise_type(attrs, data_types, data_out)
    in_types[1], in_types[2], out_types[0] = data_types[0], data_types[1], data_out[0]
    return out_types[0] is not None and in_types[0] is not None


def _condition_like(xp: Any, cond: Any, data: Any) -> Any:
    """The condition as booleans that broadcast against ``data`` (a 1-D one selects rows)."""
    mask = cond != 0
    if mask.ndim != data.ndim:
        mask = mask.reshape((-1,) + (1,) * (data.ndim - 1))
    return mask


def _where_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    cond, x, y = inputs
    if req[0] is not NULL:
        xp = op_ctx.xp
        put(outputs[0], req[0], xp.where(_condition_like(xp, cond, x), x, y))


def _where_backward_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    g, cond = inputs
    xp = op_ctx.xp
    mask = _condition_like(xp, cond, g)
    zero = xp.zeros((), dtype=g.dtype)
    if req[0] is not NULL:
        put(outputs[0], req[0], xp.where(mask, g, zero))
    if req[1] is not NULL:
        put(outputs[1], req[1], xp.where(mask, zero, g))


def _where_backward_shape(attrs, in_shapes, out_shapes) -> bool:
    name = attrs.name
    for i in (0, 1):
        shape_assign(out_shapes, i, in_shapes[0], name, f"gradient {i}")
        shape_assign(in_shapes, 0, out_shapes[i], name, "output gradient")
    cond_ok = _check_condition(name, in_shapes, 1, in_shapes[0])
    return cond_ok and shape_known(in_shapes[0])


def _where_backward_type(attrs, in_types, out_types) -> bool:
    for i in (0, 1):
        type_assign(out_types, i, in_types[0], attrs.name, f"gradient {i}")
    return out_types[0] is not None


def _where_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    bw = make_backward_node(node, "_backward_where", [out_grads[0], node.inputs[0]])
    return [_zeros_for(node, 0), Entry(bw, 0), Entry(bw, 1)]


(
    register("where")
    .describe(
        "Takes elements from x where condition is non-zero and from y elsewhere; a 1-D condition "
        "selects whole rows (its length is x.shape[0])."
    )
    .set_num_inputs(3)
    .set_num_outputs(1)
    .set_input_names(["condition", "x", "y"])
    .set_infer_shape(_where_shape)
    .set_infer_type(_where_type)
    .set_compute(_where_compute)
    .set_gradient(_where_gradient)
)
(
    register("_backward_where")
    .set_num_inputs(2)
    .set_num_outputs(2)
    .set_infer_shape(_where_backward_shape)
    .set_infer_type(_where_backward_type)
    .set_compute(_where_backward_compute)
    .set_is_backward()
)
