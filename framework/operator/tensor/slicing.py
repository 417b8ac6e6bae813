"""Sub-blocks of one input: ``slice`` (alias ``crop``), ``slice_axis`` and ``_basic_index``
(NDArray's ``x[1:3, 0]`` recorded by autograd).

Each selects a rectangular block of its input (per-axis begin/end/step, or a basic index of
ints, slices, ``None`` and ``...``); the gradient scatters the output gradient into zeros
shaped like the input, so elements that were not selected get a zero gradient.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...base import MXLabError
from ..grad import elemwise_grad_use_in
from ..infer import (
    InferenceError,
    ShapeT,
    shape_assign,
    shape_known,
    type_assign,
)
from ..kernel import ADD, NULL, Req, assign
from ..params import REQUIRED, Param, ParamSet, Shape
from ..registry import alias, register
from .common import (
    grads_like_inputs,
    normalize_axis,
    put,
    register_backward,
    same_type,
)


class OptionalIntTuple(Param):
    """A parameter holding a tuple of ints or None (``slice``'s begin/end/step).

    MXNet's symbol JSON writes these as ``"(None, 2)"``; :class:`Shape` only takes ints.
    """

    def __init__(self, default: Any = REQUIRED, description: str = "", optional: bool = False) -> None:
        super().__init__(tuple, default, description, optional=optional)

    def type_name(self) -> str:
        text = "tuple of (int or None)"
        return f"{text}, required" if self.default is REQUIRED else f"{text}, optional, default={self.default!r}"

    def _expected(self) -> str:
        return "a tuple of integers or None such as (0, None, 2)"

    def _convert(self, value: Any) -> tuple[int | None, ...]:
        if isinstance(value, str):
            value = ast.literal_eval(value.strip()) if value.strip() else ()
        if isinstance(value, int | np.integer) and not isinstance(value, bool):
            return (int(value),)
        items = tuple(value)
        for v in items:
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | np.integer)):
                raise TypeError(value)
        return tuple(None if v is None else int(v) for v in items)

    def format(self, value: Any) -> str:
        if value is None:
            return "None"
        parts = ["None" if v is None else str(v) for v in value]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


class SliceParam(ParamSet):
    begin = OptionalIntTuple(REQUIRED, "Start of the slice on each leading axis (None: from the start).")
    end = OptionalIntTuple(REQUIRED, "End of the slice on each leading axis, exclusive (None: to the end).")
    step = OptionalIntTuple((), "Step on each leading axis (empty or None: 1).", optional=True)


def _slice_key(attrs: Any, ndim: int) -> tuple[slice, ...]:
    p, name = attrs.parsed, attrs.name
    begin, end, step = p.begin, p.end, p.step or ()
    if len(begin) != len(end):
        raise InferenceError(f"{name}: begin and end must have the same length, got begin={begin}, end={end}")
    if len(step) not in (0, len(begin)):
        raise InferenceError(f"{name}: step must be empty or as long as begin, got step={step}, begin={begin}")
    if len(begin) > ndim:
        raise InferenceError(f"{name}: slicing {len(begin)} axes exceeds the data dimensions ({ndim})")
    key = []
    for i in range(len(begin)):
        s = step[i] if step and step[i] is not None else 1
        if s == 0:
            raise InferenceError(f"{name}: step[{i}] cannot be 0")
        key.append(slice(begin[i], end[i], s))
    return tuple(key)


def _sliced_shape(name: str, shape: tuple[int, ...], key: Sequence[slice]) -> tuple[int, ...]:
    out = list(shape)
    for i, k in enumerate(key):
        if shape[i] == 0:
            continue  # unknown length: unknown result
        out[i] = len(range(*k.indices(shape[i])))
        if out[i] == 0:
            raise InferenceError(
                f"{name}: slice [{k.start}:{k.stop}:{k.step}] of axis {i} (length {shape[i]}) is empty; "
                "MXLab does not support zero-size arrays"
            )
    return tuple(out)


def _slice_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape = in_shapes[0]
    if shape is None:
        return False
    key = _slice_key(attrs, len(shape))
    shape_assign(out_shapes, 0, _sliced_shape(attrs.name, shape, key), attrs.name, "output")
    return shape_known(shape)


def _slice_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x = inputs[0]
    put(outputs[0], req[0], x[_slice_key(attrs, x.ndim)])


def _scatter_slice(outputs: list, req: list, key: tuple, ograd: Any) -> None:
    """Gradient of a slice: ``ograd`` goes into ``key`` of the output, zeros elsewhere."""
    if req[0] is Req.NULL:
        return
    out = outputs[0]
    if req[0] is not Req.ADD:
        out[...] = 0
    out[key] += ograd.astype(out.dtype, copy=False)


def _slice_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # inputs: (out_grad, data)
    _scatter_slice(outputs, req, _slice_key(attrs, inputs[1].ndim), inputs[0])


(
    register("slice")
    .describe("Slices ``[begin:end:step]`` on the leading axes (None entries: Python's defaults).")
    .set_params(SliceParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_slice_shape)
    .set_infer_type(same_type)
    .set_compute(_slice_compute)
    .set_gradient(elemwise_grad_use_in("_backward_slice"))
)
alias("crop", "slice")
register_backward("_backward_slice", _slice_backward, params=SliceParam)


class SliceAxisParam(ParamSet):
    axis = Param(int, REQUIRED, "The axis to slice.")
    begin = Param(int, REQUIRED, "Start index (negative counts from the end).")
    end = Param(int, REQUIRED, "End index, exclusive (negative counts from the end; None: the end).", optional=True)


def _slice_axis_key(attrs: Any, shape: tuple[int, ...]) -> tuple[int, slice]:
    p, name = attrs.parsed, attrs.name
    axis = normalize_axis(name, p.axis, len(shape))
    length = shape[axis]
    begin, end = p.begin, p.end
    if length == 0:  # unknown length: cannot resolve negative positions
        return axis, slice(begin, end)
    if begin < 0:
        begin += length
    end = length if end is None else (end + length if end < 0 else end)
    if not 0 <= begin < length:
        raise InferenceError(f"{name}: invalid begin={p.begin} for axis {p.axis} of length {length}")
    if not 0 < end <= length:
        raise InferenceError(f"{name}: invalid end={p.end} for axis {p.axis} of length {length}")
    if begin >= end:
        raise InferenceError(f"{name}: invalid begin, end: begin={p.begin} must come before end={p.end}")
    return axis, slice(begin, end)


def _slice_axis_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape = in_shapes[0]
    if shape is None:
        return False
    axis, key = _slice_axis_key(attrs, shape)
    out = list(shape)
    out[axis] = key.stop - key.start if shape[axis] else 0
    shape_assign(out_shapes, 0, tuple(out), attrs.name, "output")
    return shape_known(shape)


def _slice_axis_full_key(attrs: Any, shape: tuple[int, ...]) -> tuple[slice, ...]:
    axis, key = _slice_axis_key(attrs, shape)
    return (slice(None),) * axis + (key,)


def _slice_axis_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x = inputs[0]
    put(outputs[0], req[0], x[_slice_axis_full_key(attrs, x.shape)])


def _slice_axis_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    _scatter_slice(outputs, req, _slice_axis_full_key(attrs, inputs[1].shape), inputs[0])


(
    register("slice_axis")
    .describe("Slices ``[begin:end]`` along one axis.")
    .set_params(SliceAxisParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_slice_axis_shape)
    .set_infer_type(same_type)
    .set_compute(_slice_axis_compute)
    .set_gradient(elemwise_grad_use_in("_backward_slice_axis"))
)
register_backward("_backward_slice_axis", _slice_axis_backward, params=SliceAxisParam)


# ---------------------------------------------------------------------------- basic indexing
def encode_index(key: object) -> str:
    """A basic index (ints, slices, Ellipsis, None) as a string parameter."""
    parts = key if isinstance(key, tuple) else (key,)
    encoded = []
    for part in parts:
        if part is Ellipsis:
            encoded.append("e")
        elif part is None:
            encoded.append("n")
        elif isinstance(part, slice):
            fields = ["" if v is None else str(int(v)) for v in (part.start, part.stop, part.step)]
            encoded.append("s" + ":".join(fields))
        else:
            encoded.append(f"i{int(part)}")
    return ",".join(encoded)


def decode_index(text: str) -> tuple:
    """The inverse of :func:`encode_index`."""
    parts: list[object] = []
    for token in filter(None, text.split(",")):
        kind, body = token[0], token[1:]
        if kind == "e":
            parts.append(Ellipsis)
        elif kind == "n":
            parts.append(None)
        elif kind == "s":
            start, stop, step = (int(v) if v else None for v in body.split(":"))
            parts.append(slice(start, stop, step))
        elif kind == "i":
            parts.append(int(body))
        else:
            raise MXLabError(f"_basic_index: malformed key {text!r}")
    return tuple(parts)


class BasicIndexParam(ParamSet):
    key = Param(str, "", "The basic index, encoded (see encode_index).")


def _probe_shape(shape: tuple[int, ...], key: tuple) -> tuple[int, ...]:
    return np.broadcast_to(np.empty((), dtype=np.bool_), shape)[key].shape


def _basic_index_shape(attrs, in_shapes, out_shapes) -> bool:
    if shape_known(in_shapes[0]):
        shape_assign(out_shapes, 0, _probe_shape(in_shapes[0], decode_index(attrs.parsed.key)), attrs.name, "output")
    return out_shapes[0] is not None


def _basic_index_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    assign(outputs[0], req[0], inputs[0][decode_index(attrs.parsed.key)])


def _basic_index_backward_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    # inputs: (out_grad, forward input); scatter the gradient into zeros of the input's shape
    if req[0] is NULL:
        return
    grad = op_ctx.xp.zeros_like(outputs[0]) if req[0] is ADD else outputs[0]
    if req[0] is not ADD:
        grad[...] = 0
    grad[decode_index(attrs.parsed.key)] += inputs[0]
    if req[0] is ADD:
        outputs[0] += grad


(
    register("_basic_index")
    .describe("Basic indexing (ints, slices) recorded by autograd; the gradient scatters back.")
    .set_params(BasicIndexParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_basic_index_shape)
    .set_infer_type(same_type)
    .set_compute(_basic_index_compute)
    .set_gradient(elemwise_grad_use_in("_backward_basic_index"))
)
(
    register("_backward_basic_index")
    .set_params(BasicIndexParam)
    .set_num_inputs(2)
    .set_infer_shape(grads_like_inputs(1))
    .set_infer_type(lambda attrs, i, o: (type_assign(o, 0, i[0], attrs.name, "output"), True)[1])
    .set_compute(_basic_index_backward_compute)
    .set_is_backward()
)


# ---------------------------------------------------------------------------- slice_like
class SliceLikeParam(ParamSet):
    axes = Param(Shape, Shape(), "The axes to cut to shape_like's size; empty means every axis.")


def _slice_like_key(attrs: Any, shape: tuple[int, ...], like: tuple[int, ...]) -> tuple[slice, ...]:
    """``[:like[a]]`` on each chosen axis ``a``, the whole axis elsewhere."""
    axes = attrs.parsed.axes
    if not axes and len(like) != len(shape):
        raise InferenceError(
            f"{attrs.name}: with no axes, shape_like {like} must have as many dimensions as data {shape}"
        )
    chosen = {normalize_axis(attrs.name, a, len(shape)) for a in axes} if axes else set(range(len(shape)))
    key = []
    for axis, size in enumerate(shape):
        if axis not in chosen:
            key.append(slice(None))
            continue
        if axis >= len(like):
            raise InferenceError(f"{attrs.name}: axis {axis} is out of range for shape_like {like}")
        if like[axis] > size:
            raise InferenceError(
                f"{attrs.name}: shape_like's axis {axis} ({like[axis]}) is longer than data's ({size})"
            )
        key.append(slice(0, like[axis]))
    return tuple(key)


def _slice_like_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    data, like = in_shapes
    if not shape_known(data) or not shape_known(like):
        return False
    key = _slice_like_key(attrs, data, like)
    shape_assign(
        out_shapes, 0, tuple(len(range(*k.indices(d))) for k, d in zip(key, data, strict=True)), attrs.name, "output"
    )
    return True


def _slice_like_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    put(outputs[0], req[0], inputs[0][_slice_like_key(attrs, inputs[0].shape, inputs[1].shape)])


def _slice_like_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # inputs: (out_grad, data, shape_like); shape_like's values never reach the output: zero gradient.
    _scatter_slice(outputs, req, _slice_like_key(attrs, inputs[1].shape, inputs[2].shape), inputs[0])
    if req[1] is not Req.NULL and req[1] is not Req.ADD:
        outputs[1][...] = 0


(
    register("slice_like")
    .describe("Cuts ``data`` to ``shape_like``'s size on the chosen axes (from the start of each).")
    .set_params(SliceLikeParam)
    .set_num_inputs(2)
    .set_input_names(["data", "shape_like"])
    .set_infer_shape(_slice_like_shape)
    .set_infer_type(same_type)
    .set_compute(_slice_like_compute)
    .set_gradient(elemwise_grad_use_in("_backward_slice_like"))
)
register_backward("_backward_slice_like", _slice_like_backward, params=SliceLikeParam, num_inputs=3, num_outputs=2)
