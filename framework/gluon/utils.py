"""``gluon.utils``: splitting a batch across devices, clipping gradients by global norm, file hashes."""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import ndarray as nd
from ..base import MXLabError
from ..context import Context
from ..ndarray.ndarray import NDArray


class SplitError(MXLabError, ValueError):
    """A batch cannot be split as asked."""


def split_data(data: NDArray, num_slice: int, batch_axis: int = 0, even_split: bool = True) -> list[NDArray]:
    """``num_slice`` slices of ``data`` along ``batch_axis`` (the last one takes any remainder)."""
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise SplitError(
            f"data with shape {data.shape} cannot be evenly split into {num_slice} slices along axis {batch_axis}. "
            f"Use a batch size that's multiple of {num_slice} or set even_split=False to allow uneven "
            "partitioning of data."
        )
    if num_slice == 1:
        return [data]
    if size < num_slice:
        raise SplitError(
            f"Too many slices for data with shape {data.shape}. Arguments are num_slice={num_slice} "
            f"and batch_axis={batch_axis}."
        )
    step = size // num_slice
    bounds = [(i * step, (i + 1) * step if i < num_slice - 1 else size) for i in range(num_slice)]
    if batch_axis == 0:
        return [data[begin:end] for begin, end in bounds]
    return [nd.slice_axis(data, axis=batch_axis, begin=begin, end=end) for begin, end in bounds]


def split_and_load(
    data: Any, ctx_list: Sequence[Context], batch_axis: int = 0, even_split: bool = True
) -> list[NDArray]:
    """Split ``data`` into one slice per context and copy each slice to its context."""
    if not isinstance(data, NDArray):
        data = nd.array(np.asarray(data), ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [s.as_in_context(ctx) for s, ctx in zip(slices, ctx_list, strict=True)]


def clip_global_norm(arrays: Sequence[NDArray], max_norm: float, check_isfinite: bool = True) -> Any:
    """Scale ``arrays`` in place so that their joint 2-norm is at most ``max_norm``; returns the norm before."""
    if not arrays:
        raise MXLabError("clip_global_norm: no arrays given")
    ctx = arrays[0].context
    squares = []
    for arr in arrays:
        flat = arr.reshape((-1,))
        squares.append(nd.dot(flat, flat).as_in_context(ctx))
    total_norm = nd.sqrt(nd.add_n(*squares))
    if check_isfinite and not np.isfinite(total_norm.asscalar()):
        warnings.warn(UserWarning("nan or inf is detected. Clipping results will be undefined."), stacklevel=2)
    scale = max_norm / (total_norm + 1e-8)
    scale = nd.min(nd.concat(scale, nd.ones((1,), ctx=ctx), dim=0))
    for arr in arrays:  # in place: the caller's arrays (gradients) are scaled
        nd.op.broadcast_mul(arr, scale.as_in_context(arr.context), out=arr)
    return total_norm.asscalar() if check_isfinite else total_norm


def check_sha1(filename: str, sha1_hash: str) -> bool:
    """Whether the file's SHA-1 hex digest is ``sha1_hash``."""
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        while chunk := f.read(1048576):
            sha1.update(chunk)
    return sha1.hexdigest() == sha1_hash
