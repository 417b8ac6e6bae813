"""Flat indices and coordinates: ``ravel_multi_index`` and ``unravel_index`` (MXNet's
``_ravel_multi_index`` / ``_unravel_index``), as in NumPy's functions of the same names.

For a ``shape`` with row-major strides ``s``, a coordinate ``(c_0, ..., c_{n-1})`` has the flat
index ``sum(c_k * s_k)``. ``ravel`` reads the coordinates from the *rows* of its input
(shape ``(n, ...)``); ``unravel`` writes them as rows. Like MXNet 1.9.1 neither checks bounds:
``unravel`` takes C remainders (``fmod``, sign of the dividend) on every axis but the first,
which keeps what is left. The values keep the input's dtype. Neither is differentiable
(the gradient is zero).
"""

from __future__ import annotations

from typing import Any

from ..grad import zero_grad
from ..infer import InferenceError, ShapeT, shape_assign, shape_known
from ..params import Param, ParamSet, Shape
from ..registry import alias, register
from .common import put, same_type


class RavelParam(ParamSet):
    shape = Param(Shape, None, "The shape of the array the indices point into.")


def _target_shape(attrs: Any) -> tuple[int, ...]:
    shape = attrs.parsed.shape
    if not shape or any(d <= 0 for d in shape):
        raise InferenceError(f"{attrs.name}: shape must be a non-empty tuple of positive sizes, got {shape}")
    return tuple(shape)


def _strides(shape: tuple[int, ...]) -> list[int]:
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return strides[::-1]


def _ravel_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape, data = _target_shape(attrs), in_shapes[0]
    if data is None:
        return False
    if len(data) < 1 or data[0] not in (0, len(shape)):
        raise InferenceError(f"{attrs.name}: data {data} must have one row per axis of shape {shape}")
    shape_assign(out_shapes, 0, data[1:] or (1,), attrs.name, "output")
    return shape_known(data)


def _unravel_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape = _target_shape(attrs)
    shape_assign(out_shapes, 0, None if in_shapes[0] is None else (len(shape), *in_shapes[0]), attrs.name, "output")
    if out_shapes[0] is not None:
        shape_assign(in_shapes, 0, out_shapes[0][1:], attrs.name, "data")
    return shape_known(in_shapes[0])


def _ravel_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    data = inputs[0]
    strides = op_ctx.xp.asarray(_strides(_target_shape(attrs)), dtype=data.dtype)
    flat = (data * strides.reshape((-1,) + (1,) * (data.ndim - 1))).sum(axis=0)
    put(outputs[0], req[0], flat.reshape(outputs[0].shape))


def _unravel_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, rest = op_ctx.xp, inputs[0]
    shape = _target_shape(attrs)
    coords = []
    for d in reversed(shape[1:]):  # innermost first: C remainder, then exact division
        coord = xp.fmod(rest, d)
        coords.append(coord)
        rest = (rest - coord) // d
    coords.append(rest)
    put(outputs[0], req[0], xp.stack(coords[::-1]))


for _name, _infer, _compute, _text in (
    ("_ravel_multi_index", _ravel_shape, _ravel_compute, "Flat indices from coordinates (one row per axis)."),
    ("_unravel_index", _unravel_shape, _unravel_compute, "Coordinates (one row per axis) from flat indices."),
):
    (
        register(_name)
        .describe(_text)
        .set_params(RavelParam)
        .set_num_inputs(1)
        .set_input_names(["data"])
        .set_infer_shape(_infer)
        .set_infer_type(same_type)
        .set_compute(_compute)
        .set_gradient(zero_grad)
    )
alias("ravel_multi_index", "_ravel_multi_index")
alias("unravel_index", "_unravel_index")
