"""Faster R-CNN's region proposals: ``_contrib_Proposal`` (one image) and ``_contrib_MultiProposal``
(a batch), from a region proposal network's scores and box deltas.

Every feature-map cell carries ``len(ratios) * len(scales)`` anchors: a ``feature_stride``-sized
square reshaped to each ratio (area kept, sides rounded) and scaled, shifted by the cell's position
in pixels. Boxes use pixel-index coordinates (width ``xmax - xmin + 1``). Each anchor is moved by
its deltas (``iou_loss``: corners shifted directly; otherwise centre offsets and log sizes) and
clipped to the image; cells beyond the image (``im_info`` height, width) and boxes smaller than
``rpn_min_size * scale`` get score -1. The ``rpn_pre_nms_top_n`` best boxes go through greedy NMS
(IoU above ``threshold`` suppresses), and the first ``rpn_post_nms_top_n`` survivors are the
proposals, rows ``[batch_index, xmin, ymin, xmax, ymax]``; too few survivors are repeated
cyclically to fill the rows, as in MXNet. The hidden ``score`` output is visible with
``output_score``. As in MXNet the inputs get zero gradients and only float32 is accepted.
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
from .geometry import greedy_nms

PIXEL = 1.0  # pixel-index boxes: a box from x1 to x2 covers x2 - x1 + 1 pixels


class ProposalParam(ParamSet):
    rpn_pre_nms_top_n = Param(int, 6000, "Best-scoring boxes taken into NMS.")
    rpn_post_nms_top_n = Param(int, 300, "Proposals kept after NMS (rows of the output per image).", low=1)
    threshold = Param(float, 0.7, "IoU above which NMS suppresses the lower-scored box.")
    rpn_min_size = Param(int, 16, "Smallest proposal side, in pixels of the unscaled image.")
    scales = Param(FloatTuple, (4.0, 8.0, 16.0, 32.0), "Anchor scales (multiples of feature_stride).")
    ratios = Param(FloatTuple, (0.5, 1.0, 2.0), "Anchor aspect ratios (height / width).")
    feature_stride = Param(
        int, 16, "Pixels between neighbouring feature-map cells (the network's total stride).", low=1
    )
    output_score = Param(bool, False, "Also output each proposal's score.")
    iou_loss = Param(bool, False, "Deltas shift the corners directly (IoU-loss training) instead of centre/log-size.")


def _num_anchors(attrs: Any) -> int:
    p = attrs.parsed
    if not p.scales or not p.ratios or min(p.scales) <= 0 or min(p.ratios) <= 0:
        raise OperatorParamError(
            f"{attrs.name}: parameters 'scales' and 'ratios' need positive values, got {p.scales}, {p.ratios}"
        )
    return len(p.scales) * len(p.ratios)


def _proposal_shape(batched: bool) -> Any:
    def infer(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        name, anchors = attrs.name, _num_anchors(attrs)
        cls_prob, bbox_pred, im_info = in_shapes
        check_rank(name, cls_prob, "cls_prob", 4, "(batch, 2 * num_anchors, height, width)")
        check_rank(name, bbox_pred, "bbox_pred", 4, "(batch, 4 * num_anchors, height, width)")
        check_rank(name, im_info, "im_info", 2, "(batch, 3) rows [height, width, scale]")
        grid = next((s[2:] for s in (cls_prob, bbox_pred) if s is not None), (0, 0))
        batch = next((s[0] for s in in_shapes if s is not None and s[0]), 0)
        if not batched:
            if batch not in (0, 1):
                raise InferenceError(f"{name}: handles one image (batch 1); use MultiProposal, got batch {batch}")
            batch = 1
        shape_assign(in_shapes, 0, (batch, 2 * anchors, *grid), name, "cls_prob")
        shape_assign(in_shapes, 1, (batch, 4 * anchors, *grid), name, "bbox_pred")
        shape_assign(in_shapes, 2, (batch, 3), name, "im_info")
        rows = attrs.parsed.rpn_post_nms_top_n * (batch if batched else 1)
        shape_assign(out_shapes, 0, (rows, 5), name, "output")
        shape_assign(out_shapes, 1, (rows, 1), name, "score")
        return all(shape_known(s) for s in in_shapes)

    return infer


def base_anchors(xp: Any, stride: int, ratios: tuple, scales: tuple) -> Any:
    """(len(ratios) * len(scales), 4) anchors of the cell at the origin, ratio-major, as Faster R-CNN rounds them."""
    ratio = xp.asarray(ratios, dtype=np.float64)[:, None]
    scale = xp.asarray(scales, dtype=np.float64)[None, :]
    centre = 0.5 * (stride - 1)
    base_w = xp.floor(xp.sqrt(xp.floor(stride * stride / ratio)) + 0.5)
    width = base_w * scale
    height = xp.floor(base_w * ratio + 0.5) * scale
    half_w, half_h = 0.5 * (width - 1), 0.5 * (height - 1)
    return xp.stack([centre - half_w, centre - half_h, centre + half_w, centre + half_h], axis=-1).reshape(-1, 4)


def _apply_deltas(xp: Any, anchors: Any, deltas: Any, iou_loss: bool) -> Any:
    """Boxes from anchors (..., 4) and deltas (..., 4)."""
    if iou_loss:
        return anchors + deltas
    width = anchors[..., 2] - anchors[..., 0] + PIXEL
    height = anchors[..., 3] - anchors[..., 1] + PIXEL
    centre_x = anchors[..., 0] + 0.5 * (width - PIXEL) + deltas[..., 0] * width
    centre_y = anchors[..., 1] + 0.5 * (height - PIXEL) + deltas[..., 1] * height
    half_w = 0.5 * (xp.exp(deltas[..., 2]) * width - PIXEL)
    half_h = 0.5 * (xp.exp(deltas[..., 3]) * height - PIXEL)
    return xp.stack([centre_x - half_w, centre_y - half_h, centre_x + half_w, centre_y + half_h], axis=-1)


def propose(xp: Any, p: Any, cls_prob: Any, bbox_pred: Any, im_info: Any) -> tuple[Any, Any]:
    """Proposals (B, post, 4) and their scores (B, post) for a batch of RPN outputs."""
    b, channels, height, width = cls_prob.shape
    num = channels // 2
    stride = p.feature_stride
    # every box in (row, column, anchor) order
    shift_y, shift_x = xp.meshgrid(xp.arange(height) * stride, xp.arange(width) * stride, indexing="ij")
    shifts = xp.stack([shift_x, shift_y, shift_x, shift_y], axis=-1).astype(cls_prob.dtype)
    anchors = shifts[:, :, None, :] + base_anchors(xp, stride, p.ratios, p.scales).astype(cls_prob.dtype)
    deltas = bbox_pred.reshape(b, num, 4, height, width).transpose(0, 3, 4, 1, 2)  # (B, H, W, A, 4)
    boxes = _apply_deltas(xp, anchors[None], deltas, p.iou_loss)
    im_h, im_w, im_scale = (im_info[:, i].reshape(b, 1, 1, 1) for i in range(3))
    limits = xp.stack([im_w, im_h, im_w, im_h], axis=-1) - 1
    boxes = xp.clip(boxes, 0, None)
    boxes = xp.minimum(boxes, limits)
    score = cls_prob[:, num:].transpose(0, 2, 3, 1)  # foreground scores (B, H, W, A)
    rows = xp.arange(height).reshape(1, height, 1, 1)
    cols = xp.arange(width).reshape(1, 1, width, 1)
    outside = (rows >= (im_h / stride).astype(np.int64)) | (cols >= (im_w / stride).astype(np.int64))
    min_size = p.rpn_min_size * im_scale
    small = (boxes[..., 2] - boxes[..., 0] + PIXEL < min_size) | (boxes[..., 3] - boxes[..., 1] + PIXEL < min_size)
    grow = xp.stack([-min_size, -min_size, min_size, min_size], axis=-1) / 2
    boxes = xp.where(small[..., None], boxes + grow, boxes)
    score = xp.where(outside | small, -1, score)
    boxes, score = boxes.reshape(b, -1, 4), score.reshape(b, -1)
    count = boxes.shape[1]
    pre = min(p.rpn_pre_nms_top_n, count) if p.rpn_pre_nms_top_n > 0 else count
    order = xp.argsort(-score, axis=1, kind="stable")[:, :pre]
    boxes = xp.take_along_axis(boxes, order[..., None], axis=1)
    score = xp.take_along_axis(score, order, axis=1)
    post = min(p.rpn_post_nms_top_n, pre)
    kept = greedy_nms(xp, boxes, xp.ones(score.shape, dtype=bool), p.threshold, pixel_offset=PIXEL, max_keep=post)
    survivors = xp.argsort(~kept, axis=1, kind="stable")  # kept positions first, in score order
    found = xp.maximum(kept.sum(axis=1, keepdims=True), 1)
    pick = xp.take_along_axis(survivors, xp.arange(p.rpn_post_nms_top_n)[None] % found, axis=1)
    return xp.take_along_axis(boxes, pick[..., None], axis=1), xp.take_along_axis(score, pick, axis=1)


def _proposal_forward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, p = op_ctx.xp, attrs.parsed
    cls_prob, bbox_pred, im_info = inputs
    if cls_prob.shape[1] != 2 * _num_anchors(attrs):
        raise InferenceError(f"{attrs.name}: cls_prob needs 2 * {_num_anchors(attrs)} channels, got {cls_prob.shape}")
    boxes, score = propose(xp, p, cls_prob, bbox_pred, im_info)
    batch_index = xp.broadcast_to(xp.arange(boxes.shape[0], dtype=boxes.dtype)[:, None, None], (*boxes.shape[:2], 1))
    put(outputs[0], req[0], xp.concatenate([batch_index, boxes], axis=-1).reshape(-1, 5))
    put(outputs[1], req[1], score.reshape(-1, 1))


PROPOSAL_INPUTS = ["cls_prob", "bbox_pred", "im_info"]

for _name, _batched, _what in (
    ("_contrib_Proposal", False, "one image"),
    ("_contrib_MultiProposal", True, "a batch of images"),
):
    (
        register(_name)
        .describe(
            f"Region proposals of {_what} from RPN scores and box deltas: rows [batch_index, xmin, ymin, xmax, ymax] "
            "after NMS; the score output is hidden unless output_score."
        )
        .set_params(ProposalParam)
        .set_num_inputs(3)
        .set_num_outputs(2)
        .set_num_visible_outputs(lambda attrs: 2 if attrs.parsed.output_score else 1)
        .set_input_names(PROPOSAL_INPUTS)
        .set_output_names(["output", "score"])
        .set_infer_shape(_proposal_shape(_batched))
        .set_infer_type(one_float_type(PROPOSAL_INPUTS, float32_only=True))
        .set_compute(_proposal_forward)
        .set_gradient(zero_grad)
    )
