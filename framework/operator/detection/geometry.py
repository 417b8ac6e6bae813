"""Box geometry shared by every detection operator (this module registers no operator).

A box is four numbers on the last axis. Two encodings exist: ``corner`` ``[xmin, ymin, xmax, ymax]``
and ``center`` ``[x, y, width, height]``; everything here works on corners and converts at the
edges (:func:`to_corner`, :func:`corner_to`). Sizes come in two conventions: continuous
coordinates (width ``xmax - xmin``, SSD and ``box_*``) and pixel indices (width
``xmax - xmin + 1``, Faster R-CNN's ``Proposal``), selected by ``pixel_offset`` (0 or 1).

Three shared ideas:

* :func:`pairwise_iou`: intersection over union of every box of one set with every box of
  another, broadcast over leading (batch) axes; an empty union gives 0.
* :func:`encode_offsets` / :func:`decode_offsets`: a box relative to an anchor as the shift of
  its centre in anchor sizes and the log of its size ratio (SSD's and ``box_encode``'s targets).
* :func:`greedy_nms`: non-maximum suppression over boxes already sorted by score. Greedy NMS is
  sequential by nature (whether box k survives depends on which earlier boxes survived), so it
  loops over the *positions* in score order; each step compares one box per batch with all
  later boxes at once.
"""

from __future__ import annotations

from typing import Any

BOX_FORMATS = ("corner", "center")


def center_to_corner(xp: Any, boxes: Any) -> Any:
    """``[x, y, w, h]`` -> ``[xmin, ymin, xmax, ymax]`` on the last axis."""
    x, y, w, h = (boxes[..., i] for i in range(4))
    return xp.stack([x - w / 2, y - h / 2, x + w / 2, y + h / 2], axis=-1)


def corner_to_center(xp: Any, boxes: Any) -> Any:
    """``[xmin, ymin, xmax, ymax]`` -> ``[x, y, w, h]`` on the last axis."""
    x1, y1, x2, y2 = (boxes[..., i] for i in range(4))
    return xp.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], axis=-1)


def to_corner(xp: Any, boxes: Any, box_format: str) -> Any:
    """Boxes in ``box_format`` as corners."""
    return center_to_corner(xp, boxes) if box_format == "center" else boxes


def corner_to(xp: Any, boxes: Any, box_format: str) -> Any:
    """Corner boxes in ``box_format``."""
    return corner_to_center(xp, boxes) if box_format == "center" else boxes


def box_area(xp: Any, boxes: Any, pixel_offset: float = 0.0) -> Any:
    """Areas of corner boxes; an inverted box (xmax < xmin) has area 0."""
    width = xp.maximum(boxes[..., 2] - boxes[..., 0] + pixel_offset, 0)
    height = xp.maximum(boxes[..., 3] - boxes[..., 1] + pixel_offset, 0)
    return width * height


def pairwise_iou(xp: Any, a: Any, b: Any, pixel_offset: float = 0.0) -> Any:
    """IoU of corner boxes ``a`` (..., N, 4) with ``b`` (..., M, 4): (..., N, M); 0 where the union is empty."""
    a, b = a[..., :, None, :], b[..., None, :, :]
    width = xp.minimum(a[..., 2], b[..., 2]) - xp.maximum(a[..., 0], b[..., 0]) + pixel_offset
    height = xp.minimum(a[..., 3], b[..., 3]) - xp.maximum(a[..., 1], b[..., 1]) + pixel_offset
    inter = xp.maximum(width, 0) * xp.maximum(height, 0)
    union = box_area(xp, a, pixel_offset) + box_area(xp, b, pixel_offset) - inter
    safe = xp.where(union > 0, union, 1)
    return xp.where(union > 0, inter / safe, 0)


def encode_offsets(xp: Any, anchors: Any, boxes: Any) -> Any:
    """Corner ``boxes`` relative to corner ``anchors``: ``[dx/aw, dy/ah, log(w/aw), log(h/ah)]``."""
    anchor, box = corner_to_center(xp, anchors), corner_to_center(xp, boxes)
    return xp.stack(
        [
            (box[..., 0] - anchor[..., 0]) / anchor[..., 2],
            (box[..., 1] - anchor[..., 1]) / anchor[..., 3],
            xp.log(box[..., 2] / anchor[..., 2]),
            xp.log(box[..., 3] / anchor[..., 3]),
        ],
        axis=-1,
    )


def decode_offsets(xp: Any, anchors: Any, offsets: Any) -> Any:
    """Inverse of :func:`encode_offsets`: corner boxes from corner ``anchors`` and ``offsets``."""
    anchor = corner_to_center(xp, anchors)
    centre = xp.stack(
        [
            offsets[..., 0] * anchor[..., 2] + anchor[..., 0],
            offsets[..., 1] * anchor[..., 3] + anchor[..., 1],
            xp.exp(offsets[..., 2]) * anchor[..., 2],
            xp.exp(offsets[..., 3]) * anchor[..., 3],
        ],
        axis=-1,
    )
    return center_to_corner(xp, centre)


def greedy_nms(
    xp: Any,
    boxes: Any,
    candidate: Any,
    threshold: float,
    classes: Any = None,
    pixel_offset: float = 0.0,
    suppress_equal: bool = False,
    max_keep: int | None = None,
) -> Any:
    """Which of the score-sorted corner ``boxes`` (B, K, 4) survive greedy NMS: a (B, K) bool mask.

    Only ``candidate`` boxes (B, K) take part. Walking positions in order, a surviving box
    suppresses every later candidate whose IoU with it exceeds ``threshold`` (or equals it, with
    ``suppress_equal``); with ``classes`` (B, K) only boxes of the same class suppress each other.
    ``max_keep`` stops once that many boxes survive in a batch (later boxes are dropped).
    """
    alive = candidate.copy()
    kept = xp.zeros_like(candidate)
    count = xp.zeros(candidate.shape[0], dtype="int64")
    later = xp.arange(boxes.shape[1])
    positions = xp.flatnonzero(candidate.any(axis=0)).tolist()  # a position no batch element uses is skipped
    for k in positions:
        keep_k = alive[:, k]
        if max_keep is not None:
            if not bool((count < max_keep).any()):
                break
            keep_k = keep_k & (count < max_keep)
        if not bool(keep_k.any()):
            continue
        kept[:, k] = keep_k
        count = count + keep_k
        iou = pairwise_iou(xp, boxes[:, k : k + 1], boxes, pixel_offset)[:, 0]  # (B, K)
        hit = iou >= threshold if suppress_equal else iou > threshold
        if classes is not None:
            hit = hit & (classes == classes[:, k : k + 1])
        alive = alive & ~(hit & keep_k[:, None] & (later > k))
    if max_keep is not None:
        kept = kept & (xp.cumsum(kept, axis=1) <= max_keep)
    return kept
