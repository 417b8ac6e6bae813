"""Resizing: ``imresize`` with MXNet's interpolation codes, and the size arithmetic around it.

MXNet hands the code straight to OpenCV's ``cv::resize``, so the codes are OpenCV's: 0
nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos (MXNet's docstrings swap 2 and 3; its
behaviour, reproduced here, is OpenCV's), plus 9 (auto: bicubic to enlarge, area to shrink,
bilinear otherwise) and 10 (one of 0-4 drawn with Python's ``random``). The arithmetic is
the ``_image_resize`` operator's (:mod:`framework.operator.image.interpolation`), except
that uint8 bilinear resizes use the iterators' exact copy of OpenCV's fixed-point code.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from ..io.pixels import resize_bilinear
from ..ndarray import NDArray
from ..operator.image.interpolation import INTERP_NAMES, resize_images
from .base import ImageError, like_source, pixels_of

AUTO, RANDOM = 9, 10


def interp_method(interp: int, sizes: tuple[int, int, int, int] | tuple[()] = ()) -> int:
    """The concrete method (0-4) for ``interp``; ``sizes=(old_h, old_w, new_h, new_w)`` decides ``9`` (auto)."""
    if interp == AUTO:
        if not sizes:
            return 2
        old_h, old_w, new_h, new_w = sizes
        if new_h > old_h and new_w > old_w:
            return 2  # bicubic to enlarge
        if new_h < old_h and new_w < old_w:
            return 3  # area to shrink
        return 1
    if interp == RANDOM:
        return random.randint(0, 4)
    if interp not in INTERP_NAMES:
        raise ImageError(f"interp: unknown interpolation method {interp!r}; use 0-4, 9 (auto) or 10 (random)")
    return int(interp)


def resize_pixels(pixels: np.ndarray, w: int, h: int, interp: int) -> np.ndarray:
    """Resize an HWC NumPy image to width ``w`` and height ``h`` with a concrete method (0-4)."""
    if interp == 1 and pixels.dtype == np.uint8:
        return np.ascontiguousarray(resize_bilinear(pixels, w, h))  # OpenCV's fixed point, exactly
    return resize_images(np, pixels, w, h, interp)


def imresize(src: Any, w: int, h: int, interp: int = 1) -> NDArray:
    """Resize an HWC image NDArray to ``w`` x ``h`` pixels (``mx.image.imresize``)."""
    pixels = pixels_of(src, "imresize")
    w, h = int(w), int(h)
    if w <= 0 or h <= 0:
        raise ImageError(f"imresize: the target size must be positive, got w={w}, h={h}")
    method = interp_method(interp, (pixels.shape[0], pixels.shape[1], h, w))
    return like_source(resize_pixels(pixels, w, h, method), src)


def scale_down(src_size: tuple[int, int], size: tuple[int, int]) -> tuple[int, int]:
    """Shrink a crop ``size=(w, h)`` to fit inside ``src_size=(w, h)``, keeping its aspect ratio."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def resize_short(src: Any, size: int, interp: int = 2) -> NDArray:
    """Resize so that the shorter edge becomes ``size`` pixels, keeping the aspect ratio (integer division)."""
    pixels = pixels_of(src, "resize_short")
    h, w = pixels.shape[:2]
    if size <= 0:
        raise ImageError(f"resize_short: size must be positive, got {size}")
    new_h, new_w = (size * h // w, size) if h > w else (size, size * w // h)
    method = interp_method(interp, (h, w, new_h, new_w))
    return like_source(resize_pixels(pixels, new_w, new_h, method), src)
