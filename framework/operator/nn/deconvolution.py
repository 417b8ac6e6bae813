"""Deconvolution: the transposed convolution (MXNet's ``Deconvolution``), 1-D/2-D/3-D.

A deconvolution maps each input position to a whole ``kernel``-sized patch of the output,
adding where patches overlap: it is exactly the data gradient of a convolution, which is
how upsampling layers (and the decoder half of segmentation networks) grow feature maps.

Inputs ``data`` (N, C_in, *spatial), ``weight`` (C_in, num_filter / num_group, *kernel),
the layout MXNet uses (the weight of the convolution this one transposes), and ``bias``
(num_filter,) unless ``no_bias`` (which defaults to True here, as in MXNet). Each output
length is ``stride * (size - 1) + dilate * (kernel - 1) + 1 - 2 * pad + adj``; with
``target_shape`` the padding and ``adj`` are chosen to produce that shape instead (``pad``
and ``adj`` are then ignored, as in MXNet).

The computation reuses Convolution's pieces with the roles swapped (``conv_gemm.py``):
forward = GEMM ``weight^T @ data`` then col2im; the data gradient = im2col of the output
gradient then GEMM (a plain convolution); the weight gradient = ``data @ col^T``.
``workspace`` caps the scratch memory (in MB) as for Convolution; ``cudnn_tune`` and
``cudnn_off`` are accepted without effect.
"""

from __future__ import annotations

from ..infer import InferenceError, ShapeT
from ..kernel import NULL, OpContext, Req, assign
from ..node import NodeAttrs
from ..params import OperatorParamError, Param, Shape
from ..registry import register
from .conv_gemm import conv_backward, conv_gemm
from .convolution import (
    ConvolutionParam,
    _backward_infer_shape,
    _backward_type,
    _input_names,
    _num_inputs,
    _temp_space,
    conv_geometry,
    filter_gradient,
    float_type,
    infer_filter_shapes,
)
from .geometry import Geometry, label
from .im2col import compute_dtype


class DeconvolutionParam(ConvolutionParam):
    adj = Param(Shape, Shape(), "Adjustment for output shape: (w,), (h, w) or (d, h, w); ignored with target_shape.")
    target_shape = Param(Shape, Shape(), "Shape of the output: (w,), (h, w) or (d, h, w); overrides pad and adj.")
    workspace = Param(int, 512, "Maximum temporary workspace (MB); larger batches are processed in chunks.", low=0)
    no_bias = Param(bool, True, "Whether to disable the bias parameter.")


def deconv_geometry(attrs: NodeAttrs, in_spatial: tuple[int, ...] | None) -> tuple[Geometry, tuple[int, ...]]:
    """The geometry and ``adj`` actually used: with ``target_shape``, pad and adj derive from it.

    MXNet's rule: the full size ``stride * (in - 1) + dilated kernel`` minus the target is
    the total padding; ``adj = total % 2`` and ``pad = (total + 1) // 2``. Needs the input
    size along each axis (``in_spatial``; 0 where unknown yields pad 0 there).
    """
    p, who = attrs.parsed, label(attrs)
    g = conv_geometry(attrs)
    nd = len(g.kernel)
    target = tuple(p.target_shape)
    if target and any(target):
        if len(target) != nd:
            raise OperatorParamError(
                f"{who}: target_shape must have the same number of dimensions as kernel, "
                f"but kernel is {g.kernel} while target_shape is {target}"
            )
        if min(target) < 1:
            raise OperatorParamError(f"{who}: target_shape entries must be positive, got target_shape={target}")
        pad, adj = [], []
        for i in range(nd):
            size = in_spatial[i] if in_spatial is not None else 0
            if not size:
                pad.append(0)
                adj.append(0)
                continue
            full = g.stride[i] * (size - 1) + g.dilated(i)
            if full < target[i]:
                raise InferenceError(
                    f"{who}: target_shape {target} is too big: input size {size} along spatial axis {i} "
                    f"gives at most {full} with this kernel, stride and dilate"
                )
            total = full - target[i]
            adj.append(total % 2)
            pad.append((total + 1) // 2)
        g = g._replace(pad=tuple(pad))
        adj_t = tuple(adj)
    else:
        adj_t = tuple(p.adj) or (0,) * nd
        if len(adj_t) != nd:
            raise OperatorParamError(
                f"{who}: adj must have the same number of dimensions as kernel, "
                f"but kernel is {g.kernel} while adj is {adj_t}"
            )
    for i in range(nd):
        if adj_t[i] < 0 or adj_t[i] >= g.stride[i]:
            raise OperatorParamError(
                f"{who}: adj must be smaller than stride in every dimension (and >= 0), got adj={adj_t} "
                f"with stride={g.stride}" + (f" (derived from target_shape={target})" if target and any(target) else "")
            )
    return g, adj_t


def _deconv_infer_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """out = (N, num_filter, *O) from data; weight (C_in, F/G, *k) and bias (F,); and back."""
    p, who = attrs.parsed, label(attrs)
    g0 = conv_geometry(attrs)
    nd = len(g0.kernel)

    def data_spatial_from_output(out: tuple[int, ...]) -> list[int]:
        sizes = [0] * nd
        if any(p.target_shape):
            return sizes
        g, adj = deconv_geometry(attrs, None)
        for i in range(nd):  # unique only with stride 1
            size = out[2 + i] + 2 * g.pad[i] - g.dilated(i) - adj[i] + 1
            if out[2 + i] and g.stride[i] == 1 and size > 0:
                sizes[i] = size
        return sizes

    def output_spatial(data: tuple[int, ...]) -> list[int]:
        g, adj = deconv_geometry(attrs, tuple(data[2:]))
        spatial = []
        for i in range(nd):
            size = g.transposed_out_size(i, data[2 + i], adj[i]) if data[2 + i] else 0
            if data[2 + i] and size < 1:
                raise InferenceError(
                    f"{who}: output size along spatial axis {i} would be {size} (data shape {tuple(data)}, "
                    f"kernel={g.kernel}, stride={g.stride}, dilate={g.dilate}, pad={g.pad}, adj={adj})"
                )
            spatial.append(size)
        return spatial

    return infer_filter_shapes(
        attrs,
        in_shapes,
        out_shapes,
        channels_from_weight=lambda weight: weight[0],
        weight_shape=lambda channels: (channels, p.num_filter // p.num_group, *g0.kernel),
        data_spatial_from_output=data_spatial_from_output,
        output_spatial=output_spatial,
    )


def _deconv_forward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """The data gradient of the convolution whose weight is ``weight``: GEMM then col2im."""
    if req[0] is NULL:
        return
    data, weight = inputs[0], inputs[1]
    g, _ = deconv_geometry(attrs, data.shape[2:])
    out = outputs[0]
    p = attrs.parsed
    conv_backward(op_ctx, data, None, weight, g, p.num_group, p.workspace, [req[0], NULL], [out, None])
    if not p.no_bias:
        out += inputs[2].reshape((1, -1) + (1,) * (out.ndim - 2)).astype(out.dtype, copy=False)


def _deconv_backward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """d_data = conv(d_out, weight); d_weight = data @ im2col(d_out)^T; d_bias = sum of d_out."""
    d_out, data, weight = inputs[:3]
    g, _ = deconv_geometry(attrs, data.shape[2:])
    conv_gemm(
        op_ctx,
        d_out,
        weight,
        g,
        attrs.parsed.num_group,
        data.shape[2:],
        attrs.parsed.workspace,
        out=outputs[0],
        req=req[0],
        d_out=data,
        d_weight=outputs[1],
        d_weight_req=req[1],
    )
    if len(req) > 2 and req[2] is not NULL:
        assign(outputs[2], req[2], d_out.sum(axis=(0, *range(2, d_out.ndim)), dtype=compute_dtype(d_out.dtype)))


(
    register("Deconvolution")
    .describe(
        "Computes 1-D/2-D/3-D transposed convolution (NCW/NCHW/NCDHW): the data gradient of a convolution "
        "whose weight is `weight` (C_in, num_filter/num_group, *kernel), plus bias unless no_bias."
    )
    .set_params(DeconvolutionParam)
    .set_num_inputs(_num_inputs)
    .set_input_names(_input_names)
    .set_infer_shape(_deconv_infer_shape)
    .set_infer_type(float_type)
    .set_compute(_deconv_forward)
    .set_gradient(filter_gradient("_backward_Deconvolution"))
    .set_resource_request(_temp_space)
)
(
    register("_backward_Deconvolution")
    .set_params(DeconvolutionParam)
    .set_num_inputs(3)
    .set_num_outputs(_num_inputs)
    .set_infer_shape(_backward_infer_shape)
    .set_infer_type(_backward_type)
    .set_compute(_deconv_backward)
    .set_resource_request(_temp_space)
    .set_is_backward()
)
