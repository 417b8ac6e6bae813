"""``to_tensor`` and ``normalize``: from a decoded image to the network's input.

``to_tensor`` moves the channel axis first and scales to [0, 1]: ``(H, W, C)`` uint8 in
[0, 255] becomes ``(C, H, W)`` float32 (a batch ``(N, H, W, C)`` becomes ``(N, C, H, W)``).
``normalize`` then standardises each channel, ``(x - mean[c]) / std[c]``, with one value for
every channel or one per channel. Both are linear, so their gradients are the same maps
applied backwards: transpose back and divide by 255; divide by ``std[c]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..grad import elemwise_grad_use_none, make_backward_node
from ..infer import InferenceError, elemwise_shape, elemwise_type, shape_assign, type_assign
from ..kernel import assign
from ..node import Entry, Node
from ..params import FloatTuple, Param, ParamSet
from ..registry import register
from .common import check_image_rank


class NoParams(ParamSet):
    pass


def _to_chw(shape: Any) -> tuple[int, ...]:
    return (*shape[:-3], shape[-1], shape[-3], shape[-2])


def _to_hwc(shape: Any) -> tuple[int, ...]:
    return (*shape[:-3], shape[-2], shape[-1], shape[-3])


def _to_tensor_shape(attrs: Any, in_shapes: list, out_shapes: list) -> bool:
    if in_shapes[0] is not None:
        check_image_rank(attrs.name, in_shapes[0])
        shape_assign(out_shapes, 0, _to_chw(in_shapes[0]), attrs.name, "output")
    if out_shapes[0] is not None:
        check_image_rank(attrs.name, out_shapes[0], "(C, H, W)")
        shape_assign(in_shapes, 0, _to_hwc(out_shapes[0]), attrs.name, "input")
    return in_shapes[0] is not None and out_shapes[0] is not None


def _to_tensor_type(attrs: Any, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, "float32", attrs.name, "output")
    return in_types[0] is not None


def _to_tensor_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x = inputs[0]
    chw = op_ctx.xp.moveaxis(x, -1, -3).astype(np.float32)
    assign(outputs[0], req[0], chw / np.float32(255.0))


def _to_tensor_backward_shape(attrs: Any, in_shapes: list, out_shapes: list) -> bool:
    # inputs: output gradient (C, H, W), forward input (H, W, C); output: the input's gradient (H, W, C)
    if in_shapes[1] is not None:
        shape_assign(out_shapes, 0, in_shapes[1], attrs.name, "input gradient")
    return _to_tensor_shape(attrs, out_shapes, in_shapes[:1])


def _to_tensor_backward_type(attrs: Any, in_types: list, out_types: list) -> bool:
    # inputs: output gradient (float32), forward input (its dtype is the input gradient's)
    type_assign(in_types, 0, "float32", attrs.name, "output gradient")
    type_assign(out_types, 0, in_types[1], attrs.name, "input gradient")
    return out_types[0] is not None


def _to_tensor_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    grad = op_ctx.xp.moveaxis(inputs[0], -3, -1) / np.float32(255.0)
    assign(outputs[0], req[0], grad.astype(outputs[0].dtype))


def _to_tensor_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    backward = make_backward_node(node, "_backward_image_to_tensor", [out_grads[0], node.inputs[0]])
    return [Entry(backward, 0)]


(
    register("_image_to_tensor")
    .describe("(H, W, C) or (N, H, W, C) image(s) in [0, 255] to (C, H, W) or (N, C, H, W) float32 in [0, 1].")
    .set_params(NoParams)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_to_tensor_shape)
    .set_infer_type(_to_tensor_type)
    .set_compute(_to_tensor_compute)
    .set_gradient(_to_tensor_gradient)
)

(
    register("_backward_image_to_tensor")
    .set_params(NoParams)
    .set_num_inputs(2)  # output gradient, the forward input (for its dtype)
    .set_infer_shape(_to_tensor_backward_shape)
    .set_infer_type(_to_tensor_backward_type)
    .set_compute(_to_tensor_backward)
    .set_is_backward()
)


class NormalizeParam(ParamSet):
    mean = Param(FloatTuple, (0.0, 0.0, 0.0, 0.0), "Mean of each channel (one value for all, or one per channel).")
    std = Param(FloatTuple, (1.0, 1.0, 1.0, 1.0), "Standard deviation of each channel (one value, or one per channel).")


def _per_channel(attrs: Any, values: tuple[float, ...], channels: int, what: str) -> tuple[float, ...]:
    """One value per channel: a single value repeated, or exactly one per channel (as MXNet, whose
    4-value defaults therefore fit 1- and 4-channel data only)."""
    if len(values) == 1:
        return values * channels
    if len(values) == channels:
        return values
    raise InferenceError(
        f"{attrs.name}: {what} must have 1 or {channels} values for an input with {channels} channels, got {values}"
    )


def _normalize_shape(attrs: Any, in_shapes: list, out_shapes: list) -> bool:
    known = in_shapes[0] if in_shapes[0] is not None else out_shapes[0]
    if known is not None:
        check_image_rank(attrs.name, known, "(C, H, W)")
        channels = known[-3]
        if channels:
            _per_channel(attrs, attrs.parsed.mean, channels, "mean")
            _per_channel(attrs, attrs.parsed.std, channels, "std")
    return elemwise_shape(attrs, in_shapes, out_shapes)


def _channel_column(xp: Any, attrs: Any, values: tuple[float, ...], x: Any, what: str) -> Any:
    channels = x.shape[-3]
    column = xp.asarray(_per_channel(attrs, values, channels, what), dtype=np.float64)
    return column.reshape(channels, 1, 1)


def _normalize_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, x, p = op_ctx.xp, inputs[0], attrs.parsed
    for s in p.std:
        if s == 0:
            raise InferenceError(f"{attrs.name}: std has a zero value {p.std}: cannot divide by it")
    mean = _channel_column(xp, attrs, p.mean, x, "mean")
    std = _channel_column(xp, attrs, p.std, x, "std")
    assign(outputs[0], req[0], ((x - mean) / std).astype(outputs[0].dtype))


def _normalize_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    g = inputs[0]
    std = _channel_column(op_ctx.xp, attrs, attrs.parsed.std, g, "std")
    assign(outputs[0], req[0], (g / std).astype(outputs[0].dtype))


(
    register("_image_normalize")
    .describe("(x - mean[c]) / std[c] for each channel c of (C, H, W) or (N, C, H, W) data.")
    .set_params(NormalizeParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_normalize_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_normalize_compute)
    .set_gradient(elemwise_grad_use_none("_backward_image_normalize"))
    .set_inplace_option(lambda attrs: [(0, 0)])
)

(
    register("_backward_image_normalize")
    .set_params(NormalizeParam)
    .set_num_inputs(1)
    .set_infer_shape(_normalize_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_normalize_backward)
    .set_is_backward()
)
