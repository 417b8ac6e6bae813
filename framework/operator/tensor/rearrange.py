"""Operators that move values without arithmetic: ``reverse`` (alias ``flip``), ``reshape_like``,
``depth_to_space`` / ``space_to_depth``, ``diag``, ``Pad`` (alias ``pad``), and the shape readers
``shape_array`` / ``size_array``.

A rearrangement's gradient is the inverse rearrangement of the output gradient (``reverse``
undoes itself, ``depth_to_space`` and ``space_to_depth`` undo each other), written with the
*forward* operators so it can be differentiated again. The shape readers report integers
that do not change when the values move a little: their gradient is zero.
"""

from __future__ import annotations

import math
from typing import Any

from ..grad import elemwise_grad_use_in, zero_grad
from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..kernel import Req
from ..node import Entry, Node
from ..params import REQUIRED, Param, ParamSet, Shape
from ..registry import alias, register
from .common import forward_node, normalize_axis, put, register_backward, same_type


# ---------------------------------------------------------------------- reverse / flip
class ReverseParam(ParamSet):
    axis = Param(Shape, Shape(), "The axes to reverse (negative counts from the end).")


def _reverse_axes(attrs: Any, ndim: int) -> tuple[int, ...]:
    return tuple(normalize_axis(attrs.name, a, ndim) for a in attrs.parsed.axis)


def _same_shape_both_ways(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape_assign(out_shapes, 0, in_shapes[0], attrs.name, "output")
    shape_assign(in_shapes, 0, out_shapes[0], attrs.name, "input")
    if in_shapes[0] is not None:
        _reverse_axes(attrs, len(in_shapes[0]))  # refuse out-of-range axes at inference
    return shape_known(in_shapes[0])


def _reverse_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x = inputs[0]
    put(outputs[0], req[0], op_ctx.xp.flip(x, axis=_reverse_axes(attrs, x.ndim)))


(
    register("reverse")
    .describe("Reverses the order of elements along the given axes; reversing again is the gradient.")
    .set_params(ReverseParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_same_shape_both_ways)
    .set_infer_type(same_type)
    .set_compute(_reverse_compute)
    .set_gradient(lambda node, out_grads: [forward_node(node, "reverse", node.attrs.parsed.as_dict(), [out_grads[0]])])
)
alias("flip", "reverse")


# ---------------------------------------------------------------------- reshape_like
def _reshape_like_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    lhs, rhs = in_shapes
    if lhs is not None and rhs is not None and math.prod(lhs) != math.prod(rhs):
        raise InferenceError(f"{attrs.name}: cannot reshape {lhs} ({math.prod(lhs)} elements) like {rhs}")
    shape_assign(out_shapes, 0, rhs, attrs.name, "output")
    return shape_known(lhs) and shape_known(rhs)


def _reshape_like_type(attrs: Any, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, in_types[0], attrs.name, "output")
    type_assign(in_types, 0, out_types[0], attrs.name, "lhs")
    return in_types[0] is not None


def _reshape_like_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    lhs = node.inputs[0]
    back = forward_node(node, "reshape_like", {}, [out_grads[0], lhs])
    return [back, zero_grad(node, out_grads)[1]]


(
    register("reshape_like")
    .describe("``lhs``'s values in ``rhs``'s shape (same number of elements); ``rhs`` gets no gradient.")
    .set_num_inputs(2)
    .set_input_names(["lhs", "rhs"])
    .set_infer_shape(_reshape_like_shape)
    .set_infer_type(_reshape_like_type)
    .set_compute(
        lambda attrs, op_ctx, inputs, req, outputs: put(outputs[0], req[0], inputs[0].reshape(outputs[0].shape))
    )
    .set_gradient(_reshape_like_gradient)
)


# ---------------------------------------------------------------------- depth_to_space / space_to_depth
class BlockParam(ParamSet):
    block_size = Param(int, 2, "The side of the square block moved between depth and space.", low=1)


def _block_shape(to_space: bool):
    def infer(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        shape = in_shapes[0]
        if shape is None:
            return False
        if len(shape) != 4:
            raise InferenceError(f"{attrs.name}: expects a 4-D (N, C, H, W) input, got shape {shape}")
        b = attrs.parsed.block_size
        n, c, h, w = shape
        if to_space:
            if c % (b * b):
                raise InferenceError(f"{attrs.name}: channels {c} must be a multiple of block_size**2 = {b * b}")
            out = (n, c // (b * b), h * b, w * b)
        else:
            if h % b or w % b:
                raise InferenceError(f"{attrs.name}: height {h} and width {w} must be multiples of block_size {b}")
            out = (n, c * b * b, h // b, w // b)
        shape_assign(out_shapes, 0, out, attrs.name, "output")
        return True

    return infer


def _depth_to_space(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # (N, b, b, C', H, W) -> (N, C', H, b, W, b): the channel blocks become pixel blocks (DCR order).
    x, b = inputs[0], attrs.parsed.block_size
    n, c, h, w = x.shape
    blocks = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    put(outputs[0], req[0], blocks.reshape(n, c // (b * b), h * b, w * b))


def _space_to_depth(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # The exact inverse of _depth_to_space's permutation.
    x, b = inputs[0], attrs.parsed.block_size
    n, c, h, w = x.shape
    blocks = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    put(outputs[0], req[0], blocks.reshape(n, c * b * b, h // b, w // b))


for _name, _inverse, _to_space, _compute in (
    ("depth_to_space", "space_to_depth", True, _depth_to_space),
    ("space_to_depth", "depth_to_space", False, _space_to_depth),
):
    (
        register(_name)
        .describe(f"Moves blocks of block_size x block_size values ({_name.replace('_', ' ')}); {_inverse} undoes it.")
        .set_params(BlockParam)
        .set_num_inputs(1)
        .set_input_names(["data"])
        .set_infer_shape(_block_shape(_to_space))
        .set_infer_type(same_type)
        .set_compute(_compute)
        .set_gradient(
            lambda node, out_grads, inverse=_inverse: [
                forward_node(node, inverse, node.attrs.parsed.as_dict(), [out_grads[0]])
            ]
        )
    )


# ---------------------------------------------------------------------- shape_array / size_array
def _reader_shape(length_of):
    def infer(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        if in_shapes[0] is None:
            return False
        shape_assign(out_shapes, 0, (length_of(in_shapes[0]),), attrs.name, "output")
        return True

    return infer


def _int64_output(attrs: Any, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, "int64", attrs.name, "output")
    return in_types[0] is not None


for _name, _length, _values, _what in (
    ("shape_array", len, lambda x: list(x.shape), "the input's shape"),
    ("size_array", lambda shape: 1, lambda x: [x.size], "the input's number of elements"),
):
    (
        register(_name)
        .describe(f"A 1-D int64 array holding {_what}.")
        .set_num_inputs(1)
        .set_input_names(["data"])
        .set_infer_shape(_reader_shape(_length))
        .set_infer_type(_int64_output)
        .set_compute(
            lambda attrs, op_ctx, inputs, req, outputs, values=_values: put(
                outputs[0], req[0], op_ctx.xp.asarray(values(inputs[0]), dtype="int64")
            )
        )
        .set_gradient(zero_grad)
    )


# ---------------------------------------------------------------------- diag
class DiagParam(ParamSet):
    k = Param(int, 0, "The diagonal: 0 the main one, > 0 above it, < 0 below it.")
    axis1 = Param(int, 0, "First axis of the 2-D planes whose diagonal is taken (inputs of 2+ dimensions).")
    axis2 = Param(int, 1, "Second axis of those planes.")


def _diag_axes(attrs: Any, ndim: int) -> tuple[int, int]:
    p = attrs.parsed
    a1, a2 = normalize_axis(attrs.name, p.axis1, ndim, "axis1"), normalize_axis(attrs.name, p.axis2, ndim, "axis2")
    if a1 == a2:
        raise InferenceError(f"{attrs.name}: axis1 and axis2 must differ, both are {a1}")
    return a1, a2


def _diagonal_length(rows: int, cols: int, k: int) -> int:
    return max(0, min(rows + min(k, 0), cols - max(k, 0)))


def _diag_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape, k = in_shapes[0], attrs.parsed.k
    if not shape_known(shape):
        return False
    if len(shape) == 1:  # a vector becomes a square matrix with it on diagonal k
        side = shape[0] + abs(k)
        shape_assign(out_shapes, 0, (side, side), attrs.name, "output")
        return True
    a1, a2 = _diag_axes(attrs, len(shape))
    rest = [d for i, d in enumerate(shape) if i not in (a1, a2)]
    shape_assign(out_shapes, 0, (*rest, _diagonal_length(shape[a1], shape[a2], k)), attrs.name, "output")
    return True


def _diag_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x, xp, k = inputs[0], op_ctx.xp, attrs.parsed.k
    if x.ndim == 1:
        put(outputs[0], req[0], xp.diag(x, k))
        return
    a1, a2 = _diag_axes(attrs, x.ndim)
    put(outputs[0], req[0], xp.diagonal(x, offset=k, axis1=a1, axis2=a2))


def _diag_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # inputs: (out_grad, data). A vector's gradient is diagonal k of the output gradient; a
    # matrix's is the output gradient written back onto diagonal k, zeros elsewhere.
    ograd, data, k, xp = inputs[0], inputs[1], attrs.parsed.k, op_ctx.xp
    if req[0] is Req.NULL:
        return
    if data.ndim == 1:
        put(outputs[0], req[0], xp.diagonal(ograd, offset=k))
        return
    out = outputs[0]
    if req[0] is not Req.ADD:
        out[...] = 0
    a1, a2 = _diag_axes(attrs, data.ndim)
    planes = xp.moveaxis(out, (a1, a2), (-2, -1))  # a writable view of out
    steps = xp.arange(ograd.shape[-1])
    planes[..., steps + max(-k, 0), steps + max(k, 0)] += ograd.astype(out.dtype, copy=False)


(
    register("diag")
    .describe("A vector's square matrix with it on diagonal k, or a matrix's diagonal k (as NumPy's diag/diagonal).")
    .set_params(DiagParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_diag_shape)
    .set_infer_type(same_type)
    .set_compute(_diag_compute)
    .set_gradient(elemwise_grad_use_in("_backward_diag"))
)
register_backward("_backward_diag", _diag_backward, params=DiagParam)


# ---------------------------------------------------------------------- Pad
class PadParam(ParamSet):
    mode = Param(str, "constant", "How the border is filled.", choices=("constant", "edge", "reflect"))
    pad_width = Param(Shape, REQUIRED, "(before, after) per axis, flattened; the first two axes (N, C) get 0.")
    constant_value = Param(float, 0.0, "The fill value of mode='constant'.")


def _pad_pairs(attrs: Any, ndim: int) -> list[tuple[int, int]]:
    width = attrs.parsed.pad_width
    if ndim not in (4, 5):
        raise InferenceError(f"{attrs.name}: pads 4-D or 5-D inputs (N, C, spatial...), got {ndim} dimension(s)")
    if len(width) != 2 * ndim:
        raise InferenceError(f"{attrs.name}: pad_width needs {2 * ndim} values (before, after per axis), got {width}")
    pairs = [(width[2 * i], width[2 * i + 1]) for i in range(ndim)]
    if pairs[0] != (0, 0) or pairs[1] != (0, 0):
        raise InferenceError(f"{attrs.name}: the batch and channel axes cannot be padded, got pad_width={width}")
    return pairs


def _pad_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape = in_shapes[0]
    if not shape_known(shape):
        return False
    pairs = _pad_pairs(attrs, len(shape))
    if attrs.parsed.mode == "reflect" and any(max(p) >= d for p, d in zip(pairs, shape, strict=True) if max(p)):
        raise InferenceError(f"{attrs.name}: reflect padding must be smaller than the axis it pads, got {shape}")
    shape_assign(out_shapes, 0, tuple(d + a + b for d, (a, b) in zip(shape, pairs, strict=True)), attrs.name, "output")
    return True


def _pad_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x, p = inputs[0], attrs.parsed
    pairs = _pad_pairs(attrs, x.ndim)
    if p.mode == "constant":
        padded = op_ctx.xp.pad(x, pairs, mode="constant", constant_values=p.constant_value)
    else:
        padded = op_ctx.xp.pad(x, pairs, mode=p.mode)
    put(outputs[0], req[0], padded)


def _pad_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # Padding copies input elements to output positions: pad the input's flat indices the same
    # way (the constant border gets -1, "no source"), then sum each output gradient into the
    # element it came from. One rule for every mode.
    ograd, data, xp = inputs[0], inputs[1], op_ctx.xp
    if req[0] is Req.NULL:
        return
    pairs = _pad_pairs(attrs, data.ndim)
    index = xp.arange(data.size).reshape(data.shape)
    if attrs.parsed.mode == "constant":
        source = xp.pad(index, pairs, mode="constant", constant_values=-1).ravel()
    else:
        source = xp.pad(index, pairs, mode=attrs.parsed.mode).ravel()
    keep = source >= 0
    grad = xp.bincount(source[keep], weights=ograd.ravel()[keep].astype(xp.float64), minlength=data.size)
    put(outputs[0], req[0], grad.reshape(data.shape))


(
    register("Pad")
    .describe("Pads the spatial axes of a 4-D/5-D input: a constant, the edge values, or a reflection.")
    .set_params(PadParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_pad_shape)
    .set_infer_type(same_type)
    .set_compute(_pad_compute)
    .set_gradient(elemwise_grad_use_in("_backward_Pad"))
)
register_backward("_backward_Pad", _pad_backward, params=PadParam)
alias("pad", "Pad")
