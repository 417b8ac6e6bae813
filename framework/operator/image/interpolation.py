"""Image resizing as OpenCV's ``cv::resize`` defines it, in vectorised array code.

MXNet passes its ``interp`` code straight to OpenCV, so the codes are OpenCV's:

====  ==========  ================================================================
code  name        what an output pixel is
====  ==========  ================================================================
0     nearest     source pixel ``floor(x * src / dst)``
1     bilinear    the 2x2 source pixels around its centre, linearly weighted
2     bicubic     the 4x4 source pixels around its centre, cubic weights (a=-0.75)
3     area        the mean of the source area it covers (shrinking); when
                  enlarging, OpenCV's linear blend with area-shaped weights
4     lanczos     the 8x8 source pixels around its centre, Lanczos-4 weights
====  ==========  ================================================================

Pixel centres line up (``src = (dst + 0.5) * scale - 0.5``) and the edges replicate. Every
method is separable: one matrix of weights per axis (output samples x source samples),
applied to the rows and the columns of every image in one ``einsum``. Integer images are
rounded from the exact result where OpenCV rounds from fixed point, so a pixel may differ
from OpenCV's by one level (``framework.io.pixels.resize_bilinear`` reproduces
OpenCV's fixed-point bilinear exactly, for the iterators).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .common import saturate

INTERP_NAMES = {0: "nearest", 1: "bilinear", 2: "bicubic", 3: "area", 4: "lanczos"}
CUBIC_A = -0.75  # OpenCV's bicubic kernel parameter


def _tap_weights(n_in: int, n_out: int, offsets: np.ndarray, kernel: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Weights of source samples ``floor(centre) + offsets`` (clamped at the edges) for each output sample."""
    centre = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
    low = np.floor(centre)
    frac = centre - low
    taps = low.astype(np.intp)[:, None] + offsets[None, :]
    weights = np.zeros((n_out, n_in))
    rows = np.repeat(np.arange(n_out), len(offsets))
    values = kernel(frac[:, None] - offsets[None, :]).reshape(-1)
    np.add.at(weights, (rows, np.clip(taps, 0, n_in - 1).reshape(-1)), values)
    return weights / weights.sum(axis=1, keepdims=True)


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


def _nearest_weights(n_in: int, n_out: int) -> np.ndarray:
    inverse = 1.0 / (n_out / n_in)  # OpenCV multiplies by the inverse of the scale it was given
    source = np.minimum(np.floor(np.arange(n_out) * inverse).astype(np.intp), n_in - 1)
    weights = np.zeros((n_out, n_in))
    weights[np.arange(n_out), source] = 1.0
    return weights


def _area_weights(n_in: int, n_out: int) -> np.ndarray:
    """Shrinking: output ``i`` covers source ``[i*s, (i+1)*s)``, each source sample weighted by its overlap."""
    scale = n_in / n_out
    start = np.arange(n_out)[:, None] * scale
    left = np.arange(n_in)[None, :]
    overlap = np.clip(np.minimum(start + scale, left + 1) - np.maximum(start, left), 0, None)
    return overlap / scale


def _area_enlarge_weights(n_in: int, n_out: int) -> np.ndarray:
    """Enlarging with ``INTER_AREA``: OpenCV blends source ``floor(x*s)`` and the next one, with weight on
    the next one only where the output pixel straddles a source pixel boundary."""
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


def axis_weights(n_in: int, n_out: int, method: int, shrinking: bool) -> np.ndarray:
    """The (n_out, n_in) weight matrix of ``method`` along one axis."""
    if method == 0:
        return _nearest_weights(n_in, n_out)
    if method == 3:
        return _area_weights(n_in, n_out) if shrinking else _area_enlarge_weights(n_in, n_out)
    if method == 2:
        return _tap_weights(n_in, n_out, np.arange(-1, 3), _cubic_kernel)
    if method == 4:
        return _tap_weights(n_in, n_out, np.arange(-3, 5), _lanczos_kernel)
    return _tap_weights(n_in, n_out, np.arange(0, 2), _linear_kernel)


def resize_images(xp: Any, images: Any, width: int, height: int, method: int) -> Any:
    """Resize ``(..., H, W, C)`` images to ``(..., height, width, C)`` with OpenCV's ``method`` (0-4)."""
    src_h, src_w = images.shape[-3], images.shape[-2]
    # OpenCV averages areas only when neither axis grows; otherwise both axes use the enlarging weights
    shrinking = height <= src_h and width <= src_w
    rows = xp.asarray(axis_weights(src_h, height, method, shrinking))
    cols = xp.asarray(axis_weights(src_w, width, method, shrinking))
    out = xp.einsum("ij,...jkc,lk->...ilc", rows, images.astype(np.float64), cols)
    return saturate(xp, out, images.dtype)
