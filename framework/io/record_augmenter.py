"""The work done on the records of an ``ImageRecordIter``: unpack, check, decode, resize, crop, normalise.

One :class:`RecordAugmenter` is built per iterator from its parameters; the iterator's
worker threads call it on a few records at a time (a piece of a batch), with the random
numbers the loader drew, writing into the batch array. Kept apart from the iterator's
threading and epoch logic.

The images of a piece share their output size, so the steps after the horizontal pass of
the resize (its vertical pass, the normalisation) run once for the whole piece: fewer,
larger NumPy calls. What a NumPy call costs with the GIL held (its set-up, 5 to 10 us in
a pipeline) does not grow with the pixels, and that time is what keeps several decoding
threads from running fully in parallel.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from .. import recordio
from .base import DataIterError
from .decode import DecodeBuffers, decode_record_pixels
from .image_aug import ExtraAugmentation
from .pixels import RANDOM_INTER, BilinearResizer, concrete_inter_method, pillow_filter, resize_with

MODES = {1: "L", 3: "RGB", 4: "RGBA"}


class _Resizers(threading.local):
    """One :class:`BilinearResizer` per worker thread (its arrays are reused piece after piece)."""

    def __init__(self) -> None:
        self.resizer = BilinearResizer()


class RecordAugmenter:
    """The per-image work: unpack, check the label, decode, resize, crop, mirror, normalise."""

    def __init__(self, path: str, data_shape: tuple[int, int, int], label_width: int, p: dict[str, Any]) -> None:
        self.path = path
        self.channels, self.height, self.width = data_shape
        self.mode = MODES[self.channels]
        self.label_width = label_width
        self.resize = p["resize"]
        self.rand_crop = p["rand_crop"]
        self.rand_mirror = p["rand_mirror"]
        self.mirror = p["mirror"]
        self.inter_method = p["inter_method"]
        self.normalize = p["dtype"] != "uint8"
        self.saturate = p["dtype"] == "int8"  # minus the mean, rounded and clipped to [-128, 127]
        means = [p["mean_r"], p["mean_g"], p["mean_b"], p["mean_a"]][: self.channels]
        stds = [p["std_r"], p["std_g"], p["std_b"], p["std_a"]][: self.channels]
        # a mean image (C, H, W) from mean_img replaces the per-channel means
        mean_img = p.get("mean_img")
        self.mean = np.array(means, dtype=np.float32).reshape(-1, 1, 1) if mean_img is None else mean_img
        self.label_map: dict[int, np.ndarray] | None = p.get("label_map")
        # MXNet multiplies by scale / std, computed once per channel in float32
        self.mult = np.float32(p["scale"]) / np.array(stds, dtype=np.float32).reshape(-1, 1, 1)
        self.max_pixels = p["max_decoded_pixels"]
        self._fromarray = Image.fromarray
        self._buffers = DecodeBuffers()  # the pixels of an image are used up before the next is decoded
        self._resizers = _Resizers()
        self._where = f"ImageRecordIter: {path}"
        self.extra: ExtraAugmentation = p["extra"]
        # fixed for the iterator's life, so decided once rather than per image (Python held the GIL for it)
        self._extra_active = self.extra.active
        self._always_bilinear = self.inter_method == 1

    def label_of(self, header: Any, offset: int) -> Any:
        if self.label_map is not None:  # path_imglist: the label of the line with the record's index
            label = self.label_map.get(int(header.id))
            if label is None:
                raise DataIterError(
                    f"ImageRecordIter: {self.path}, record at byte offset {offset}: image index {header.id} "
                    "is not in path_imglist"
                )
            return label[0] if self.label_width == 1 else label
        if header.flag > 0:
            if header.flag != self.label_width:
                raise DataIterError(
                    f"ImageRecordIter: {self.path}, record at byte offset {offset}: label of width {header.flag} "
                    f"but label_width is {self.label_width}"
                )
            return header.label if self.label_width > 1 else header.label[0]  # a one-value array is a scalar label
        if self.label_width != 1:
            raise DataIterError(
                f"ImageRecordIter: {self.path}, record at byte offset {offset}: a scalar label (width 1) but "
                f"label_width is {self.label_width}; pack label arrays (im2rec --pack-label) for wider labels"
            )
        return header.label

    def __call__(self, record: bytes, offset: int, randoms: np.ndarray, out: np.ndarray) -> tuple[Any, int]:
        """Process one record into ``out`` (C, H, W); returns (label, record id)."""
        return self.process([record], [offset], randoms[None], out[None])[0]

    def process(
        self, records: Sequence[bytes], offsets: Sequence[int], randoms: np.ndarray, out: np.ndarray
    ) -> list[tuple[Any, int]]:
        """Process a few records into ``out`` (N, C, H, W), one row of ``randoms`` each; their (label, record id)s.

        Images resized by OpenCV's bilinear rule (the default) go through this thread's
        :class:`BilinearResizer`: each one's horizontal pass as it is decoded, then the vertical
        pass and the normalisation of all of them at once. The others (another filter, no
        resize, the extra augmentations) are finished one by one.
        """
        resizer = self._resizers.resizer
        resizer.begin(self.height, self.width, self.channels)
        resized: list[int] = []  # the images in the resizer, by position in the piece
        results = []
        # Python floats: the per-image arithmetic on them (crop position, mirror) is the same in
        # double precision, without a NumPy scalar per operation (all of this holds the GIL)
        draws = randoms.tolist()
        mode, max_pixels, where, buffers = self.mode, self.max_pixels, self._where, self._buffers
        for i, record in enumerate(records):
            offset, row = offsets[i], draws[i]
            try:  # a memoryview: the payload is a slice of the record, not a copy
                header, payload = recordio.unpack(memoryview(record))
            except recordio.RecordIOError as err:
                raise DataIterError(f"{where}, record at byte offset {offset}: {err}") from None
            results.append((self.label_of(header, offset), header.id))
            decoded, channels = decode_record_pixels(payload, mode, max_pixels, where, offset, buffers)
            if self._resize_window(decoded, channels, offset, row, resizer):
                resized.append(i)
                continue
            pixels = decoded if decoded.ndim == 2 or decoded.shape[2] == channels else decoded[:, :, :channels]
            if self._extra_active:
                self._augmented(pixels, offset, row, out[i])
            else:
                self._cropped(pixels, offset, row, out[i])
        if resized:
            crops = resizer.finish().transpose(0, 2, 1, 3)  # (N, C, H, W), mirrored where drawn
            if len(resized) == len(records):
                self._normalise(crops, out)
            else:
                for n, i in enumerate(resized):
                    self._normalise(crops[n], out[i])
        return results

    def _resize_window(
        self, pixels: np.ndarray, channels: int, offset: int, randoms: Sequence[float], resizer: BilinearResizer
    ) -> bool:
        """Hand the image to ``resizer`` when it is resized bilinearly (only the crop's window, mirrored
        as drawn); False when it takes another road."""
        if self.resize <= 0 or self._extra_active:
            return False
        src_h, src_w = pixels.shape[:2]
        w, h = self._resized_size(src_w, src_h)
        if not self._always_bilinear:  # another inter_method (9 and 10 choose per image; NEAREST is filter 0)
            code = concrete_inter_method(self.inter_method, src_w, src_h, w, h, self._draw(randoms))
            if pillow_filter(code) is not None:
                return False
        y, x = self._crop_position(h, w, offset, randoms)
        resizer.add(pixels, w, h, y, x, self._mirrored(randoms), channels)
        return True

    def _cropped(self, pixels: np.ndarray, offset: int, randoms: Sequence[float], out: np.ndarray) -> None:
        """One image without the bilinear resizer: resized with a Pillow filter (or not at all), cropped, finished."""
        src_h, src_w = h, w = pixels.shape[:2]
        if self.resize > 0:
            w, h = self._resized_size(w, h)
            resample = pillow_filter(concrete_inter_method(self.inter_method, src_w, src_h, w, h, self._draw(randoms)))
            pixels = np.asarray(self._fromarray(pixels).resize((w, h), resample))
        y, x = self._crop_position(h, w, offset, randoms)
        self._finish(pixels[y : y + self.height, x : x + self.width], randoms, out)

    @property
    def needs_seed(self) -> bool:
        """Whether each image needs a seed of its own (augmentations, or a random ``inter_method``)."""
        return self.extra.active or self.inter_method == RANDOM_INTER

    @staticmethod
    def _draw(randoms: Sequence[float]) -> int:
        return int(randoms[3]) if len(randoms) > 3 else 0

    def _resized_size(self, w: int, h: int) -> tuple[int, int]:
        """The size after ``resize``: the shorter edge becomes ``resize``."""
        return (self.resize, self.resize * h // w) if h > w else (self.resize * w // h, self.resize)

    def _crop_position(self, h: int, w: int, offset: int, randoms: Sequence[float]) -> tuple[int, int]:
        if h < self.height or w < self.width:
            raise DataIterError(
                f"ImageRecordIter: {self.path}, record at byte offset {offset}: image is {h}x{w} (HxW), smaller "
                f"than data_shape {self.height}x{self.width}; set resize= to scale it up"
            )
        if self.rand_crop:
            return int(randoms[0] * (h - self.height + 1)), int(randoms[1] * (w - self.width + 1))
        return (h - self.height) // 2, (w - self.width) // 2

    def _augmented(self, pixels: np.ndarray, offset: int, randoms: Sequence[float], out: np.ndarray) -> None:
        """The general path: resize, pad/warp, crop, colour (see :mod:`framework.io.image_aug`)."""
        rng = np.random.RandomState(int(randoms[3]))
        if self.resize > 0:
            w, h = self._resized_size(pixels.shape[1], pixels.shape[0])
            pixels = resize_with(pixels, w, h, self.inter_method, self._draw(randoms))
        pixels = self.extra.geometry(pixels, rng)
        if self.extra.crops:
            crop = self.extra.crop(pixels, rng, self.height, self.width, self.rand_crop)
        else:
            y, x = self._crop_position(pixels.shape[0], pixels.shape[1], offset, randoms)
            crop = pixels[y : y + self.height, x : x + self.width]
        crop = self.extra.colour(crop, rng)
        contrast, illumination = self.extra.normalize_jitter(rng)
        self._finish(crop, randoms, out, contrast, illumination)

    def _mirrored(self, randoms: Sequence[float]) -> bool:
        return self.mirror or (self.rand_mirror and randoms[2] < 0.5)

    def _finish(
        self,
        crop: np.ndarray,
        randoms: Sequence[float],
        out: np.ndarray,
        contrast: float = 1.0,
        illumination: float = 0.0,
    ) -> None:
        """Mirror, then :meth:`_normalise` an (H, W, C) or (H, W) crop into ``out`` (C, H, W)."""
        if self._mirrored(randoms):
            crop = crop[:, ::-1]
        self._normalise(crop[None] if crop.ndim == 2 else crop.transpose(2, 0, 1), out, contrast, illumination)

    def _normalise(self, chw: np.ndarray, out: np.ndarray, contrast: float = 1.0, illumination: float = 0.0) -> None:
        """``(pixel - mean) * scale / std`` (times ``contrast``, plus ``illumination``) into ``out``.

        ``chw`` is one (C, H, W) image or several (N, C, H, W), ``out`` alike: the arithmetic is
        element by element, so a piece's images take one call per step.
        """
        if self.saturate:
            values = chw - self.mean  # MXNet's int8 output subtracts the mean only (no std, scale or jitter)
            np.clip(np.rint(values), -128, 127, out=values)
            out[...] = values
        elif self.normalize:
            np.subtract(chw, self.mean, out=out)
            out *= self.mult if contrast == 1.0 else self.mult * np.float32(contrast)
            if illumination:
                out += np.float32(illumination)
        else:
            out[...] = chw
