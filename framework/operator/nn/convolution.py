"""Convolution: learned filters slid over 1-D, 2-D or 3-D inputs (MXNet's ``Convolution``).

Inputs ``data`` (N, C, *spatial) in the channel-first layout (NCW, NCHW, NCDHW), ``weight``
(num_filter, C / num_group, *kernel) and, unless ``no_bias``, ``bias`` (num_filter,).
Each output length is ``(size + 2 * pad - (dilate * (kernel - 1) + 1)) // stride + 1``.
Groups split the channels into ``num_group`` independent convolutions (``num_group == C``
is a depthwise convolution).

How it is computed (``conv_gemm.py``, ``im2col.py``): the windows are gathered into a
column matrix and the convolution is a GEMM per group, ``weight (G, F/G, C/G*K) @ col``.
The gradients are two more GEMMs: ``d_weight = d_out @ col^T`` and ``d_col = weight^T @
d_out``, the latter scattered back onto the input grid by col2im. The bias gradient is a
sum. The batch is processed in chunks whose column matrix fits in the cache, in the layout
that is cheaper for the layer's shape; the backward pass recomputes ``col`` (as MXNet does)
instead of keeping it alive between forward and backward.

Scratch memory comes from the resource manager's TEMP_SPACE; ``workspace`` keeps its MXNet
meaning, a cap in MB on that scratch (it can only make the chunks smaller). Accepted for
compatibility, without effect: ``cudnn_tune`` and ``cudnn_off`` (there is no cuDNN).
``layout`` may only name the channel-first layout of the kernel's rank: NHWC/NDHWC
are cuDNN-only layouts in MXNet and raise a clear error here.
"""

from __future__ import annotations

from collections.abc import Callable

from ...resource import ResourceRequest
from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT, elemwise_type, shape_assign, shape_known
from ..kernel import NULL, OpContext, Req
from ..node import Entry, Node, NodeAttrs
from ..params import OperatorParamError, Param, ParamSet, Shape
from ..registry import register
from .conv_gemm import conv_backward, conv_gemm
from .geometry import CHANNEL_FIRST, Geometry, check_layout, check_rank, label, per_axis

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


# ---------------------------------------------------------------------------- compute
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
