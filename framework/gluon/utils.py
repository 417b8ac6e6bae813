"""``gluon.utils``: splitting a batch across devices, clipping gradients by global norm, file hashes,
the handles of block hooks, and MXNet 1.9.1's small file and shape helpers."""

from __future__ import annotations

import hashlib
import itertools
import os
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import ndarray as nd
from ..base import MXLabError
from ..context import Context
from ..ndarray.ndarray import NDArray
from ..shape_mode import is_np_shape


class SplitError(MXLabError, ValueError):
    """A batch cannot be split as asked."""


class DownloadError(MXLabError, RuntimeError):
    """A download was asked for: MXLab never reaches the network."""


def split_data(data: NDArray, num_slice: int, batch_axis: int = 0, even_split: bool = True) -> list[NDArray]:
    """``num_slice`` slices of ``data`` along ``batch_axis``.

    Uneven (``even_split=False``): the first ``size % num_slice`` slices hold one row more, as
    MXNet 1.9.1 (and ``numpy.array_split``) cut them; more slices than rows leaves the last
    ones empty.
    """
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise SplitError(
            f"data with shape {data.shape} cannot be evenly split into {num_slice} slices along axis {batch_axis}. "
            f"Use a batch size that's multiple of {num_slice} or set even_split=False to allow uneven "
            "partitioning of data."
        )
    if num_slice == 1:
        return [data]
    each, extras = divmod(size, num_slice)
    ends = list(itertools.accumulate(each + 1 if i < extras else each for i in range(num_slice)))
    bounds = list(zip([0, *ends[:-1]], ends, strict=True))
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


def replace_file(src: str, dst: str) -> None:
    """Move ``src`` over ``dst`` in one step (``os.replace``: readers see the old or the new file, never half).

    On failure ``src`` is removed and an ``OSError`` names both paths, as MXNet's does.
    """
    try:
        os.replace(src, dst)
    except OSError as err:
        try:
            os.remove(src)
        except OSError:
            pass  # the source is already gone: the error below is what matters
        raise OSError(f"Moving temporary file {src} to {dst} failed: {err}") from err


def shape_is_known(shape: Sequence[int] | None) -> bool:
    """Whether every dimension of ``shape`` is known (legacy semantics: 0 is unknown; np-shape: -1 is)."""
    if shape is None:
        return False
    unknown = -1 if is_np_shape() else 0
    if len(shape) == 0:
        return unknown == -1  # a scalar shape is known only under NumPy semantics, as in MXNet
    for size in shape:
        if size == unknown:
            return False
        if size < unknown:
            raise ValueError(f"shape_is_known: dimension sizes cannot be less than {unknown}, got {tuple(shape)}")
    return True


def download(
    url: str,
    path: str | None = None,
    overwrite: bool = False,
    sha1_hash: str | None = None,
    retries: int = 5,
    verify_ssl: bool = True,
) -> str:
    """MXNet's downloader, absent here: MXLab never uses the network, so this always raises.

    A file already at ``path`` whose hash matches ``sha1_hash`` (when given) is returned as
    MXNet would without downloading; anything else needs the file copied in by hand.
    """
    fname = url.rsplit("/", maxsplit=1)[-1] if path is None else path
    if path is not None and os.path.isdir(os.path.expanduser(path)):
        fname = os.path.join(path, url.rsplit("/", maxsplit=1)[-1])
    fname = os.path.expanduser(fname)
    if not overwrite and os.path.exists(fname) and (not sha1_hash or check_sha1(fname, sha1_hash)):
        return fname
    raise DownloadError(
        f"download({url!r}): MXLab does not use the network; fetch the file yourself and place it at {fname!r}"
        + (f" (SHA-1 {sha1_hash})" if sha1_hash else "")
    )


class HookHandle:
    """Returned by ``register_forward_hook`` and friends: ``detach()`` removes the hook.

    The handle refers to the block's hook table weakly, so a handle kept around does not keep a
    deleted block alive; ``with handle:`` detaches on exit.
    """

    _next_id = 0

    def __init__(self) -> None:
        self._hooks_dict_ref: Callable[[], OrderedDict | None] | None = None
        self._id: int | None = None

    def attach(self, hooks_dict: OrderedDict, hook: Callable) -> None:
        """Put ``hook`` in ``hooks_dict`` under a fresh id (the same function twice runs twice)."""
        if self._hooks_dict_ref is not None:
            raise MXLabError("HookHandle: the same handle cannot be attached twice")
        self._id = HookHandle._next_id
        HookHandle._next_id += 1
        hooks_dict[self._id] = hook
        self._hooks_dict_ref = weakref.ref(hooks_dict)

    def detach(self) -> None:
        hooks_dict = self._hooks_dict_ref() if self._hooks_dict_ref is not None else None
        if hooks_dict is not None and self._id in hooks_dict:
            del hooks_dict[self._id]

    def __getstate__(self) -> tuple[OrderedDict | None, int | None]:
        return (self._hooks_dict_ref() if self._hooks_dict_ref is not None else None, self._id)

    def __setstate__(self, state: tuple[OrderedDict | None, int | None]) -> None:
        hooks_dict, self._id = state
        # a handle unpickled without its table gets an empty one of its own: detach then does nothing
        self._orphan = OrderedDict() if hooks_dict is None else None
        self._hooks_dict_ref = weakref.ref(hooks_dict if hooks_dict is not None else self._orphan)

    def __enter__(self) -> HookHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.detach()
