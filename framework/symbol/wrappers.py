"""Hand-written ``mx.sym`` front ends over internal operators, as MXNet writes them in Python:
``linspace``, ``eye``, ``histogram`` and ``split_v2`` (the twins of :mod:`framework.ndarray.wrappers`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..operator.tensor.split_v2 import split_v2_params
from .symbol import Symbol, call_op


def _dtype(dtype: Any) -> str:
    return np.dtype(dtype or "float32").name


def linspace(start: float, stop: float, num: int, endpoint: bool = True, dtype: Any = None, **kwargs: Any) -> Symbol:
    """A symbol of ``num`` evenly spaced values (``_linspace``)."""
    return call_op("_linspace", start=start, stop=stop, num=num, endpoint=endpoint, dtype=_dtype(dtype), **kwargs)


def eye(N: int, M: int = 0, k: int = 0, dtype: Any = None, **kwargs: Any) -> Symbol:
    """A symbol of an ``N x M`` matrix with ones on diagonal ``k`` (``_eye``)."""
    return call_op("_eye", N=N, M=M, k=k, dtype=_dtype(dtype), **kwargs)


def histogram(a: Symbol, bins: int | Symbol = 10, range: tuple[float, float] | None = None, **kwargs: Any) -> Symbol:
    """(counts, edges) of ``a``: ``bins`` equal bins over ``range`` (required for symbols), or a bins symbol."""
    if isinstance(bins, Symbol):
        return call_op("_histogram", a, bins, **kwargs)
    return call_op("_histogram", a, bin_cnt=bins, range=range, **kwargs)


def split_v2(
    ary: Symbol, indices_or_sections: int | tuple, axis: int = 0, squeeze_axis: bool = False, **kwargs: Any
) -> Symbol:
    """``ary`` split along ``axis`` into equal sections (an int) or at the given indices (a tuple)."""
    return call_op("_split_v2", ary, **split_v2_params(indices_or_sections, axis, squeeze_axis), **kwargs)
