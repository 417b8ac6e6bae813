"""``mx.nd.zeros``, ``ones``, ``full``, ``arange``: new arrays filled by an operator.

Filling is work like any other, so these push the ``_zeros``/``_ones``/``_full``/``_arange``
operators through the imperative path (the generated functions of :mod:`.op`) instead of
writing values in the calling thread; only ``empty`` and ``array`` (in :mod:`.ndarray`)
allocate directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..context import Context
from ..errors import check_stype
from ..operator.tensor.init_ops import legacy_creation_error
from . import op
from .ndarray import DEFAULT_DTYPE, NDArray, _check_shape, empty, normalize_dtype


def zeros(
    shape: int | Sequence[int], ctx: Context | None = None, dtype: Any = None, stype: str | None = None, **kwargs: Any
) -> NDArray:
    """An array of zeros (float32 unless ``dtype`` says otherwise); ``out=`` writes into an existing array."""
    check_stype(stype, "zeros")
    return op._zeros(shape=_legacy_checked(shape, "zeros"), ctx=ctx, dtype=_dtype_name(dtype), **kwargs)


def ones(shape: int | Sequence[int], ctx: Context | None = None, dtype: Any = None, **kwargs: Any) -> NDArray:
    """An array of ones (float32 unless ``dtype`` says otherwise); ``out=`` writes into an existing array."""
    check_stype(kwargs.pop("stype", None), "ones")
    return op._ones(shape=_legacy_checked(shape, "ones"), ctx=ctx, dtype=_dtype_name(dtype), **kwargs)


def _legacy_checked(shape: int | Sequence[int], what: str) -> tuple[int, ...]:
    """``shape`` as a tuple, refused when legacy shape semantics call part of it unknown."""
    checked = _check_shape(shape, what)
    error = legacy_creation_error(checked, what)
    if error is not None:
        raise error
    return checked


def full(
    shape: int | Sequence[int],
    val: float,
    ctx: Context | None = None,
    dtype: Any = np.float32,
    out: NDArray | None = None,
) -> NDArray:
    """An array filled with ``val``; ``out=`` fills an existing array instead of a new one."""
    shape = _check_shape(shape, "full")
    if out is None and 0 in shape:
        # Nothing to fill: as in MXNet (an ``empty`` then a fill), a zero-size result needs no operator.
        return empty(shape, ctx, dtype)
    return op._full(shape=shape, value=float(val), ctx=ctx, dtype=_dtype_name(dtype), out=out)


def arange(
    start: float,
    stop: float | None = None,
    step: float = 1.0,
    repeat: int = 1,
    infer_range: bool | None = None,
    ctx: Context | None = None,
    dtype: Any = np.float32,
) -> NDArray:
    """Evenly spaced values in [start, stop); ``infer_range`` must stay off (MXNet deprecated it)."""
    return op._arange(
        start=start,
        stop=stop,
        step=step,
        repeat=repeat,
        infer_range=bool(infer_range),
        ctx=ctx,
        dtype=_dtype_name(dtype),
    )


def _dtype_name(dtype: Any) -> str:
    """The dtype's name, float32 (MXNet's ``mx_real_t``) when ``dtype`` is None."""
    return normalize_dtype(DEFAULT_DTYPE if dtype is None else dtype).name
