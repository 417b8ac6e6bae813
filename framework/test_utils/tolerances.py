"""How close is close enough: MXNet's default tolerances, context and dtype for tests.

A comparison ``|a - b| <= atol + rtol * |b|`` needs an ``rtol`` and an ``atol`` that suit the
precision of the numbers compared: float16 keeps about 3 decimal digits, float32 about 7,
float64 about 16, and integers must match exactly. When a test gives no tolerance, the
default of the *less precise* of the two arrays applies (:func:`get_tols`). A tolerance may
also be a dict ``{dtype: value}``, so that one test can state its tolerance per precision.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ..base import MXLabError
from ..context import Context, current_context

_INTEGER_KINDS = ("b", "i", "u")
_FLOAT64 = np.dtype(np.float64)


class HelperArgumentError(MXLabError, ValueError):
    """A test helper was called with an argument it cannot use (a sparse stype, a bad size...)."""


def default_context() -> Context:
    """The context tests create arrays on: the current default context (``with ctx:``)."""
    return current_context()


def set_default_context(ctx: Context) -> None:
    """Make ``ctx`` the default context of this thread (MXNet's ``Context.default_ctx = ctx``)."""
    Context.default_ctx = ctx


def default_dtype() -> type:
    """The dtype random test data is made in (MXNet: float32)."""
    return np.float32


def default_rtols() -> dict[np.dtype, float]:
    """The default relative tolerance per dtype; integers and booleans must match exactly."""
    exact = {np.dtype(t): 0.0 for t in (np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64)}
    return {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5, **exact}


def default_atols() -> dict[np.dtype, float]:
    """The default absolute tolerance per dtype; integers and booleans must match exactly."""
    exact = {np.dtype(t): 0.0 for t in (np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64)}
    return {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20, **exact}


def default_numeric_eps() -> dict[np.dtype, float]:
    """The finite-difference step per dtype: powers of two, so ``x + eps`` loses no bits of eps."""
    return {np.dtype(np.float16): 2.0**-6, np.dtype(np.float32): 2.0**-9, np.dtype(np.float64): 2.0**-14}


def effective_dtype(dat: Any) -> np.dtype:
    """The dtype whose tolerance suits ``dat``: its own dtype.

    (MXNet lowers float32 to float16 on NVIDIA A100-class GPUs, whose TF32 matrix units keep
    float16's mantissa; MXLab's CuPy kernels do not enable TF32, so float32 stays float32.)
    """
    return np.dtype(dat.dtype)


def _default_for(dtype: np.dtype, defaults: dict[np.dtype, float], what: str) -> float:
    if dtype in defaults:
        return defaults[dtype]
    if dtype.kind in _INTEGER_KINDS:
        return 0.0
    raise TypeError(f"no default {what} for dtype {dtype}; pass {what} explicitly")


def get_tolerance(dat: Any, tol: float | dict[Any, float] | None, default_tol: dict[np.dtype, float]) -> float:
    """``tol`` itself when it is a number, else its (or ``default_tol``'s) entry for ``dat``'s dtype."""
    if isinstance(tol, numbers.Number):
        return float(tol)  # type: ignore[arg-type]
    dtype = effective_dtype(dat)
    given = {np.dtype(k): v for k, v in (tol or {}).items()}
    return given[dtype] if dtype in given else _default_for(dtype, default_tol, "tolerance")


def get_tols(x: Any, y: Any, rtol: Any, atol: Any) -> tuple[float, float]:
    """The ``(rtol, atol)`` for comparing ``x`` with ``y``: the looser of the two dtypes' values."""
    x = np.asarray(x) if isinstance(x, numbers.Number) else x
    y = np.asarray(y) if isinstance(y, numbers.Number) else y
    rtol = max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols()))
    atol = max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols()))
    return rtol, atol


def get_rtol(rtol: float | None = None, dtype: Any = _FLOAT64) -> float:
    """``rtol``, or the default relative tolerance of ``dtype``."""
    return _default_for(np.dtype(dtype), default_rtols(), "rtol") if rtol is None else rtol


def get_atol(atol: float | None = None, dtype: Any = _FLOAT64) -> float:
    """``atol``, or the default absolute tolerance of ``dtype``."""
    return _default_for(np.dtype(dtype), default_atols(), "atol") if atol is None else atol


def get_etol(etol: float | None = None) -> float:
    """``etol`` (the fraction of elements allowed out of tolerance), 0 by default."""
    return 0.0 if etol is None else etol


__all__ = [
    "HelperArgumentError",
    "default_atols",
    "default_context",
    "default_dtype",
    "default_numeric_eps",
    "default_rtols",
    "effective_dtype",
    "get_atol",
    "get_etol",
    "get_rtol",
    "get_tolerance",
    "get_tols",
    "set_default_context",
]
