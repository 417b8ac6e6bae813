"""``cumsum`` (MXNet's ``_np_cumsum``): running sums along an axis, or over the flattened input.

Each output element ``y[i] = x[0] + ... + x[i]``, so the gradient of ``x[j]`` collects every
later output gradient: ``dx[j] = g[j] + ... + g[n-1]``, a cumulative sum of the *reversed*
output gradient, reversed back (``_backward_np_cumsum``). With ``axis=None`` the input is
flattened first and the gradient reshaped back. The output dtype is ``dtype`` when given,
else the input's (MXNet keeps ``int8`` as ``int8``; NumPy would widen it).
"""

from __future__ import annotations

import math
from typing import Any

from ..grad import elemwise_grad_use_in
from ..infer import ShapeT, shape_assign, shape_known, type_assign
from ..params import Param, ParamSet
from ..registry import alias, register
from .common import normalize_axis, put, register_backward


class CumsumParam(ParamSet):
    axis = Param(int, None, "The axis to sum along; None sums over the flattened input.")
    dtype = Param(
        str,
        None,
        "Output dtype; None keeps the input's.",
        choices=("float16", "float32", "float64", "int32", "int64", "int8"),
    )


def _cumsum_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape, axis = in_shapes[0], attrs.parsed.axis
    if axis is None:
        if shape is not None and shape_known(shape):
            shape_assign(out_shapes, 0, (math.prod(shape),), attrs.name, "output")
    else:  # same shape both ways
        known = shape if shape is not None else out_shapes[0]
        if known is None:
            return False
        normalize_axis(attrs.name, axis, len(known))
        shape_assign(out_shapes, 0, shape, attrs.name, "output")
        shape_assign(in_shapes, 0, out_shapes[0], attrs.name, "input")
    return shape_known(in_shapes[0]) and shape_known(out_shapes[0])


def _cumsum_type(attrs: Any, in_types: list, out_types: list) -> bool:
    dtype = attrs.parsed.dtype
    type_assign(out_types, 0, dtype if dtype is not None else in_types[0], attrs.name, "output")
    if dtype is None:
        type_assign(in_types, 0, out_types[0], attrs.name, "input")
    return in_types[0] is not None and out_types[0] is not None


def _cumsum_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x, axis = inputs[0], attrs.parsed.axis
    if axis is None:
        x, axis = x.reshape(-1), 0
    put(outputs[0], req[0], op_ctx.xp.cumsum(x, axis=axis, dtype=outputs[0].dtype))


def _cumsum_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    out_grad, x = inputs
    xp, axis = op_ctx.xp, attrs.parsed.axis
    if axis is None:
        axis = 0
    else:
        axis = normalize_axis(attrs.name, axis, x.ndim)
    flipped = xp.flip(out_grad, axis=axis)
    grad = xp.flip(xp.cumsum(flipped, axis=axis, dtype=outputs[0].dtype), axis=axis)
    put(outputs[0], req[0], grad.reshape(x.shape))


(
    register("_np_cumsum")
    .describe("Cumulative sum along ``axis`` (the flattened input when axis is None).")
    .set_params(CumsumParam)
    .set_num_inputs(1)
    .set_input_names(["a"])
    .set_infer_shape(_cumsum_shape)
    .set_infer_type(_cumsum_type)
    .set_compute(_cumsum_compute)
    .set_gradient(elemwise_grad_use_in("_backward_np_cumsum"))
)
alias("cumsum", "_np_cumsum")
register_backward("_backward_np_cumsum", _cumsum_backward, CumsumParam)
