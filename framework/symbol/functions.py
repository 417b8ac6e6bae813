"""The hand-written ``mx.sym`` functions that are not one generated operator call.

``zeros``/``ones``/``full``/``arange``/``linspace``/``eye`` translate NumPy-style arguments
(a dtype object, ``None`` for float32) into the creation operators' string parameters;
``pow``/``maximum``/``minimum``/``hypot`` pick the symbol or scalar operator from the
argument types; ``histogram`` picks equal bins or given edges.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ..operator.params import python_scalar
from .errors import SymbolError, SymbolTypeError
from .symbol import Symbol, call_op, split_v2

__all__ = [
    "arange",
    "eye",
    "full",
    "histogram",
    "hypot",
    "linspace",
    "maximum",
    "minimum",
    "ones",
    "pow",
    "power",
    "split_v2",
    "zeros",
]


def _dtype_name(dtype: Any) -> str:
    return "float32" if dtype is None else np.dtype(dtype).name


def zeros(shape: Any, dtype: Any = None, **kwargs: Any) -> Symbol:
    """A symbol of zeros (``_zeros``)."""
    return call_op("_zeros", shape=shape, dtype=_dtype_name(dtype), **kwargs)


def ones(shape: Any, dtype: Any = None, **kwargs: Any) -> Symbol:
    """A symbol of ones (``_ones``)."""
    return call_op("_ones", shape=shape, dtype=_dtype_name(dtype), **kwargs)


def full(shape: Any, val: float, dtype: Any = None, **kwargs: Any) -> Symbol:
    """A symbol filled with ``val`` (``_full``)."""
    return call_op("_full", shape=shape, dtype=_dtype_name(dtype), value=val, **kwargs)


def _binary_function(name: str, sym_op: str, scalar_op: str, rscalar_op: str | None = None) -> Any:
    def function(left: Any, right: Any) -> Any:
        left, right = python_scalar(left), python_scalar(right)
        if isinstance(left, Symbol) and isinstance(right, Symbol):
            return call_op(sym_op, left, right)
        if isinstance(left, Symbol) and isinstance(right, numbers.Number):
            return call_op(scalar_op, left, scalar=right)
        if isinstance(left, numbers.Number) and isinstance(right, Symbol):
            return call_op(rscalar_op or scalar_op, right, scalar=left)
        if isinstance(left, numbers.Number) and isinstance(right, numbers.Number):
            return {"pow": left**right, "maximum": max(left, right), "minimum": min(left, right)}.get(
                name, float(np.hypot(left, right))
            )
        raise SymbolTypeError(f"{name}: types ({type(left).__name__}, {type(right).__name__}) not supported")

    function.__name__ = name
    function.__doc__ = f"Element-wise {name} of symbols and/or numbers (``{sym_op}`` / ``{scalar_op}``)."
    return function


_pow = _binary_function("pow", "_Power", "_PowerScalar", "_RPowerScalar")


def pow(base: Any, exp: Any) -> Any:
    """``base ** exp`` element-wise; either may be a number (``_Power`` / ``_PowerScalar`` / ``_RPowerScalar``)."""
    return _pow(base, exp)


power = pow


def arange(
    start: float,
    stop: float | None = None,
    step: float = 1.0,
    repeat: int = 1,
    infer_range: bool = False,
    name: str | None = None,
    dtype: Any = None,
) -> Symbol:
    """Evenly spaced values in [start, stop) (``_arange``); ``infer_range`` must stay off."""
    return call_op(
        "_arange",
        start=start,
        stop=stop,
        step=step,
        repeat=repeat,
        infer_range=infer_range,
        name=name,
        dtype=_dtype_name(dtype),
    )


def linspace(
    start: float, stop: float, num: int, endpoint: bool = True, name: str | None = None, dtype: Any = None
) -> Symbol:
    """``num`` evenly spaced values from start to stop (``_linspace``)."""
    return call_op("_linspace", start=start, stop=stop, num=num, endpoint=endpoint, name=name, dtype=_dtype_name(dtype))


def eye(N: int, M: int = 0, k: int = 0, dtype: Any = None, **kwargs: Any) -> Symbol:
    """An N x M array with ones on diagonal ``k`` (``_eye``)."""
    return call_op("_eye", N=N, M=M, k=k, dtype=_dtype_name(dtype), **kwargs)


def histogram(a: Symbol, bins: int | Symbol = 10, range: Any = None, **kwargs: Any) -> Symbol:
    """(counts, bin edges) of ``a`` (``_histogram``): ``bins`` equal bins over ``range``, or edges as a Symbol."""
    if isinstance(bins, Symbol):
        return call_op("_histogram", a, bins, **kwargs)
    if isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
        if range is None:
            raise SymbolError("histogram: a symbol needs range=(low, high) with equal bins (its values are unknown)")
        return call_op("_histogram", a, bin_cnt=int(bins), range=range, **kwargs)
    raise SymbolTypeError(f"histogram: bins must be an int or a Symbol of bin edges, got {type(bins).__name__}")


maximum = _binary_function("maximum", "_Maximum", "_MaximumScalar")
minimum = _binary_function("minimum", "_Minimum", "_MinimumScalar")
hypot = _binary_function("hypot", "_Hypot", "_HypotScalar")
