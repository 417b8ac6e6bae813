"""Operators that take a *shape* from an array: ``reshape_like``, ``slice_like``,
``shape_array``, ``size_array``, ``_contrib_arange_like``, ``_contrib_index_array`` and
``_identity_with_attr_like_rhs``.

They read another array's shape (or their input's own) rather than its values, which is how
a symbol built once adapts to any batch size. An input used only for its shape gets a zero
gradient; the outputs that are pure functions of a shape (``shape_array``, ``arange_like``,
``index_array``) have a zero gradient too.
"""

from __future__ import annotations

import math
from typing import Any

from ..grad import elemwise_grad_use_in, zero_grad
from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..node import Entry, Node
from ..params import Param, ParamSet, Shape
from ..registry import register
from .common import forward_node, normalize_axis, put, register_backward, same_type

# ----------------------------------------------------------------------------- reshape_like


class ReshapeLikeParam(ParamSet):
    lhs_begin = Param(int, None, "First axis of lhs to replace (None: 0).")
    lhs_end = Param(int, None, "One past the last axis of lhs to replace (None: its ndim).")
    rhs_begin = Param(int, None, "First axis of rhs whose sizes are used (None: 0).")
    rhs_end = Param(int, None, "One past the last axis of rhs used (None: its ndim).")


def _span(name: str, begin: int | None, end: int | None, ndim: int, what: str) -> tuple[int, int]:
    """``[begin, end)`` as non-negative axis bounds of an ``ndim``-dimensional shape."""
    b = 0 if begin is None else (begin + ndim if begin < 0 else begin)
    e = ndim if end is None else (end + ndim if end < 0 else end)
    if not 0 <= b <= e <= ndim:
        raise InferenceError(f"{name}: {what}_begin={begin}, {what}_end={end} is not a range of a {ndim}-D shape")
    return b, e


def _reshape_like_target(attrs: Any, lhs: tuple[int, ...], rhs: tuple[int, ...]) -> tuple[int, ...]:
    p, name = attrs.parsed, attrs.name
    lb, le = _span(name, p.lhs_begin, p.lhs_end, len(lhs), "lhs")
    rb, re_ = _span(name, p.rhs_begin, p.rhs_end, len(rhs), "rhs")
    target = (*lhs[:lb], *rhs[rb:re_], *lhs[le:])
    if shape_known(lhs) and shape_known(target) and math.prod(lhs) != math.prod(target):
        raise InferenceError(f"{name}: cannot reshape lhs of shape {lhs} to {target} (taken from rhs {rhs})")
    return target


def _reshape_like_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    lhs, rhs = in_shapes
    if lhs is None or rhs is None:
        return False
    shape_assign(out_shapes, 0, _reshape_like_target(attrs, lhs, rhs), attrs.name, "output")
    return shape_known(lhs) and shape_known(rhs)


def _reshape_like_type(attrs: Any, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, in_types[0], attrs.name, "output")
    type_assign(in_types, 0, out_types[0], attrs.name, "lhs")
    return in_types[0] is not None


def _reshape_like_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    put(outputs[0], req[0], inputs[0].reshape(outputs[0].shape))


def _reshape_like_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    lhs, _rhs = node.inputs
    back = forward_node(node, "reshape_like", {}, [out_grads[0], lhs])  # ograd reshaped like lhs
    return [back, zero_grad(node, out_grads)[1]]


(
    register("reshape_like")
    .describe("Reshapes lhs to rhs's shape, or replaces axes [lhs_begin, lhs_end) by rhs's [rhs_begin, rhs_end).")
    .set_params(ReshapeLikeParam)
    .set_num_inputs(2)
    .set_input_names(["lhs", "rhs"])
    .set_infer_shape(_reshape_like_shape)
    .set_infer_type(_reshape_like_type)
    .set_compute(_reshape_like_compute)
    .set_gradient(_reshape_like_gradient)
    .set_inplace_option(lambda attrs: [(0, 0)])
)

# ----------------------------------------------------------------------------- slice_like


class SliceLikeParam(ParamSet):
    axes = Param(Shape, Shape(), "The axes to slice; empty slices every axis.")


def _slice_like_axes(attrs: Any, data_ndim: int, like_ndim: int) -> tuple[int, ...]:
    axes = attrs.parsed.axes
    if len(axes) == 0:
        if data_ndim != like_ndim:
            raise InferenceError(
                f"{attrs.name}: with axes=() data and shape_like need the same number of dimensions, "
                f"got {data_ndim} and {like_ndim}"
            )
        return tuple(range(data_ndim))
    out = []
    for a in axes:
        axis = normalize_axis(attrs.name, a, data_ndim, "axes")
        if axis >= like_ndim:
            raise InferenceError(f"{attrs.name}: axis {a} does not exist in shape_like ({like_ndim} dimensions)")
        out.append(axis)
    return tuple(out)


def _slice_like_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    data, like = in_shapes
    if data is None or like is None:
        return False
    out = list(data)
    for axis in _slice_like_axes(attrs, len(data), len(like)):
        if data[axis] and like[axis] > data[axis]:
            raise InferenceError(
                f"{attrs.name}: shape_like {like} is larger than data {data} on axis {axis}; slice_like only shrinks"
            )
        out[axis] = like[axis]
    shape_assign(out_shapes, 0, tuple(out), attrs.name, "output")
    return shape_known(data) and shape_known(like)


def _slice_like_key(attrs: Any, data_ndim: int, like_shape: tuple[int, ...]) -> tuple[slice, ...]:
    key = [slice(None)] * data_ndim
    for axis in _slice_like_axes(attrs, data_ndim, len(like_shape)):
        key[axis] = slice(0, like_shape[axis])
    return tuple(key)


def _slice_like_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    data, like = inputs
    put(outputs[0], req[0], data[_slice_like_key(attrs, data.ndim, like.shape)])


def _slice_like_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    out_grad, data, like = inputs
    grad = op_ctx.xp.zeros(data.shape, dtype=outputs[0].dtype)
    grad[_slice_like_key(attrs, data.ndim, like.shape)] = out_grad
    put(outputs[0], req[0], grad)
    put(outputs[1], req[1], op_ctx.xp.zeros(like.shape, dtype=outputs[1].dtype))


(
    register("slice_like")
    .describe("Slices data to the shape of shape_like on the given axes (all axes if empty), from index 0.")
    .set_params(SliceLikeParam)
    .set_num_inputs(2)
    .set_input_names(["data", "shape_like"])
    .set_infer_shape(_slice_like_shape)
    .set_infer_type(same_type)
    .set_compute(_slice_like_compute)
    .set_gradient(elemwise_grad_use_in("_backward_slice_like"))
)
register_backward("_backward_slice_like", _slice_like_backward, SliceLikeParam, num_inputs=3, num_outputs=2)

# ------------------------------------------------------------------ shape_array, size_array


def _int64_output(attrs: Any, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, "int64", attrs.name, "output")
    return in_types[0] is not None


def _shape_array_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    if in_shapes[0] is None:
        return False
    shape_assign(out_shapes, 0, (len(in_shapes[0]),), attrs.name, "output")
    return shape_known(in_shapes[0])


def _size_array_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape_assign(out_shapes, 0, (1,), attrs.name, "output")
    return shape_known(in_shapes[0])


def _shape_array_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    put(outputs[0], req[0], op_ctx.xp.asarray(inputs[0].shape, dtype="int64"))


def _size_array_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    put(outputs[0], req[0], op_ctx.xp.asarray([inputs[0].size], dtype="int64"))


for _name, _infer, _compute, _text in (
    ("shape_array", _shape_array_shape, _shape_array_compute, "The input's shape as a 1-D int64 array."),
    ("size_array", _size_array_shape, _size_array_compute, "The input's number of elements as a (1,) int64 array."),
):
    (
        register(_name)
        .describe(_text)
        .set_num_inputs(1)
        .set_input_names(["data"])
        .set_infer_shape(_infer)
        .set_infer_type(_int64_output)
        .set_compute(_compute)
        .set_gradient(zero_grad)
    )

# --------------------------------------------------------- _contrib_arange_like, index_array


class ArangeLikeParam(ParamSet):
    start = Param(float, 0.0, "First value.")
    step = Param(float, 1.0, "Spacing between values.")
    repeat = Param(int, 1, "Times each value is repeated.", low=1)
    ctx = Param(str, "", "Context of the output (set by the front end).")
    axis = Param(int, None, "Count along this axis only (output 1-D); None: the whole input's shape.")


def _arange_like_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape, axis = in_shapes[0], attrs.parsed.axis
    if axis is None:  # same shape both ways
        shape_assign(out_shapes, 0, shape, attrs.name, "output")
        shape_assign(in_shapes, 0, out_shapes[0], attrs.name, "data")
    elif shape is not None:
        shape_assign(out_shapes, 0, (shape[normalize_axis(attrs.name, axis, len(shape))],), attrs.name, "output")
    return shape_known(in_shapes[0])


def _arange_like_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    p, xp, out = attrs.parsed, op_ctx.xp, outputs[0]
    values = p.start + p.step * (xp.arange(out.size, dtype="float64") // p.repeat)
    put(out, req[0], values.reshape(out.shape))


(
    register("_contrib_arange_like")
    .describe("start + step * (i // repeat) for every position i of the input (or of one axis).")
    .set_params(ArangeLikeParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_arange_like_shape)
    .set_infer_type(same_type)
    .set_compute(_arange_like_compute)
    .set_gradient(zero_grad)
)


class IndexArrayParam(ParamSet):
    axes = Param(Shape, None, "The axes whose indices are given; None: all of them.")


def _index_axes(attrs: Any, ndim: int) -> tuple[int, ...]:
    axes = attrs.parsed.axes
    if axes is None:
        return tuple(range(ndim))
    return tuple(normalize_axis(attrs.name, a, ndim, "axes") for a in axes)


def _index_array_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape = in_shapes[0]
    if shape is None:
        return False
    shape_assign(out_shapes, 0, (*shape, len(_index_axes(attrs, len(shape)))), attrs.name, "output")
    return shape_known(shape)


def _index_array_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x, xp = inputs[0], op_ctx.xp
    grids = xp.indices(x.shape, dtype="int64")  # grids[a][pos] = pos[a]
    put(outputs[0], req[0], xp.stack([grids[a] for a in _index_axes(attrs, x.ndim)], axis=-1))


(
    register("_contrib_index_array")
    .describe("For every position of the input, its index along each of ``axes`` (int64, last axis).")
    .set_params(IndexArrayParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_index_array_shape)
    .set_infer_type(_int64_output)
    .set_compute(_index_array_compute)
    .set_gradient(zero_grad)
)

# ------------------------------------------------------------ _identity_with_attr_like_rhs


def _like_rhs_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    for i, what in ((0, "lhs"), (1, "rhs")):
        shape_assign(out_shapes, 0, in_shapes[i], attrs.name, f"output (from {what})")
    for i, what in ((0, "lhs"), (1, "rhs")):
        shape_assign(in_shapes, i, out_shapes[0], attrs.name, what)
    return shape_known(out_shapes[0])


def _like_rhs_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    return [out_grads[0], zero_grad(node, out_grads)[1]]


(
    register("_identity_with_attr_like_rhs")
    .describe("Returns lhs unchanged; its shape is also rhs's (a hint for inference in gradient graphs).")
    .set_num_inputs(2)
    .set_input_names(["lhs", "rhs"])
    .set_infer_shape(_like_rhs_shape)
    .set_infer_type(same_type)
    .set_compute(lambda attrs, op_ctx, inputs, req, outputs: put(outputs[0], req[0], inputs[0]))
    .set_gradient(_like_rhs_gradient)
    .set_inplace_option(lambda attrs: [(0, 0)])
)
