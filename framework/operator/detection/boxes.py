"""Operators on sets of boxes: ``_contrib_box_nms`` (alias ``_contrib_box_non_maximum_suppression``),
``_contrib_box_iou``, ``_contrib_bipartite_matching``, ``_contrib_box_encode``, ``_contrib_box_decode``.

``box_nms`` is batched over every axis but the last two: each (N, width) slice is a list of
records holding a score, four coordinates and optionally a class id. It keeps the valid
records (score above ``valid_thresh``, class not ``background_id``), sorts them by score
(ties keep input order), lets greedy NMS drop overlapping ones, and writes the survivors first,
in score order, with every other row set to -1. A hidden second output (shaped (..., N, 1), as
MXNet's) remembers which input row each output row came from; the backward pass
(``_backward_contrib_box_nms``) uses it to route each output row's gradient back to that input
row, as MXNet does (the rows are copied as they are, even when ``out_format`` converts the
coordinates).

The other four are not differentiable in MXNet (zero gradients), and neither are they here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..grad import elemwise_grad_use_out, zero_grad
from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..params import REQUIRED, OperatorParamError, Param, ParamSet
from ..registry import alias, register
from ..tensor.common import put
from .common import check_rank, one_float_type
from .geometry import BOX_FORMATS, corner_to, decode_offsets, encode_offsets, greedy_nms, pairwise_iou, to_corner

FORMAT_HELP = "'corner' is [xmin, ymin, xmax, ymax], 'center' is [x, y, width, height]."


# ------------------------------------------------------------------ box_nms
class BoxNMSParam(ParamSet):
    overlap_thresh = Param(float, 0.5, "IoU above which the lower-scored of two boxes is suppressed.")
    valid_thresh = Param(float, 0.0, "Only boxes scoring above this take part.")
    topk = Param(int, -1, "Run NMS on the topk highest-scoring valid boxes only; -1: all.")
    coord_start = Param(int, 2, "Index of the first of the four coordinates in each record.")
    score_index = Param(int, 1, "Index of the score in each record.")
    id_index = Param(int, -1, "Index of the class id in each record; -1: no class ids.")
    background_id = Param(int, -1, "Class id to drop before NMS (needs id_index).")
    force_suppress = Param(bool, False, "Suppress across classes too (otherwise only within one class id).")
    in_format = Param(str, "corner", "Box encoding of the input. " + FORMAT_HELP, choices=BOX_FORMATS)
    out_format = Param(str, "corner", "Box encoding of the output. " + FORMAT_HELP, choices=BOX_FORMATS)


def _check_record_width(attrs: Any, width: int) -> None:
    p = attrs.parsed
    if width and p.coord_start + 4 > width:
        raise OperatorParamError(
            f"{attrs.name}: parameter 'coord_start'={p.coord_start} needs 4 coordinates inside records of width {width}"
        )
    for name in ("coord_start", "score_index"):
        if not 0 <= getattr(p, name) < (width or np.inf):
            raise OperatorParamError(
                f"{attrs.name}: parameter '{name}'={getattr(p, name)} is outside records of width {width}"
            )
    if width and p.id_index >= width:
        raise OperatorParamError(f"{attrs.name}: parameter 'id_index'={p.id_index} is outside records of width {width}")


def _box_nms_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape_assign(in_shapes, 0, out_shapes[0], attrs.name, "data")
    data = in_shapes[0]
    if data is None:
        return False
    if len(data) < 2:
        raise InferenceError(f"{attrs.name}: data must be (..., num_boxes, record_width), got shape {tuple(data)}")
    _check_record_width(attrs, data[-1])
    shape_assign(out_shapes, 0, data, attrs.name, "output")
    shape_assign(out_shapes, 1, (*data[:-1], 1), attrs.name, "hidden output (source rows)")
    return shape_known(data)


def _box_nms_forward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, p, data = op_ctx.xp, attrs.parsed, inputs[0]
    n, width = data.shape[-2], data.shape[-1]
    _check_record_width(attrs, width)
    records = data.reshape(-1, n, width)
    score = records[..., p.score_index]
    valid = score > p.valid_thresh
    if p.id_index >= 0:
        valid = valid & (records[..., p.id_index] != p.background_id)
    # valid records first, by descending score; a stable sort keeps tied records in input order
    order = xp.argsort(xp.where(valid, -score, np.inf), axis=1, kind="stable")
    ranked = xp.take_along_axis(records, order[..., None], axis=1)
    candidate = xp.take_along_axis(valid, order, axis=1)
    if p.topk > 0:
        candidate = candidate & (xp.arange(n) < p.topk)
    classes = ranked[..., p.id_index] if p.id_index >= 0 and not p.force_suppress else None
    corners = to_corner(xp, ranked[..., p.coord_start : p.coord_start + 4], p.in_format)
    kept = greedy_nms(xp, corners, candidate, p.overlap_thresh, classes)
    # survivors move to the front, still in score order
    pack = xp.argsort(~kept, axis=1, kind="stable")
    kept = xp.take_along_axis(kept, pack, axis=1)
    rows = xp.take_along_axis(ranked, pack[..., None], axis=1)
    if p.in_format != p.out_format:
        rows = rows.copy()
        corners = to_corner(xp, rows[..., p.coord_start : p.coord_start + 4], p.in_format)
        rows[..., p.coord_start : p.coord_start + 4] = corner_to(xp, corners, p.out_format)
    source = xp.where(kept, xp.take_along_axis(order, pack, axis=1), -1)
    put(outputs[0], req[0], xp.where(kept[..., None], rows, -1).reshape(data.shape))
    put(outputs[1], req[1], source.reshape(*data.shape[:-1], 1))


def _box_nms_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    """Each output row's gradient goes to the input row it came from (hidden output 1)."""
    xp, out_grad, source = op_ctx.xp, inputs[0], inputs[3]
    n, width = out_grad.shape[-2], out_grad.shape[-1]
    out_grad = out_grad.reshape(-1, n, width)
    source = source.reshape(-1, n).astype(np.int64)
    grad = xp.zeros_like(out_grad)
    came_from = source >= 0
    batch = xp.broadcast_to(xp.arange(source.shape[0])[:, None], source.shape)
    grad[batch[came_from], source[came_from]] = out_grad[came_from]
    put(outputs[0], req[0], grad.reshape(outputs[0].shape))


def _box_nms_backward_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape_assign(out_shapes, 0, in_shapes[0], attrs.name, "data gradient")
    shape_assign(out_shapes, 0, in_shapes[2], attrs.name, "data gradient")
    return shape_known(out_shapes[0])


def _box_nms_backward_type(attrs: Any, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, in_types[0], attrs.name, "data gradient")
    return out_types[0] is not None


(
    register("_contrib_box_nms")
    .describe(
        "Non-maximum suppression of scored boxes, batched over leading axes: survivors first in descending "
        "score order, other rows -1."
    )
    .set_params(BoxNMSParam)
    .set_num_inputs(1)
    .set_num_outputs(2)
    .set_num_visible_outputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_box_nms_shape)
    .set_infer_type(one_float_type(["data"]))
    .set_compute(_box_nms_forward)
    .set_gradient(elemwise_grad_use_out("_backward_contrib_box_nms"))
)
alias("_contrib_box_non_maximum_suppression", "_contrib_box_nms")
(
    register("_backward_contrib_box_nms")
    .set_params(BoxNMSParam)
    .set_num_inputs(4)
    .set_num_outputs(1)
    .set_infer_shape(_box_nms_backward_shape)
    .set_infer_type(_box_nms_backward_type)
    .set_compute(_box_nms_backward)
    .set_is_backward()
)


# ------------------------------------------------------------------ box_iou
class BoxIoUParam(ParamSet):
    format = Param(str, "corner", "Box encoding of both inputs. " + FORMAT_HELP, choices=BOX_FORMATS)


def _check_boxes(op_name: str, shape: ShapeT, what: str) -> None:
    if shape is not None and (len(shape) < 1 or shape[-1] not in (0, 4)):
        raise InferenceError(f"{op_name}: {what} must hold boxes on its last axis (..., 4), got shape {tuple(shape)}")


def _box_iou_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    lhs, rhs = in_shapes
    _check_boxes(attrs.name, lhs, "lhs")
    _check_boxes(attrs.name, rhs, "rhs")
    for i, shape in enumerate((lhs, rhs)):
        if shape is not None:
            shape_assign(in_shapes, i, (*shape[:-1], 4), attrs.name, ("lhs", "rhs")[i])
    lhs, rhs = in_shapes
    if lhs is None or rhs is None:
        return False
    shape_assign(out_shapes, 0, (*lhs[:-1], *rhs[:-1]), attrs.name, "output")
    out = out_shapes[0]  # a known output fills unknown dimensions of the inputs
    shape_assign(in_shapes, 0, (*out[: len(lhs) - 1], 4), attrs.name, "lhs")
    shape_assign(in_shapes, 1, (*out[len(lhs) - 1 :], 4), attrs.name, "rhs")
    return shape_known(in_shapes[0]) and shape_known(in_shapes[1])


def box_iou(xp: Any, lhs: Any, rhs: Any, box_format: str) -> Any:
    """IoU of every box of ``lhs`` (..., 4) with every box of ``rhs`` (..., 4): lhs.shape[:-1] + rhs.shape[:-1]."""
    a = to_corner(xp, lhs.reshape(-1, 4), box_format)
    b = to_corner(xp, rhs.reshape(-1, 4), box_format)
    return pairwise_iou(xp, a, b).reshape(lhs.shape[:-1] + rhs.shape[:-1])


def _box_iou_forward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    put(outputs[0], req[0], box_iou(op_ctx.xp, inputs[0], inputs[1], attrs.parsed.format))


(
    register("_contrib_box_iou")
    .describe("Intersection over union of every lhs box with every rhs box: output lhs.shape[:-1] + rhs.shape[:-1].")
    .set_params(BoxIoUParam)
    .set_num_inputs(2)
    .set_input_names(["lhs", "rhs"])
    .set_infer_shape(_box_iou_shape)
    .set_infer_type(one_float_type(["lhs", "rhs"]))
    .set_compute(_box_iou_forward)
    .set_gradient(zero_grad)
)


# ------------------------------------------------------------------ bipartite_matching
class BipartiteMatchingParam(ParamSet):
    is_ascend = Param(bool, False, "Match the lowest scores first (then threshold is an upper bound).")
    threshold = Param(float, REQUIRED, "Only scores above it (below it with is_ascend) are matched.")
    topk = Param(int, -1, "Stop once more than topk matches are made (so topk + 1, as in MXNet); -1: no limit.")


def _bipartite_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    data = in_shapes[0]
    if data is None and out_shapes[0] is not None and out_shapes[1] is not None:
        shape_assign(in_shapes, 0, (*out_shapes[0], out_shapes[1][-1]), attrs.name, "data")
        data = in_shapes[0]
    if data is None:
        return False
    if len(data) < 2:
        raise InferenceError(f"{attrs.name}: data must be (..., N, M) scores, got shape {tuple(data)}")
    shape_assign(out_shapes, 0, data[:-1], attrs.name, "row matches")
    shape_assign(out_shapes, 1, (*data[:-2], data[-1]), attrs.name, "column matches")
    return shape_known(data)


def bipartite_match(xp: Any, scores: Any, threshold: float, is_ascend: bool, topk: int) -> tuple[Any, Any]:
    """Greedy matching on (B, N, M) scores: the best remaining pair is matched while it passes ``threshold``
    (strictly). MXNet 1.9.1 stops only once the match count *exceeds* ``topk``, so ``topk`` > 0 allows
    ``topk + 1`` matches; so does this function, to give the same results.

    Returns the column matched to each row (B, N) and the row matched to each column (B, M), -1 when
    unmatched. One step per match (at most min(N, M)), each a masked argmax over every batch at once.
    """
    b, n, m = scores.shape
    key = -scores if is_ascend else scores  # always pick the largest key
    limit = -threshold if is_ascend else threshold
    row_match = xp.full((b, n), -1, dtype=np.int64)
    col_match = xp.full((b, m), -1, dtype=np.int64)
    active = xp.ones(b, dtype=bool)
    batch = xp.arange(b)
    steps = min(n, m) if topk <= 0 else min(n, m, topk + 1)
    for _ in range(steps):
        free = (row_match == -1)[:, :, None] & (col_match == -1)[:, None, :]
        masked = xp.where(free, key, -np.inf).reshape(b, -1)
        best = masked.argmax(axis=1)  # first of equal pairs in row-major order
        active = active & (masked[batch, best] > limit)
        if not bool(active.any()):
            break
        rows, cols = best // m, best % m
        row_match[batch[active], rows[active]] = cols[active]
        col_match[batch[active], cols[active]] = rows[active]
    return row_match, col_match


def _bipartite_forward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    p, data = attrs.parsed, inputs[0]
    rows, cols = bipartite_match(op_ctx.xp, data.reshape(-1, *data.shape[-2:]), p.threshold, p.is_ascend, p.topk)
    put(outputs[0], req[0], rows.reshape(outputs[0].shape))
    put(outputs[1], req[1], cols.reshape(outputs[1].shape))


(
    register("_contrib_bipartite_matching")
    .describe("Greedy bipartite matching of rows to columns by score; outputs each row's and each column's match.")
    .set_params(BipartiteMatchingParam)
    .set_num_inputs(1)
    .set_num_outputs(2)
    .set_input_names(["data"])
    .set_infer_shape(_bipartite_shape)
    .set_infer_type(one_float_type(["data"]))
    .set_compute(_bipartite_forward)
    .set_gradient(zero_grad)
)


# ------------------------------------------------------------------ box_encode
_ENCODE_INPUTS = ["samples", "matches", "anchors", "refs", "means", "stds"]


def _box_encode_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name = attrs.name
    for i in range(2):
        shape_assign(in_shapes, 2, out_shapes[i], name, "anchors")
    samples, matches, anchors, refs = in_shapes[:4]
    for shape, what, rank in (
        (samples, "samples", 2),
        (matches, "matches", 2),
        (anchors, "anchors", 3),
        (refs, "refs", 3),
    ):
        check_rank(name, shape, what, rank, "(B, N)" if rank == 2 else "(B, N, 4)")
    for i in (0, 1):
        if in_shapes[i] is not None:
            shape_assign(in_shapes, 2, (*in_shapes[i], 4), name, "anchors")
    anchors = in_shapes[2]
    if anchors is not None:
        shape_assign(in_shapes, 2, (*anchors[:2], 4), name, "anchors")
        anchors = in_shapes[2]
        shape_assign(in_shapes, 0, anchors[:2], name, "samples")
        shape_assign(in_shapes, 1, anchors[:2], name, "matches")
        shape_assign(in_shapes, 3, (anchors[0], 0, 4), name, "refs")
        for i in range(2):
            shape_assign(out_shapes, i, anchors, name, ("targets", "masks")[i])
    shape_assign(in_shapes, 4, (4,), name, "means")
    shape_assign(in_shapes, 5, (4,), name, "stds")
    return all(shape_known(s) for s in in_shapes)


def _box_encode_forward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp = op_ctx.xp
    samples, matches, anchors, refs, means, stds = inputs
    matched = xp.take_along_axis(refs, matches.astype(np.int64)[..., None], axis=1)  # (B, N, 4)
    positive = (samples > 0.5)[..., None]
    matched = xp.where(positive, matched, anchors)  # only positives are encoded; the others give zeros
    targets = (encode_offsets(xp, anchors, matched) - means) / stds
    put(outputs[0], req[0], xp.where(positive, targets, 0))
    put(outputs[1], req[1], xp.broadcast_to(positive, targets.shape))


(
    register("_contrib_box_encode")
    .describe(
        "Regression targets of matched reference boxes relative to anchors (centre offsets, log sizes), "
        "normalised by means and stds, for positive samples; and their masks."
    )
    .set_num_inputs(6)
    .set_num_outputs(2)
    .set_input_names(_ENCODE_INPUTS)
    .set_infer_shape(_box_encode_shape)
    .set_infer_type(one_float_type(_ENCODE_INPUTS))
    .set_compute(_box_encode_forward)
    .set_gradient(zero_grad)
)


# ------------------------------------------------------------------ box_decode
class BoxDecodeParam(ParamSet):
    std0 = Param(float, 1.0, "Scale of the 1st offset (x).")
    std1 = Param(float, 1.0, "Scale of the 2nd offset (y).")
    std2 = Param(float, 1.0, "Scale of the 3rd offset (log width).")
    std3 = Param(float, 1.0, "Scale of the 4th offset (log height).")
    clip = Param(float, -1.0, "If positive, the scaled log-size offsets are capped at this value.")
    format = Param(str, "center", "Box encoding of the anchors. " + FORMAT_HELP, choices=BOX_FORMATS)


def _box_decode_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name = attrs.name
    shape_assign(in_shapes, 0, out_shapes[0], name, "data")
    data, anchors = in_shapes
    check_rank(name, data, "data", 3, "(B, N, 4)")
    check_rank(name, anchors, "anchors", 3, "(1, N, 4)")
    if data is not None:
        shape_assign(in_shapes, 0, (*data[:2], 4), name, "data")
        shape_assign(out_shapes, 0, in_shapes[0], name, "output")
        if anchors is not None and anchors[0] not in (0, 1) and data[0] and anchors[0] != data[0]:
            raise InferenceError(f"{name}: anchors {tuple(anchors)} must have batch 1 or that of data {tuple(data)}")
        shape_assign(in_shapes, 1, (anchors[0] if anchors is not None else 0, data[1], 4), name, "anchors")
    return shape_known(in_shapes[0]) and shape_known(in_shapes[1])


def _box_decode_forward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, p = op_ctx.xp, attrs.parsed
    data, anchors = inputs
    offsets = data * xp.asarray([p.std0, p.std1, p.std2, p.std3], dtype=data.dtype)
    if p.clip > 0:
        offsets[..., 2:] = xp.minimum(offsets[..., 2:], p.clip)
    put(outputs[0], req[0], decode_offsets(xp, to_corner(xp, anchors, p.format), offsets))


(
    register("_contrib_box_decode")
    .describe("Corner boxes from offsets (scaled by std0..3) relative to anchors; the inverse of box_encode.")
    .set_params(BoxDecodeParam)
    .set_num_inputs(2)
    .set_input_names(["data", "anchors"])
    .set_infer_shape(_box_decode_shape)
    .set_infer_type(one_float_type(["data", "anchors"]))
    .set_compute(_box_decode_forward)
    .set_gradient(zero_grad)
)
