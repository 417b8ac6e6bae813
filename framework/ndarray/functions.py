"""``mx.nd``'s hand-written functions: the ones MXNet 1.x writes in Python over its operators.

``moveaxis``, ``concatenate``, ``split_v2``, ``onehot_encode``, ``linspace``, ``eye``,
``histogram``, the logical helpers, and the exchange with NumPy (``from_numpy``) and with
other libraries through DLPack. Each runs operators (so the work is scheduled by the engine
like any other) or, for the exchanges, copies values in or out through the engine.
"""

from __future__ import annotations

import numbers
import operator as py
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import MXLabError
from ..context import Context
from ..operator.tensor.split_v2 import split_v2_params
from . import op
from .ndarray import DEFAULT_DTYPE, NDArray, array, normalize_dtype
from .ufunc import _make


def moveaxis(tensor: NDArray, source: int | Sequence[int], destination: int | Sequence[int]) -> NDArray:
    """``tensor`` with the axes ``source`` moved to ``destination`` (the others keep their order)."""
    ndim = tensor.ndim
    sources = [_axis(a, ndim, "source") for a in _listed(source)]
    destinations = [_axis(a, ndim, "destination") for a in _listed(destination)]
    if len(sources) != len(destinations):
        raise MXLabError(f"moveaxis: source {source} and destination {destination} must name as many axes")
    if len(set(sources)) != len(sources) or len(set(destinations)) != len(destinations):
        raise MXLabError(f"moveaxis: repeated axis in source {source} or destination {destination}")
    order = [a for a in range(ndim) if a not in sources]
    for dest, src in sorted(zip(destinations, sources, strict=True)):
        order.insert(dest, src)
    return op.transpose(tensor, axes=tuple(order))


def concatenate(arrays: Sequence[NDArray], axis: int = 0, always_copy: bool = True) -> NDArray:
    """The arrays joined along ``axis`` (all other axes must match); one array is returned
    as is unless ``always_copy``."""
    arrays = list(arrays)
    if not arrays or not all(isinstance(a, NDArray) for a in arrays):
        raise MXLabError("concatenate: arrays must be a non-empty list of NDArrays")
    if len(arrays) == 1 and not always_copy:
        return arrays[0]
    return op.concat(*arrays, dim=axis)


def split_v2(
    ary: NDArray, indices_or_sections: int | Sequence[int], axis: int = 0, squeeze_axis: bool = False
) -> list[NDArray] | NDArray:
    """Split along ``axis`` into equal sections (an int) or at the given indices (a tuple), as NumPy's
    ``split``: the ``_split_v2`` operator with the parameters ``split_v2_params`` builds."""
    return op._split_v2(ary, **split_v2_params(indices_or_sections, axis, squeeze_axis))


def onehot_encode(indices: NDArray, out: NDArray) -> NDArray:
    """Write the one-hot rows of ``indices`` into ``out`` (MXNet's deprecated form of ``one_hot``)."""
    if out.ndim != 2 or indices.shape != (out.shape[0],):
        raise MXLabError(f"onehot_encode: out must be (len(indices), depth), got {out.shape} for {indices.shape}")
    return op.one_hot(indices, depth=out.shape[1], dtype=np.dtype(out.dtype).name, out=out)


def linspace(
    start: float,
    stop: float,
    num: int,
    endpoint: bool = True,
    ctx: Context | None = None,
    dtype: Any = np.float32,
) -> NDArray:
    """``num`` evenly spaced values from ``start`` to ``stop`` (included when ``endpoint``)."""
    return op._linspace(start=start, stop=stop, num=num, endpoint=endpoint, ctx=ctx, dtype=_dtype_name(dtype))


def eye(N: int, M: int = 0, k: int = 0, ctx: Context | None = None, dtype: Any = None, **kwargs: Any) -> NDArray:
    """An N x M (M = 0: N x N) array with ones on diagonal ``k``."""
    return op._eye(N=N, M=M, k=k, ctx=ctx, dtype=_dtype_name(dtype), **kwargs)


def histogram(a: NDArray, bins: int | NDArray = 10, range: tuple[float, float] | None = None) -> tuple:
    """(counts, bin edges) of ``a``'s values: ``bins`` equal bins over ``range`` (default: min to max),
    or the bin edges as an NDArray."""
    if isinstance(bins, NDArray):
        return tuple(op._histogram(a, bins))
    if isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
        if range is None:  # the data's (min, max), read by waiting for ``a``, as MXNet falls back to NumPy
            values = a.asnumpy()
            low, high = float(values.min()), float(values.max())
            range = (low, high) if low < high else (low - 0.5, high + 0.5)  # NumPy's rule for a constant input
        return tuple(op._histogram(a, bin_cnt=int(bins), range=range))
    raise MXLabError(f"histogram: bins must be an int or an NDArray of bin edges, got {type(bins).__name__}")


def power(base: Any, exp: Any) -> Any:
    """``base ** exp`` element-wise; either may be a number."""
    return _power(base, exp)


_power = _make("power", "broadcast_power", "_power_scalar", "_rpower_scalar", py.pow)
logical_and = _make(
    "logical_and", "broadcast_logical_and", "_logical_and_scalar", None, lambda a, b: float(bool(a) and bool(b))
)
logical_or = _make(
    "logical_or", "broadcast_logical_or", "_logical_or_scalar", None, lambda a, b: float(bool(a) or bool(b))
)
logical_xor = _make(
    "logical_xor", "broadcast_logical_xor", "_logical_xor_scalar", None, lambda a, b: float(bool(a) != bool(b))
)


# ---------------------------------------------------------------------- exchange with NumPy and DLPack
def from_numpy(ndarray: np.ndarray, zero_copy: bool = True, array_cls: type = NDArray) -> NDArray:
    """An NDArray holding ``ndarray``'s values with its dtype (NumPy arrays keep float64 here, unlike
    ``mx.nd.array``). MXLab always copies: its arrays live in the storage pool, so ``zero_copy`` is
    accepted and has no effect (docs/differences.md)."""
    if not isinstance(ndarray, np.ndarray):
        raise MXLabError(f"from_numpy: expected a numpy.ndarray, got {type(ndarray).__name__}")
    if array_cls is not NDArray:
        raise MXLabError(f"from_numpy: array_cls must be NDArray (MXLab has no mx.np arrays), got {array_cls!r}")
    return array(ndarray, dtype=ndarray.dtype)


def from_dlpack(dlpack: Any) -> NDArray:
    """An NDArray holding a copy of a DLPack producer's values (an object with ``__dlpack__``,
    e.g. a NumPy array or what ``to_dlpack_for_read`` returned, wrapped by its library)."""
    try:
        values = np.from_dlpack(dlpack)
    except (TypeError, AttributeError, RuntimeError, BufferError) as err:
        raise MXLabError(f"from_dlpack: cannot read a DLPack tensor from {type(dlpack).__name__}: {err}") from None
    return array(values, dtype=values.dtype)


def to_dlpack_for_read(data: NDArray) -> Any:
    """``data.to_dlpack_for_read()``: a DLPack capsule of the values after pending writes."""
    return data.to_dlpack_for_read()


def to_dlpack_for_write(data: NDArray) -> Any:
    """``data.to_dlpack_for_write()``: a DLPack capsule a consumer may write through."""
    return data.to_dlpack_for_write()


# ---------------------------------------------------------------------- helpers
def _listed(axes: int | Sequence[int]) -> list[int]:
    return list(axes) if isinstance(axes, list | tuple) else [axes]


def _axis(axis: Any, ndim: int, what: str) -> int:
    if not isinstance(axis, numbers.Integral) or isinstance(axis, bool) or not -ndim <= int(axis) < ndim:
        raise MXLabError(f"{what} axis {axis!r} is out of range for an array with {ndim} dimensions")
    return int(axis) % ndim


def _dtype_name(dtype: Any) -> str:
    return normalize_dtype(DEFAULT_DTYPE if dtype is None else dtype).name
