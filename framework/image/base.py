"""What every part of ``mx.image`` shares: its error type and the NDArray <-> pixel-array crossing.

``mx.image`` works on images as NDArrays laid out (height, width, channels), HWC, the way
a decoder hands them out. The pixel arithmetic itself is NumPy on the host (decoding and
augmenting happen before a batch reaches the device), so each function takes the NDArray's
values once, computes, and wraps the result in a new NDArray of the same context.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXLabError
from ..ndarray import NDArray, array


class ImageError(MXLabError, ValueError):
    """An ``mx.image`` function got an argument it cannot use (the message names it)."""


def pixels_of(src: Any, api: str) -> np.ndarray:
    """The values of an HWC image (NDArray or NumPy array) as a NumPy array."""
    values = src.asnumpy() if isinstance(src, NDArray) else np.asarray(src)
    if values.ndim != 3:
        raise ImageError(f"{api}: expected an image of shape (height, width, channels), got shape {values.shape}")
    return values


def like_source(values: np.ndarray, src: Any) -> NDArray:
    """``values`` as an NDArray on the context of ``src`` (the host when ``src`` is not an NDArray)."""
    ctx = src.context if isinstance(src, NDArray) else None
    return array(np.ascontiguousarray(values), ctx=ctx, dtype=values.dtype)
