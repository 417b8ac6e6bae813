"""The work done on one record of an ``ImageDetRecordIter``: unpack, decode, augment image and boxes, normalise.

Per image:

1. ``resize > 0``: the shorter edge becomes ``resize``;
2. colour, each with its own probability: a hue offset ``U(-max_random_hue, max_random_hue)``
   (``random_hue_prob``; OpenCV's 8-bit HLS scale), saturation (``max_random_saturation``,
   ``random_saturation_prob``) and lightness (``max_random_illumination``,
   ``random_illumination_prob``) offsets, and a contrast factor ``1 + U(-max_random_contrast,
   max_random_contrast)`` towards the mean gray (``random_contrast_prob``);
3. with probability ``rand_crop_prob``: a window from the crop samplers
   (:mod:`framework.io.det_crop_sampler`), boxes moved into it and filtered;
4. with probability ``rand_pad_prob``: the image is placed at a random position on a canvas
   ``U(1, max_pad_scale)`` times its size, filled with ``fill_value``; the boxes shrink with it;
5. with probability ``rand_mirror_prob``: mirrored left-right, boxes too (``x -> 1 - x``);
6. into ``data_shape`` by ``resize_mode``: ``force`` resizes to it whatever the aspect ratio;
   ``shrink`` scales a larger image down to fit, keeping the ratio; ``fit`` scales to fit,
   up or down; a smaller result sits in the top-left corner, the rest of the batch slot is 0;
7. ``(pixel - mean) * scale / std`` per channel (a ``std`` of 0, the default, divides by 1).

The label row is ``[channels, height, width, n, raw label (n values), label_pad_value...]``:
the image's size after step 4, the length of the record's flat label, then the label itself
(boxes moved by steps 3-5; see :mod:`framework.io.det_label` for its layout).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import recordio
from .base import DataIterError
from .decode import decode_record_image
from .det_crop_sampler import CropSampler, crop_pixels
from .det_label import DetLabelError, split_det_label
from .image_aug import ExtraAugmentation
from .pixels import RANDOM_INTER, resize_with

RESIZE_MODES = ("force", "shrink", "fit")
LABEL_HEADER = 4  # channels, height, width, raw label length


def checked_det_label(
    header: Any, label_width: int, where: str, label_map: dict[int, np.ndarray] | None = None
) -> np.ndarray:
    """A record's flat detection label (a copy), from its header or, with ``label_map`` (path_imglist),
    from the list line of its index; checked against ``label_width`` (-1: any) and the layout."""
    if label_map is not None:
        if int(header.id) not in label_map:
            raise DataIterError(f"{where}: image index {header.id} is not in path_imglist")
        raw = label_map[int(header.id)].copy()
    else:
        if header.flag <= 0:
            raise DataIterError(
                f"{where}: a scalar label; detection records carry label arrays "
                "[header_width, object_width, objects...] (im2rec --pack-label)"
            )
        raw = np.asarray(header.label, dtype=np.float32).ravel().copy()
    if label_width not in (-1, raw.size):
        raise DataIterError(
            f"{where}: a label of {raw.size} values but label_width is {label_width} "
            "(use label_width=-1 for labels of varying length)"
        )
    try:
        split_det_label(raw)
    except DetLabelError as err:
        raise DetLabelError(f"{where}: {err}") from None
    return raw


class DetRecordAugmenter:
    """The per-image work of ``ImageDetRecordIter``; called on worker threads with the loader's random numbers."""

    def __init__(self, path: str, data_shape: tuple[int, int, int], label_width: int, p: dict[str, Any]) -> None:
        self.path = path
        self.channels, self.height, self.width = data_shape
        self.label_width = label_width
        self.row_width = LABEL_HEADER + p["label_pad_width"]
        self.pad_value = np.float32(p["label_pad_value"])
        self.resize = p["resize"]
        self.resize_mode = p["resize_mode"]
        self.inter_method = p["inter_method"]
        self.rand_mirror_prob = p["rand_mirror_prob"]
        self.rand_pad_prob = p["rand_pad_prob"]
        self.max_pad_scale = p["max_pad_scale"]
        self.fill_value = p["fill_value"]
        self.max_pixels = p["max_decoded_pixels"]
        self.rand_crop_prob = p["rand_crop_prob"]
        self.crop_sampler: CropSampler | None = p["crop_sampler"]
        self.colour_jitters: list[tuple[float, ExtraAugmentation]] = p["colour_jitters"]
        means = np.array([p["mean_r"], p["mean_g"], p["mean_b"]], dtype=np.float32)
        stds = np.array([p["std_r"], p["std_g"], p["std_b"]], dtype=np.float32)
        # a mean image replaces the per-channel means only when those are all 0 (as MXNet's detection iterator)
        mean_img = p.get("mean_img")
        self.mean = mean_img if mean_img is not None and not means.any() else means.reshape(-1, 1, 1)
        self.label_map: dict[int, np.ndarray] | None = p.get("label_map")
        self.mult = (np.float32(p["scale"]) / np.where(stds > 0, stds, np.float32(1))).reshape(-1, 1, 1)

    @property
    def needs_seed(self) -> bool:
        """Each image needs a generator of its own for the random pad and a random ``inter_method``."""
        return (
            self.rand_pad_prob > 0
            or self.rand_crop_prob > 0
            or bool(self.colour_jitters)
            or self.inter_method == RANDOM_INTER
        )

    def where(self, offset: int) -> str:
        return f"ImageDetRecordIter: {self.path}, record at byte offset {offset}"

    def process(
        self, records: Sequence[bytes], offsets: Sequence[int], randoms: np.ndarray, out: np.ndarray
    ) -> list[tuple[np.ndarray, int]]:
        """Process a piece of records into ``out`` (N, C, H, W), one by one; their (label row, record id)s.

        (A detection image's pad, crop and label boxes are its own: nothing is shared across the piece.)
        """
        return [self(records[i], offsets[i], randoms[i], out[i]) for i in range(len(records))]

    def __call__(self, record: bytes, offset: int, randoms: np.ndarray, out: np.ndarray) -> tuple[np.ndarray, int]:
        """Process one record into ``out`` (C, H, W); returns (label row, record id)."""
        try:
            header, payload = recordio.unpack(record)
        except recordio.RecordIOError as err:
            raise DataIterError(f"{self.where(offset)}: {err}") from None
        raw = checked_det_label(header, self.label_width, self.where(offset), self.label_map)
        header_width, object_width = int(raw[0]), int(raw[1])
        objects = raw[header_width:].reshape(-1, object_width)
        pixels = decode_record_image(payload, "RGB", self.max_pixels, f"ImageDetRecordIter: {self.path}", offset)
        rng = np.random.RandomState(int(randoms[3])) if len(randoms) > 3 else None
        draw = int(randoms[3]) if len(randoms) > 3 else 0
        if self.resize > 0:
            h, w = pixels.shape[:2]
            size = (self.resize, self.resize * h // w) if h > w else (self.resize * w // h, self.resize)
            pixels = resize_with(pixels, size[0], size[1], self.inter_method, draw)
        for probability, jitter in self.colour_jitters:
            if rng.random_sample() < probability:
                pixels = jitter.colour(pixels, rng)
        if self.crop_sampler is not None and rng.random_sample() < self.rand_crop_prob:
            cropped = self.crop_sampler.crop(objects, rng)
            if cropped is not None:
                window, objects = cropped
                pixels = crop_pixels(pixels, window)
        objects = objects.copy()  # moved in place from here on
        if self.rand_pad_prob > 0 and rng.random_sample() < self.rand_pad_prob:
            pixels = self._pad(pixels, objects, rng)
        if randoms[2] < self.rand_mirror_prob:
            pixels = pixels[:, ::-1]
            objects[:, [1, 3]] = 1.0 - objects[:, [3, 1]]
        pixels = self._fit(pixels, draw)
        raw = np.concatenate([raw[:header_width], objects.ravel()])
        h, w = pixels.shape[:2]
        out[...] = 0
        np.subtract(pixels.transpose(2, 0, 1), self.mean, out=out[:, :h, :w])
        out[:, :h, :w] *= self.mult
        row = np.full(self.row_width, self.pad_value, dtype=np.float32)
        if raw.size > self.row_width - LABEL_HEADER:
            raise DataIterError(
                f"{self.where(offset)}: a label of {raw.size} values does not fit label_pad_width "
                f"{self.row_width - LABEL_HEADER}"
            )
        row[:LABEL_HEADER] = (self.channels, h, w, raw.size)
        row[LABEL_HEADER : LABEL_HEADER + raw.size] = raw
        return row, header.id

    def _pad(self, pixels: np.ndarray, objects: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
        """Place the image on a canvas up to ``max_pad_scale`` times larger; boxes follow (in place)."""
        h, w = pixels.shape[:2]
        scale = rng.uniform(1.0, self.max_pad_scale)
        canvas_h, canvas_w = int(h * scale), int(w * scale)
        if canvas_h <= h or canvas_w <= w:
            return pixels
        y, x = rng.randint(0, canvas_h - h + 1), rng.randint(0, canvas_w - w + 1)
        canvas = np.full((canvas_h, canvas_w, pixels.shape[2]), self.fill_value, dtype=pixels.dtype)
        canvas[y : y + h, x : x + w] = pixels
        objects[:, [1, 3]] = (objects[:, [1, 3]] * w + x) / canvas_w
        objects[:, [2, 4]] = (objects[:, [2, 4]] * h + y) / canvas_h
        return canvas

    def _fit(self, pixels: np.ndarray, draw: int) -> np.ndarray:
        """Bring the image into ``data_shape`` as ``resize_mode`` says."""
        h, w = pixels.shape[:2]
        if self.resize_mode == "force":
            new_w, new_h = self.width, self.height
        else:
            # single precision, as MXNet computes it (24 / 37 * 37 is just below 24 there)
            ratio = min(np.float32(self.height) / np.float32(h), np.float32(self.width) / np.float32(w))
            if self.resize_mode == "shrink" and ratio >= 1:
                return pixels
            new_w, new_h = max(1, int(np.float32(w) * ratio)), max(1, int(np.float32(h) * ratio))
        if (new_w, new_h) == (w, h):
            return pixels
        return resize_with(np.ascontiguousarray(pixels), new_w, new_h, self.inter_method, draw)


__all__ = ["LABEL_HEADER", "RESIZE_MODES", "DetRecordAugmenter", "checked_det_label"]
