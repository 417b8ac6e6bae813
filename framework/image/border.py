"""``copyMakeBorder``: add rows and columns around an HWC image, OpenCV's way of padding.

MXNet exposes OpenCV's ``cv::copyMakeBorder`` as ``mx.image.copyMakeBorder``; the detection
augmenters pad with it. ``type`` is OpenCV's border code; each maps onto one ``numpy.pad``
mode, and the flag 16 (``BORDER_ISOLATED``, which only matters for views into a larger
image) is accepted and ignored, as it is for a whole image.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ndarray import NDArray
from .base import ImageError, like_source, pixels_of

# OpenCV border code -> numpy.pad mode: constant, replicate, reflect (edge repeated), wrap, reflect_101
BORDER_MODES = {0: "constant", 1: "edge", 2: "symmetric", 3: "wrap", 4: "reflect"}
BORDER_ISOLATED = 16


def copyMakeBorder(
    src: Any = None,
    top: int = 0,
    bot: int = 0,
    left: int = 0,
    right: int = 0,
    type: int = 0,
    value: float = 0.0,
    values: Any = (),
    out: NDArray | None = None,
    name: str | None = None,
    **kwargs: Any,
) -> NDArray:
    """``src`` with ``top``/``bot`` rows and ``left``/``right`` columns added; a constant border
    (``type=0``) is ``values`` per channel when given, else ``value``."""
    del name  # the operator's name in a graph; nothing here records one
    if kwargs:
        raise ImageError(f"copyMakeBorder: unknown arguments {sorted(kwargs)}")
    pixels = pixels_of(src, "copyMakeBorder")
    widths = [int(top), int(bot), int(left), int(right)]
    if min(widths) < 0:
        raise ImageError(f"copyMakeBorder: top, bot, left and right must be >= 0, got {widths}")
    mode = BORDER_MODES.get(int(type) & ~BORDER_ISOLATED)
    if mode is None:
        raise ImageError(f"copyMakeBorder: type must be an OpenCV border code 0-4 (optionally | 16), got {type!r}")
    pad = ((widths[0], widths[1]), (widths[2], widths[3]), (0, 0))
    if mode != "constant":
        padded = np.pad(pixels, pad, mode=mode)
    else:
        fill = np.asarray(values, dtype=np.float64).reshape(-1)
        if fill.size == 0:
            fill = np.array([value], dtype=np.float64)
        if fill.size not in (1, pixels.shape[2]):
            raise ImageError(
                f"copyMakeBorder: values must hold 1 or {pixels.shape[2]} numbers (one per channel), got {fill.size}"
            )
        padded = np.empty((pixels.shape[0] + sum(pad[0]), pixels.shape[1] + sum(pad[1]), pixels.shape[2]), pixels.dtype)
        padded[...] = np.broadcast_to(fill, padded.shape[2:]).astype(pixels.dtype)
        padded[top : top + pixels.shape[0], left : left + pixels.shape[1]] = pixels
    result = like_source(padded, src)
    if out is not None:
        out[:] = result
        return out
    return result
