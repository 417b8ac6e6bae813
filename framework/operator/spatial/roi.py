"""Pooling regions of interest: ``ROIPooling`` (max), ``_contrib_PSROIPooling``
(position-sensitive average) and ``_contrib_ROIAlign`` (bilinear samples), as in Fast R-CNN,
R-FCN and Mask R-CNN.

Each row of ``rois`` is ``[batch_index, x1, y1, x2, y2]`` in image coordinates; scaled by
``spatial_scale`` it names a box of the (N, C, H, W) feature map, cut into a
pooled_h x pooled_w grid of bins whose edges are rounded outwards (floor of the start,
ceil of the end), clipped to the map. A bin reduces its cells to one value.

Vectorised over all ROIs and bins at once: every bin gets index ranges padded to the
longest bin (``L`` rows, ``L'`` columns) plus a validity mask; one gather reads
(R, bins, L, L', ...) values and a masked max or mean reduces them. The backward pass
scatters the output gradient back onto the cells with ``xp.add.at`` (max pooling: onto the
cell that won, remembered in ROIPooling's hidden ``maxidx`` output, as in MXNet).

ROIAlign does not round: each bin averages bilinear samples at fractional positions, and
as for ``resample``'s operators the weights factor per axis, so every ROI is two small
matrices (bins x H and bins x W) and the pooling is two matrix products per image of the batch.
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


def pooled_size(attrs: NodeAttrs) -> tuple[int, int]:
    """``pooled_size`` as ``(h, w)``, checked; every ROI operator here (roi.py, roi_sampled.py) reads it so."""
    size = tuple(attrs.parsed.pooled_size)
    if len(size) != 2 or min(size) < 1:
        raise OperatorParamError(f"{attrs.name}: pooled_size must be two positive sizes (h, w), got {size}")
    return size[0], size[1]


def _roi_pooling_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name, (ph, pw) = attrs.name, pooled_size(attrs)
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
    pooled, index = roi_pool_max(op_ctx.xp, data, rois, pooled_size(attrs), attrs.parsed.spatial_scale)
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
    .set_gradient(_visible_gradient("_backward__contrib_PSROIPooling"))
)
register_backward("_backward__contrib_PSROIPooling", _psroi_backward, PSROIPoolingParam, num_inputs=3, num_outputs=2)


# ------------------------------------------------------------------ ROIAlign
class ROIAlignParam(ParamSet):
    pooled_size = Param(Shape, REQUIRED, "Output (height, width) of every region.")
    spatial_scale = Param(float, REQUIRED, "Feature-map size over image size (1 / total stride).", low=0.0)
    sample_ratio = Param(int, -1, "Sample points per bin side; <= 0 adapts to the bin size (ceil).")
    position_sensitive = Param(bool, False, "Bin (i, j) of output channel c reads input channel (c * ph + i) * pw + j.")
    aligned = Param(bool, False, "Shift by half a pixel (Detectron2's aligned ROIAlign).")


def _roi_align_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name, (ph, pw) = attrs.name, pooled_size(attrs)
    data, rois = in_shapes
    _check_inputs(name, data, rois)
    channels = data[1] if data is not None else 0
    if attrs.parsed.position_sensitive and channels:
        if channels % (ph * pw):
            raise InferenceError(f"{name}: position-sensitive data {tuple(data)} needs channels divisible by {ph * pw}")
        channels //= ph * pw
    shape_assign(in_shapes, 1, (0, 5), name, "rois")
    shape_assign(out_shapes, 0, (in_shapes[1][0], channels, ph, pw), name, "output")
    if out_shapes[0] is not None:
        shape_assign(in_shapes, 1, (out_shapes[0][0], 5), name, "rois")
    return shape_known(in_shapes[0]) and shape_known(in_shapes[1])


def _axis_samples(xp: Any, start: Any, length: Any, bins: int, grid: Any, size: int, dtype: Any) -> Any:
    """Per ROI, the (bins, size) matrix summing the bilinear weights of one axis' sample points.

    Sample ``s`` of bin ``b`` sits at ``start + (b + (s + 0.5) / grid) * length / bins``; samples
    more than one pixel outside the map weigh 0, the others are clamped into the map and split
    between their two neighbouring cells. ROIs with fewer samples (``grid``) than the longest
    are padded with unused samples.
    """
    r = start.shape[0]
    longest = max(int(grid.max()) if grid.size else 1, 1)
    step = (xp.arange(longest, dtype=dtype) + 0.5) / grid[:, None, None]  # (R, 1, longest)
    bin_index = xp.arange(bins, dtype=dtype)[None, :, None]
    pos = start[:, None, None] + (bin_index + step) * (length / bins)[:, None, None]  # (R, bins, longest)
    used = (xp.arange(longest) < grid[:, None, None]) & (pos >= -1.0) & (pos <= size)
    pos = xp.maximum(pos, 0)
    low = xp.floor(pos).astype(np.int64)
    at_edge = low >= size - 1
    low = xp.where(at_edge, size - 1, low)
    high = xp.where(at_edge, size - 1, low + 1)
    frac = xp.where(at_edge, 0, pos - low)
    matrix = xp.zeros((r, bins, size), dtype)
    roi = xp.arange(r)[:, None, None]
    row = xp.arange(bins)[None, :, None]
    xp.add.at(matrix, (roi, row, low), ((1 - frac) * used).astype(dtype))
    xp.add.at(matrix, (roi, row, high), (frac * used).astype(dtype))
    return matrix


def roi_align_maps(xp: Any, attrs: NodeAttrs, data_shape: tuple[int, ...], rois: Any) -> tuple[Any, Any, Any]:
    """(R, ph, H) and (R, pw, W) sample-weight matrices (already divided by the sample count), batch indices."""
    p, (ph, pw) = attrs.parsed, pooled_size(attrs)
    h, w = data_shape[2:]
    dtype = np.dtype(rois.dtype) if np.dtype(rois.dtype).kind == "f" else np.dtype(np.float64)
    rois = rois.astype(dtype, copy=False)
    shift = dtype.type(0.5 if p.aligned else 0.0)
    scale = dtype.type(p.spatial_scale)
    x1, y1, x2, y2 = (rois[:, i] * scale - shift for i in range(1, 5))
    height, width = y2 - y1, x2 - x1
    if not p.aligned:
        height, width = xp.maximum(height, 1), xp.maximum(width, 1)
    if p.sample_ratio > 0:
        grid_h = grid_w = xp.full(rois.shape[0], p.sample_ratio, dtype)
    else:
        grid_h, grid_w = xp.ceil(height / ph), xp.ceil(width / pw)
    a_h = _axis_samples(xp, y1, height, ph, grid_h, h, dtype)
    a_w = _axis_samples(xp, x1, width, pw, grid_w, w, dtype)
    count = xp.maximum(grid_h * grid_w, 1)
    return a_h / count[:, None, None], a_w, rois[:, 0].astype(np.int64)


def pool_image(image: Any, a_h: Any, a_w: Any) -> Any:
    """``a_h[r] @ image[c] @ a_w[r].T`` for every ROI r and channel c: (R, C, ph, pw), as two GEMMs."""
    c, h, w = image.shape
    r, pw = a_w.shape[:2]
    cols = (image.reshape(c * h, w) @ a_w.reshape(r * pw, w).T).reshape(c, h, r, pw)  # contract W
    rows = a_h @ cols.transpose(2, 1, 0, 3).reshape(r, h, c * pw)  # contract H, batched over ROIs
    return rows.reshape(r, -1, c, pw).transpose(0, 2, 1, 3)


def unpool_image(g: Any, a_h: Any, a_w: Any) -> Any:
    """The adjoint of :func:`pool_image`: sum over ROIs of ``a_h[r].T @ g[r, c] @ a_w[r]``, (C, H, W)."""
    r, c, ph, pw = g.shape
    h, w = a_h.shape[2], a_w.shape[2]
    rows = a_h.transpose(0, 2, 1) @ g.transpose(0, 2, 1, 3).reshape(r, ph, c * pw)  # (R, H, C * pw)
    rows = rows.reshape(r, h, c, pw).transpose(2, 1, 0, 3).reshape(c * h, r * pw)
    return (rows @ a_w.reshape(r * pw, w)).reshape(c, h, w)


def _roi_align_forward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, (data, rois) = op_ctx.xp, inputs
    a_h, a_w, batch = roi_align_maps(xp, attrs, data.shape, rois)
    full = xp.zeros((rois.shape[0], data.shape[1], a_h.shape[1], a_w.shape[1]), a_h.dtype)
    for n in range(data.shape[0]):  # a loop over the images of the batch: each ROI reads one
        sel = batch == n
        if sel.any():
            full[sel] = pool_image(data[n].astype(a_h.dtype, copy=False), a_h[sel], a_w[sel])
    put(outputs[0], req[0], _select_positions(xp, attrs, full))


def _select_positions(xp: Any, attrs: NodeAttrs, full: Any) -> Any:
    """Position-sensitive: bin (i, j) of output channel c keeps input channel (c * ph + i) * pw + j."""
    if not attrs.parsed.position_sensitive:
        return full
    r, c, ph, pw = full.shape
    per_bin = full.reshape(r, c // (ph * pw), ph, pw, ph, pw)
    i, j = xp.arange(ph)[:, None], xp.arange(pw)
    return per_bin[:, :, i, j, i, j]


def _roi_align_backward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    """Inputs (out_grad, data, rois): the transposed weight maps spread each bin's gradient."""
    xp, (g, data, rois) = op_ctx.xp, inputs[:3]
    a_h, a_w, batch = roi_align_maps(xp, attrs, data.shape, rois)
    g = g.astype(a_h.dtype)
    if attrs.parsed.position_sensitive:
        r, c, ph, pw = g.shape
        spread = xp.zeros((r, c, ph, pw, ph, pw), g.dtype)
        i, j = xp.arange(ph)[:, None], xp.arange(pw)
        spread[:, :, i, j, i, j] = g
        g = spread.reshape(r, c * ph * pw, ph, pw)
    d_data = xp.zeros(data.shape, a_h.dtype)
    for n in range(data.shape[0]):
        sel = batch == n
        if sel.any():
            d_data[n] = unpool_image(g[sel], a_h[sel], a_w[sel])
    put(outputs[0], req[0], d_data)
    put(outputs[1], req[1], xp.zeros(rois.shape, rois.dtype))


(
    register("_contrib_ROIAlign")
    .describe(
        "ROI Align (Mask R-CNN): every bin averages bilinear samples of the region, no rounding of the "
        "region's edges; optionally position-sensitive."
    )
    .set_params(ROIAlignParam)
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_input_names(["data", "rois"])
    .set_infer_shape(_roi_align_shape)
    .set_infer_type(_float_type)
    .set_compute(_roi_align_forward)
    .set_gradient(_visible_gradient("_backward_ROIAlign"))
)
register_backward("_backward_ROIAlign", _roi_align_backward, ROIAlignParam, num_inputs=3, num_outputs=2)
