"""Regions of interest pooled from bilinear samples at computed positions: ``_contrib_RROIAlign``
(rotated boxes, for text detection) and ``_contrib_DeformablePSROIPooling`` (R-FCN's bins, each
shifted by a learned offset, Dai et al. 2017).

Both cut every region into a grid of bins, place a few sample points in every bin, read the
feature map bilinearly at each point and average a bin's samples. What differs is where the
points go:

* RROIAlign: ``rois`` rows are ``[batch_index, cx, cy, w, h, angle]`` (degrees). A bin's samples
  are laid out in the box's own frame (``sampling_ratio`` per side, or ``ceil`` of the bin size)
  and rotated by the angle about the centre. A sample more than one pixel outside the map
  reads 0 but still counts in the average (as ``roi.py``'s ROIAlign).
* DeformablePSROIPooling: ``rois`` rows are ``[batch_index, x1, y1, x2, y2]``; bin (i, j) of
  output channel d reads input channel ``(d * group + gi) * group + gj`` (position-sensitive, as
  ``roi.py``'s PSROIPooling) at ``sample_per_part``^2 points, shifted by ``trans_std`` times the
  learned offset of its part (input ``trans``: (R, 2 * classes, part, part), x then y) times the
  region's size. Samples more than half a pixel outside the map are skipped; the hidden output
  ``top_count`` holds how many were averaged.

Vectorised over all regions, bins and samples: a point's four neighbours are gathered from the
(N, H * W, C) map at once, and the backward pass scatters with ``xp.add.at``. A position is
first clamped into the map, then read between ``floor`` and ``ceil`` of each coordinate.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..infer import InferenceError, ShapeT, shape_assign, shape_known
from ..node import Entry, Node, NodeAttrs
from ..params import REQUIRED, Param, ParamSet, Shape
from ..registry import register
from ..tensor.common import backward_entries, put, register_backward
from .roi import c_round, pooled_size
from .sampler import float_types


# ------------------------------------------------------------------ shared: bilinear taps
def bilinear_taps(xp: Any, x: Any, y: Any, height: int, width: int) -> tuple[Any, Any, Any, Any]:
    """Flat ``y * width + x`` indices (..., 4) and weights (..., 4) of the four neighbours of each point.

    Points are clamped into the map first. Also returns the fractional parts (fx, fy), which
    the derivative with respect to the position needs.
    """
    x = xp.clip(x, 0, width - 1)
    y = xp.clip(y, 0, height - 1)
    x0, y0 = xp.floor(x), xp.floor(y)
    x1, y1 = xp.ceil(x), xp.ceil(y)
    fx, fy = x - x0, y - y0
    x0, x1, y0, y1 = (v.astype(np.int64) for v in (x0, x1, y0, y1))
    index = xp.stack([y0 * width + x0, y0 * width + x1, y1 * width + x0, y1 * width + x1], axis=-1)
    weight = xp.stack([(1 - fy) * (1 - fx), (1 - fy) * fx, fy * (1 - fx), fy * fx], axis=-1)
    return index, weight, fx, fy


def pixels_last(data: Any) -> Any:
    """(N, C, H, W) -> (N, H * W, C): one gather then reads every channel of a pixel."""
    n, c = data.shape[:2]
    return data.reshape(n, c, -1).transpose(0, 2, 1)


def _check_rank(name: str, shape: ShapeT, rank: int, what: str, columns: int | None = None) -> None:
    """``shape`` has ``rank`` axes (and ``columns`` columns, when given), or an InferenceError naming ``what``."""
    if shape is None:
        return
    if len(shape) != rank or (columns is not None and shape[1] not in (0, columns)):
        raise InferenceError(f"{name}: {what} has the wrong shape {tuple(shape)}")


# ------------------------------------------------------------------ RROIAlign
class RROIAlignParam(ParamSet):
    pooled_size = Param(Shape, REQUIRED, "Output (height, width) of every region.")
    spatial_scale = Param(float, REQUIRED, "Feature-map size over image size (1 / total stride).")
    sampling_ratio = Param(int, -1, "Sample points per bin side; <= 0 adapts to the bin size (ceil).")


def _rroi_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name, (ph, pw) = attrs.name, pooled_size(attrs)
    data, rois = in_shapes
    _check_rank(name, data, 4, "data (N, C, H, W)")
    _check_rank(name, rois, 2, "rois (R, 6) [batch_index, cx, cy, w, h, angle]", 6)
    shape_assign(in_shapes, 1, (0, 6), name, "rois")
    channels = data[1] if data is not None else 0
    shape_assign(out_shapes, 0, (in_shapes[1][0], channels, ph, pw), name, "output")
    if out_shapes[0] is not None:
        shape_assign(in_shapes, 1, (out_shapes[0][0], 6), name, "rois")
    return shape_known(in_shapes[0]) and shape_known(in_shapes[1])


def _rroi_samples(xp: Any, attrs: NodeAttrs, data_shape: tuple[int, ...], rois: Any) -> tuple[Any, Any, Any]:
    """Neighbour indices (R, ph, pw, G, G', 4), weights (zero for unused or outside samples), batch."""
    p, (ph, pw) = attrs.parsed, pooled_size(attrs)
    h, w = data_shape[2:]
    dtype = rois.dtype.type
    scale = dtype(p.spatial_scale)
    cx, cy = rois[:, 1] * scale, rois[:, 2] * scale
    width = xp.maximum(rois[:, 3] * scale, dtype(1))  # malformed regions become 1 x 1
    height = xp.maximum(rois[:, 4] * scale, dtype(1))
    theta = (rois[:, 5].astype(np.float64) * (math.pi / 180.0)).astype(rois.dtype)
    cos, sin = xp.cos(theta), xp.sin(theta)
    bin_h, bin_w = height / dtype(ph), width / dtype(pw)
    if p.sampling_ratio > 0:
        grid_h = grid_w = xp.full(rois.shape[0], p.sampling_ratio, np.int64)
    else:
        grid_h, grid_w = xp.ceil(height / ph).astype(np.int64), xp.ceil(width / pw).astype(np.int64)
    longest_h = max(int(grid_h.max()) if grid_h.size else 1, 1)
    longest_w = max(int(grid_w.max()) if grid_w.size else 1, 1)

    def along(start: Any, size: Any, bins: int, grid: Any, longest: int) -> Any:
        """(R, bins, longest) sample coordinates in the box's frame, from its top-left corner."""
        step = (xp.arange(longest, dtype=rois.dtype) + dtype(0.5)) * size[:, None, None] / grid[:, None, None]
        return start[:, None, None] + xp.arange(bins, dtype=rois.dtype)[None, :, None] * size[:, None, None] + step

    yy = along(-height / 2, bin_h, ph, grid_h.astype(rois.dtype), longest_h)[:, :, None, :, None]
    xx = along(-width / 2, bin_w, pw, grid_w.astype(rois.dtype), longest_w)[:, None, :, None, :]
    r = (slice(None), None, None, None, None)
    x = xx * cos[r] + yy * sin[r] + cx[r]  # rotate about the centre, then move there
    y = yy * cos[r] - xx * sin[r] + cy[r]
    inside = (y >= -1) & (y <= h) & (x >= -1) & (x <= w)
    used = (xp.arange(longest_h)[:, None] < grid_h[:, None, None]) & (xp.arange(longest_w) < grid_w[:, None, None])
    index, weight, _, _ = bilinear_taps(xp, x, y, h, w)
    keep = inside & used[:, None, None]
    count = (grid_h * grid_w).astype(rois.dtype)
    weight = weight * (keep / count[r])[..., None]
    return index, weight, rois[:, 0].astype(np.int64)


def _rroi_forward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, (data, rois) = op_ctx.xp, inputs
    index, weight, batch = _rroi_samples(xp, attrs, data.shape, rois)
    taps = pixels_last(data)[batch[:, None, None, None, None, None], index]  # (R, ph, pw, G, G', 4, C)
    pooled = (taps * weight[..., None].astype(data.dtype)).sum(axis=(3, 4, 5))
    put(outputs[0], req[0], pooled.transpose(0, 3, 1, 2))


def _rroi_backward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    """Inputs (out_grad, data, rois): each sample gives its bin's gradient to its four neighbours."""
    xp, (g, data, rois) = op_ctx.xp, inputs[:3]
    n, c = data.shape[:2]
    index, weight, batch = _rroi_samples(xp, attrs, data.shape, rois)
    share = g.transpose(0, 2, 3, 1)[:, :, :, None, None, None, :] * weight[..., None]  # (R, ph, pw, G, G', 4, C)
    d_pixels = xp.zeros((n, data.shape[2] * data.shape[3], c), g.dtype)
    batch = xp.broadcast_to(batch[:, None, None, None, None, None], index.shape)
    xp.add.at(d_pixels, (batch.reshape(-1), index.reshape(-1)), share.reshape(-1, c).astype(g.dtype))
    put(outputs[0], req[0], d_pixels.transpose(0, 2, 1).reshape(data.shape))
    put(outputs[1], req[1], xp.zeros(rois.shape, rois.dtype))


def _rroi_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    return backward_entries(node, "_backward_RROIAlign", [out_grads[0], *node.inputs], 2)


(
    register("_contrib_RROIAlign")
    .describe(
        "Rotated ROI Align: every bin of a rotated box averages bilinear samples; rois rows are "
        "[batch_index, cx, cy, w, h, angle in degrees]."
    )
    .set_params(RROIAlignParam)
    .set_num_inputs(2)
    .set_input_names(["data", "rois"])
    .set_infer_shape(_rroi_shape)
    .set_infer_type(float_types)
    .set_compute(_rroi_forward)
    .set_gradient(_rroi_gradient)
)
register_backward("_backward_RROIAlign", _rroi_backward, RROIAlignParam, num_inputs=3, num_outputs=2)


# ------------------------------------------------------------------ DeformablePSROIPooling
class DeformablePSROIPoolingParam(ParamSet):
    spatial_scale = Param(float, REQUIRED, "Feature-map size over image size (1 / total stride).", low=0.0, high=1.0)
    output_dim = Param(int, REQUIRED, "Channels of the output.", low=1)
    group_size = Param(int, REQUIRED, "Position-sensitive groups per side.", low=1)
    pooled_size = Param(int, REQUIRED, "Bins per side of every region.", low=1)
    part_size = Param(int, 0, "Offset parts per side (0: pooled_size).", low=0)
    sample_per_part = Param(int, 1, "Sample points per bin side.", low=1)
    trans_std = Param(float, 0.0, "Scale of the learned offsets.", low=0.0, high=1.0)
    no_trans = Param(bool, False, "Pool without offsets (no trans input).")


def _part(attrs: NodeAttrs) -> int:
    return attrs.parsed.part_size or attrs.parsed.pooled_size


def _dpsroi_inputs(attrs: NodeAttrs) -> list[str]:
    return ["data", "rois"] if attrs.parsed.no_trans else ["data", "rois", "trans"]


def _dpsroi_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name, p = attrs.name, attrs.parsed
    data, rois = in_shapes[:2]
    _check_rank(name, data, 4, "data (N, C, H, W)")
    _check_rank(name, rois, 2, "rois (R, 5) [batch_index, x1, y1, x2, y2]", 5)
    need = p.output_dim * p.group_size**2
    if data is not None and data[1] and data[1] != need:
        raise InferenceError(f"{name}: data {tuple(data)} must have output_dim * group_size^2 = {need} channels")
    shape_assign(in_shapes, 1, (0, 5), name, "rois")
    count = in_shapes[1][0]
    for i in range(2):
        shape_assign(out_shapes, i, (count, p.output_dim, p.pooled_size, p.pooled_size), name, "output")
    count = out_shapes[0][0]
    shape_assign(in_shapes, 1, (count, 5), name, "rois")
    if not p.no_trans:
        trans = in_shapes[2]
        _check_rank(name, trans, 4, "trans (R, 2 * classes, part, part)")
        part = _part(attrs)
        if trans is not None and trans[1]:
            if trans[1] % 2 or p.output_dim % (trans[1] // 2):
                raise InferenceError(
                    f"{name}: trans {tuple(trans)} needs 2 * classes channels, classes dividing output_dim "
                    f"{p.output_dim}"
                )
        shape_assign(in_shapes, 2, (count, trans[1] if trans is not None else 0, part, part), name, "trans")
        shape_assign(in_shapes, 1, (in_shapes[2][0], 5), name, "rois")
    return all(shape_known(s) for s in in_shapes)


def _dpsroi_samples(xp: Any, attrs: NodeAttrs, data_shape: tuple[int, ...], rois: Any, trans: Any) -> dict:
    """Every sample of every (region, channel, bin): neighbours, weights, whether used, offset cells."""
    p, k, s = attrs.parsed, attrs.parsed.pooled_size, attrs.parsed.sample_per_part
    _, c, h, w = data_shape
    dtype = rois.dtype.type
    scale = dtype(p.spatial_scale)
    x1, y1 = (c_round(xp, rois[:, i]) * scale - dtype(0.5) for i in (1, 2))
    x2, y2 = ((c_round(xp, rois[:, i]) + 1) * scale - dtype(0.5) for i in (3, 4))
    width, height = xp.maximum(x2 - x1, dtype(0.1)), xp.maximum(y2 - y1, dtype(0.1))
    bin_w, bin_h = width / dtype(k), height / dtype(k)
    part = _part(attrs)
    bins = np.arange(k)
    part_of = np.floor(bins.astype(rois.dtype) / k * part).astype(np.int64)  # the offset cell of each bin
    group_of = np.clip(np.floor(bins * p.group_size / k).astype(np.int64), 0, p.group_size - 1)
    d = np.arange(p.output_dim)
    if trans is None:
        tx = ty = xp.zeros((rois.shape[0], p.output_dim, k, k), rois.dtype)
        klass = np.zeros(p.output_dim, np.int64)
    else:  # the offset (x, y) of output channel d's class at bin (i, j)'s part
        klass = d // (p.output_dim // (trans.shape[1] // 2))
        cell = (
            xp.arange(rois.shape[0])[:, None, None, None],
            xp.asarray(2 * klass)[None, :, None, None],
            xp.asarray(part_of)[None, None, :, None],
            xp.asarray(part_of)[None, None, None, :],
        )
        tx = trans[cell] * dtype(p.trans_std)
        ty = trans[(cell[0], cell[1] + 1, cell[2], cell[3])] * dtype(p.trans_std)
    r4 = (slice(None), None, None, None)
    steps = xp.arange(k, dtype=rois.dtype)
    wstart = steps[None, None, None, :] * bin_w[r4] + x1[r4] + tx * width[r4]  # (R, D, k, k)
    hstart = steps[None, None, :, None] * bin_h[r4] + y1[r4] + ty * height[r4]
    sub = xp.arange(s, dtype=rois.dtype)
    wx = wstart[..., None, None] + sub[None, :] * (bin_w / dtype(s))[:, None, None, None, None, None]
    hy = hstart[..., None, None] + sub[:, None] * (bin_h / dtype(s))[:, None, None, None, None, None]
    used = (wx >= -0.5) & (wx <= w - 0.5) & (hy >= -0.5) & (hy <= h - 0.5)  # (R, D, k, k, s, s)
    index, weight, fx, fy = bilinear_taps(xp, wx, hy, h, w)
    channel = (d[:, None, None] * p.group_size + group_of[:, None]) * p.group_size + group_of[None, :]  # (D, k, k)
    batch = rois[:, 0].astype(np.int64)
    plane = (batch[:, None, None, None] * c + xp.asarray(channel)[None]) * (h * w)  # (R, D, k, k)
    return {
        "flat": plane[..., None, None, None] + index,  # (R, D, k, k, s, s, 4) into data.reshape(-1)
        "weight": weight,
        "used": used,
        "count": used.sum(axis=(4, 5)),
        "fx": fx,
        "fy": fy,
        "width": width,
        "height": height,
        "klass": klass,
        "part_of": part_of,
    }


def _dpsroi_forward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, data, rois = op_ctx.xp, inputs[0], inputs[1]
    trans = None if attrs.parsed.no_trans else inputs[2]
    sm = _dpsroi_samples(xp, attrs, data.shape, rois, trans)
    values = (data.reshape(-1)[sm["flat"]] * sm["weight"]).sum(axis=-1)  # (R, D, k, k, s, s)
    total = (values * sm["used"]).sum(axis=(4, 5))
    count = sm["count"]
    put(outputs[0], req[0], xp.where(count > 0, total / xp.maximum(count, 1), 0))
    put(outputs[1], req[1], count)


def _dpsroi_backward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    """Inputs (out_grad, data, rois[, trans]): data gets the bilinear weights, trans their derivative."""
    xp, p = op_ctx.xp, attrs.parsed
    g, data, rois = inputs[:3]
    trans = None if p.no_trans else inputs[3]
    sm = _dpsroi_samples(xp, attrs, data.shape, rois, trans)
    count = sm["count"]
    share = xp.where(count > 0, g / xp.maximum(count, 1), 0)[..., None, None] * sm["used"]  # per sample
    d_data = xp.zeros(data.size, g.dtype)
    xp.add.at(d_data, sm["flat"].reshape(-1), (share[..., None] * sm["weight"]).reshape(-1).astype(g.dtype))
    put(outputs[0], req[0], d_data.reshape(data.shape))
    put(outputs[1], req[1], xp.zeros(rois.shape, rois.dtype))
    if trans is None:
        return
    u = data.reshape(-1)[sm["flat"]]  # the four neighbours (y0x0, y0x1, y1x0, y1x1)
    fx, fy = sm["fx"], sm["fy"]
    d_x = (1 - fy) * (u[..., 1] - u[..., 0]) + fy * (u[..., 3] - u[..., 2])  # d value / d position
    d_y = (1 - fx) * (u[..., 2] - u[..., 0]) + fx * (u[..., 3] - u[..., 1])
    r4 = (slice(None), None, None, None)
    grad_x = (d_x * share).sum(axis=(4, 5)) * p.trans_std * sm["width"][r4]  # (R, D, k, k)
    grad_y = (d_y * share).sum(axis=(4, 5)) * p.trans_std * sm["height"][r4]
    d_trans = xp.zeros(trans.shape, g.dtype)
    k = p.pooled_size
    roi = xp.arange(rois.shape[0])[:, None, None, None]
    klass = xp.asarray(sm["klass"])[None, :, None, None]
    part_h = xp.asarray(sm["part_of"])[None, None, :, None]
    part_w = xp.asarray(sm["part_of"])[None, None, None, :]
    shape = (rois.shape[0], p.output_dim, k, k)
    cells = tuple(xp.broadcast_to(v, shape).reshape(-1) for v in (roi, 2 * klass, part_h, part_w))
    xp.add.at(d_trans, cells, grad_x.reshape(-1).astype(g.dtype))
    xp.add.at(d_trans, (cells[0], cells[1] + 1, cells[2], cells[3]), grad_y.reshape(-1).astype(g.dtype))
    put(outputs[2], req[2], d_trans)


def _dpsroi_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Backward inputs: the visible output's gradient and the forward inputs (top_count is recomputed)."""
    return backward_entries(node, "_backward__contrib_DeformablePSROIPooling", [out_grads[0], *node.inputs])


(
    register("_contrib_DeformablePSROIPooling")
    .describe(
        "Deformable position-sensitive ROI pooling (R-FCN with learned bin offsets): bins average "
        "bilinear samples shifted by trans_std * trans * region size."
    )
    .set_params(DeformablePSROIPoolingParam)
    .set_num_inputs(lambda attrs: len(_dpsroi_inputs(attrs)))
    .set_num_outputs(2)
    .set_num_visible_outputs(1)
    .set_input_names(_dpsroi_inputs)
    .set_output_names(["output", "top_count"])
    .set_infer_shape(_dpsroi_shape)
    .set_infer_type(float_types)
    .set_compute(_dpsroi_forward)
    .set_gradient(_dpsroi_gradient)
)
register_backward(
    "_backward__contrib_DeformablePSROIPooling",
    _dpsroi_backward,
    DeformablePSROIPoolingParam,
    num_inputs=lambda attrs: 1 + len(_dpsroi_inputs(attrs)),
    num_outputs=lambda attrs: len(_dpsroi_inputs(attrs)),
)
