"""Detection augmenters: transform an image *and* its boxes, and ``CreateDetAugmenter``.

A detection label is a NumPy array with one row per object, ``[class, xmin, ymin, xmax, ymax,
...]``, the corners as fractions of the image's width and height (so a resize leaves them
unchanged; a crop, a pad or a flip moves them). A :class:`DetAugmenter` is called as
``aug(src, label)`` and returns ``(src, label)``. Classification augmenters that do not move
pixels relative to the frame (resize, colour, cast, normalise) join a detection pipeline
through :class:`DetBorrowAug`.

The random crop and pad draw their proposals with Python's ``random`` module in the order
MXNet 1.9.1's ``mx.image.detection`` does, so ``random.seed(s)`` gives MXNet's crops. The box
arithmetic is vectorised over the objects.
"""

from __future__ import annotations

import json
import logging
import math
import random
import warnings
from collections.abc import Sequence
from numbers import Number
from typing import Any

import numpy as np

from ..ndarray import NDArray
from .augmenters import (
    IMAGENET_EIGVAL,
    IMAGENET_EIGVEC,
    IMAGENET_MEAN,
    IMAGENET_STD,
    Augmenter,
    CastAug,
    ColorJitterAug,
    ColorNormalizeAug,
    ForceResizeAug,
    HueJitterAug,
    LightingAug,
    RandomGrayAug,
    ResizeAug,
    _jsonable,
    _statistic,
)
from .base import ImageError, like_source, pixels_of
from .border import BORDER_ISOLATED, copyMakeBorder
from .crop import fixed_crop

# columns of a label row: the class id, then the box corners
X_COLUMNS, Y_COLUMNS = [1, 3], [2, 4]


def box_areas(boxes: np.ndarray) -> np.ndarray:
    """Areas of ``(xmin, ymin, xmax, ymax)`` rows; an inverted box has area 0."""
    return np.maximum(0, boxes[:, 2] - boxes[:, 0]) * np.maximum(0, boxes[:, 3] - boxes[:, 1])


def intersection_areas(boxes: np.ndarray, window: Sequence[float]) -> np.ndarray:
    """The area each box shares with ``window=(xmin, ymin, xmax, ymax)`` (0 when they do not meet)."""
    widths = np.minimum(boxes[:, 2], window[2]) - np.maximum(boxes[:, 0], window[0])
    heights = np.minimum(boxes[:, 3], window[3]) - np.maximum(boxes[:, 1], window[1])
    return np.where((widths > 0) & (heights > 0), widths * heights, 0.0)


def _as_range(value: Any, api: str, name: str) -> tuple[float, float]:
    """A (low, high) pair; a single number means the fixed range (value, value), as in MXNet."""
    if isinstance(value, list | tuple):
        if len(value) != 2:
            raise ImageError(f"{api}: {name} must be a number or a (low, high) pair, got {value!r}")
        return float(value[0]), float(value[1])
    if not isinstance(value, Number):
        raise ImageError(f"{api}: {name} must be a number or a (low, high) pair, got {value!r}")
    logging.getLogger(__name__).info("%s: using the fixed %s %s", api, name, value)
    return float(value), float(value)


class DetAugmenter:
    """Base class: remembers its arguments for :meth:`dumps`; subclasses define ``__call__(src, label)``."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = {key: _jsonable(value) for key, value in kwargs.items()}

    def dumps(self) -> Any:
        """``[class name in lower case, arguments]`` as a JSON string."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, src: NDArray, label: np.ndarray) -> tuple[NDArray, np.ndarray]:
        raise NotImplementedError(f"{type(self).__name__} does not define __call__(src, label)")


class DetBorrowAug(DetAugmenter):
    """Apply a classification :class:`~framework.image.augmenters.Augmenter` to the image; the label
    passes through unchanged (right for augmenters that do not move pixels within the frame)."""

    def __init__(self, augmenter: Augmenter) -> None:
        if not isinstance(augmenter, Augmenter):
            raise TypeError(f"DetBorrowAug: expected an mx.image.Augmenter to borrow, got {type(augmenter).__name__}")
        super().__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self) -> Any:
        """``[name, the borrowed augmenter's dumps()]`` (a list, as in MXNet)."""
        return [type(self).__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src: NDArray, label: np.ndarray) -> tuple[NDArray, np.ndarray]:
        return self.augmenter(src), label


class DetRandomSelectAug(DetAugmenter):
    """With probability ``skip_prob`` change nothing; else apply one of ``aug_list`` chosen at random."""

    def __init__(self, aug_list: DetAugmenter | Sequence[DetAugmenter], skip_prob: float = 0) -> None:
        super().__init__(skip_prob=skip_prob)
        augs = list(aug_list) if isinstance(aug_list, list | tuple) else [aug_list]
        for aug in augs:
            if not isinstance(aug, DetAugmenter):
                raise ImageError(f"DetRandomSelectAug: aug_list may hold DetAugmenters only, got {type(aug).__name__}")
        self.aug_list = augs
        self.skip_prob = skip_prob if augs else 1  # an empty list never applies anything

    def dumps(self) -> Any:
        return [type(self).__name__.lower(), [aug.dumps() for aug in self.aug_list]]

    def __call__(self, src: NDArray, label: np.ndarray) -> tuple[NDArray, np.ndarray]:
        if random.random() < self.skip_prob:
            return src, label
        random.shuffle(self.aug_list)  # the first after a shuffle: MXNet's way of choosing one
        return self.aug_list[0](src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """With probability ``p``, mirror left-right; a box's corners become ``1 - xmax`` and ``1 - xmin``."""

    def __init__(self, p: float) -> None:
        super().__init__(p=p)
        self.p = p

    def __call__(self, src: NDArray, label: np.ndarray) -> tuple[NDArray, np.ndarray]:
        if random.random() < self.p:
            src = like_source(pixels_of(src, "DetHorizontalFlipAug")[:, ::-1], src)
            label = label.copy()
            label[:, X_COLUMNS] = 1.0 - label[:, X_COLUMNS[::-1]]
        return src, label


class _WindowAug(DetAugmenter):
    """Shared by the crop and the pad augmenter: both draw a rectangle (the crop window, the pad canvas)
    of an area in ``area_range`` and an aspect ratio in ``aspect_ratio_range``, both are disabled with
    a warning when a range is invalid, and both leave the image alone when no rectangle was found."""

    def _enable_if_valid(self, api: str, lowest_top_area: float) -> None:
        """Set ``enabled``: off (with a warning) when ``area_range`` ends at or below ``lowest_top_area`` or
        a range is reversed, as in MXNet."""
        self.enabled = False
        if self.area_range[1] <= lowest_top_area or self.area_range[0] > self.area_range[1]:
            warnings.warn(f"{api} is disabled: invalid area_range {self.area_range}", stacklevel=3)
        elif self.aspect_ratio_range[0] <= 0 or self.aspect_ratio_range[0] > self.aspect_ratio_range[1]:
            warnings.warn(f"{api} is disabled: invalid aspect_ratio_range {self.aspect_ratio_range}", stacklevel=3)
        else:
            self.enabled = True

    def __call__(self, src: NDArray, label: np.ndarray) -> tuple[NDArray, np.ndarray]:
        height, width = src.shape[0], src.shape[1]
        proposal = self._propose(label, height, width) if self.enabled and height > 0 and width > 0 else None
        if proposal is None:
            return src, label
        x, y, w, h, label = proposal
        return self._apply(src, x, y, w, h), label

    def _propose(self, label: np.ndarray, height: int, width: int) -> tuple[int, int, int, int, np.ndarray] | None:
        """``(x, y, w, h, new label)`` of a rectangle that meets the constraints, or None after ``max_attempts``."""
        raise NotImplementedError(f"{type(self).__name__} does not define _propose")

    def _apply(self, src: NDArray, x: int, y: int, w: int, h: int) -> NDArray:
        """The image cropped to, or padded out to, the proposed rectangle."""
        raise NotImplementedError(f"{type(self).__name__} does not define _apply")


class DetRandomCropAug(_WindowAug):
    """Crop a random window that keeps enough of the objects; boxes are cut to the window.

    A window (area a fraction ``area_range`` of the image, aspect ratio ``width / height`` in
    ``aspect_ratio_range``) is accepted when every object it touches has more than
    ``min_object_covered`` of its area inside; objects left with at most ``min_eject_coverage``
    of their area are dropped. After ``max_attempts`` refused windows the image is unchanged.
    Invalid ranges disable the augmenter with a warning, as in MXNet.
    """

    def __init__(
        self,
        min_object_covered: float = 0.1,
        aspect_ratio_range: Any = (0.75, 1.33),
        area_range: Any = (0.05, 1.0),
        min_eject_coverage: float = 0.3,
        max_attempts: int = 50,
    ) -> None:
        aspect_ratio_range = _as_range(aspect_ratio_range, "DetRandomCropAug", "aspect_ratio_range")
        area_range = _as_range(area_range, "DetRandomCropAug", "area_range")
        super().__init__(
            min_object_covered=min_object_covered,
            aspect_ratio_range=aspect_ratio_range,
            area_range=area_range,
            min_eject_coverage=min_eject_coverage,
            max_attempts=max_attempts,
        )
        self.min_object_covered = min_object_covered
        self.min_eject_coverage = min_eject_coverage
        self.max_attempts = max_attempts
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self._enable_if_valid("DetRandomCropAug", lowest_top_area=0)

    def _apply(self, src: NDArray, x: int, y: int, w: int, h: int) -> NDArray:
        return fixed_crop(src, x, y, w, h, None)

    def _window_size(self, ratio: float, height: int, width: int) -> tuple[int, int] | None:
        """A window height in the area range (drawn when there is a choice) and its width; None if none fits."""
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        h = round(math.sqrt(min_area / ratio))
        max_h = round(math.sqrt(max_area / ratio))
        if round(max_h * ratio) > width:
            max_h = int((width + 0.4999999) / ratio)
        max_h = min(max_h, height)
        h = min(h, max_h)
        if h < max_h:
            h = random.randint(h, max_h)
        w = round(h * ratio)
        # one step up or down when rounding left the area just outside the range
        if w * h < min_area:
            h += 1
            w = round(h * ratio)
        if w * h > max_area:
            h -= 1
            w = round(h * ratio)
        if not (min_area <= w * h <= max_area and 0 <= w <= width and 0 <= h <= height):
            return None
        return w, h

    def _covers_objects(self, label: np.ndarray, window: tuple[float, float, float, float], pixels: float) -> bool:
        """Whether every object the window touches has more than ``min_object_covered`` of it inside."""
        boxes = label[:, 1:5]
        areas = box_areas(boxes)
        big = areas * pixels > 2  # objects of more than two pixels count
        if not big.any():
            return False
        coverage = intersection_areas(boxes[big], window) / areas[big]
        touched = coverage[coverage > 0]
        return touched.size > 0 and touched.min() > self.min_object_covered

    def _cropped_label(self, label: np.ndarray, window: tuple[float, float, float, float]) -> np.ndarray | None:
        """Boxes in the window's coordinates, clipped to it; objects mostly cut away are dropped."""
        x0, y0, x1, y1 = window
        w, h = x1 - x0, y1 - y0
        out = label.copy()
        out[:, X_COLUMNS] = np.clip((out[:, X_COLUMNS] - x0) / w, 0, 1)
        out[:, Y_COLUMNS] = np.clip((out[:, Y_COLUMNS] - y0) / h, 0, 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            kept_fraction = box_areas(out[:, 1:5]) * w * h / box_areas(label[:, 1:5])
        keep = (out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2]) & (kept_fraction > self.min_eject_coverage)
        return out[keep] if keep.any() else None

    def _propose(self, label: np.ndarray, height: int, width: int) -> tuple[int, int, int, int, np.ndarray] | None:
        """Up to ``max_attempts`` random windows; the first that satisfies the constraints, with its label."""
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            size = self._window_size(ratio, height, width)
            if size is None:
                continue
            w, h = size
            y = random.randint(0, max(0, height - h))
            x = random.randint(0, max(0, width - w))
            if w * h < 2:
                continue
            window = (x / width, y / height, (x + w) / width, (y + h) / height)
            if self._covers_objects(label, window, float(width * height)):
                cropped = self._cropped_label(label, window)
                if cropped is not None:
                    return x, y, w, h, cropped
        return None


class DetRandomPadAug(_WindowAug):
    """Place the image at a random position on a larger canvas of ``pad_val``; boxes shrink with it.

    The canvas area is ``area_range`` times the image's (the low end at least 1), its aspect
    ratio in ``aspect_ratio_range``; a canvas less than two pixels larger on either side is
    refused, and after ``max_attempts`` refusals the image is unchanged.
    """

    def __init__(
        self,
        aspect_ratio_range: Any = (0.75, 1.33),
        area_range: Any = (1.0, 3.0),
        max_attempts: int = 50,
        pad_val: Any = (128, 128, 128),
    ) -> None:
        if not isinstance(pad_val, list | tuple) and not isinstance(pad_val, Number):
            raise ImageError(f"DetRandomPadAug: pad_val must be a number or one number per channel, got {pad_val!r}")
        aspect_ratio_range = _as_range(aspect_ratio_range, "DetRandomPadAug", "aspect_ratio_range")
        area_range = _as_range(area_range, "DetRandomPadAug", "area_range")
        super().__init__(
            aspect_ratio_range=aspect_ratio_range, area_range=area_range, max_attempts=max_attempts, pad_val=pad_val
        )
        self.pad_val = pad_val
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.max_attempts = max_attempts
        self._enable_if_valid("DetRandomPadAug", lowest_top_area=1.0)

    def _apply(self, src: NDArray, x: int, y: int, w: int, h: int) -> NDArray:
        height, width = src.shape[0], src.shape[1]
        return copyMakeBorder(src, y, h - y - height, x, w - x - width, BORDER_ISOLATED, values=self.pad_val)

    def _propose(self, label: np.ndarray, height: int, width: int) -> tuple[int, int, int, int, np.ndarray] | None:
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            h = round(math.sqrt(min_area / ratio))
            max_h = round(math.sqrt(max_area / ratio))
            if round(h * ratio) < width:  # the canvas must be at least as wide as the image
                h = int((width + 0.499999) / ratio)
            h = min(max(h, height), max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = round(h * ratio)
            if h - height < 2 or w - width < 2:
                continue  # a border of a pixel or less is not worth it
            y = random.randint(0, max(0, h - height))
            x = random.randint(0, max(0, w - width))
            out = label.copy()
            out[:, X_COLUMNS] = (out[:, X_COLUMNS] * width + x) / w
            out[:, Y_COLUMNS] = (out[:, Y_COLUMNS] * height + y) / h
            return x, y, w, h, out
        return None


def CreateMultiRandCropAugmenter(
    min_object_covered: Any = 0.1,
    aspect_ratio_range: Any = (0.75, 1.33),
    area_range: Any = (0.05, 1.0),
    min_eject_coverage: Any = 0.3,
    max_attempts: Any = 50,
    skip_prob: float = 0,
) -> DetRandomSelectAug:
    """Several :class:`DetRandomCropAug` (one per entry where a parameter is a *list*; a single value
    is shared), of which each call applies one at random, or none with probability ``skip_prob``."""
    columns = [
        value if isinstance(value, list) else [value]
        for value in (min_object_covered, aspect_ratio_range, area_range, min_eject_coverage, max_attempts)
    ]
    count = max(len(column) for column in columns)
    if any(len(column) not in (1, count) for column in columns):
        raise ImageError(
            f"CreateMultiRandCropAugmenter: list parameters must all have the same length ({count}) or be single "
            f"values, got lengths {[len(column) for column in columns]}"
        )
    columns = [column * count if len(column) == 1 else column for column in columns]
    augs = [
        DetRandomCropAug(
            min_object_covered=covered,
            aspect_ratio_range=ratio,
            area_range=area,
            min_eject_coverage=eject,
            max_attempts=attempts,
        )
        for covered, ratio, area, eject, attempts in zip(*columns, strict=True)
    ]
    return DetRandomSelectAug(augs, skip_prob=skip_prob)


def CreateDetAugmenter(
    data_shape: tuple[int, int, int],
    resize: int = 0,
    rand_crop: float = 0,
    rand_pad: float = 0,
    rand_gray: float = 0,
    rand_mirror: bool = False,
    mean: Any = None,
    std: Any = None,
    brightness: float = 0,
    contrast: float = 0,
    saturation: float = 0,
    pca_noise: float = 0,
    hue: float = 0,
    inter_method: int = 2,
    min_object_covered: Any = 0.1,
    aspect_ratio_range: Any = (0.75, 1.33),
    area_range: Any = (0.05, 3.0),
    min_eject_coverage: Any = 0.3,
    max_attempts: Any = 50,
    pad_val: Any = (127, 127, 127),
) -> list[DetAugmenter]:
    """The standard detection pipeline, in MXNet's order: resize, crop (probability ``rand_crop``),
    mirror, pad (probability ``rand_pad``), force-resize to ``data_shape``, cast, colour, normalise.

    ``area_range`` serves both: the crop's upper end is capped by the crop itself at the image,
    the pad uses ``(1, area_range[1])``.
    """
    if len(data_shape) != 3:
        raise ImageError(f"CreateDetAugmenter: data_shape must be (channels, height, width), got {data_shape}")
    auglist: list[DetAugmenter] = []
    if resize > 0:
        auglist.append(DetBorrowAug(ResizeAug(resize, inter_method)))
    if rand_crop > 0:
        crops = CreateMultiRandCropAugmenter(
            min_object_covered,
            aspect_ratio_range,
            area_range,
            min_eject_coverage,
            max_attempts,
            skip_prob=1 - rand_crop,
        )
        auglist.append(crops)
    if rand_mirror > 0:
        auglist.append(DetHorizontalFlipAug(0.5))
    if rand_pad > 0:
        pad = DetRandomPadAug(aspect_ratio_range, (1.0, _as_range(area_range, "CreateDetAugmenter", "area_range")[1]),
                              max_attempts, pad_val)  # fmt: skip
        auglist.append(DetRandomSelectAug([pad], 1 - rand_pad))
    auglist.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]), inter_method)))
    auglist.append(DetBorrowAug(CastAug()))
    if brightness or contrast or saturation:
        auglist.append(DetBorrowAug(ColorJitterAug(brightness, contrast, saturation)))
    if hue:
        auglist.append(DetBorrowAug(HueJitterAug(hue)))
    if pca_noise > 0:
        auglist.append(DetBorrowAug(LightingAug(pca_noise, IMAGENET_EIGVAL, IMAGENET_EIGVEC)))
    if rand_gray > 0:
        auglist.append(DetBorrowAug(RandomGrayAug(rand_gray)))
    mean = _statistic(mean, IMAGENET_MEAN, "mean")
    std = _statistic(std, IMAGENET_STD, "std")
    if mean is not None or std is not None:
        auglist.append(DetBorrowAug(ColorNormalizeAug(mean, std)))
    return auglist


__all__ = [
    "CreateDetAugmenter",
    "CreateMultiRandCropAugmenter",
    "DetAugmenter",
    "DetBorrowAug",
    "DetHorizontalFlipAug",
    "DetRandomCropAug",
    "DetRandomPadAug",
    "DetRandomSelectAug",
]
