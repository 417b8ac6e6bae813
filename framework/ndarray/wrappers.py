"""Hand-written ``mx.nd`` front ends over internal operators, as MXNet writes them in Python:
``linspace``, ``eye``, ``histogram`` and ``split_v2`` (over ``_linspace``, ``_eye``,
``_histogram`` and ``_split_v2``). They translate NumPy-style arguments into the operators'
parameters; the computation is the operators'.
"""

from __future__ import annotations

from typing import Any

from ..context import Context
from ..operator.tensor.split_v2 import split_v2_params
from . import op
from .ndarray import NDArray, normalize_dtype


def linspace(
    start: float,
    stop: float,
    num: int,
    endpoint: bool = True,
    ctx: Context | None = None,
    dtype: Any = "float32",
) -> NDArray:
    """``num`` evenly spaced values from ``start`` to ``stop`` (included when ``endpoint``)."""
    return op._linspace(start=start, stop=stop, num=num, endpoint=endpoint, ctx=ctx, dtype=normalize_dtype(dtype).name)


def eye(N: int, M: int = 0, k: int = 0, ctx: Context | None = None, dtype: Any = "float32") -> NDArray:
    """An ``N x M`` matrix (``M=0``: square) with ones on diagonal ``k``."""
    return op._eye(N=N, M=M, k=k, ctx=ctx, dtype=normalize_dtype(dtype or "float32").name)


def histogram(a: NDArray, bins: int | NDArray = 10, range: tuple[float, float] | None = None) -> list[NDArray]:
    """(counts, edges) of ``a``'s values: ``bins`` equal bins over ``range``, or the edges in an
    NDArray ``bins``. Without ``range`` it is the data's (min, max), read by waiting for ``a``,
    as MXNet (which falls back to NumPy there) does."""
    if isinstance(bins, NDArray):
        return op._histogram(a, bins)
    if range is None:
        values = a.asnumpy()
        low, high = float(values.min()), float(values.max())
        range = (low, high) if low < high else (low - 0.5, high + 0.5)  # NumPy's rule for a constant input
    return op._histogram(a, bin_cnt=bins, range=range)


def split_v2(ary: NDArray, indices_or_sections: int | tuple, axis: int = 0, squeeze_axis: bool = False) -> Any:
    """Split ``ary`` along ``axis`` into equal sections (an int) or at the given indices (a tuple)."""
    return op._split_v2(ary, **split_v2_params(indices_or_sections, axis, squeeze_axis))
