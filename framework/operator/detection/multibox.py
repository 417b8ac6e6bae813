"""SSD's three operators: ``_contrib_MultiBoxPrior`` (anchors), ``_contrib_MultiBoxTarget`` (training
targets) and ``_contrib_MultiBoxDetection`` (decoded, suppressed detections).

Anchors are corner boxes in image-relative coordinates (0..1), ``A`` per feature-map cell: every
size with the first ratio, then the first size with every other ratio. A target is an anchor's
matched ground truth encoded as centre offsets and log sizes (``geometry.encode_offsets``) divided
by ``variances``; a detection decodes the same encoding (``geometry.decode_offsets``). Matching
follows SSD: first each ground truth takes its best free anchor (greedy, best pair first), then
every other anchor whose best IoU exceeds ``overlap_threshold`` is positive too; the rest are
negatives (class 0), or, with negative mining, only the hardest of them (lowest background
probability), the others ignored. As in MXNet these operators give their inputs zero gradients
and accept float32 only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..grad import zero_grad
from ..infer import InferenceError, ShapeT, shape_assign, shape_known
from ..params import FloatTuple, OperatorParamError, Param, ParamSet
from ..registry import register
from ..tensor.common import put
from .common import check_rank, one_float_type
from .geometry import decode_offsets, encode_offsets, greedy_nms, pairwise_iou

VARIANCES = (0.1, 0.1, 0.2, 0.2)


def _variances(attrs: Any) -> tuple[float, ...]:
    variances = tuple(attrs.parsed.variances)
    if len(variances) != 4 or min(variances) <= 0:
        raise OperatorParamError(f"{attrs.name}: parameter 'variances' must be 4 positive numbers, got {variances}")
    return variances


def _dim(shape: ShapeT, axis: int) -> int:
    """``shape[axis]``, or 0 (unknown) when the shape is unknown."""
    return shape[axis] if shape is not None else 0


def _first_known(*dims: int) -> int:
    """The first known (non-zero) dimension, or 0."""
    return next((d for d in dims if d), 0)


# ------------------------------------------------------------------ MultiBoxPrior
class MultiBoxPriorParam(ParamSet):
    sizes = Param(FloatTuple, (1.0,), "Anchor sizes, as fractions of the image.")
    ratios = Param(FloatTuple, (1.0,), "Anchor aspect ratios (width / height).")
    clip = Param(bool, False, "Clip anchors to the image [0, 1].")
    steps = Param(FloatTuple, (-1.0, -1.0), "Distance between anchor centres (y, x); -1: one cell.")
    offsets = Param(FloatTuple, (0.5, 0.5), "Anchor centre offset inside a cell (y, x), in cells.")


def _prior_params(attrs: Any) -> Any:
    p = attrs.parsed
    for name, count in (("sizes", None), ("ratios", None), ("steps", 2), ("offsets", 2)):
        value = tuple(getattr(p, name))
        if (count is None and not value) or (count is not None and len(value) != count):
            raise OperatorParamError(
                f"{attrs.name}: parameter '{name}' needs {count or 'at least one'} value(s), got {value}"
            )
    if min(p.sizes) <= 0 or min(p.ratios) <= 0:
        raise OperatorParamError(
            f"{attrs.name}: parameters 'sizes' and 'ratios' must be positive, got {p.sizes}, {p.ratios}"
        )
    return p


def _prior_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    p, data = _prior_params(attrs), in_shapes[0]
    if data is not None and len(data) < 4:
        raise InferenceError(f"{attrs.name}: data must be (N, C, H, W), got shape {tuple(data)}")
    if data is None or not data[-2] or not data[-1]:
        return False
    per_cell = len(p.sizes) + len(p.ratios) - 1
    shape_assign(out_shapes, 0, (1, data[-2] * data[-1] * per_cell, 4), attrs.name, "output")
    return shape_known(data)


def _prior_forward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, p = op_ctx.xp, _prior_params(attrs)
    height, width = inputs[0].shape[-2:]
    step_y = p.steps[0] if p.steps[0] > 0 else 1.0 / height
    step_x = p.steps[1] if p.steps[1] > 0 else 1.0 / width
    centre_y = (xp.arange(height) + p.offsets[0]) * step_y
    centre_x = (xp.arange(width) + p.offsets[1]) * step_x
    shapes = [(s, p.ratios[0]) for s in p.sizes] + [(p.sizes[0], r) for r in p.ratios[1:]]
    size = xp.asarray([s for s, _ in shapes])
    root = xp.sqrt(xp.asarray([r for _, r in shapes]))
    half_w = size * height / width * root / 2  # widths in units of the image width (feature map aspect)
    half_h = size / root / 2
    cy, cx = centre_y[:, None, None], centre_x[None, :, None]  # (H, W, A) by broadcasting
    boxes = xp.stack(xp.broadcast_arrays(cx - half_w, cy - half_h, cx + half_w, cy + half_h), axis=-1)
    if p.clip:
        boxes = xp.clip(boxes, 0, 1)
    put(outputs[0], req[0], boxes.reshape(1, -1, 4))


(
    register("_contrib_MultiBoxPrior")
    .describe("SSD anchor boxes (1, H*W*A, 4) for an (N, C, H, W) feature map: every size, then every extra ratio.")
    .set_params(MultiBoxPriorParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_prior_shape)
    .set_infer_type(one_float_type(["data"], float32_only=True))
    .set_compute(_prior_forward)
    .set_gradient(zero_grad)
)


# ------------------------------------------------------------------ MultiBoxTarget
class MultiBoxTargetParam(ParamSet):
    overlap_threshold = Param(float, 0.5, "IoU above which an anchor is a positive for its best ground truth.")
    ignore_label = Param(float, -1.0, "Class target of ignored anchors.")
    negative_mining_ratio = Param(float, -1.0, "Negatives kept per positive (hardest first); -1: every negative.")
    negative_mining_thresh = Param(float, 0.5, "Only anchors whose best IoU is below this can be mined negatives.")
    minimum_negative_samples = Param(int, 0, "Mine at least this many negatives.", low=0)
    variances = Param(FloatTuple, VARIANCES, "Divisors of the four encoded offsets.")


TARGET_INPUTS = ["anchor", "label", "cls_pred"]


def _target_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name = attrs.name
    anchor, label, cls_pred = in_shapes
    check_rank(name, anchor, "anchor", 3, "(1, num_anchors, 4)")
    check_rank(name, label, "label", 3, "(batch, num_labels, >=5) rows [class, xmin, ymin, xmax, ymax]")
    check_rank(name, cls_pred, "cls_pred", 3, "(batch, num_classes, num_anchors)")
    if label is not None and label[2] and label[2] < 5:
        raise InferenceError(f"{name}: label rows need [class, xmin, ymin, xmax, ymax], got shape {tuple(label)}")
    num_anchors = _first_known(_dim(anchor, 1), _dim(cls_pred, 2), _dim(out_shapes[2], 1))
    batch = _first_known(_dim(label, 0), _dim(cls_pred, 0), _dim(out_shapes[2], 0))
    shape_assign(in_shapes, 0, (1, num_anchors, 4), name, "anchor")
    shape_assign(in_shapes, 2, (batch, _dim(cls_pred, 1), num_anchors), name, "cls_pred")
    if label is not None:
        shape_assign(in_shapes, 1, (batch, *label[1:]), name, "label")
    shape_assign(out_shapes, 0, (batch, num_anchors * 4), name, "loc_target")
    shape_assign(out_shapes, 1, (batch, num_anchors * 4), name, "loc_mask")
    shape_assign(out_shapes, 2, (batch, num_anchors), name, "cls_target")
    return all(shape_known(s) for s in in_shapes)


def match_anchors(xp: Any, iou: Any, valid_gt: Any, overlap_threshold: float) -> tuple[Any, Any, Any]:
    """SSD matching on (B, A, G) IoUs: positive flags (B, A), each anchor's matched (or best) ground truth
    and its IoU with it (-1 where no ground truth is valid)."""
    b, a, g = iou.shape
    iou = xp.where(valid_gt[:, None, :], iou, -1)
    positive = xp.zeros((b, a), dtype=bool)
    gt_taken = ~valid_gt
    matched = iou.argmax(axis=2)  # first best ground truth of every anchor
    best = xp.take_along_axis(iou, matched[..., None], axis=2)[..., 0]
    batch = xp.arange(b)
    for _ in range(g):  # each step gives one ground truth its best free anchor, in every batch at once
        free = xp.where(~positive[:, :, None] & ~gt_taken[:, None, :], iou, -np.inf).reshape(b, -1)
        pick = free.argmax(axis=1)
        found = free[batch, pick] > 1e-6
        if not bool(found.any()):
            break
        rows, anchor, gt = batch[found], pick[found] // g, pick[found] % g
        positive[rows, anchor] = True
        matched[rows, anchor] = gt
        best[rows, anchor] = iou[rows, anchor, gt]
        gt_taken[rows, gt] = True
    if overlap_threshold > 0:
        positive = positive | (best > overlap_threshold)
    return positive, matched, best


def _target_forward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, p = op_ctx.xp, attrs.parsed
    variances = xp.asarray(_variances(attrs), dtype=inputs[0].dtype)
    anchors, labels, cls_pred = inputs[0][0], inputs[1], inputs[2]
    b, num_anchors = labels.shape[0], anchors.shape[0]
    valid_gt = xp.cumprod(labels[..., 0] != -1, axis=1).astype(bool)  # rows before the first padding row
    gt_boxes = labels[..., 1:5]
    positive, matched, best = match_anchors(
        xp, pairwise_iou(xp, anchors[None], gt_boxes), valid_gt, p.overlap_threshold
    )
    has_gt = valid_gt.any(axis=1)[:, None]
    if p.negative_mining_ratio > 0:
        num_positive = positive.sum(axis=1)
        wanted = (num_positive * p.negative_mining_ratio).astype(np.int64)
        wanted = xp.minimum(xp.maximum(wanted, p.minimum_negative_samples), num_anchors - num_positive)
        shifted = xp.exp(cls_pred - cls_pred.max(axis=1, keepdims=True))
        background = shifted[:, 0] / shifted.sum(axis=1)  # softmax probability of class 0, (B, A)
        candidate = ~positive & (best < p.negative_mining_thresh)
        order = xp.argsort(xp.where(candidate, background, np.inf), axis=1, kind="stable")
        rank = xp.argsort(order, axis=1)  # the inverse permutation: each anchor's place in the order
        negative = candidate & (rank < wanted[:, None])
    else:
        negative = ~positive
    positive, negative = positive & has_gt, negative & has_gt
    gt = xp.take_along_axis(labels, matched[..., None], axis=1)  # (B, A, width)
    cls_target = xp.where(positive, gt[..., 0] + 1, xp.where(negative, 0, p.ignore_label))
    mask = xp.broadcast_to(positive[..., None], gt[..., 1:5].shape)
    anchors = xp.broadcast_to(anchors, mask.shape)
    # anchors without a match encode themselves (zeros), never padding rows' empty boxes
    loc = encode_offsets(xp, anchors, xp.where(mask, gt[..., 1:5], anchors)) / variances
    put(outputs[0], req[0], xp.where(mask, loc, 0).reshape(b, -1))
    put(outputs[1], req[1], mask.reshape(b, -1))
    put(outputs[2], req[2], cls_target)


(
    register("_contrib_MultiBoxTarget")
    .describe("SSD training targets: box offsets, their mask and class targets for every anchor.")
    .set_params(MultiBoxTargetParam)
    .set_num_inputs(3)
    .set_num_outputs(3)
    .set_input_names(TARGET_INPUTS)
    .set_output_names(["loc_target", "loc_mask", "cls_target"])
    .set_infer_shape(_target_shape)
    .set_infer_type(one_float_type(TARGET_INPUTS, float32_only=True))
    .set_compute(_target_forward)
    .set_gradient(zero_grad)
)


# ------------------------------------------------------------------ MultiBoxDetection
class MultiBoxDetectionParam(ParamSet):
    clip = Param(bool, True, "Clip boxes to the image [0, 1].")
    threshold = Param(float, 0.01, "Lowest class probability of a detection.")
    background_id = Param(int, 0, "Row of cls_prob holding the background class.")
    nms_threshold = Param(
        float, 0.5, "IoU at or above which a lower-scored detection is suppressed; outside (0, 1]: no NMS."
    )
    force_suppress = Param(bool, False, "Suppress across classes too.")
    variances = Param(FloatTuple, VARIANCES, "Multipliers of the four encoded offsets.")
    nms_topk = Param(int, -1, "Suppress among the nms_topk best detections only; -1: all.")


DETECTION_INPUTS = ["cls_prob", "loc_pred", "anchor"]


def _detection_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name = attrs.name
    cls_prob, loc_pred, anchor = in_shapes
    check_rank(name, cls_prob, "cls_prob", 3, "(batch, num_classes, num_anchors)")
    check_rank(name, loc_pred, "loc_pred", 2, "(batch, num_anchors * 4)")
    check_rank(name, anchor, "anchor", 3, "(1, num_anchors, 4)")
    num_anchors = _first_known(_dim(anchor, 1), _dim(cls_prob, 2), _dim(loc_pred, 1) // 4, _dim(out_shapes[0], 1))
    batch = _first_known(_dim(cls_prob, 0), _dim(loc_pred, 0), _dim(out_shapes[0], 0))
    shape_assign(in_shapes, 0, (batch, _dim(cls_prob, 1), num_anchors), name, "cls_prob")
    shape_assign(in_shapes, 1, (batch, num_anchors * 4), name, "loc_pred")
    shape_assign(in_shapes, 2, (1, num_anchors, 4), name, "anchor")
    shape_assign(out_shapes, 0, (batch, num_anchors, 6), name, "output")
    return all(shape_known(s) for s in in_shapes)


def _detection_forward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, p = op_ctx.xp, attrs.parsed
    cls_prob, loc_pred, anchors = inputs
    b, num_classes, num_anchors = cls_prob.shape
    if not 0 <= p.background_id < num_classes:
        raise OperatorParamError(
            f"{attrs.name}: parameter 'background_id'={p.background_id} is not a class of {num_classes}"
        )
    foreground = cls_prob[:, [c for c in range(num_classes) if c != p.background_id]]
    class_id = foreground.argmax(axis=1)  # (B, A): first best class, ids count foreground classes
    score = xp.take_along_axis(foreground, class_id[:, None], axis=1)[:, 0]
    offsets = loc_pred.reshape(b, num_anchors, 4) * xp.asarray(_variances(attrs), dtype=loc_pred.dtype)
    boxes = decode_offsets(xp, anchors[0][None], offsets)
    if p.clip:
        boxes = xp.clip(boxes, 0, 1)
    rows = xp.concatenate([class_id[..., None].astype(cls_prob.dtype), score[..., None], boxes], axis=-1)
    valid = score >= p.threshold
    # valid detections first, in anchor order
    pack = xp.argsort(~valid, axis=1, kind="stable")
    rows = xp.take_along_axis(rows, pack[..., None], axis=1)
    valid = xp.take_along_axis(valid, pack, axis=1)
    if 0 < p.nms_threshold <= 1:
        rows, valid = _suppress(xp, p, rows, valid)
    put(outputs[0], req[0], xp.where(valid[..., None], rows, -1))


def _suppress(xp: Any, p: Any, rows: Any, valid: Any) -> tuple[Any, Any]:
    """Sort the packed valid rows by score, keep nms_topk, run NMS; suppressed rows get class id -1.

    As MXNet does, only the first nms_topk positions are re-sorted: positions after them keep the
    unsorted rows that were there, marked -1 as well.
    """
    num = rows.shape[1]
    order = xp.argsort(xp.where(valid, -rows[..., 1], np.inf), axis=1, kind="stable")
    ranked = xp.take_along_axis(rows, order[..., None], axis=1)
    head = xp.arange(num) < (p.nms_topk if p.nms_topk > 0 else num)
    rows = xp.where(head[None, :, None], ranked, rows)
    candidate = valid & head
    classes = None if p.force_suppress else rows[..., 0]
    kept = greedy_nms(xp, rows[..., 2:6], candidate, p.nms_threshold, classes, suppress_equal=True)
    rows = rows.copy()
    rows[..., 0] = xp.where(kept, rows[..., 0], -1)
    return rows, valid


(
    register("_contrib_MultiBoxDetection")
    .describe(
        "SSD detections (batch, num_anchors, 6) rows [class_id, score, xmin, ymin, xmax, ymax]: decoded, "
        "sorted by score, suppressed ones with class_id -1, invalid rows -1."
    )
    .set_params(MultiBoxDetectionParam)
    .set_num_inputs(3)
    .set_input_names(DETECTION_INPUTS)
    .set_infer_shape(_detection_shape)
    .set_infer_type(one_float_type(DETECTION_INPUTS, float32_only=True))
    .set_compute(_detection_forward)
    .set_gradient(zero_grad)
)
