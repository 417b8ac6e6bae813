"""Comparing arrays: is ``a`` close enough to ``b``, and if not, where is it worst?

The rule is NumPy's ``allclose``: element-wise ``|a - b| <= atol + rtol * |b|``. When it
fails, one number per element says *how badly*: ``|a - b| / (atol + rtol * |b|)``, the
violation (1 is exactly at the tolerance). :func:`find_max_violation` finds the largest, and
the failure message of :func:`assert_almost_equal` names it with its index and both values,
as MXNet's does, then lists the next worst ones and how many elements are out of tolerance.
Infinities that are equal count as equal; NaNs count as equal only with ``equal_nan=True``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..ndarray.ndarray import NDArray
from .tolerances import get_atol, get_etol, get_rtol, get_tols


def as_numpy(value: Any) -> np.ndarray:
    """An NDArray, a NumPy array or a number, as a NumPy array."""
    return value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)


def _same_shape(a: np.ndarray, b: np.ndarray, names: Sequence[str], use_broadcast: bool) -> None:
    if a.shape == b.shape:
        return
    if use_broadcast:
        try:
            np.broadcast_shapes(a.shape, b.shape)
            return
        except ValueError:
            pass
    rule = "and do not broadcast" if use_broadcast else "(use_broadcast=False)"
    raise AssertionError(f"shapes differ {rule}: {names[0]} has {a.shape}, {names[1]} has {b.shape}")


def violations(a: Any, b: Any, rtol: float, atol: float, equal_nan: bool = False) -> np.ndarray:
    """Per element, ``|a - b| / (atol + rtol * |b|)`` (broadcast): 0 where equal, inf for a lone NaN."""
    a64, b64 = np.broadcast_arrays(as_numpy(a).astype(np.float64), as_numpy(b).astype(np.float64))
    with np.errstate(invalid="ignore", over="ignore"):
        absdiff = np.where(a64 == b64, 0.0, np.abs(a64 - b64))  # equal infinities: 0, not nan
        ratio = absdiff / (atol + rtol * np.abs(b64) + 1e-20)
    nan_a, nan_b = np.isnan(a64), np.isnan(b64)
    ratio = np.where(nan_a | nan_b, np.inf, ratio)
    if equal_nan:
        ratio = np.where(nan_a & nan_b, 0.0, ratio)
    return np.where(np.isnan(ratio), np.inf, ratio)


def find_max_violation(
    a: Any, b: Any, rtol: float | None = None, atol: float | None = None, equal_nan: bool = False
) -> tuple[tuple[int, ...], float]:
    """The index of the worst element and its violation (``> 1`` means out of tolerance)."""
    ratio = violations(a, b, get_rtol(rtol), get_atol(atol), equal_nan)
    if ratio.size == 0:
        return (), 0.0
    index = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    return tuple(int(i) for i in index), float(ratio[index])


def almost_equal(
    a: Any,
    b: Any,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    use_broadcast: bool = True,
) -> bool:
    """Whether ``a`` and ``b`` are element-wise close. As in MXNet, the tolerances left out are
    float64's (rtol 1e-5, atol 1e-20), whatever the dtypes: give them for float32 data."""
    a, b = as_numpy(a), as_numpy(b)
    if not use_broadcast and a.shape != b.shape:
        return False
    try:
        return bool(np.allclose(a, b, rtol=get_rtol(rtol), atol=get_atol(atol), equal_nan=equal_nan))
    except ValueError:  # shapes that do not broadcast
        return False


def _location(a: np.ndarray, b: np.ndarray, index: tuple[int, ...], names: Sequence[str], worst: bool) -> str:
    label = "maximum error" if worst else "error"
    return f"Location of {label}: {index}, {names[0]}={a[index]:.8f}, {names[1]}={b[index]:.8f}"


def _failure_message(
    a: np.ndarray,
    b: np.ndarray,
    rtol: float,
    atol: float,
    names: Sequence[str],
    equal_nan: bool,
    mismatches: Sequence[int],
) -> str:
    """MXNet's message: the worst violation with its index, then the next worst, then the count."""
    a, b = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
    ratio = violations(a, b, rtol, atol, equal_nan)
    flat = ratio.reshape(-1)
    out = np.flatnonzero(flat > 1)
    shown = int(mismatches[0]) if int(mismatches[1]) <= 0 else min(int(mismatches[0]), int(mismatches[1]))
    order = out[np.argsort(-flat[out], kind="stable")]
    worst = tuple(int(i) for i in np.unravel_index(int(order[0]), ratio.shape)) if order.size else ()
    lines = [
        f"Error {flat[order[0]] if order.size else 0.0:f} exceeds tolerance rtol={rtol:e}, atol={atol:e} "
        f"(mismatch {100.0 * out.size / max(a.size, 1):f}%: {out.size} of {a.size} elements; "
        f"error = |{names[0]} - {names[1]}| / (atol + rtol * |{names[1]}|)).",
        _location(a, b, worst, names, worst=True),
    ]
    for rank, flat_index in enumerate(order[:shown], start=1):
        index = tuple(int(i) for i in np.unravel_index(int(flat_index), ratio.shape))
        lines.append(f"{rank:3d}: Error {flat[flat_index]:f}  {_location(a, b, index, names, worst=False)}")
    return "\n".join(lines)


def assert_almost_equal(
    a: Any,
    b: Any,
    rtol: float | dict[Any, float] | None = None,
    atol: float | dict[Any, float] | None = None,
    names: Sequence[str] = ("a", "b"),
    equal_nan: bool = False,
    use_broadcast: bool = True,
    mismatches: Sequence[int] = (10, 10),
) -> None:
    """Raise AssertionError unless ``|a - b| <= atol + rtol * |b|`` element-wise.

    Tolerances left out (or dicts without the dtype) are the defaults of the less precise
    dtype of the two (:func:`~framework.test_utils.tolerances.get_tols`). The message names
    the worst element, counts every violation (exactly: MXNet stops counting at
    ``mismatches[1]``) and lists the worst ``min(mismatches)`` of them (``mismatches[1] <= 0``:
    ``mismatches[0]``). Boolean arrays must be equal.
    """
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = as_numpy(a), as_numpy(b)
    _same_shape(a, b, names, use_broadcast)
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        rtol, atol = 0.0, 0.0
    if np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    raise AssertionError(_failure_message(a, b, rtol, atol, names, equal_nan, mismatches))


def assert_allclose(a: Any, b: Any, rtol: float = 1e-07, atol: float = 0, equal_nan: bool = True) -> None:
    """NumPy's ``assert_allclose`` defaults (rtol 1e-7, atol 0, NaNs equal) with MXNet's message."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_with_err(
    a: Any,
    b: Any,
    rtol: float | None = None,
    atol: float | None = None,
    etol: float | None = None,
    names: Sequence[str] = ("a", "b"),
    equal_nan: bool = False,
    mismatches: Sequence[int] = (10, 10),
) -> None:
    """Like :func:`assert_almost_equal`, but a fraction ``etol`` of the elements may be out of
    tolerance (for kernels whose rounding differs on a few elements)."""
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol, atol, names, equal_nan, mismatches=mismatches)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = as_numpy(a), as_numpy(b)
    _same_shape(a, b, names, True)
    close = np.isclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol, equal_nan=equal_nan)
    error_rate = 1 - np.count_nonzero(close) / max(close.size, 1)
    if error_rate > etol:
        message = _failure_message(a, b, rtol, atol, names, equal_nan, mismatches)
        raise AssertionError(
            f"{error_rate:.2%} of the elements are out of tolerance, more than etol={etol:g}\n{message}"
        )


def assert_almost_equal_ignore_nan(
    a: Any, b: Any, rtol: float | None = None, atol: float | None = None, names: Sequence[str] = ("a", "b")
) -> None:
    """:func:`assert_almost_equal` on the elements where neither array is NaN."""
    a, b = np.array(as_numpy(a), copy=True), np.array(as_numpy(b), copy=True)
    a, b = np.broadcast_arrays(a, b)
    a, b = a.copy(), b.copy()
    nan = np.isnan(a) | np.isnan(b)
    a[nan] = 0
    b[nan] = 0
    assert_almost_equal(a, b, rtol, atol, names)


def checkShapes(a: Any, b: Any) -> None:
    """Raise AssertionError unless ``a`` and ``b`` have the same shape."""
    if np.shape(a) != np.shape(b):
        raise AssertionError(f"a.shape = {np.shape(a)} and b.shape = {np.shape(b)} are not equal")


def locationError(
    a: np.ndarray,
    b: np.ndarray,
    index: tuple[int, ...],
    names: Sequence[str],
    maxError: bool = False,
) -> str:
    """MXNet's line naming one mismatch: ``Location of [maximum ]error: (i, j), a=..., b=...``."""
    return _location(np.asarray(a), np.asarray(b), tuple(index), names, worst=maxError)


def assign_each(the_input: np.ndarray, function: Callable[[Any], Any] | None) -> np.ndarray:
    """``function`` applied to every element (a float64 array of the same shape); a copy if None."""
    if function is None:
        return np.array(the_input)
    values = np.asarray(the_input)
    return np.array([function(v) for v in values.reshape(-1)], dtype=np.float64).reshape(values.shape)


def assign_each2(input1: np.ndarray, input2: np.ndarray, function: Callable[[Any, Any], Any] | None) -> np.ndarray:
    """``function`` applied to every pair of elements of two same-shaped arrays; a copy of ``input1`` if None."""
    if function is None:
        return np.array(input1)
    first, second = np.asarray(input1), np.asarray(input2)
    if first.shape != second.shape:
        raise AssertionError(f"assign_each2: shapes differ: {first.shape} and {second.shape}")
    pairs = zip(first.reshape(-1), second.reshape(-1), strict=True)
    return np.array([function(x, y) for x, y in pairs], dtype=np.float64).reshape(first.shape)


def same(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` have the same shape and exactly the same elements."""
    return bool(np.array_equal(as_numpy(a), as_numpy(b)))


def same_array(array1: NDArray, array2: NDArray) -> bool:
    """Whether two NDArrays share memory: a change written through one shows through the other."""
    array1[:] += 1
    changed_together = same(array1.asnumpy(), array2.asnumpy())
    array1[:] -= 1
    return changed_together and same(array1.asnumpy(), array2.asnumpy())


def np_reduce(
    dat: np.ndarray, axis: int | Sequence[int] | None, keepdims: bool, numpy_reduce_func: Callable[..., Any]
) -> np.ndarray:
    """Reduce ``dat`` over ``axis`` one axis at a time with ``numpy_reduce_func`` (``np.sum``...).

    This is the reference the reduction operators are tested against: the same function
    applied axis by axis, the last axis first, so the indices stay valid.
    """
    axes = [axis] if isinstance(axis, int | np.integer) else list(range(dat.ndim)) if axis is None else list(axis)
    axes = [int(a) % dat.ndim if dat.ndim else int(a) for a in axes]
    result = dat
    for a in sorted(axes, reverse=True):
        result = numpy_reduce_func(result, axis=a)
    if keepdims:
        shape = list(dat.shape)
        for a in axes:
            shape[a] = 1
        result = np.reshape(result, tuple(shape))
    return result


def collapse_sum_like(a: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Sum ``a`` down to ``shape`` (which broadcasts to ``a.shape``): the gradient of a broadcast."""
    shape = tuple(shape)
    if len(a.shape) < len(shape):
        raise ValueError(f"collapse_sum_like: shape {shape} has more dimensions than the array's {a.shape}")
    if a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = len(a.shape) - len(shape)
    axes = list(range(lead))
    for i, size in enumerate(shape):
        if size != a.shape[i + lead]:
            if size != 1:
                raise ValueError(f"collapse_sum_like: shape {shape} does not broadcast to {a.shape}")
            axes.append(i + lead)
    return np.sum(a, axis=tuple(axes)).reshape(shape)


def compare_ndarray_tuple(t1: Any, t2: Any, rtol: float | None = None, atol: float | None = None) -> None:
    """Assert that two (nested) tuples of arrays are element-wise close; None matches None."""
    if t1 is None or t2 is None:
        if (t1 is None) != (t2 is None):
            raise AssertionError(f"compare_ndarray_tuple: one side is None, the other {t2 if t1 is None else t1!r}")
        return
    if isinstance(t1, tuple | list):
        if not isinstance(t2, tuple | list) or len(t1) != len(t2):
            raise AssertionError(f"compare_ndarray_tuple: structures differ: {type(t1).__name__} vs {t2!r}")
        for s1, s2 in zip(t1, t2, strict=True):
            compare_ndarray_tuple(s1, s2, rtol, atol)
        return
    assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


__all__ = [
    "almost_equal",
    "assign_each",
    "assign_each2",
    "checkShapes",
    "locationError",
    "as_numpy",
    "assert_allclose",
    "assert_almost_equal",
    "assert_almost_equal_ignore_nan",
    "assert_almost_equal_with_err",
    "collapse_sum_like",
    "compare_ndarray_tuple",
    "find_max_violation",
    "np_reduce",
    "same",
    "same_array",
    "violations",
]
