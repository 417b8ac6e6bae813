"""``ImageDetRecordIter``'s random crop: SSD-style samplers that propose windows by their overlap with the boxes.

Each of ``num_crop_sampler`` samplers has its own ranges (a parameter given as one value is
shared by every sampler, as a tuple it gives one value per sampler):

- the window's side scale ``[min_crop_scales, max_crop_scales]`` (a fraction of the image) and
  aspect ratio ``[min_crop_aspect_ratios, max_crop_aspect_ratios]`` (width / height, limited so
  the window fits in the image);
- constraints against a ground-truth box: the IoU ``[min_crop_overlaps, max_crop_overlaps]``,
  the *sample coverage* (intersection / window area) ``[min/max_crop_sample_coverages]`` and the
  *object coverage* (intersection / box area) ``[min/max_crop_object_coverages]``.

A sampler draws up to ``max_crop_trials`` windows (uniform scale, ratio and position) and keeps
the first for which some box meets all three constraints; one of the kept windows (one per
sampler at most) is chosen at random. Boxes are then moved into the window's coordinates and
clipped; ``crop_emit_mode`` drops the objects whose centre falls outside the window
(``center``) or whose object coverage is below ``emit_overlap_thresh`` (``overlap``). A window
that would keep no object is not used. The box arithmetic is vectorised over boxes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

EMIT_MODES = ("center", "overlap")
RANGE_PARAMS = (
    ("min_crop_scales", "max_crop_scales", 0.0, 1.0),
    ("min_crop_aspect_ratios", "max_crop_aspect_ratios", 1.0, 1.0),
    ("min_crop_overlaps", "max_crop_overlaps", 0.0, 1.0),
    ("min_crop_sample_coverages", "max_crop_sample_coverages", 0.0, 1.0),
    ("min_crop_object_coverages", "max_crop_object_coverages", 0.0, 1.0),
)


def _per_sampler(value: Any, count: int, name: str) -> np.ndarray:
    values = np.atleast_1d(np.asarray(value, dtype=np.float64)).ravel()
    if values.size == 1:
        return np.repeat(values, count)
    if values.size != count:
        raise ValueError(f"{name} has {values.size} values; give 1 or num_crop_sampler={count}")
    return values


class CropSampler:
    """The samplers of one iterator; :meth:`crop` proposes a window and the boxes inside it."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        count = int(kwargs.get("num_crop_sampler", 1))
        if count < 1:
            raise ValueError(f"num_crop_sampler must be >= 1, got {count}")
        self.count = count
        self.ranges = {}
        for low_name, high_name, low, high in RANGE_PARAMS:
            lows = _per_sampler(kwargs.get(low_name, low), count, low_name)
            highs = _per_sampler(kwargs.get(high_name, high), count, high_name)
            if np.any(lows > highs):
                raise ValueError(f"{low_name} must not exceed {high_name}, got {lows.tolist()} and {highs.tolist()}")
            self.ranges[low_name.replace("min_crop_", "")] = (lows, highs)
        if np.any(self.ranges["scales"][0] < 0) or np.any(self.ranges["scales"][1] > 1):
            raise ValueError("crop scales must lie in [0, 1]")
        if np.any(self.ranges["aspect_ratios"][0] <= 0):
            raise ValueError("crop aspect ratios must be > 0")
        self.trials = _per_sampler(kwargs.get("max_crop_trials", 25), count, "max_crop_trials").astype(int)
        self.emit_mode = kwargs.get("crop_emit_mode", "center")
        if self.emit_mode not in EMIT_MODES:
            raise ValueError(f"crop_emit_mode must be one of {EMIT_MODES}, got {self.emit_mode!r}")
        self.emit_thresh = float(kwargs.get("emit_overlap_thresh", 0.3))

    def _fits(self, k: int, window: np.ndarray, boxes: np.ndarray) -> bool:
        """Whether some box meets sampler ``k``'s IoU, sample- and object-coverage ranges for ``window``."""
        inter_w = np.clip(np.minimum(boxes[:, 2], window[2]) - np.maximum(boxes[:, 0], window[0]), 0, None)
        inter_h = np.clip(np.minimum(boxes[:, 3], window[3]) - np.maximum(boxes[:, 1], window[1]), 0, None)
        inter = inter_w * inter_h
        box_area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        window_area = (window[2] - window[0]) * (window[3] - window[1])
        measures = {
            "overlaps": inter / (box_area + window_area - inter),
            "sample_coverages": inter / window_area,
            "object_coverages": inter / box_area,
        }
        ok = np.ones(len(boxes), dtype=bool)
        for name, values in measures.items():
            low, high = self.ranges[name]
            ok &= (values >= low[k]) & (values <= high[k])
        return bool(ok.any())

    def _propose(self, k: int, boxes: np.ndarray, rng: np.random.RandomState) -> np.ndarray | None:
        (min_scale, max_scale), (min_ratio, max_ratio) = (
            (self.ranges["scales"][0][k], self.ranges["scales"][1][k]),
            (self.ranges["aspect_ratios"][0][k], self.ranges["aspect_ratios"][1][k]),
        )
        for _ in range(self.trials[k]):
            scale = rng.uniform(min_scale, max_scale)
            if scale <= 0:
                continue
            ratio = np.clip(rng.uniform(min_ratio, max_ratio), scale * scale, 1 / (scale * scale))
            w, h = scale * np.sqrt(ratio), scale / np.sqrt(ratio)
            x0, y0 = rng.uniform(0, 1 - w), rng.uniform(0, 1 - h)
            window = np.array([x0, y0, x0 + w, y0 + h])
            if self._fits(k, window, boxes):
                return window
        return None

    def crop(self, objects: np.ndarray, rng: np.random.RandomState) -> tuple[np.ndarray, np.ndarray] | None:
        """A window ``(x0, y0, x1, y1)`` (fractions) and the objects in its coordinates; None for no crop."""
        boxes = objects[:, 1:5].astype(np.float64)
        valid = (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
        if not valid.any():
            return None
        windows = [w for k in range(self.count) if (w := self._propose(k, boxes[valid], rng)) is not None]
        if not windows:
            return None
        window = windows[rng.randint(len(windows))]
        return self._emit(objects, window)

    def _emit(self, objects: np.ndarray, window: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        x0, y0, x1, y1 = window
        boxes = objects[:, 1:5]
        if self.emit_mode == "center":
            cx, cy = (boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2
            keep = (cx > x0) & (cx < x1) & (cy > y0) & (cy < y1)
        else:
            inter_w = np.clip(np.minimum(boxes[:, 2], x1) - np.maximum(boxes[:, 0], x0), 0, None)
            inter_h = np.clip(np.minimum(boxes[:, 3], y1) - np.maximum(boxes[:, 1], y0), 0, None)
            area = np.maximum((boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1]), 1e-12)
            keep = inter_w * inter_h / area >= self.emit_thresh
        keep &= (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
        if not keep.any():
            return None
        moved = objects[keep].copy()
        moved[:, [1, 3]] = np.clip((moved[:, [1, 3]] - x0) / (x1 - x0), 0, 1)
        moved[:, [2, 4]] = np.clip((moved[:, [2, 4]] - y0) / (y1 - y0), 0, 1)
        return window, moved


def crop_pixels(pixels: np.ndarray, window: Sequence[float]) -> np.ndarray:
    """The pixels of a window given in fractions of the image (at least one pixel each way)."""
    h, w = pixels.shape[:2]
    left, top = int(window[0] * w), int(window[1] * h)
    right, bottom = max(left + 1, round(window[2] * w)), max(top + 1, round(window[3] * h))
    return pixels[top:bottom, left:right]


__all__ = ["EMIT_MODES", "CropSampler", "crop_pixels"]
