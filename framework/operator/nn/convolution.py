"""Convolution: learned filters slid over 1-D, 2-D or 3-D inputs (MXNet's ``Convolution``).

Inputs ``data`` (N, C, *spatial) in the channel-first layout (NCW, NCHW, NCDHW), ``weight``
(num_filter, C / num_group, *kernel) and, unless ``no_bias``, ``bias`` (num_filter,).
Each output length is ``(size + 2 * pad - (dilate * (kernel - 1) + 1)) // stride + 1``.
Groups split the channels into ``num_group`` independent convolutions (``num_group == C``
is a depthwise convolution).

How it is computed (see ``im2col.py``): all windows are gathered into one column matrix and
the convolution is a single batched GEMM over groups, ``weight (G, F/G, C/G*K) @ col (G,
C/G*K, L*N)``. The gradients are two more GEMMs: ``d_weight = d_out @ col^T`` and
``d_col = weight^T @ d_out``, the latter scattered back onto the input grid by col2im.
The bias gradient is a sum. The backward pass recomputes ``col`` (as MXNet does) instead of
keeping it alive between forward and backward.

Scratch memory (the padded input, the column matrix, the GEMM result) comes from the
resource manager's TEMP_SPACE. ``workspace`` keeps its MXNet meaning, a cap in MB on that
scratch: a batch whose scratch would exceed it is processed a few samples at a time (one
GEMM per group per chunk); with the default 1024 MB small networks use a single chunk.
Accepted for compatibility, without effect: ``cudnn_tune`` and ``cudnn_off`` (there is no
cuDNN). ``layout`` may only name the channel-first layout of the kernel's rank: NHWC/NDHWC
are cuDNN-only layouts in MXNet and raise a clear error here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ...resource import ResourceRequest
from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT, elemwise_type, shape_assign, shape_known
from ..kernel import ADD, NULL, OpContext, Req, assign
from ..node import Entry, Node, NodeAttrs
from ..params import OperatorParamError, Param, ParamSet, Shape
from ..registry import register
from .geometry import CHANNEL_FIRST, Geometry, check_layout, check_rank, label, per_axis
from .im2col import col2im, compute_dtype, im2col, scratch, to_batch_first, to_batch_last

LAYOUTS = ("NCDHW", "NCHW", "NCW", "NDHWC", "NHWC")
FLOAT_TYPES = ("float16", "float32", "float64")


class ConvolutionParam(ParamSet):
    kernel = Param(Shape, description="Convolution kernel size: (w,), (h, w) or (d, h, w).")
    stride = Param(Shape, Shape(), "Convolution stride: (w,), (h, w) or (d, h, w). Defaults to 1 for each dimension.")
    dilate = Param(Shape, Shape(), "Convolution dilate: (w,), (h, w) or (d, h, w). Defaults to 1 for each dimension.")
    pad = Param(Shape, Shape(), "Zero pad for convolution: (w,), (h, w) or (d, h, w). Defaults to no padding.")
    num_filter = Param(int, description="Convolution filter (channel) number.", low=1, high=100000)
    num_group = Param(int, 1, "Number of group partitions.", low=1)
    workspace = Param(int, 1024, "Maximum temporary workspace (MB); larger batches are processed in chunks.", low=0)
    no_bias = Param(bool, False, "Whether to disable the bias parameter.")
    cudnn_tune = Param(
        str,
        None,
        "cuDNN algorithm choice; accepted, no effect (no cuDNN).",
        choices=("fastest", "limited_workspace", "off"),
    )
    cudnn_off = Param(bool, False, "Turn off cuDNN for this layer; accepted, no effect (no cuDNN).")
    layout = Param(str, None, "Layout of data, weight and output; only NCW/NCHW/NCDHW are supported.", choices=LAYOUTS)


def conv_geometry(attrs: NodeAttrs) -> Geometry:
    """Validate kernel/stride/dilate/pad/layout and fill the defaults (1s and 0s)."""
    p, who = attrs.parsed, label(attrs)
    kernel = tuple(p.kernel)
    nd = len(kernel)
    if nd not in CHANNEL_FIRST:
        raise OperatorParamError(
            f"{who}: kernel must have 1, 2 or 3 dimensions ((w,), (h, w) or (d, h, w)), got {kernel}"
        )
    if min(kernel) < 1:
        raise OperatorParamError(f"{who}: kernel sizes must be positive, got kernel={kernel}")
    geometry = Geometry(
        kernel,
        per_axis(who, p, "stride", kernel, 1, 1),
        per_axis(who, p, "dilate", kernel, 1, 1),
        per_axis(who, p, "pad", kernel, 0, 0),
    )
    check_layout(who, p.layout, nd, f"a {nd}-D kernel")
    return geometry


def float_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    """All inputs and outputs share one floating-point dtype."""
    done = elemwise_type(attrs, in_types, out_types)
    if done and in_types[0] not in FLOAT_TYPES:
        raise InferenceError(f"{label(attrs)}: supports {', '.join(FLOAT_TYPES)} only, got {in_types[0]}")
    return done


def _num_inputs(attrs: NodeAttrs) -> int:
    return 2 if attrs.parsed.no_bias else 3


def _input_names(attrs: NodeAttrs) -> list[str]:
    return ["data", "weight"] if attrs.parsed.no_bias else ["data", "weight", "bias"]


def _temp_space(attrs: NodeAttrs) -> list[ResourceRequest]:
    return [ResourceRequest.TEMP_SPACE]


# ---------------------------------------------------------------------------- shape inference
def infer_filter_shapes(
    attrs: NodeAttrs,
    in_shapes: list[ShapeT],
    out_shapes: list[ShapeT],
    *,
    channels_from_weight: Callable[[tuple[int, ...]], int],
    weight_shape: Callable[[int], tuple[int, ...]],
    data_spatial_from_output: Callable[[tuple[int, ...]], list[int]],
    output_spatial: Callable[[tuple[int, ...]], list[int]],
) -> bool:
    """Shape inference shared by Convolution and Deconvolution: (data, weight[, bias]) -> output.

    Both check the ranks and the groups, infer ``data`` from the others (batch from the output,
    channels from the weight, spatial sizes where the output determines them), then the weight
    and bias from ``data`` and the parameters, then the output. The four functions are where
    the two differ: the weight's layout and the per-axis size rule (0 = unknown).
    """
    p, who = attrs.parsed, label(attrs)
    nd, filters, groups = len(p.kernel), p.num_filter, p.num_group
    if filters % groups:
        raise InferenceError(f"{who}: num_filter ({filters}) must be divisible by num_group ({groups})")
    for index, what in ((0, "data"), (1, "weight")):
        check_rank(who, in_shapes[index], nd + 2, what)
    check_rank(who, out_shapes[0], nd + 2, "output")
    weight, out = in_shapes[1], out_shapes[0]
    partial = [0] * (nd + 2)
    if out is not None:
        partial[0] = out[0]
        partial[2:] = data_spatial_from_output(out)
    if weight is not None:
        partial[1] = channels_from_weight(weight)
    if in_shapes[0] is not None or any(partial):
        shape_assign(in_shapes, 0, partial, who, "data")
    data = in_shapes[0]
    channels = data[1] if data is not None else 0
    if channels and channels % groups:
        raise InferenceError(f"{who}: data has {channels} channels, not divisible by num_group ({groups})")
    shape_assign(in_shapes, 1, weight_shape(channels), who, "weight")
    if not p.no_bias:
        check_rank(who, in_shapes[2], 1, "bias")
        shape_assign(in_shapes, 2, (filters,), who, "bias")
    if data is not None:
        shape_assign(out_shapes, 0, (data[0], filters, *output_spatial(data)), who, "output")
    return all(shape_known(s) for s in in_shapes) and shape_known(out_shapes[0])


def _conv_infer_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """out = (N, F, *O) from data; weight (F, C/G, *k) and bias (F,) from data and the parameters; back again."""
    p, who = attrs.parsed, label(attrs)
    g = conv_geometry(attrs)
    nd = len(g.kernel)

    def data_spatial_from_output(out: tuple[int, ...]) -> list[int]:
        # each spatial size follows from the output only where the stride is 1 (unique then)
        sizes = [0] * nd
        for i in range(nd):
            size = out[2 + i] + g.dilated(i) - 1 - 2 * g.pad[i]
            if out[2 + i] and g.stride[i] == 1 and size > 0:
                sizes[i] = size
        return sizes

    def output_spatial(data: tuple[int, ...]) -> list[int]:
        spatial = []
        for i in range(nd):
            size = data[2 + i]
            if size and g.dilated(i) > g.padded(i, size):
                raise InferenceError(
                    f"{who}: kernel size exceeds input: dilated kernel {g.dilated(i)} > input {size} "
                    f"padded to {g.padded(i, size)} along spatial axis {i} (data shape {tuple(data)})"
                )
            spatial.append(g.out_size(i, size) if size else 0)
        return spatial

    return infer_filter_shapes(
        attrs,
        in_shapes,
        out_shapes,
        channels_from_weight=lambda weight: weight[1] * p.num_group,
        weight_shape=lambda channels: (p.num_filter, channels // p.num_group, *g.kernel),
        data_spatial_from_output=data_spatial_from_output,
        output_spatial=output_spatial,
    )


def _backward_infer_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """Gradients take the shapes of (data, weight, bias); inputs are (out_grad, data, weight)."""
    who = label(attrs)
    for i in range(2):  # forward inputs <-> their gradients, both ways
        shape_assign(out_shapes, i, in_shapes[1 + i], who, f"gradient of input {i}")
        shape_assign(in_shapes, 1 + i, out_shapes[i], who, f"input {1 + i}")
    if len(out_shapes) > 2:
        shape_assign(out_shapes, 2, (attrs.parsed.num_filter,), who, "bias gradient")
    return all(shape_known(s) for s in out_shapes)


def _backward_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    return float_type(attrs, in_types, out_types)


# ---------------------------------------------------------------------------- the math
def batch_chunks(n: int, per_sample_bytes: int, workspace_mb: int) -> list[slice]:
    """Split the batch so that one chunk's scratch fits in ``workspace`` MB (MXNet's use of it).

    With the default 1024 MB every batch of a small network is one chunk; a huge input is
    processed a few samples at a time instead of asking for gigabytes of column matrix.
    """
    step = max(1, min(n, (workspace_mb << 20) // max(per_sample_bytes, 1)))
    return [slice(start, min(start + step, n)) for start in range(0, n, step)]


def _view(flat: Any, shape: tuple[int, ...]) -> Any:
    """The first ``prod(shape)`` elements of a flat scratch array, shaped."""
    return flat[: math.prod(shape)].reshape(shape)


def conv_gemm(
    op_ctx: OpContext,
    src: Any,
    weight: Any,
    g: Geometry,
    groups: int,
    out_spatial: tuple[int, ...],
    workspace: int,
    *,
    bias: Any = None,
    out: Any = None,
    req: Req = NULL,
    d_out: Any = None,
    d_weight: Any = None,
    d_weight_req: Req = NULL,
) -> None:
    """``out = conv(src, weight) + bias`` by im2col and one GEMM per group; optionally also
    ``d_weight``, the weight gradient of that convolution for output gradient ``d_out``.

    Serves Convolution's forward (weight (F, C/G, *k)) and Deconvolution's backward, where
    the deconvolution weight (C_in, F/G, *k) plays exactly this role and the deconvolution's
    input is ``d_out``.
    """
    xp = op_ctx.xp
    if req is NULL and d_weight_req is NULL:
        return
    n, channels, spatial = src.shape[0], src.shape[1], src.shape[2:]
    if n == 0:  # an empty batch: nothing to write, and a weight gradient of zero
        assign(d_weight, d_weight_req, 0)
        return
    filters, kernel_size, positions = weight.shape[0], math.prod(g.kernel), math.prod(out_spatial)
    padded = g.padded_shape(tuple(spatial))
    cdt = compute_dtype(src.dtype)
    sizes = (channels * math.prod(padded), channels * kernel_size * positions, filters * positions)  # per sample
    chunks = batch_chunks(n, sum(sizes) * cdt.itemsize, workspace)
    step = chunks[0].stop
    xt_flat, col_flat, y_flat = scratch(op_ctx, [((size * step,), cdt) for size in sizes])
    w = weight.reshape(groups, filters // groups, -1).astype(cdt, copy=False)
    for i, chunk in enumerate(chunks):
        m = chunk.stop - chunk.start
        xt = to_batch_last(xp, src[chunk], g.pad, _view(xt_flat, (channels, *padded, m)))
        col = _view(col_flat, (channels * kernel_size, positions * m))
        col = im2col(xp, xt, g.kernel, g.stride, g.dilate, out_spatial, col).reshape(groups, -1, positions * m)
        y = _view(y_flat, (groups, filters // groups, positions * m))
        if req is not NULL:
            xp.matmul(w, col, out=y)
            if bias is not None:
                flat_y = y.reshape(filters, -1)
                flat_y += bias.astype(cdt, copy=False)[:, None]
            to_batch_first(xp, y.reshape(filters, *out_spatial, m), out[chunk], req)
        if d_weight_req is not NULL:
            dy = to_batch_last(xp, d_out[chunk], (0,) * len(out_spatial), y.reshape(filters, *out_spatial, m))
            grad = xp.matmul(dy.reshape(groups, filters // groups, -1), col.transpose(0, 2, 1))
            assign(d_weight, d_weight_req if i == 0 else ADD, grad.reshape(d_weight.shape))


def conv_backward(
    op_ctx: OpContext,
    d_out: Any,
    src: Any,
    weight: Any,
    g: Geometry,
    groups: int,
    workspace: int,
    req: list[Req],
    outputs: list[Any],
) -> None:
    """Gradients of ``conv(src, weight) + bias`` w.r.t. (src, weight, bias), as ``req`` says.

    Serves Convolution's backward and Deconvolution's forward (``d_src`` of a convolution
    is a transposed convolution of ``d_out``). ``src`` is only read for the weight gradient
    and may be None otherwise; ``outputs[0]`` gets ``d_src`` shaped like ``src``.
    """
    xp = op_ctx.xp
    need_src, need_weight = req[0] is not NULL, req[1] is not NULL
    need_bias = len(req) > 2 and req[2] is not NULL
    if not (need_src or need_weight or need_bias):
        return
    n, filters, out_spatial = d_out.shape[0], d_out.shape[1], d_out.shape[2:]
    if n == 0:  # an empty batch: parameter gradients of zero
        for index in (1, 2)[: len(req) - 1]:
            assign(outputs[index], req[index], 0)
        return
    channels, spatial = outputs[0].shape[1], outputs[0].shape[2:]
    kernel_size, positions = math.prod(g.kernel), math.prod(out_spatial)
    padded = g.padded_shape(tuple(spatial))
    cdt = compute_dtype(d_out.dtype)
    sizes = (filters * positions, channels * math.prod(padded), channels * kernel_size * positions)  # per sample
    chunks = batch_chunks(n, sum(sizes) * cdt.itemsize, workspace)
    step = chunks[0].stop
    dy_flat, grid_flat, col_flat = scratch(op_ctx, [((size * step,), cdt) for size in sizes])
    w = weight.reshape(groups, filters // groups, -1).astype(cdt, copy=False)
    for i, chunk in enumerate(chunks):
        m = chunk.stop - chunk.start
        cols = positions * m
        dyt = to_batch_last(xp, d_out[chunk], (0,) * len(out_spatial), _view(dy_flat, (filters, *out_spatial, m)))
        dy = dyt.reshape(groups, filters // groups, cols)
        if need_bias:
            assign(outputs[2], req[2] if i == 0 else ADD, dyt.reshape(filters, cols).sum(axis=1))
        col = _view(col_flat, (channels * kernel_size, cols))
        if need_weight:
            xt = to_batch_last(xp, src[chunk], g.pad, _view(grid_flat, (channels, *padded, m)))
            col = im2col(xp, xt, g.kernel, g.stride, g.dilate, out_spatial, col)
            d_weight = xp.matmul(dy, col.reshape(groups, -1, cols).transpose(0, 2, 1))
            assign(outputs[1], req[1] if i == 0 else ADD, d_weight.reshape(outputs[1].shape))
        if need_src:
            d_col = xp.matmul(w.transpose(0, 2, 1), dy, out=col.reshape(groups, -1, cols))
            grid = _view(grid_flat, (channels, *spatial, m))  # reuses the padded input's memory
            d_col = d_col.reshape(channels, *g.kernel, *out_spatial, m)
            col2im(xp, d_col, grid, g.kernel, g.stride, g.dilate, g.pad, out_spatial)
            to_batch_first(xp, grid, outputs[0][chunk], req[0])


def _conv_forward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    if req[0] is NULL:
        return
    p = attrs.parsed
    out = outputs[0]
    bias = None if p.no_bias else inputs[2]
    g = conv_geometry(attrs)
    conv_gemm(op_ctx, inputs[0], inputs[1], g, p.num_group, out.shape[2:], p.workspace, bias=bias, out=out, req=req[0])


def _conv_backward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    d_out, data, weight = inputs[:3]
    p = attrs.parsed
    conv_backward(op_ctx, d_out, data, weight, conv_geometry(attrs), p.num_group, p.workspace, req, outputs)


def filter_gradient(backward_name: str) -> Callable[[Node, list[Entry]], list[Entry]]:
    """One backward node reading (out_grad, data, weight), never the bias; its outputs are the
    gradients of every input (Convolution's and Deconvolution's gradient)."""

    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        backward = make_backward_node(node, backward_name, [out_grads[0], node.inputs[0], node.inputs[1]])
        return [Entry(backward, i) for i in range(len(node.inputs))]

    return gradient


(
    register("Convolution")
    .describe(
        "Computes 1-D/2-D/3-D convolution (NCW/NCHW/NCDHW) of data with weight, plus bias unless no_bias; "
        "num_group splits the channels into independent groups."
    )
    .set_params(ConvolutionParam)
    .set_num_inputs(_num_inputs)
    .set_input_names(_input_names)
    .set_infer_shape(_conv_infer_shape)
    .set_infer_type(float_type)
    .set_compute(_conv_forward)
    .set_gradient(filter_gradient("_backward_Convolution"))
    .set_resource_request(_temp_space)
)
(
    register("_backward_Convolution")
    .set_params(ConvolutionParam)
    .set_num_inputs(3)
    .set_num_outputs(_num_inputs)
    .set_infer_shape(_backward_infer_shape)
    .set_infer_type(_backward_type)
    .set_compute(_conv_backward)
    .set_resource_request(_temp_space)
    .set_is_backward()
)
