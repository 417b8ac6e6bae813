"""Rotation: ``imrotate`` and ``random_rotate`` turn CHW (or NCHW) float32 images about their centre.

Each output pixel samples the input bilinearly at its position turned back by the angle
(counter-clockwise for positive degrees), about the image centre; samples outside the image
count as 0, so the corners fill with black. ``zoom_in`` scales the sampling so that no
padding shows, ``zoom_out`` so that the whole input fits: with ``r = max(h, w) / min(h, w)``
the sampled positions are scaled by ``1 / (|cos a| + |sin a| r)`` or ``|cos a| + |sin a| r``,
as MXNet 1.9.1 does.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from ..ndarray import NDArray, array
from .base import ImageError


def _bilinear_zero_padded(images: np.ndarray, sx: np.ndarray, sy: np.ndarray) -> np.ndarray:
    """Sample ``images`` (N, C, H, W) at (N, H, W) positions; neighbours outside the image are 0."""
    n, _, height, width = images.shape
    x0, y0 = np.floor(sx).astype(np.intp), np.floor(sy).astype(np.intp)
    fx, fy = (sx - x0).astype(np.float32), (sy - y0).astype(np.float32)
    batch = np.arange(n)[:, None, None]
    out = np.zeros(images.shape, dtype=np.float32)
    for oy, ox, weight in ((0, 0, (1 - fx) * (1 - fy)), (0, 1, fx * (1 - fy)), (1, 0, (1 - fx) * fy), (1, 1, fx * fy)):
        yy, xx = y0 + oy, x0 + ox
        inside = (yy >= 0) & (yy < height) & (xx >= 0) & (xx < width)
        values = images[batch, :, np.clip(yy, 0, height - 1), np.clip(xx, 0, width - 1)]  # (N, H, W, C)
        out += np.moveaxis(values * (weight * inside)[..., None], -1, 1)
    return out


def imrotate(src: NDArray, rotation_degrees: Any, zoom_in: bool = False, zoom_out: bool = False) -> NDArray:
    """Rotate a CHW image (or NCHW batch, with one angle or one per image) by ``rotation_degrees``."""
    if zoom_in and zoom_out:
        raise ImageError("imrotate: zoom_in and zoom_out cannot both be True")
    if not isinstance(src, NDArray) or src.dtype != np.float32:
        raise ImageError(f"imrotate: src must be a float32 NDArray (CHW or NCHW), got {getattr(src, 'dtype', src)!r}")
    if src.ndim not in (3, 4):
        raise ImageError(f"imrotate: src must be CHW or NCHW, got shape {tuple(src.shape)}")
    images = src.asnumpy()
    single = images.ndim == 3
    if single:
        images = images[None]
    degrees = rotation_degrees.asnumpy() if isinstance(rotation_degrees, NDArray) else np.asarray(rotation_degrees)
    degrees = np.broadcast_to(degrees.astype(np.float64).reshape(-1), (images.shape[0],)) if degrees.size in (
        1, images.shape[0]) else None  # fmt: skip
    if degrees is None:
        raise ImageError(f"imrotate: give one angle or one per image ({images.shape[0]}), got {rotation_degrees!r}")
    height, width = images.shape[-2:]
    angles = np.deg2rad(degrees)[:, None, None]
    cos, sin = np.cos(angles), np.sin(angles)
    ratio = max(height, width) / min(height, width)
    scale = np.ones_like(cos)
    if zoom_in:
        scale = 1.0 / (np.abs(cos) + np.abs(sin) * ratio)
    elif zoom_out:
        scale = np.abs(cos) + np.abs(sin) * ratio
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float64)
    dx, dy = xs - (width - 1) / 2, ys - (height - 1) / 2
    sx = (cos * dx - sin * dy) * scale + (width - 1) / 2
    sy = (sin * dx + cos * dy) * scale + (height - 1) / 2
    out = _bilinear_zero_padded(images, sx, sy)
    return array(out[0] if single else out, ctx=src.context)


def random_rotate(
    src: NDArray, angle_limits: tuple[float, float], zoom_in: bool = False, zoom_out: bool = False
) -> NDArray:
    """Rotate by angles drawn uniformly from ``angle_limits`` (one per image) with Python's ``random``."""
    low, high = angle_limits
    count = 1 if src.ndim == 3 else src.shape[0]
    angles = [random.uniform(low, high) for _ in range(count)]
    return imrotate(src, angles[0] if src.ndim == 3 else angles, zoom_in=zoom_in, zoom_out=zoom_out)


__all__ = ["imrotate", "random_rotate"]
