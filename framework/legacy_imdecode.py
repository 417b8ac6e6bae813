"""``mx.nd.imdecode``: MXNet 1.x's legacy image decoder, kept for old data-loading scripts.

Unlike ``mx.image.imdecode`` (height x width x channels, uint8, RGB), this one writes the
decoded pixels channel-first as numbers, in the decoder's own BGR order, optionally cut to
a rectangle and with a mean image subtracted: the layout a CHW network input wants. With a
4-D ``out`` it fills the batch slot ``out[index]``. It decodes with the same Pillow-based
decoder as ``mx.image`` and ``mx.recordio`` (:func:`framework.recordio.decode_image`), which
sits above NDArray in the layers, so ``framework/__init__.py`` attaches it to ``mx.nd``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import recordio
from .base import MXLabError
from .ndarray import NDArray, array


class ImdecodeError(MXLabError, ValueError):
    """The image, the rectangle, the mean or ``out`` does not fit what imdecode was asked for."""


def imdecode(
    str_img: Any,
    clip_rect: tuple[int, int, int, int] = (0, 0, 0, 0),
    out: NDArray | None = None,
    index: int = 0,
    channels: int = 3,
    mean: NDArray | None = None,
) -> NDArray:
    """Decode ``str_img`` (bytes) into a (channels, height, width) array; see the module docstring.

    ``clip_rect`` is ``(x0, y0, x1, y1)``; a rectangle with ``y1 == y0`` means the whole image.
    ``mean`` (same shape as the result) is subtracted; the result's dtype is ``mean``'s, else float32.
    """
    data = bytes(str_img.encode("latin-1") if isinstance(str_img, str) else str_img)
    try:
        pixels = recordio.decode_image(data, iscolor=0 if channels == 1 else -1)
    except recordio.RecordIOError as err:
        raise ImdecodeError(f"imdecode: {err}") from None
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    if not 1 <= channels <= pixels.shape[2]:
        raise ImdecodeError(f"imdecode: channels={channels} but the image has {pixels.shape[2]} channel(s)")
    x0, y0, x1, y1 = (int(v) for v in clip_rect)
    if y1 == y0:
        x0, y0, x1, y1 = 0, 0, pixels.shape[1], pixels.shape[0]
    if not (0 <= x0 < x1 <= pixels.shape[1] and 0 <= y0 < y1 <= pixels.shape[0]):
        raise ImdecodeError(
            f"imdecode: clip_rect {tuple(clip_rect)} is not inside the {pixels.shape[1]}x{pixels.shape[0]} image"
        )
    chw = np.ascontiguousarray(pixels[y0:y1, x0:x1, :channels].transpose(2, 0, 1))
    dtype = np.float32 if mean is None else mean.dtype
    values = chw.astype(dtype)
    if mean is not None:
        if tuple(mean.shape) != values.shape:
            raise ImdecodeError(f"imdecode: mean has shape {tuple(mean.shape)}, the image clip {values.shape}")
        values = values - mean.asnumpy()
    if out is None:
        return array(values, dtype=dtype)
    if out.ndim == 3:
        target = out
    elif out.ndim == 4:
        target = out[index]
    else:
        raise ImdecodeError(f"imdecode: out must be 3-D (C, H, W) or 4-D (N, C, H, W), got shape {tuple(out.shape)}")
    if tuple(target.shape) != values.shape:
        raise ImdecodeError(f"imdecode: out slot has shape {tuple(target.shape)}, the image clip {values.shape}")
    target[:] = values.astype(target.dtype)
    return out
