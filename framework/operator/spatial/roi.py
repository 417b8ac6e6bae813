"""Pooling regions of interest: ``ROIPooling`` (max) and ``_contrib_PSROIPooling``
(position-sensitive average), as in Fast R-CNN and R-FCN.

Each row of ``rois`` is ``[batch_index, x1, y1, x2, y2]`` in image coordinates; scaled by
``spatial_scale`` it names a box of the (N, C, H, W) feature map, cut into a
pooled_h x pooled_w grid of bins whose edges are rounded outwards (floor of the start,
ceil of the end), clipped to the map. A bin reduces its cells to one value.

Vectorised over all ROIs and bins at once: every bin gets index ranges padded to the
longest bin (``L`` rows, ``L'`` columns) plus a validity mask; one gather reads
(R, bins, L, L', ...) values and a masked max or mean reduces them. The backward pass
scatters the output gradient back onto the cells with ``xp.add.at`` (max pooling: onto the
cell that won, remembered in ROIPooling's hidden ``maxidx`` output, as in MXNet).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..node import Entry, Node, NodeAttrs
from ..params import REQUIRED, OperatorParamError, Param, ParamSet, Shape
from ..registry import register
from ..tensor.common import backward_entries, put, register_backward


def c_round(xp: Any, x: Any) -> Any:
    """C's ``round``: halves away from zero (NumPy rounds halves to even)."""
    return xp.sign(x) * xp.floor(xp.abs(x) + 0.5)


def bin_ranges(xp: Any, start: Any, end: Any, limit: int) -> tuple[Any, Any]:
    """Per-bin cell indices padded to the longest bin: (R, bins, L) indices and validity mask."""
    start, end = start.clip(0, limit), end.clip(0, limit)
    longest = max(int((end - start).max()) if end.size else 1, 1)
    index = start[..., None] + xp.arange(longest)
    return index.clip(0, limit - 1), index < end[..., None]


def _check_inputs(name: str, data: ShapeT, rois: ShapeT) -> None:
    if data is not None and len(data) != 4:
        raise InferenceError(f"{name}: data must be 4-d (N, C, H, W), got shape {tuple(data)}")
    if rois is not None and (len(rois) != 2 or rois[1] not in (0, 5)):
        raise InferenceError(f"{name}: rois must be (R, 5) rows [batch_index, x1, y1, x2, y2], got {tuple(rois)}")


def _float_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    """data, rois and every output share one float dtype."""
    known = next((t for t in [*in_types, *out_types] if t is not None), None)
    if known is None:
        return False
    if np.dtype(known).kind != "f":
        raise InferenceError(f"{attrs.name}: needs floating-point data and rois, got {known}")
    for i in range(len(in_types)):
        type_assign(in_types, i, known, attrs.name, ("data", "rois")[i])
    for i in range(len(out_types)):
        type_assign(out_types, i, known, attrs.name, f"output {i}")
    return True


def _visible_gradient(backward: str):
    """A backward node of (visible output's gradient, data, rois[, hidden outputs]); rois get zeros."""

    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        extra = [Entry(node, i) for i in range(1, node.num_outputs())]
        return backward_entries(node, backward, [out_grads[0], *node.inputs, *extra], 2)

    return gradient


# ------------------------------------------------------------------ ROIPooling
class ROIPoolingParam(ParamSet):
    pooled_size = Param(Shape, REQUIRED, "Output (height, width) of every region.")
    spatial_scale = Param(float, REQUIRED, "Feature-map size over image size (1 / total stride).", low=0.0)


def _pooled(attrs: NodeAttrs) -> tuple[int, int]:
    size = tuple(attrs.parsed.pooled_size)
    if len(size) != 2 or min(size) < 1:
        raise OperatorParamError(f"{attrs.name}: pooled_size must be two positive sizes (h, w), got {size}")
    return size[0], size[1]


def _roi_pooling_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name, (ph, pw) = attrs.name, _pooled(attrs)
    data, rois = in_shapes
    _check_inputs(name, data, rois)
    shape_assign(in_shapes, 1, (0, 5), name, "rois")
    rois = in_shapes[1]
    channels = data[1] if data is not None else 0
    for i in range(2):
        shape_assign(out_shapes, i, (rois[0], channels, ph, pw), name, ("output", "maxidx")[i])
    if out_shapes[0] is not None:
        shape_assign(in_shapes, 1, (out_shapes[0][0], 5), name, "rois")
    return shape_known(in_shapes[0]) and shape_known(in_shapes[1])


def roi_pool_max(xp: Any, data: Any, rois: Any, pooled: tuple[int, int], scale: float) -> tuple[Any, Any]:
    """(R, C, ph, pw) bin maxima and the winning cell's ``h * W + w`` (-1 for an empty bin)."""
    _, c, h, w = data.shape
    ph, pw = pooled
    batch = rois[:, 0].astype(np.int64)
    scale = rois.dtype.type(scale)
    x1, y1, x2, y2 = (c_round(xp, rois[:, k] * scale).astype(np.int64) for k in range(1, 5))
    # bin edges in the ROIs' float type, as MXNet computes them (float32 rounding decides ceil at the edges)
    bin_h = xp.maximum(y2 - y1 + 1, 1).astype(rois.dtype) / rois.dtype.type(ph)
    bin_w = xp.maximum(x2 - x1 + 1, 1).astype(rois.dtype) / rois.dtype.type(pw)
    steps_h, steps_w = xp.arange(ph + 1, dtype=rois.dtype), xp.arange(pw + 1, dtype=rois.dtype)
    rows, row_ok = bin_ranges(
        xp,
        xp.floor(steps_h[:-1] * bin_h[:, None]).astype(np.int64) + y1[:, None],
        xp.ceil(steps_h[1:] * bin_h[:, None]).astype(np.int64) + y1[:, None],
        h,
    )
    cols, col_ok = bin_ranges(
        xp,
        xp.floor(steps_w[:-1] * bin_w[:, None]).astype(np.int64) + x1[:, None],
        xp.ceil(steps_w[1:] * bin_w[:, None]).astype(np.int64) + x1[:, None],
        w,
    )
    # (R, ph, L, pw, L', C): every bin's cells, then (R, C, ph, pw, L * L')
    cells = data.transpose(0, 2, 3, 1)[
        batch[:, None, None, None, None], rows[:, :, :, None, None], cols[:, None, None, :, :]
    ]
    valid = row_ok[:, :, :, None, None] & col_ok[:, None, None, :, :]
    cells = xp.where(valid[..., None], cells, -xp.inf).transpose(0, 5, 1, 3, 2, 4)
    r, lw = cells.shape[0], cols.shape[-1]
    cells = cells.reshape(r, c, ph, pw, -1)
    winner = cells.argmax(axis=-1)  # first maximum in row-major order, as MXNet's scan
    best = xp.take_along_axis(cells, winner[..., None], axis=-1)[..., 0]
    empty = ~valid.any(axis=(2, 4))[:, None]  # (R, 1, ph, pw)
    roi = xp.arange(r)[:, None, None, None]
    win_h = rows[roi, xp.arange(ph)[:, None], winner // lw]
    win_w = cols[roi, xp.arange(pw), winner % lw]
    index = xp.where(empty, -1, win_h * w + win_w)
    return xp.where(empty, 0, best), index


def _roi_pooling_forward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    data, rois = inputs
    pooled, index = roi_pool_max(op_ctx.xp, data, rois, _pooled(attrs), attrs.parsed.spatial_scale)
    put(outputs[0], req[0], pooled)
    put(outputs[1], req[1], index)


def _roi_pooling_backward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    """Inputs (out_grad, data, rois, maxidx): each bin's gradient goes to the cell that won it."""
    xp, (g, data, rois, index) = op_ctx.xp, inputs[:4]
    n, c, h, w = data.shape
    batch = rois[:, 0].astype(np.int64)[:, None, None, None]
    index = index.astype(np.int64)
    flat = (batch * c + xp.arange(c)[None, :, None, None]) * (h * w) + index
    won = index >= 0
    d_data = xp.zeros(n * c * h * w, g.dtype)
    xp.add.at(d_data, flat[won], g[won])
    put(outputs[0], req[0], d_data.reshape(data.shape))
    put(outputs[1], req[1], xp.zeros(rois.shape, rois.dtype))


(
    register("ROIPooling")
    .describe("Max-pools every region of interest of (N, C, H, W) features to (R, C, ph, pw).")
    .set_params(ROIPoolingParam)
    .set_num_inputs(2)
    .set_num_outputs(2)
    .set_num_visible_outputs(1)
    .set_input_names(["data", "rois"])
    .set_output_names(["output", "maxidx"])
    .set_infer_shape(_roi_pooling_shape)
    .set_infer_type(_float_type)
    .set_compute(_roi_pooling_forward)
    .set_gradient(_visible_gradient("_backward_ROIPooling"))
)
register_backward("_backward_ROIPooling", _roi_pooling_backward, ROIPoolingParam, num_inputs=4, num_outputs=2)


# ------------------------------------------------------------------ PSROIPooling
class PSROIPoolingParam(ParamSet):
    spatial_scale = Param(float, REQUIRED, "Feature-map size over image size (1 / total stride).", low=0.0)
    output_dim = Param(int, REQUIRED, "Channels of the output.", low=1)
    pooled_size = Param(int, REQUIRED, "Bins per side of every region.", low=1)
    group_size = Param(int, 0, "Position-sensitive groups per side (0: pooled_size).", low=0)


def _group(attrs: NodeAttrs) -> int:
    return attrs.parsed.group_size or attrs.parsed.pooled_size


def _psroi_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name, p = attrs.name, attrs.parsed
    data, rois = in_shapes
    _check_inputs(name, data, rois)
    need = p.output_dim * _group(attrs) ** 2
    if data is not None and data[1] and data[1] != need:
        raise InferenceError(f"{name}: data {tuple(data)} must have output_dim * group_size^2 = {need} channels")
    shape_assign(in_shapes, 1, (0, 5), name, "rois")
    shape_assign(out_shapes, 0, (in_shapes[1][0], p.output_dim, p.pooled_size, p.pooled_size), name, "output")
    if out_shapes[0] is not None:
        shape_assign(in_shapes, 1, (out_shapes[0][0], 5), name, "rois")
    return shape_known(in_shapes[0]) and shape_known(in_shapes[1])


def _psroi_cells(xp: Any, attrs: NodeAttrs, data_shape: tuple[int, ...], rois: Any) -> tuple:
    """Flat data indices (R, D, k, k, L, L') of every bin's cells, their mask, and bin areas."""
    p, k, group = attrs.parsed, attrs.parsed.pooled_size, _group(attrs)
    _, c, h, w = data_shape
    batch = rois[:, 0].astype(np.int64)
    scale = rois.dtype.type(p.spatial_scale)
    x1, y1 = (c_round(xp, rois[:, i]) * scale for i in (1, 2))
    x2, y2 = ((c_round(xp, rois[:, i]) + 1) * scale for i in (3, 4))
    # bin edges in the ROIs' float type, as MXNet computes them (float32 rounding decides ceil at the edges)
    bin_h = xp.maximum(y2 - y1, rois.dtype.type(0.1)) / rois.dtype.type(k)
    bin_w = xp.maximum(x2 - x1, rois.dtype.type(0.1)) / rois.dtype.type(k)
    steps = xp.arange(k, dtype=rois.dtype)
    rows, row_ok = bin_ranges(
        xp,
        xp.floor(steps * bin_h[:, None] + y1[:, None]).astype(np.int64),
        xp.ceil((steps + 1) * bin_h[:, None] + y1[:, None]).astype(np.int64),
        h,
    )
    cols, col_ok = bin_ranges(
        xp,
        xp.floor(steps * bin_w[:, None] + x1[:, None]).astype(np.int64),
        xp.ceil((steps + 1) * bin_w[:, None] + x1[:, None]).astype(np.int64),
        w,
    )
    gh = (np.arange(k) * group // k).clip(0, group - 1)  # the channel group of each bin row / column
    channel = (xp.arange(p.output_dim)[:, None, None] * group + xp.asarray(gh)[:, None]) * group + xp.asarray(gh)
    flat = (
        (batch[:, None, None, None, None, None] * c + channel[None, :, :, :, None, None]) * h
        + rows[:, None, :, None, :, None]
    ) * w + cols[:, None, None, :, None, :]
    valid = row_ok[:, None, :, None, :, None] & col_ok[:, None, None, :, None, :]
    area = valid.sum(axis=(4, 5))
    return flat, valid, area


def _psroi_forward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, (data, rois) = op_ctx.xp, inputs
    flat, valid, area = _psroi_cells(xp, attrs, data.shape, rois)
    total = (data.reshape(-1)[flat] * valid).sum(axis=(4, 5))
    put(outputs[0], req[0], xp.where(area > 0, total / xp.maximum(area, 1), 0))


def _psroi_backward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    """Inputs (out_grad, data, rois): each bin's gradient is shared equally by its cells."""
    xp, (g, data, rois) = op_ctx.xp, inputs[:3]
    flat, valid, area = _psroi_cells(xp, attrs, data.shape, rois)
    share = xp.where(area > 0, g / xp.maximum(area, 1), 0)
    d_data = xp.zeros(data.size, g.dtype)
    valid = xp.broadcast_to(valid, flat.shape)
    xp.add.at(d_data, flat[valid], xp.broadcast_to(share[..., None, None], flat.shape)[valid])
    put(outputs[0], req[0], d_data.reshape(data.shape))
    put(outputs[1], req[1], xp.zeros(rois.shape, rois.dtype))


(
    register("_contrib_PSROIPooling")
    .describe(
        "Position-sensitive ROI average pooling (R-FCN): bin (i, j) of output channel d averages input "
        "channel (d * group + gi) * group + gj."
    )
    .set_params(PSROIPoolingParam)
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_input_names(["data", "rois"])
    .set_infer_shape(_psroi_shape)
    .set_infer_type(_float_type)
    .set_compute(_psroi_forward)
    .set_gradient(_visible_gradient("_backward_contrib_PSROIPooling"))
)
register_backward("_backward_contrib_PSROIPooling", _psroi_backward, PSROIPoolingParam, num_inputs=3, num_outputs=2)
