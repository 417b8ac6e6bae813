"""Decoding: ``imdecode`` and ``imread`` turn JPEG/PNG bytes into an HWC uint8 NDArray.

MXNet decodes with OpenCV; MXLab decodes with Pillow (:func:`framework.recordio.decode_image`).
PNG is lossless, so both give the same pixels; JPEG decoders may round differently, so a
JPEG may differ from MXNet's by a level or two (docs/differences.md).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .. import recordio
from ..ndarray import NDArray, array
from .base import ImageError


def _as_bytes(buf: Any) -> bytes:
    if isinstance(buf, bytes | bytearray | memoryview):
        return bytes(buf)
    if isinstance(buf, NDArray):
        buf = buf.asnumpy()
    if isinstance(buf, np.ndarray):
        if buf.dtype != np.uint8 or buf.ndim != 1:
            raise ImageError(f"imdecode: buf must be bytes or a 1-D uint8 array, got {buf.dtype} of shape {buf.shape}")
        return buf.tobytes()
    if isinstance(buf, str):
        return buf.encode("latin-1")
    raise ImageError(f"imdecode: buf must be bytes or a 1-D uint8 array, got {type(buf).__name__}")


def imdecode(buf: Any, flag: int = 1, to_rgb: int = 1, out: NDArray | None = None) -> NDArray:
    """Decode an image: ``flag=1`` colour (H, W, 3), ``0`` grayscale (H, W, 1); RGB order unless ``to_rgb=0``.

    ``out``, if given, receives the pixels (its shape must match) and is returned.
    """
    if flag not in (0, 1):
        raise ImageError(f"imdecode: flag must be 0 (grayscale) or 1 (colour), got {flag!r}")
    data = _as_bytes(buf)
    if not data:
        raise ImageError("imdecode: buf is empty")
    try:
        pixels = recordio.decode_image(data, iscolor=int(flag))  # BGR, as OpenCV hands it out
    except recordio.RecordIOError as err:
        raise ImageError(f"imdecode: {err}") from None
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    elif to_rgb:
        pixels = pixels[:, :, ::-1]
    if out is None:
        return array(np.ascontiguousarray(pixels), dtype=np.uint8)
    if tuple(out.shape) != pixels.shape:
        raise ImageError(f"imdecode: out has shape {tuple(out.shape)} but the image decodes to {pixels.shape}")
    out[:] = pixels.astype(out.dtype)
    return out


def imread(filename: str | os.PathLike, flag: int = 1, to_rgb: int = 1, out: NDArray | None = None) -> NDArray:
    """Read and decode an image file (see :func:`imdecode`)."""
    path = os.fspath(filename)
    if not os.path.isfile(path):
        raise ImageError(f"imread: no such image file: {path!r}")
    with open(path, "rb") as f:
        return imdecode(f.read(), flag=flag, to_rgb=to_rgb, out=out)
