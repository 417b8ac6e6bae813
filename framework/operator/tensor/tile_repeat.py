"""Repetition: ``tile`` (the whole array, per axis) and ``repeat`` (each element along an axis).

Both copy elements of the input several times into the output, so the gradient of an input
element is the sum of the output gradients of all its copies: the backward operators view
the output gradient with the copies on their own axes and sum those axes away.
"""

from __future__ import annotations

import math
from typing import Any

from ..grad import elemwise_grad_use_in
from ..infer import (
    InferenceError,
    ShapeT,
    shape_assign,
    shape_known,
)
from ..params import REQUIRED, Param, ParamSet, Shape
from ..registry import register
from .common import (
    normalize_axis,
    put,
    register_backward,
    same_type,
)


class TileParam(ParamSet):
    reps = Param(Shape, REQUIRED, "Repetitions per axis (aligned from the right, like numpy.tile).")


def _tile_plan(attrs: Any, ndim: int) -> tuple[int, tuple[int, ...]]:
    """(number of leading 1s to give the input, reps padded to the output rank)."""
    reps = tuple(attrs.parsed.reps)
    if any(r <= 0 for r in reps):
        raise InferenceError(f"{attrs.name}: reps={reps} must be positive (zero-size arrays are not supported)")
    rank = max(ndim, len(reps))
    return rank - ndim, (1,) * (rank - len(reps)) + reps


def _tile_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape, out, name = in_shapes[0], out_shapes[0], attrs.name
    if shape is not None:
        pad, reps = _tile_plan(attrs, len(shape))
        full = (1,) * pad + shape
        shape_assign(out_shapes, 0, tuple(d * r for d, r in zip(full, reps, strict=True)), name, "output")
    elif out is not None and len(out) > len(attrs.parsed.reps):  # the input rank is the output rank here
        _, reps = _tile_plan(attrs, len(out))
        if any(o % r for o, r in zip(out, reps, strict=True)):
            raise InferenceError(f"{name}: output shape {out} is not a multiple of reps={attrs.parsed.reps}")
        shape_assign(in_shapes, 0, tuple(o // r for o, r in zip(out, reps, strict=True)), name, "input")
    return shape_known(in_shapes[0])


def _tile_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x = inputs[0]
    _, reps = _tile_plan(attrs, x.ndim)
    put(outputs[0], req[0], op_ctx.xp.tile(x, reps))


def _tile_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # inputs: (out_grad, data): view the gradient as (r0, d0, r1, d1, ...) and sum the copies
    ograd, x = inputs
    pad, reps = _tile_plan(attrs, x.ndim)
    full = (1,) * pad + x.shape
    interleaved = [n for pair in zip(reps, full, strict=True) for n in pair]
    summed = ograd.reshape(interleaved).sum(axis=tuple(range(0, 2 * len(full), 2)))
    put(outputs[0], req[0], summed.reshape(x.shape))


(
    register("tile")
    .describe("Repeats the whole array ``reps`` times per axis (numpy.tile).")
    .set_params(TileParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_tile_shape)
    .set_infer_type(same_type)
    .set_compute(_tile_compute)
    .set_gradient(elemwise_grad_use_in("_backward_tile"))
)
register_backward("_backward_tile", _tile_backward, params=TileParam)


class RepeatParam(ParamSet):
    repeats = Param(int, REQUIRED, "How many times each element is repeated.", low=1)
    axis = Param(int, None, "The axis to repeat along; None repeats the flattened array.")


def _repeat_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape, p, name = in_shapes[0], attrs.parsed, attrs.name
    if shape is None:
        return False
    if p.axis is None:
        out: tuple[int, ...] = (math.prod(shape) * p.repeats,)
    else:
        axis = normalize_axis(name, p.axis, len(shape))
        out = shape[:axis] + (shape[axis] * p.repeats,) + shape[axis + 1 :]
    shape_assign(out_shapes, 0, out, name, "output")
    return shape_known(shape)


def _repeat_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x, p = inputs[0], attrs.parsed
    axis = None if p.axis is None else normalize_axis(attrs.name, p.axis, x.ndim)
    put(outputs[0], req[0], op_ctx.xp.repeat(x, p.repeats, axis=axis))


def _repeat_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # each element's copies sit next to each other: (..., d, repeats, ...) and sum the copies
    ograd, x = inputs
    p = attrs.parsed
    if p.axis is None:
        summed = ograd.reshape(-1, p.repeats).sum(axis=1)
    else:
        axis = normalize_axis(attrs.name, p.axis, x.ndim)
        summed = ograd.reshape(x.shape[: axis + 1] + (p.repeats,) + x.shape[axis + 1 :]).sum(axis=axis + 1)
    put(outputs[0], req[0], summed.reshape(x.shape))


(
    register("repeat")
    .describe("Repeats each element ``repeats`` times along ``axis`` (numpy.repeat).")
    .set_params(RepeatParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_repeat_shape)
    .set_infer_type(same_type)
    .set_compute(_repeat_compute)
    .set_gradient(elemwise_grad_use_in("_backward_repeat"))
)
register_backward("_backward_repeat", _repeat_backward, params=RepeatParam)
