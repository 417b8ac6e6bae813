"""Resizing: ``imresize`` with MXNet's interpolation codes, and the size arithmetic around it.

MXNet hands the code straight to OpenCV's ``cv::resize``, so the codes are OpenCV's (MXNet's
docstrings swap 2 and 3; its behaviour, reproduced here, is OpenCV's). MXLab does not
depend on OpenCV: each method is computed here the way OpenCV defines it:

====  ==========  ================================================================
code  name        what an output pixel is
====  ==========  ================================================================
0     nearest     source pixel ``floor(x * src / dst)``
1     bilinear    the 2x2 source pixels around its centre, linearly weighted
                  (for uint8 OpenCV's fixed-point arithmetic, exact when shrinking;
                  see :func:`framework.io.image_record_iter.resize_bilinear`)
2     bicubic     the 4x4 source pixels around its centre, cubic weights (a=-0.75)
3     area        the mean of the source area it covers (shrinking); when
                  enlarging, OpenCV's linear blend with area-shaped weights
4     lanczos     the 8x8 source pixels around its centre, Lanczos-4 weights
9     auto        bicubic to enlarge, area to shrink, bilinear otherwise
10    random      one of 0-4 drawn with Python's ``random`` module
====  ==========  ================================================================

Every method is separable: a matrix of weights per axis (output samples x source
samples), applied to the rows and the columns in one ``einsum``. uint8 results are rounded
from double precision where OpenCV rounds from fixed point, so they may differ from
MXNet's by one level (docs/differences.md).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from ..io.image_record_iter import resize_bilinear
from ..ndarray import NDArray
from .base import ImageError, like_source, pixels_of

INTERP_NAMES = {0: "nearest", 1: "bilinear", 2: "bicubic", 3: "area", 4: "lanczos"}
AUTO, RANDOM = 9, 10
CUBIC_A = -0.75  # OpenCV's bicubic kernel parameter


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


def _tap_weights(n_in: int, n_out: int, offsets: np.ndarray, kernel: Any) -> np.ndarray:
    """Weights of the source samples ``floor(centre) + offsets`` (clamped at the edges) per output sample."""
    centre = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
    low = np.floor(centre)
    frac = centre - low
    taps = low.astype(np.intp)[:, None] + offsets[None, :]
    weights = np.zeros((n_out, n_in))
    rows = np.repeat(np.arange(n_out), len(offsets))
    np.add.at(
        weights, (rows, np.clip(taps, 0, n_in - 1).reshape(-1)), kernel(frac[:, None] - offsets[None, :]).reshape(-1)
    )
    return weights / weights.sum(axis=1, keepdims=True)


def _nearest_weights(n_in: int, n_out: int) -> np.ndarray:
    inverse = 1.0 / (n_out / n_in)  # OpenCV multiplies by the inverse of the scale it was given
    source = np.minimum(np.floor(np.arange(n_out) * inverse).astype(np.intp), n_in - 1)
    weights = np.zeros((n_out, n_in))
    weights[np.arange(n_out), source] = 1.0
    return weights


def _linear_kernel(t: np.ndarray) -> np.ndarray:
    return np.clip(1.0 - np.abs(t), 0.0, None)


def _cubic_kernel(t: np.ndarray) -> np.ndarray:
    t = np.abs(t)
    a = CUBIC_A
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def _lanczos_kernel(t: np.ndarray) -> np.ndarray:
    return np.where(np.abs(t) < 4, np.sinc(t) * np.sinc(t / 4), 0.0)


def _area_weights(n_in: int, n_out: int) -> np.ndarray:
    """Shrinking: output ``i`` covers source ``[i*s, (i+1)*s)``, each source sample weighted by its overlap."""
    scale = n_in / n_out
    start = np.arange(n_out)[:, None] * scale
    left = np.arange(n_in)[None, :]
    overlap = np.clip(np.minimum(start + scale, left + 1) - np.maximum(start, left), 0, None)
    return overlap / scale


def _area_enlarge_weights(n_in: int, n_out: int) -> np.ndarray:
    """Enlarging with ``INTER_AREA``: OpenCV blends source ``floor(x*s)`` and the next one, with weight
    on the next one only where the output pixel straddles a source pixel boundary."""
    inverse = n_out / n_in
    scale = 1.0 / inverse  # as OpenCV computes it (n_in / n_out can round the other way)
    out = np.arange(n_out)
    source = np.floor(out * scale).astype(np.intp)
    frac = (out + 1) - (source + 1) * inverse
    frac = np.where(frac <= 0, 0.0, frac - np.floor(frac))
    weights = np.zeros((n_out, n_in))
    np.add.at(weights, (out, np.clip(source, 0, n_in - 1)), 1.0 - frac)
    np.add.at(weights, (out, np.clip(source + 1, 0, n_in - 1)), frac)
    return weights


def _axis_weights(n_in: int, n_out: int, method: int, shrinking: bool) -> np.ndarray:
    if method == 0:
        return _nearest_weights(n_in, n_out)
    if method == 3:
        return _area_weights(n_in, n_out) if shrinking else _area_enlarge_weights(n_in, n_out)
    if method == 2:
        return _tap_weights(n_in, n_out, np.arange(-1, 3), _cubic_kernel)
    if method == 4:
        return _tap_weights(n_in, n_out, np.arange(-3, 5), _lanczos_kernel)
    return _tap_weights(n_in, n_out, np.arange(0, 2), _linear_kernel)


def _separable(pixels: np.ndarray, row_weights: np.ndarray, col_weights: np.ndarray) -> np.ndarray:
    out = np.einsum("ij,jkc,lk->ilc", row_weights, pixels.astype(np.float64), col_weights)
    if pixels.dtype == np.uint8:
        return np.clip(np.floor(out + 0.5), 0, 255).astype(np.uint8)
    return out.astype(pixels.dtype)


def resize_pixels(pixels: np.ndarray, w: int, h: int, interp: int) -> np.ndarray:
    """Resize an HWC NumPy image to width ``w`` and height ``h`` with a concrete method (0-4)."""
    src_h, src_w = pixels.shape[:2]
    if interp == 1 and pixels.dtype == np.uint8:
        return np.ascontiguousarray(resize_bilinear(pixels, w, h))
    # OpenCV averages areas only when neither axis grows; otherwise both axes use the enlarging weights
    shrinking = h <= src_h and w <= src_w
    return _separable(pixels, _axis_weights(src_h, h, interp, shrinking), _axis_weights(src_w, w, interp, shrinking))


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
