"""What the image operators share: the image layouts, a float-tuple parameter, saturating casts.

Images reach these operators as MXNet's decoders make them, channels last: ``(H, W, C)`` or
a batch ``(N, H, W, C)``; ``to_tensor`` turns them into ``(C, H, W)`` / ``(N, C, H, W)`` floats,
the layout ``normalize`` (and the network) expects. Colour arithmetic is done in float32 and
written back in the input's dtype; for integer images the result is rounded and clipped to
the dtype's range first (resizing rounds as OpenCV does, the colour operators truncate as
MXNet's kernels do).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..infer import InferenceError


def check_image_rank(op_name: str, shape: Any, layout: str = "(H, W, C)") -> None:
    """An image is 3-D, a batch of images 4-D."""
    if len(shape) not in (3, 4):
        raise InferenceError(
            f"{op_name}: expected an image {layout} or a batch (N, {layout[1:]}, got shape {tuple(shape)}"
        )


def check_rgb(op_name: str, shape: Any) -> None:
    """The colour operators mix red, green and blue: the last axis must hold 3 channels."""
    check_image_rank(op_name, shape)
    if shape[-1] not in (0, 3):
        raise InferenceError(f"{op_name}: expected 3 (RGB) channels in the last axis, got shape {tuple(shape)}")


def saturate(xp: Any, values: Any, dtype: Any, truncate: bool = False) -> Any:
    """``values`` in ``dtype``, clipped to an integer dtype's range first and rounded: halves up, as
    OpenCV's fixed-point resize does, or towards zero (``truncate``), as MXNet's colour kernels cast."""
    dtype = np.dtype(dtype)
    if dtype.kind in "ui":
        info = np.iinfo(dtype)
        values = xp.clip(values, info.min, info.max)
        return (xp.trunc(values) if truncate else xp.floor(values + 0.5)).astype(dtype)
    return values.astype(dtype, copy=False)


def work_dtype(dtype: Any) -> Any:
    """The float type the arithmetic runs in: float64 stays, everything else computes in float32."""
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32
