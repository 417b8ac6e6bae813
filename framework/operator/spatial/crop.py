"""``Crop``: MXNet's legacy window crop of the spatial axes of an NCHW array.

The window is ``h_w`` high and wide, or as high and wide as a second input (``crop_like``,
with ``num_args=2``); it starts at ``offset`` (y, x), or is centred with ``center_crop``.
The gradient puts the output gradient back into the window and zeros elsewhere; the
reference input ``crop_like`` only lends its shape, so its gradient is zero.
"""

from __future__ import annotations

from typing import Any

from ..infer import InferenceError, ShapeT, shape_assign, shape_known
from ..node import Entry, Node, NodeAttrs
from ..params import REQUIRED, OperatorParamError, Param, ParamSet, Shape
from ..registry import register
from ..tensor.common import backward_entries, put, register_backward, same_type


class CropParam(ParamSet):
    num_args = Param(
        int, REQUIRED, "1: crop to h_w; 2: crop to the height and width of the second input.", low=1, high=2
    )
    offset = Param(Shape, Shape((0, 0)), "Top-left corner (y, x) of the window.")
    h_w = Param(Shape, Shape((0, 0)), "Height and width (h, w) of the window when num_args is 1.")
    center_crop = Param(bool, False, "Centre the window instead of starting it at offset.")


def _input_names(attrs: NodeAttrs) -> list[str]:
    return ["data", "crop_like"] if attrs.parsed.num_args == 2 else ["data"]


def _window_size(attrs: NodeAttrs, in_shapes: list[ShapeT]) -> tuple[int, int] | None:
    if attrs.parsed.num_args == 2:
        like = in_shapes[1]
        if like is not None and len(like) != 4:
            raise InferenceError(f"{attrs.name}: crop_like must be 4-d, got shape {tuple(like)}")
        return None if like is None or 0 in like[2:] else (like[2], like[3])
    size = tuple(attrs.parsed.h_w)
    if len(size) != 2 or min(size) < 1:
        raise OperatorParamError(f"{attrs.name}: h_w must be two positive sizes (h, w) when num_args=1, got {size}")
    return size[0], size[1]


def window(attrs: NodeAttrs, data_shape: tuple[int, ...], size: tuple[int, int]) -> tuple[slice, slice]:
    """The (rows, columns) slices of the window, checked to lie inside the data."""
    p, (height, width) = attrs.parsed, data_shape[2:]
    if size[0] > height or size[1] > width:
        raise InferenceError(f"{attrs.name}: crop size {size} is larger than the data {tuple(data_shape)}")
    if p.center_crop:
        top, left = (height - size[0]) // 2, (width - size[1]) // 2
    else:
        if len(p.offset) != 2:
            raise OperatorParamError(f"{attrs.name}: offset must be (y, x), got {tuple(p.offset)}")
        top, left = p.offset
        if top + size[0] > height or left + size[1] > width:
            raise InferenceError(
                f"{attrs.name}: offset {(top, left)} with crop size {size} reaches outside the data {tuple(data_shape)}"
            )
    return slice(top, top + size[0]), slice(left, left + size[1])


def _crop_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    data, size = in_shapes[0], _window_size(attrs, in_shapes)
    if data is not None and len(data) != 4:
        raise InferenceError(f"{attrs.name}: data must be 4-d (N, C, H, W), got shape {tuple(data)}")
    if data is not None and size is not None:
        if shape_known(data):
            window(attrs, tuple(data), size)
        shape_assign(out_shapes, 0, (data[0], data[1], *size), attrs.name, "output")
    return all(shape_known(s) for s in in_shapes)


def _crop_forward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    rows, cols = window(attrs, inputs[0].shape, outputs[0].shape[2:])
    put(outputs[0], req[0], inputs[0][:, :, rows, cols])


def _crop_backward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    """Inputs (out_grad, data[, crop_like])."""
    g, xp = inputs[0], op_ctx.xp
    rows, cols = window(attrs, inputs[1].shape, g.shape[2:])
    d_data = xp.zeros(inputs[1].shape, g.dtype)
    d_data[:, :, rows, cols] = g
    put(outputs[0], req[0], d_data)
    if len(outputs) > 1:
        put(outputs[1], req[1], xp.zeros(outputs[1].shape, outputs[1].dtype))


def _crop_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    return backward_entries(node, "_backward_Crop", [out_grads[0], *node.inputs])


(
    register("Crop")
    .describe("Crops the H and W axes of (N, C, H, W) data to h_w, or to a second input's size.")
    .set_params(CropParam)
    .set_num_inputs(lambda attrs: attrs.parsed.num_args)
    .set_num_outputs(1)
    .set_input_names(_input_names)
    .set_infer_shape(_crop_shape)
    .set_infer_type(same_type)
    .set_compute(_crop_forward)
    .set_gradient(_crop_gradient)
    .set_key_var_num_args("num_args")
)
register_backward(
    "_backward_Crop",
    _crop_backward,
    CropParam,
    num_inputs=lambda attrs: 1 + attrs.parsed.num_args,
    num_outputs=lambda attrs: attrs.parsed.num_args,
)
