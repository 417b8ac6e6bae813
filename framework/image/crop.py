"""Cropping: a window of an HWC image, optionally resized to a fixed ``size=(w, h)``.

The random crops draw their positions with Python's ``random`` module, as MXNet's
``mx.image`` does, so ``random.seed(s)`` makes them repeat (and matches MXNet's draws).
"""

from __future__ import annotations

import math
import random
from numbers import Number
from typing import Any

from ..ndarray import NDArray
from .base import ImageError, like_source, pixels_of
from .resize import interp_method, resize_pixels, scale_down


def fixed_crop(
    src: Any, x0: int, y0: int, w: int, h: int, size: tuple[int, int] | None = None, interp: int = 2
) -> NDArray:
    """The ``w`` x ``h`` window at column ``x0``, row ``y0``; resized to ``size=(w, h)`` if given."""
    pixels = pixels_of(src, "fixed_crop")
    height, width = pixels.shape[:2]
    if x0 < 0 or y0 < 0 or w <= 0 or h <= 0 or x0 + w > width or y0 + h > height:
        raise ImageError(
            f"fixed_crop: window x0={x0}, y0={y0}, w={w}, h={h} does not fit a {width}x{height} (WxH) image"
        )
    window = pixels[y0 : y0 + h, x0 : x0 + w]
    if size is not None and (w, h) != tuple(size):
        method = interp_method(interp, (h, w, size[1], size[0]))
        window = resize_pixels(window, int(size[0]), int(size[1]), method)
    return like_source(window, src)


def _image_size(src: Any, api: str) -> tuple[int, int]:
    height, width = pixels_of(src, api).shape[:2]
    return width, height


def random_crop(src: Any, size: tuple[int, int], interp: int = 2) -> tuple[NDArray, tuple[int, int, int, int]]:
    """A window of ``size=(w, h)`` (scaled down to fit) at a random position; returns (image, (x0, y0, w, h))."""
    w, h = _image_size(src, "random_crop")
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def center_crop(src: Any, size: tuple[int, int], interp: int = 2) -> tuple[NDArray, tuple[int, int, int, int]]:
    """The centred window of ``size=(w, h)`` (scaled down to fit); returns (image, (x0, y0, w, h))."""
    w, h = _image_size(src, "center_crop")
    new_w, new_h = scale_down((w, h), size)
    x0 = int((w - new_w) / 2)
    y0 = int((h - new_h) / 2)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def random_size_crop(
    src: Any,
    size: tuple[int, int],
    area: float | tuple[float, float],
    ratio: tuple[float, float],
    interp: int = 2,
    **kwargs: Any,
) -> tuple[NDArray, tuple[int, int, int, int]]:
    """A random window covering ``area`` (a fraction, or a (min, max) range) of the image with an aspect
    ratio drawn log-uniformly from ``ratio``, resized to ``size``; ten tries, then the centre crop."""
    if kwargs:
        raise ImageError(f"random_size_crop: unknown arguments {sorted(kwargs)}")
    w, h = _image_size(src, "random_size_crop")
    if isinstance(area, Number):
        area = (area, 1.0)
    if not 0 < area[0] <= area[1]:
        raise ImageError(f"random_size_crop: area must be a fraction > 0 or a range (min, max), got {area}")
    if not 0 < ratio[0] <= ratio[1]:
        raise ImageError(f"random_size_crop: ratio must be a range (min, max) of positive values, got {ratio}")
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target_area = random.uniform(area[0], area[1]) * w * h
        aspect = math.exp(random.uniform(*log_ratio))
        new_w = round(math.sqrt(target_area * aspect))
        new_h = round(math.sqrt(target_area / aspect))
        if new_w <= w and new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)
