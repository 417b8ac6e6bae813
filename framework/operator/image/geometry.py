"""Geometric image operators: ``resize``, ``crop``, ``flip_left_right``/``flip_top_bottom`` and their
random forms. They move pixels without mixing channels, on ``(H, W, C)`` or ``(N, H, W, C)`` data.

``crop`` and the flips are linear selections, so their gradients put the output gradient
back where the pixels came from (``_backward_image_crop`` scatters it into zeros; a flip's
gradient is the same flip). ``resize`` is given no gradient (MXNet 1.9.1's fails), nor are
the random flips (their draw is not recorded).
"""

from __future__ import annotations

from typing import Any

from ...resource import ResourceRequest
from ..grad import elemwise_grad_use_none, make_backward_node
from ..infer import InferenceError, elemwise_shape, elemwise_type, shape_assign
from ..kernel import assign
from ..node import Entry, Node
from ..params import REQUIRED, Param, ParamSet, Shape
from ..registry import register
from .common import check_image_rank
from .interpolation import INTERP_NAMES, resize_images
from .tensor import NoParams


class ResizeParam(ParamSet):
    size = Param(
        Shape, Shape(), "New size: (width, height), or (size,) for a square or, with keep_ratio, the short side."
    )
    keep_ratio = Param(bool, False, "With a single size: resize the shorter side to it and keep the aspect ratio.")
    interp = Param(int, 1, "Interpolation: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos (OpenCV's codes).",
                   low=0, high=4)  # fmt: skip


def _resized_hw(attrs: Any, height: int, width: int) -> tuple[int, int]:
    size = tuple(attrs.parsed.size)
    if len(size) == 2:
        new_w, new_h = size
    elif len(size) == 1:
        if attrs.parsed.keep_ratio and height and width:
            short = size[0]
            new_h, new_w = (short * height // width, short) if height > width else (short, short * width // height)
        elif attrs.parsed.keep_ratio:
            return 0, 0
        else:
            new_w = new_h = size[0]
    else:
        raise InferenceError(f"{attrs.name}: size must be (width, height) or (size,), got {size}")
    if new_w <= 0 or new_h <= 0:
        raise InferenceError(f"{attrs.name}: the new size must be positive, got size={size}")
    return new_h, new_w


def _resize_shape(attrs: Any, in_shapes: list, out_shapes: list) -> bool:
    data = in_shapes[0]
    if data is not None:
        check_image_rank(attrs.name, data)
        new_h, new_w = _resized_hw(attrs, data[-3], data[-2])
        shape_assign(out_shapes, 0, (*data[:-3], new_h, new_w, data[-1]), attrs.name, "output")
    elif out_shapes[0] is not None:  # batch and channels are the output's; the source size is not known
        out = out_shapes[0]
        check_image_rank(attrs.name, out)
        shape_assign(in_shapes, 0, (*out[:-3], 0, 0, out[-1]), attrs.name, "input")
    return in_shapes[0] is not None and 0 not in in_shapes[0] and out_shapes[0] is not None


def _resize_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    out = outputs[0]
    resized = resize_images(op_ctx.xp, inputs[0], out.shape[-2], out.shape[-3], attrs.parsed.interp)
    assign(out, req[0], resized)


(
    register("_image_resize")
    .describe(f"Resize (H, W, C) or (N, H, W, C) images; interp codes {INTERP_NAMES}.")
    .set_params(ResizeParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_resize_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_resize_compute)
)


class CropParam(ParamSet):
    x = Param(int, REQUIRED, "Left column of the window.", low=0)
    y = Param(int, REQUIRED, "Top row of the window.", low=0)
    width = Param(int, REQUIRED, "Width of the window.", low=1)
    height = Param(int, REQUIRED, "Height of the window.", low=1)


def _check_window(attrs: Any, data: Any) -> None:
    p = attrs.parsed
    height, width = data[-3], data[-2]
    if width and p.x + p.width > width:
        raise InferenceError(f"{attrs.name}: x + width = {p.x + p.width} is more than the input width {width} ({data})")
    if height and p.y + p.height > height:
        raise InferenceError(
            f"{attrs.name}: y + height = {p.y + p.height} is more than the input height {height} ({data})"
        )


def _crop_shape(attrs: Any, in_shapes: list, out_shapes: list) -> bool:
    p = attrs.parsed
    data = in_shapes[0]
    if data is not None:
        check_image_rank(attrs.name, data)
        _check_window(attrs, data)
        shape_assign(out_shapes, 0, (*data[:-3], p.height, p.width, data[-1]), attrs.name, "output")
    elif out_shapes[0] is not None:
        out = out_shapes[0]
        check_image_rank(attrs.name, out)
        shape_assign(in_shapes, 0, (*out[:-3], 0, 0, out[-1]), attrs.name, "input")
    return in_shapes[0] is not None and 0 not in in_shapes[0] and out_shapes[0] is not None


def _window(attrs: Any) -> tuple[slice, slice]:
    p = attrs.parsed
    return slice(p.y, p.y + p.height), slice(p.x, p.x + p.width)


def _crop_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    rows, cols = _window(attrs)
    assign(outputs[0], req[0], inputs[0][..., rows, cols, :])


def _crop_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    rows, cols = _window(attrs)
    grad = op_ctx.xp.zeros(outputs[0].shape, dtype=outputs[0].dtype)
    grad[..., rows, cols, :] = inputs[0]
    assign(outputs[0], req[0], grad)


def _crop_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    backward = make_backward_node(node, "_backward_image_crop", [out_grads[0], node.inputs[0]])
    return [Entry(backward, 0)]


def _crop_backward_shape(attrs: Any, in_shapes: list, out_shapes: list) -> bool:
    if in_shapes[1] is not None:
        shape_assign(out_shapes, 0, in_shapes[1], attrs.name, "input gradient")
    return out_shapes[0] is not None


def _crop_backward_type(attrs: Any, in_types: list, out_types: list) -> bool:
    return elemwise_type(attrs, in_types, out_types)


(
    register("_image_crop")
    .describe("The window (x, y, width, height) of (H, W, C) or (N, H, W, C) images.")
    .set_params(CropParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_crop_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_crop_compute)
    .set_gradient(_crop_gradient)
)

(
    register("_backward_image_crop")
    .set_params(CropParam)
    .set_num_inputs(2)  # output gradient, the forward input (for its shape)
    .set_infer_shape(_crop_backward_shape)
    .set_infer_type(_crop_backward_type)
    .set_compute(_crop_backward)
    .set_is_backward()
)

# a flip reverses one axis counted from the end: the width (-2) or the height (-3)
FLIP_AXES = {"left_right": -2, "top_bottom": -3}


def _flip_shape(attrs: Any, in_shapes: list, out_shapes: list) -> bool:
    known = in_shapes[0] if in_shapes[0] is not None else out_shapes[0]
    if known is not None:
        check_image_rank(attrs.name, known)
    return elemwise_shape(attrs, in_shapes, out_shapes)


def _flip_compute(axis: int) -> Any:
    def compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
        assign(outputs[0], req[0], op_ctx.xp.flip(inputs[0], axis=axis))

    return compute


def _random_flip_compute(axis: int) -> Any:
    def compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
        flip = bool(op_ctx.random_generator(attrs.name).random() < 0.5)
        assign(outputs[0], req[0], op_ctx.xp.flip(inputs[0], axis=axis) if flip else inputs[0].copy())

    return compute


for _direction, _axis in FLIP_AXES.items():
    _name = f"_image_flip_{_direction}"
    (
        register(_name)
        .describe(f"Flip (H, W, C) or (N, H, W, C) images {_direction.replace('_', '-')}.")
        .set_params(NoParams)
        .set_num_inputs(1)
        .set_input_names(["data"])
        .set_infer_shape(_flip_shape)
        .set_infer_type(elemwise_type)
        .set_compute(_flip_compute(_axis))
        .set_gradient(elemwise_grad_use_none(_name))  # the gradient of a flip is the same flip
    )
    (
        register(f"_image_random_flip_{_direction}")
        .describe(f"Flip (H, W, C) or (N, H, W, C) images {_direction.replace('_', '-')} with probability 1/2.")
        .set_params(NoParams)
        .set_num_inputs(1)
        .set_input_names(["data"])
        .set_infer_shape(_flip_shape)
        .set_infer_type(elemwise_type)
        .set_compute(_random_flip_compute(_axis))
        .set_resource_request(lambda attrs: [ResourceRequest.RANDOM])
    )
