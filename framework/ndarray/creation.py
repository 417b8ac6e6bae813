"""``mx.nd.zeros``, ``ones``, ``full``, ``arange``: new arrays filled by an operator.

Filling is work like any other, so these push the ``_zeros``/``_ones``/``_full``/``_arange``
operators through the imperative path (the generated functions of :mod:`.op`) instead of
writing values in the calling thread; only ``empty`` and ``array`` (in :mod:`.ndarray`)
allocate directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..context import Context
from . import op
from .ndarray import NDArray, _check_shape, normalize_dtype


def zeros(shape: int | Sequence[int], ctx: Context | None = None, dtype: Any = "float32", **kwargs: Any) -> NDArray:
    return op._zeros(shape=_check_shape(shape, "zeros"), ctx=ctx, dtype=normalize_dtype(dtype).name, **kwargs)


def ones(shape: int | Sequence[int], ctx: Context | None = None, dtype: Any = "float32", **kwargs: Any) -> NDArray:
    return op._ones(shape=_check_shape(shape, "ones"), ctx=ctx, dtype=normalize_dtype(dtype).name, **kwargs)


def full(shape: int | Sequence[int], val: float, ctx: Context | None = None, dtype: Any = "float32") -> NDArray:
    return op._full(shape=_check_shape(shape, "full"), value=float(val), ctx=ctx, dtype=normalize_dtype(dtype).name)


def arange(
    start: float,
    stop: float | None = None,
    step: float = 1.0,
    repeat: int = 1,
    ctx: Context | None = None,
    dtype: Any = "float32",
) -> NDArray:
    return op._arange(start=start, stop=stop, step=step, repeat=repeat, ctx=ctx, dtype=normalize_dtype(dtype).name)
