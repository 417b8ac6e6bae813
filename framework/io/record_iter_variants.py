"""MXNet 1.9.1's other names for ``ImageRecordIter``: fixed output types and the deprecated ``_v1``.

MXNet registers each as a separate C++ iterator; in MXLab each is ``ImageRecordIter`` with
one parameter fixed:

- ``ImageRecordUInt8Iter``: ``dtype='uint8'``, the decoded pixels without normalisation;
- ``ImageRecordInt8Iter``: ``dtype='int8'``, the pixels minus ``mean_*`` (``std_*`` and
  ``scale`` are not applied, as in MXNet), rounded and clipped to [-128, 127];
- ``ImageRecordIter_v1`` / ``ImageRecordUInt8Iter_v1``: MXNet's first implementation of the
  same iterators. Their batches equal the current ones; the one visible difference, the
  batch ``index`` holding the record ids, is what MXLab's ``ImageRecordIter`` always does.

Like MXNet's generated iterator functions they take keyword arguments only.
"""

from __future__ import annotations

from typing import Any

from .base import DataIterError
from .image_record_iter import ImageRecordIter


def _with_dtype(name: str, dtype: str | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> ImageRecordIter:
    if args:
        raise TypeError(f"{name} can only accept keyword arguments")
    if dtype is not None:
        given = kwargs.pop("dtype", None)
        if given not in (None, dtype):
            raise DataIterError(f"{name}: the output dtype is {dtype}, got dtype={given!r}")
        kwargs["dtype"] = dtype
    return ImageRecordIter(**kwargs)


def ImageRecordUInt8Iter(*args: Any, **kwargs: Any) -> ImageRecordIter:
    """``ImageRecordIter`` with uint8 output (the pixels as decoded and augmented, not normalised)."""
    return _with_dtype("ImageRecordUInt8Iter", "uint8", args, kwargs)


def ImageRecordInt8Iter(*args: Any, **kwargs: Any) -> ImageRecordIter:
    """``ImageRecordIter`` with int8 output (minus the mean, rounded and clipped to [-128, 127])."""
    return _with_dtype("ImageRecordInt8Iter", "int8", args, kwargs)


def ImageRecordIter_v1(*args: Any, **kwargs: Any) -> ImageRecordIter:
    """MXNet's deprecated first ``ImageRecordIter``: the same iterator here."""
    return _with_dtype("ImageRecordIter_v1", None, args, kwargs)


def ImageRecordUInt8Iter_v1(*args: Any, **kwargs: Any) -> ImageRecordIter:
    """MXNet's deprecated first ``ImageRecordUInt8Iter``: the same iterator here."""
    return _with_dtype("ImageRecordUInt8Iter_v1", "uint8", args, kwargs)


__all__ = ["ImageRecordInt8Iter", "ImageRecordIter_v1", "ImageRecordUInt8Iter", "ImageRecordUInt8Iter_v1"]
