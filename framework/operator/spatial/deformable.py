"""Deformable convolutions: ``_contrib_DeformableConvolution`` (Dai et al. 2017) and
``_contrib_ModulatedDeformableConvolution`` (DCNv2, Zhu et al. 2019).

An ordinary 2-D convolution reads, for output position (i, j) and kernel tap (a, b), the
input pixel at ``(i * stride - pad + a * dilate, j * stride - pad + b * dilate)``. A
deformable one adds a learned, fractional offset per output position and tap (input
``offset``: (N, 2 * num_deformable_group * kh * kw, out_h, out_w), dy then dx for each tap,
one set per group of input channels) and reads there bilinearly: zero outside
``0 <= position < size``, and a position past the last pixel's centre reads that pixel (MXNet's
CPU rule);
the modulated version also multiplies every read by a learned ``mask`` value. The reads
form the column matrix of im2col, and the rest is the grouped GEMM of Convolution.

Vectorised over the whole batch, all taps and all positions: four gathers (the bilinear
neighbours) build the columns; the backward pass scatters the column gradient back with
``xp.add.at`` (data), differentiates the bilinear weights (offsets) and the product (mask).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..infer import InferenceError, ShapeT, shape_assign, shape_known
from ..nn.geometry import Geometry, check_layout, per_axis
from ..node import Entry, Node, NodeAttrs
from ..params import REQUIRED, OperatorParamError, Param, ParamSet, Shape
from ..registry import register
from ..tensor.common import backward_entries, put, register_backward
from .sampler import float_types


class DeformableConvolutionParam(ParamSet):
    kernel = Param(Shape, REQUIRED, "Kernel size (h, w).")
    stride = Param(Shape, Shape(), "Stride (h, w) (default 1).")
    dilate = Param(Shape, Shape(), "Dilation (h, w) (default 1).")
    pad = Param(Shape, Shape(), "Zero padding (h, w) (default 0).")
    num_filter = Param(int, REQUIRED, "Output channels.", low=1)
    num_group = Param(int, 1, "Groups of input and output channels convolved separately.", low=1)
    num_deformable_group = Param(int, 1, "Groups of input channels sharing one set of offsets.", low=1)
    workspace = Param(int, 1024, "Maximum temporary workspace (MB); accepted for compatibility.", low=0)
    no_bias = Param(bool, False, "Whether to disable the bias input.")
    layout = Param(str, None, "Only NCHW is computed.", choices=("NCDHW", "NCHW", "NCW"), optional=True)


class ModulatedDeformableConvolutionParam(DeformableConvolutionParam):
    im2col_step = Param(int, 64, "Images per im2col step in MXNet; accepted for compatibility.", low=0)


def _modulated(attrs: NodeAttrs) -> bool:
    return isinstance(attrs.parsed, ModulatedDeformableConvolutionParam)


def _input_names(attrs: NodeAttrs) -> list[str]:
    names = ["data", "offset", "mask", "weight"] if _modulated(attrs) else ["data", "offset", "weight"]
    return names if attrs.parsed.no_bias else [*names, "bias"]


def geometry(attrs: NodeAttrs) -> Geometry:
    p, who = attrs.parsed, attrs.name
    kernel = tuple(p.kernel)
    if len(kernel) != 2 or min(kernel) < 1:
        raise OperatorParamError(f"{who}: kernel must be two positive sizes (h, w), got {kernel}")
    check_layout(who, p.layout, 2, "deformable convolution")
    return Geometry(
        kernel,
        per_axis(who, p, "stride", kernel, 1, 1),
        per_axis(who, p, "dilate", kernel, 1, 1),
        per_axis(who, p, "pad", kernel, 0, 0),
    )


def _deformable_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name, p, g = attrs.name, attrs.parsed, geometry(attrs)
    names = _input_names(attrs)
    data = in_shapes[0]
    if data is None or not shape_known(data):
        return False
    if len(data) != 4:
        raise InferenceError(f"{name}: data must be 4-d (N, C, H, W), got shape {tuple(data)}")
    n, c, h, w = data
    if c % p.num_group or p.num_filter % p.num_group or c % p.num_deformable_group:
        raise InferenceError(
            f"{name}: channels {c} and num_filter {p.num_filter} must be divisible by num_group {p.num_group}, "
            f"and channels by num_deformable_group {p.num_deformable_group}"
        )
    out = (g.out_size(0, h), g.out_size(1, w))
    if min(out) < 1:
        raise InferenceError(f"{name}: kernel {g.kernel} does not fit into data {tuple(data)} padded by {g.pad}")
    taps = math.prod(g.kernel)
    shape_assign(in_shapes, 1, (n, 2 * p.num_deformable_group * taps, *out), name, "offset")
    if _modulated(attrs):
        shape_assign(in_shapes, 2, (n, p.num_deformable_group * taps, *out), name, "mask")
    shape_assign(in_shapes, names.index("weight"), (p.num_filter, c // p.num_group, *g.kernel), name, "weight")
    if not p.no_bias:
        shape_assign(in_shapes, names.index("bias"), (p.num_filter,), name, "bias")
    shape_assign(out_shapes, 0, (n, p.num_filter, *out), name, "output")
    return all(shape_known(s) for s in in_shapes)


class Samples:
    """Where every (image, channel group, tap, output position) reads: four neighbours and weights."""

    def __init__(self, xp: Any, g: Geometry, data_shape: tuple[int, ...], offset: Any, groups: int) -> None:
        n, _, h, w = data_shape
        kh, kw = g.kernel
        out_h, out_w = offset.shape[2:]
        off = offset.reshape(n, groups, kh * kw, 2, out_h, out_w)
        tap_y = np.repeat(np.arange(kh) * g.dilate[0], kw)[:, None, None]
        tap_x = np.tile(np.arange(kw) * g.dilate[1], kh)[:, None, None]
        base_y = xp.asarray(tap_y + (np.arange(out_h) * g.stride[0] - g.pad[0])[:, None], offset.dtype)
        base_x = xp.asarray(tap_x + (np.arange(out_w) * g.stride[1] - g.pad[1])[None, :], offset.dtype)
        y = base_y + off[:, :, :, 0]  # (N, G, K, out_h, out_w)
        x = base_x + off[:, :, :, 1]
        # MXNet's rule: a read counts when 0 <= position < size; one in the last cell's
        # upper half (size - 1 <= position < size) reads that cell fully.
        inside = (y >= 0) & (y < h) & (x >= 0) & (x < w)
        y0, edge_y = self._low(xp, y, h)
        x0, edge_x = self._low(xp, x, w)
        fy, fx = xp.where(edge_y, 0, y - y0), xp.where(edge_x, 0, x - x0)
        self.corners = []
        for dy in (0, 1):
            for dx in (0, 1):
                yy, xx = xp.minimum(y0 + dy, h - 1), xp.minimum(x0 + dx, w - 1)
                wy, wx = (fy if dy else 1 - fy), (fx if dx else 1 - fx)
                flat = (yy * w + xx).astype(np.int64)
                d_wy = (1 if dy else -1) * wx * inside * ~edge_y  # d weight / d y (0 where y is clamped)
                d_wx = (1 if dx else -1) * wy * inside * ~edge_x
                self.corners.append((flat, wy * wx * inside, d_wx, d_wy))

    @staticmethod
    def _low(xp: Any, pos: Any, size: int) -> tuple[Any, Any]:
        """The lower neighbour of each position (clamped into the map) and whether it is the last cell."""
        low = xp.floor(pos).clip(0, size - 1)
        return low, low >= size - 1

    def gather(self, xp: Any, data: Any, groups: int) -> tuple[Any, Any]:
        """Bilinear reads (N, C, K, L) and, per corner, the raw neighbour values."""
        n, c, h, w = data.shape
        by_group = data.reshape(n, groups, c // groups, h * w)
        reads, neighbours = 0, []
        for flat, weight, _, _ in self.corners:
            index = flat.reshape(n, groups, 1, -1)
            value = xp.take_along_axis(by_group, xp.broadcast_to(index, (n, groups, c // groups, index.shape[-1])), 3)
            neighbours.append(value)
            reads = reads + value * weight.reshape(n, groups, 1, -1)
        return reads.reshape(n, c, -1), neighbours


def _split(attrs: NodeAttrs, inputs: list) -> tuple[Any, Any, Any, Any, Any]:
    """(data, offset, mask or None, weight, bias or None) from the operator's inputs."""
    names = _input_names(attrs)
    get = {name: inputs[i] for i, name in enumerate(names)}
    return get["data"], get["offset"], get.get("mask"), get["weight"], get.get("bias")


def _columns(xp: Any, attrs: NodeAttrs, data: Any, offset: Any, mask: Any) -> tuple[Samples, Any, Any]:
    p = attrs.parsed
    samples = Samples(xp, geometry(attrs), data.shape, offset, p.num_deformable_group)
    reads, neighbours = samples.gather(xp, data, p.num_deformable_group)
    if mask is not None:
        n, c = data.shape[:2]
        groups = p.num_deformable_group
        per_channel = xp.broadcast_to(mask.reshape(n, groups, 1, -1), (n, groups, c // groups, mask[0].size // groups))
        reads = reads * per_channel.reshape(n, c, -1)
    return samples, reads, neighbours


def _deformable_forward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, p = op_ctx.xp, attrs.parsed
    data, offset, mask, weight, bias = _split(attrs, inputs)
    _, cols, _ = _columns(xp, attrs, data, offset, mask)
    n = data.shape[0]
    groups, out = p.num_group, outputs[0]
    cols = cols.reshape(n, groups, -1, out.shape[2] * out.shape[3])  # (N, g, C/g * K, L)
    result = xp.einsum("gfk,ngkl->ngfl", weight.reshape(groups, p.num_filter // groups, -1), cols, optimize=True)
    result = result.reshape(out.shape)
    if bias is not None:
        result = result + bias.reshape(1, -1, 1, 1)
    put(out, req[0], result)


def _deformable_backward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    """Inputs (out_grad, forward inputs...); outputs the gradient of every forward input."""
    xp, p = op_ctx.xp, attrs.parsed
    g_out = inputs[0]
    data, offset, mask, weight, bias = _split(attrs, inputs[1:])
    samples, cols, neighbours = _columns(xp, attrs, data, offset, mask)
    n, c, h, w = data.shape
    groups, dgroups = p.num_group, p.num_deformable_group
    length = g_out.shape[2] * g_out.shape[3]
    g_flat = g_out.reshape(n, groups, p.num_filter // groups, length)
    w_flat = weight.reshape(groups, p.num_filter // groups, -1)
    d_cols = xp.einsum("gfk,ngfl->ngkl", w_flat, g_flat, optimize=True).reshape(n, dgroups, c // dgroups, -1)
    d_weight = xp.einsum("ngfl,ngkl->gfk", g_flat, cols.reshape(n, groups, -1, length), optimize=True)
    if mask is not None:
        m = mask.reshape(n, dgroups, 1, -1)
        unmasked = d_cols
        d_cols = d_cols * m
    d_data = xp.zeros((n, dgroups, c // dgroups, h * w), data.dtype)
    d_y = d_x = 0
    batch = xp.arange(n)[:, None, None, None]
    group = xp.arange(dgroups)[None, :, None, None]
    channel = xp.arange(c // dgroups)[None, None, :, None]
    for (flat, weight_c, dw_dx, dw_dy), value in zip(samples.corners, neighbours, strict=True):
        index = flat.reshape(n, dgroups, 1, -1)
        contribution = d_cols * weight_c.reshape(n, dgroups, 1, -1)
        xp.add.at(d_data, (batch, group, channel, xp.broadcast_to(index, contribution.shape)), contribution)
        seen = (d_cols * value).sum(axis=2)  # (N, dg, K * L)
        d_y = d_y + seen * dw_dy.reshape(n, dgroups, -1)
        d_x = d_x + seen * dw_dx.reshape(n, dgroups, -1)
    d_offset = xp.stack([d_y.reshape(n, dgroups, -1, length), d_x.reshape(n, dgroups, -1, length)], axis=3)
    grads = {"data": d_data.reshape(data.shape), "offset": d_offset.reshape(offset.shape), "weight": d_weight}
    if mask is not None:
        reads, _ = samples.gather(xp, data, dgroups)
        grads["mask"] = (unmasked * reads.reshape(unmasked.shape)).sum(axis=2).reshape(mask.shape)
    if bias is not None:
        grads["bias"] = g_out.sum(axis=(0, 2, 3))
    for i, name in enumerate(_input_names(attrs)):
        put(outputs[i], req[i], grads[name].reshape(outputs[i].shape))


def _gradient(backward: str):
    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        return backward_entries(node, backward, [out_grads[0], *node.inputs])

    return gradient


for _name, _params, _text in (
    (
        "_contrib_DeformableConvolution",
        DeformableConvolutionParam,
        "2-D convolution whose every tap reads at a learned fractional offset (bilinear, zero outside).",
    ),
    (
        "_contrib_ModulatedDeformableConvolution",
        ModulatedDeformableConvolutionParam,
        "Deformable convolution whose reads are also scaled by a learned mask (DCNv2).",
    ),
):
    (
        register(_name)
        .describe(_text)
        .set_params(_params)
        .set_num_inputs(lambda attrs: len(_input_names(attrs)))
        .set_num_outputs(1)
        .set_input_names(_input_names)
        .set_infer_shape(_deformable_shape)
        .set_infer_type(float_types)
        .set_compute(_deformable_forward)
        .set_gradient(_gradient(f"_backward_{_name}"))
    )
    register_backward(
        f"_backward_{_name}",
        _deformable_backward,
        _params,
        num_inputs=lambda attrs: 1 + len(_input_names(attrs)),
        num_outputs=lambda attrs: len(_input_names(attrs)),
    )
