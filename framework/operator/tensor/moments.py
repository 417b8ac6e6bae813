"""``moments``: the mean and the (population) variance over some axes, in one pass.

Two outputs, ``mean = sum(x) / N`` and ``var = sum((x - mean)^2) / N`` over the ``axes``
(which must be given: as in MXNet, a global moment lists every axis), each kept as size-1
axes when ``keepdims``. The gradient combines both output gradients,
``dx = g_mean / N + g_var * 2 (x - mean) / N``, so the backward operator
``_backward_moments`` takes both gradients, the input and the forward mean.
"""

from __future__ import annotations

import math
from typing import Any

from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..node import Entry
from ..params import Param, ParamSet, Shape
from ..registry import register
from .common import backward_entries, normalize_axis, put


class MomentsParam(ParamSet):
    axes = Param(Shape, None, "The axes to reduce (required in practice: None or () is an error, as in MXNet).")
    keepdims = Param(bool, False, "Keep the reduced axes as axes of size 1.")


def _axes(attrs: Any, ndim: int) -> tuple[int, ...]:
    axes = attrs.parsed.axes
    if not axes:
        raise InferenceError(f"{attrs.name}: axes must name the axes to reduce (for global moments list every axis)")
    return tuple(sorted({normalize_axis(attrs.name, a, ndim) for a in axes}))


def _reduced_shape(attrs: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    axes = _axes(attrs, len(shape))
    if attrs.parsed.keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    kept = tuple(d for i, d in enumerate(shape) if i not in axes)
    return kept if kept else (1,)


def _moments_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    if in_shapes[0] is None:
        return False
    reduced = _reduced_shape(attrs, in_shapes[0])
    for i, what in enumerate(("mean", "var")):
        shape_assign(out_shapes, i, reduced, attrs.name, what)
    return shape_known(in_shapes[0])


def _moments_type(attrs: Any, in_types: list, out_types: list) -> bool:
    for i in range(2):
        type_assign(out_types, i, in_types[0], attrs.name, f"output {i}")
    for i in range(2):
        type_assign(in_types, 0, out_types[i], attrs.name, "input")
    return in_types[0] is not None


def _moments_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x = inputs[0]
    axes = _axes(attrs, x.ndim)
    mean = x.mean(axis=axes, keepdims=True, dtype="float64" if x.dtype.itemsize < 4 else x.dtype)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    put(outputs[0], req[0], mean.reshape(outputs[0].shape))
    put(outputs[1], req[1], var.reshape(outputs[1].shape))


def _moments_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    g_mean, g_var, x, mean = inputs
    axes = _axes(attrs, x.ndim)
    kept = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    count = math.prod(x.shape[a] for a in axes)
    grad = (g_mean.reshape(kept) + 2 * g_var.reshape(kept) * (x - mean.reshape(kept))) / count
    put(outputs[0], req[0], grad)


def _moments_gradient(node: Any, out_grads: list[Entry]) -> list[Entry]:
    inputs = [out_grads[0], out_grads[1], node.inputs[0], Entry(node, 0)]
    return backward_entries(node, "_backward_moments", inputs)


(
    register("moments")
    .describe("Mean and variance of the input over ``axes``.")
    .set_params(MomentsParam)
    .set_num_inputs(1)
    .set_num_outputs(2)
    .set_input_names(["data"])
    .set_infer_shape(_moments_shape)
    .set_infer_type(_moments_type)
    .set_compute(_moments_compute)
    .set_gradient(_moments_gradient)
)


def _backward_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape_assign(out_shapes, 0, in_shapes[2], attrs.name, "gradient of data")
    shape_assign(in_shapes, 2, out_shapes[0], attrs.name, "data")
    return shape_known(out_shapes[0])


def _backward_type(attrs: Any, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, in_types[2], attrs.name, "gradient of data")
    return out_types[0] is not None


(
    register("_backward_moments")
    .set_params(MomentsParam)
    .set_num_inputs(4)
    .set_num_outputs(1)
    .set_infer_shape(_backward_shape)
    .set_infer_type(_backward_type)
    .set_compute(_moments_backward)
    .set_is_backward()
)
