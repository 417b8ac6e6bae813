"""Resampling an image grid to another size: ``UpSampling``, ``_contrib_BilinearResize2D``,
``_contrib_AdaptiveAvgPooling2D``.

Each output pixel of these operators is a fixed weighted sum of input pixels, and the
weights factor into one map per spatial axis. So each is two small matrices: ``A_h``
(out_h x in_h) and ``A_w`` (out_w x in_w), and

    out[n, c] = A_h @ x[n, c] @ A_w.T          (forward: one einsum over the whole batch)
    d_x[n, c] = A_h.T @ d_out[n, c] @ A_w      (backward: the transposed map)

A row of ``A`` holds the two linear-interpolation weights of one output row (bilinear
resize) or ``1 / bin length`` over one pooling bin (adaptive average pooling). Nearest
upsampling by an integer ``scale`` is the special case where each input pixel is copied to
a scale x scale block, done with a broadcast (forward) and a block sum (backward).
``UpSampling``'s bilinear mode is, as in MXNet, a depthwise ``Deconvolution`` with a
learnable ``weight`` input (kernel 2*scale - scale%2, stride scale), run through that
operator's registered compute functions.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...resource import ResourceRequest
from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..node import Entry, Node, NodeAttrs
from ..params import REQUIRED, OperatorParamError, Param, ParamSet, Shape
from ..registry import get, register
from ..tensor.common import backward_entries, put, register_backward, same_type


def _check_4d(name: str, shape: ShapeT, what: str) -> None:
    if shape is not None and len(shape) != 4:
        raise InferenceError(f"{name}: {what} must be 4-d (N, C, H, W), got shape {tuple(shape)}")


def separable_map(xp: Any, x: Any, a_h: Any, a_w: Any) -> Any:
    """``a_h @ x[n, c] @ a_w.T`` for every image of the (N, C, H, W) array ``x``."""
    return xp.einsum("oh,nchw,pw->ncop", a_h, x, a_w, optimize=True)


def separable_map_transposed(xp: Any, g: Any, a_h: Any, a_w: Any) -> Any:
    """The adjoint of :func:`separable_map`: ``a_h.T @ g[n, c] @ a_w``."""
    return xp.einsum("oh,ncop,pw->nchw", a_h, g, a_w, optimize=True)


# ------------------------------------------------------------------ bilinear resize
def interpolation_matrix(xp: Any, in_size: int, out_size: int, align_corners: bool, dtype: Any) -> Any:
    """(out_size, in_size) linear-interpolation weights along one axis.

    Output index ``o`` reads source position ``s = o * (in-1)/(out-1)`` with aligned corners,
    else ``s = max((o + 0.5) * in/out - 0.5, 0)``; it mixes rows ``floor(s)`` and the next one
    (clamped at the edge) with weights ``1 - frac`` and ``frac``.
    """
    o = np.arange(out_size, dtype=np.float64)
    if align_corners:
        scale = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        src = o * scale
    else:
        src = np.maximum((o + 0.5) * (in_size / out_size) - 0.5, 0.0)
    low = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
    high = np.minimum(low + 1, in_size - 1)
    frac = src - low
    matrix = np.zeros((out_size, in_size), np.float64)
    np.add.at(matrix, (np.arange(out_size), low), 1.0 - frac)
    np.add.at(matrix, (np.arange(out_size), high), frac)
    return xp.asarray(matrix.astype(dtype))


class BilinearResize2DParam(ParamSet):
    height = Param(int, 1, "Output height in mode 'size' when scale_height is not given.", low=1)
    width = Param(int, 1, "Output width in mode 'size' when scale_width is not given.", low=1)
    scale_height = Param(float, None, "Height scale factor (modes 'size' and 'odd_scale').", optional=True)
    scale_width = Param(float, None, "Width scale factor (modes 'size' and 'odd_scale').", optional=True)
    mode = Param(
        str,
        "size",
        "How the output size is chosen.",
        choices=("like", "odd_scale", "size", "to_even_down", "to_even_up", "to_odd_down", "to_odd_up"),
    )
    align_corners = Param(bool, True, "Map the corner pixels of input and output onto each other.")


def _resize_inputs(attrs: NodeAttrs) -> list[str]:
    return ["data", "like"] if attrs.parsed.mode == "like" else ["data"]


def _resized(name: str, p: Any, size: int, scale: float | None, fixed: int, axis_name: str) -> int:
    """The output length of one axis of input length ``size`` under ``p.mode``."""
    mode = p.mode
    if mode == "size":
        return int(size * scale) if scale is not None else fixed
    if mode == "odd_scale":
        if scale is None:
            raise OperatorParamError(f"{name}: mode 'odd_scale' needs scale_{axis_name}")
        return int(size * scale) if size % 2 == 0 else int((size - 1) * scale) + 1
    even = size % 2 == 0
    return {
        "to_even_down": size if even else size - 1,
        "to_even_up": size if even else size + 1,
        "to_odd_down": size - 1 if even else size,
        "to_odd_up": size + 1 if even else size,
    }[mode]


def _resize_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name, p = attrs.name, attrs.parsed
    _check_4d(name, in_shapes[0], "data")
    data = in_shapes[0]
    if data is not None:
        n, c, h, w = data
        if p.mode == "like":
            like = in_shapes[1]
            _check_4d(name, like, "like")
            oh, ow = (like[2], like[3]) if like is not None else (0, 0)
        else:
            oh = _resized(name, p, h, p.scale_height, p.height, "height") if h else 0
            ow = _resized(name, p, w, p.scale_width, p.width, "width") if w else 0
        if (h and oh < 1) or (w and ow < 1):
            raise InferenceError(f"{name}: output size ({oh}, {ow}) of input {tuple(data)} must be at least 1")
        shape_assign(out_shapes, 0, (n, c, oh, ow), name, "output")
    elif out_shapes[0] is not None:
        n, c = out_shapes[0][:2]
        shape_assign(in_shapes, 0, (n, c, 0, 0), name, "data")
    return all(shape_known(s) for s in in_shapes) and shape_known(out_shapes[0])


def _resize_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    done = same_type(attrs, in_types, out_types)
    if len(in_types) > 1:
        type_assign(in_types, 1, in_types[0], attrs.name, "like")
    return done


def _resize_matrices(xp: Any, p: Any, in_hw: tuple[int, int], out_hw: tuple[int, int], dtype: Any) -> tuple:
    return tuple(interpolation_matrix(xp, i, o, p.align_corners, dtype) for i, o in zip(in_hw, out_hw, strict=True))


def _resize_forward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x, out = inputs[0], outputs[0]
    a_h, a_w = _resize_matrices(op_ctx.xp, attrs.parsed, x.shape[2:], out.shape[2:], _work_dtype(x.dtype))
    put(out, req[0], separable_map(op_ctx.xp, x.astype(a_h.dtype, copy=False), a_h, a_w))


def _resize_backward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    """Inputs (out_grad, data[, like]); the ``like`` input's gradient is zero."""
    g, x = inputs[0], inputs[1]
    a_h, a_w = _resize_matrices(op_ctx.xp, attrs.parsed, x.shape[2:], g.shape[2:], _work_dtype(g.dtype))
    put(outputs[0], req[0], separable_map_transposed(op_ctx.xp, g.astype(a_h.dtype, copy=False), a_h, a_w))
    if len(outputs) > 1:
        put(outputs[1], req[1], op_ctx.xp.zeros_like(outputs[1]))


def _work_dtype(dtype: Any) -> np.dtype:
    """float16 is computed in float32 (the maps sum many products)."""
    return np.dtype(np.float32) if np.dtype(dtype) == np.float16 else np.dtype(dtype)


def _resize_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    return backward_entries(node, "_backward_contrib_BilinearResize2D", [out_grads[0], *node.inputs])


(
    register("_contrib_BilinearResize2D")
    .describe("Resizes (N, C, H, W) images with bilinear interpolation to a size given by `mode`.")
    .set_params(BilinearResize2DParam)
    .set_num_inputs(lambda attrs: len(_resize_inputs(attrs)))
    .set_num_outputs(1)
    .set_input_names(_resize_inputs)
    .set_infer_shape(_resize_shape)
    .set_infer_type(_resize_type)
    .set_compute(_resize_forward)
    .set_gradient(_resize_gradient)
)
register_backward(
    "_backward_contrib_BilinearResize2D",
    _resize_backward,
    BilinearResize2DParam,
    num_inputs=lambda attrs: 1 + len(_resize_inputs(attrs)),
    num_outputs=lambda attrs: len(_resize_inputs(attrs)),
)


# ------------------------------------------------------------------ adaptive average pooling
def pooling_matrix(xp: Any, in_size: int, out_size: int, dtype: Any) -> Any:
    """(out_size, in_size) averaging weights: bin ``o`` covers ``[floor(o*in/out), ceil((o+1)*in/out))``."""
    o = np.arange(out_size)
    start = (o * in_size) // out_size
    end = -((-(o + 1) * in_size) // out_size)
    i = np.arange(in_size)
    inside = (i[None, :] >= start[:, None]) & (i[None, :] < end[:, None])
    return xp.asarray((inside / (end - start)[:, None]).astype(dtype))


class AdaptiveAvgPooling2DParam(ParamSet):
    output_size = Param(Shape, Shape(), "Output (height, width); one number for a square; empty means (1, 1).")


def _pooled_size(attrs: NodeAttrs) -> tuple[int, int]:
    size = tuple(attrs.parsed.output_size)
    if len(size) > 2 or any(s < 1 for s in size):
        raise OperatorParamError(f"{attrs.name}: output_size must be empty, one or two positive numbers, got {size}")
    return (1, 1) if not size else (size[0], size[0]) if len(size) == 1 else (size[0], size[1])


def _adaptive_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name = attrs.name
    oh, ow = _pooled_size(attrs)
    _check_4d(name, in_shapes[0], "data")
    _check_4d(name, out_shapes[0], "output")
    if in_shapes[0] is not None:
        shape_assign(out_shapes, 0, (*in_shapes[0][:2], oh, ow), name, "output")
    if out_shapes[0] is not None:
        shape_assign(in_shapes, 0, (*out_shapes[0][:2], 0, 0), name, "data")
    return shape_known(in_shapes[0])


def _adaptive_forward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x, out, xp = inputs[0], outputs[0], op_ctx.xp
    dtype = _work_dtype(x.dtype)
    a_h, a_w = (pooling_matrix(xp, i, o, dtype) for i, o in zip(x.shape[2:], out.shape[2:], strict=True))
    put(out, req[0], separable_map(xp, x.astype(dtype, copy=False), a_h, a_w))


def _adaptive_backward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    g, x, xp = inputs[0], inputs[1], op_ctx.xp
    dtype = _work_dtype(g.dtype)
    a_h, a_w = (pooling_matrix(xp, i, o, dtype) for i, o in zip(x.shape[2:], g.shape[2:], strict=True))
    put(outputs[0], req[0], separable_map_transposed(xp, g.astype(dtype, copy=False), a_h, a_w))


(
    register("_contrib_AdaptiveAvgPooling2D")
    .describe("Average pooling to a fixed output size: bin o of n covers [floor(o*H/n), ceil((o+1)*H/n)).")
    .set_params(AdaptiveAvgPooling2DParam)
    .set_num_inputs(1)
    .set_num_outputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_adaptive_shape)
    .set_infer_type(same_type)
    .set_compute(_adaptive_forward)
    .set_gradient(
        lambda node, out_grads: backward_entries(
            node, "_backward_contrib_AdaptiveAvgPooling2D", [out_grads[0], node.inputs[0]]
        )
    )
)
register_backward("_backward_contrib_AdaptiveAvgPooling2D", _adaptive_backward, AdaptiveAvgPooling2DParam)


# ------------------------------------------------------------------ UpSampling
class UpSamplingParam(ParamSet):
    scale = Param(int, REQUIRED, "Up-sampling factor.", low=1)
    num_filter = Param(int, 0, "Channels of the input (bilinear only: the depthwise deconvolution's filters).", low=0)
    sample_type = Param(str, REQUIRED, "Up-sampling method.", choices=("bilinear", "nearest"))
    multi_input_mode = Param(
        str, "concat", "Nearest with several inputs: concatenate along channels, or add.", choices=("concat", "sum")
    )
    num_args = Param(int, REQUIRED, "Number of inputs (bilinear: 2, data and weight, counted as one by MXNet).", low=1)
    workspace = Param(int, 512, "Temporary workspace of the bilinear deconvolution (MB).", low=0)


def _bilinear(attrs: NodeAttrs) -> bool:
    return attrs.parsed.sample_type == "bilinear"


def _upsampling_inputs(attrs: NodeAttrs) -> list[str]:
    if _bilinear(attrs):
        return ["data", "weight"]
    return [f"arg{i}" for i in range(attrs.parsed.num_args)]


def bilinear_kernel(scale: int) -> tuple[int, int]:
    """(kernel, pad) of the deconvolution that upsamples by ``scale``: its output is exactly scale x larger."""
    return 2 * scale - scale % 2, math.ceil((scale - 1) / 2)


def _deconv_attrs(attrs: NodeAttrs, op_name: str, channels: int) -> NodeAttrs:
    """Node attributes of the depthwise Deconvolution (or its backward) that bilinear UpSampling runs."""
    p = attrs.parsed
    kernel, pad = bilinear_kernel(p.scale)
    params = {
        "kernel": (kernel, kernel),
        "stride": (p.scale, p.scale),
        "pad": (pad, pad),
        "num_filter": channels,
        "num_group": channels,
        "no_bias": True,
        "workspace": p.workspace,
    }
    return get(op_name).parse_attrs(params, name=attrs.name)


def _upsampling_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name, p = attrs.name, attrs.parsed
    for i, shape in enumerate(in_shapes):
        _check_4d(name, shape, f"input {i}")
    if _bilinear(attrs):
        data = in_shapes[0]
        if data is None:
            return False
        n, c, h, w = data
        if p.num_filter and c and p.num_filter != c:
            raise InferenceError(f"{name}: num_filter={p.num_filter} must equal the channels of data {tuple(data)}")
        kernel, _ = bilinear_kernel(p.scale)
        shape_assign(in_shapes, 1, (c, 1, kernel, kernel), name, "weight")
        shape_assign(out_shapes, 0, (n, c, h * p.scale, w * p.scale), name, "output")
        return shape_known(data)
    if any(not shape_known(s) for s in in_shapes):
        return False
    oh, ow = in_shapes[0][2] * p.scale, in_shapes[0][3] * p.scale
    channels = 0
    for i, (n, c, h, w) in enumerate(in_shapes):
        if oh % h or ow % w or oh // h != ow // w:
            raise InferenceError(
                f"{name}: input {i} of shape {(n, c, h, w)} cannot be upsampled by one integer factor to the "
                f"output size ({oh}, {ow})"
            )
        if p.multi_input_mode == "sum":
            if channels and c != channels:
                raise InferenceError(f"{name}: multi_input_mode='sum' needs equal channels, input {i} has {c}")
            channels = c
        else:
            channels += c
    shape_assign(out_shapes, 0, (in_shapes[0][0], channels, oh, ow), name, "output")
    return True


def _upsampling_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    for i in range(len(in_types)):
        type_assign(in_types, i, in_types[0] or out_types[0], attrs.name, f"input {i}")
    type_assign(out_types, 0, in_types[0], attrs.name, "output")
    return all(t is not None for t in in_types + out_types)


def nearest_upsample(xp: Any, x: Any, factor: int) -> Any:
    """Every pixel copied to a factor x factor block."""
    n, c, h, w = x.shape
    big = xp.broadcast_to(x[:, :, :, None, :, None], (n, c, h, factor, w, factor))
    return big.reshape(n, c, h * factor, w * factor)


def _nearest_parts(attrs: NodeAttrs, out_shape: tuple, in_shapes: list) -> list[tuple[int, slice]]:
    """(factor, channel slice of the output) per input; every slice is all channels in sum mode."""
    parts, start = [], 0
    for shape in in_shapes:
        factor = out_shape[2] // shape[2]
        if attrs.parsed.multi_input_mode == "sum":
            parts.append((factor, slice(None)))
        else:
            parts.append((factor, slice(start, start + shape[1])))
            start += shape[1]
    return parts


def _upsampling_forward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    out, xp = outputs[0], op_ctx.xp
    if _bilinear(attrs):
        deconv = _deconv_attrs(attrs, "Deconvolution", inputs[0].shape[1])
        deconv.op.get_compute(op_ctx.ctx.device_type)(deconv, op_ctx, inputs[:2], req, outputs)
        return
    result = xp.zeros(out.shape, out.dtype) if attrs.parsed.multi_input_mode == "sum" else xp.empty_like(out)
    for x, (factor, channels) in zip(inputs, _nearest_parts(attrs, out.shape, [x.shape for x in inputs]), strict=True):
        if attrs.parsed.multi_input_mode == "sum":
            result += nearest_upsample(xp, x, factor)
        else:
            result[:, channels] = nearest_upsample(xp, x, factor)
    put(out, req[0], result)


def _upsampling_backward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    """Inputs (out_grad, forward inputs...): each input pixel collects the gradient of its block."""
    g = inputs[0]
    if _bilinear(attrs):
        deconv = _deconv_attrs(attrs, "_backward_Deconvolution", inputs[1].shape[1])
        deconv.op.get_compute(op_ctx.ctx.device_type)(deconv, op_ctx, inputs[:3], req, outputs)
        return
    shapes = [x.shape for x in inputs[1:]]
    for i, (shape, (factor, channels)) in enumerate(zip(shapes, _nearest_parts(attrs, g.shape, shapes), strict=True)):
        n, c, h, w = shape
        block = g[:, channels].reshape(n, c, h, factor, w, factor)
        put(outputs[i], req[i], block.sum(axis=(3, 5), dtype=_work_dtype(g.dtype)))


def _upsampling_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    return backward_entries(node, "_backward_UpSampling", [out_grads[0], *node.inputs])


def _temp_space(attrs: NodeAttrs) -> list:
    return [ResourceRequest.TEMP_SPACE] if _bilinear(attrs) else []


(
    register("UpSampling")
    .describe(
        "Up-samples (N, C, H, W) inputs by an integer scale: 'nearest' copies pixels (several inputs are "
        "concatenated or summed), 'bilinear' is a depthwise Deconvolution with the learnable `weight`."
    )
    .set_params(UpSamplingParam)
    .set_num_inputs(lambda attrs: len(_upsampling_inputs(attrs)))
    .set_num_outputs(1)
    .set_input_names(_upsampling_inputs)
    .set_infer_shape(_upsampling_shape)
    .set_infer_type(_upsampling_type)
    .set_compute(_upsampling_forward)
    .set_gradient(_upsampling_gradient)
    .set_key_var_num_args("num_args")
    .set_resource_request(_temp_space)
)
register_backward(
    "_backward_UpSampling",
    _upsampling_backward,
    UpSamplingParam,
    num_inputs=lambda attrs: 1 + len(_upsampling_inputs(attrs)),
    num_outputs=lambda attrs: len(_upsampling_inputs(attrs)),
).set_resource_request(_temp_space)
