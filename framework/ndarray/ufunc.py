"""MXNet's NDArray arithmetic helpers: ``mx.nd.add``, ``maximum``, ``power``, ``equal``, ...

Each takes two operands, either of which may be an NDArray or a Python number, and picks
the operator MXNet 1.x picks: ``broadcast_<op>`` for two arrays, ``_<op>_scalar`` for an
array and a number (the reversed ``_r<op>_scalar`` when the number comes first), and plain
arithmetic for two numbers.
"""

from __future__ import annotations

import numbers
import operator as py
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import MXLabError
from ..operator.params import python_scalar
from . import op
from .ndarray import NDArray


def _apply(
    name: str, lhs: Any, rhs: Any, nd_op: str, scalar_op: str, rscalar_op: str | None, python: Callable[[Any, Any], Any]
) -> Any:
    lhs, rhs = python_scalar(lhs), python_scalar(rhs)  # 0-d NumPy arrays count as numbers
    lhs_nd, rhs_nd = isinstance(lhs, NDArray), isinstance(rhs, NDArray)
    if lhs_nd and rhs_nd:
        return getattr(op, nd_op)(lhs, rhs)
    is_number = (numbers.Number, np.generic)
    if lhs_nd and isinstance(rhs, is_number):
        return getattr(op, scalar_op)(lhs, scalar=float(rhs))
    if rhs_nd and isinstance(lhs, is_number):
        if rscalar_op is None:  # commutative: the scalar may go on either side
            return getattr(op, scalar_op)(rhs, scalar=float(lhs))
        return getattr(op, rscalar_op)(rhs, scalar=float(lhs))
    if isinstance(lhs, is_number) and isinstance(rhs, is_number):
        return python(lhs, rhs)
    raise MXLabError(
        f"mx.nd.{name}: operands must be NDArrays or numbers, got {type(lhs).__name__} and {type(rhs).__name__}"
    )


def _make(name: str, nd_op: str, scalar_op: str, rscalar_op: str | None, python: Callable[[Any, Any], Any]):
    def helper(lhs: Any, rhs: Any) -> Any:
        return _apply(name, lhs, rhs, nd_op, scalar_op, rscalar_op, python)

    helper.__name__ = name
    helper.__doc__ = f"``{name}(lhs, rhs)``: {nd_op} for two arrays, {scalar_op} with a number (MXNet 1.x rules)."
    return helper


add = _make("add", "broadcast_add", "_plus_scalar", None, py.add)
subtract = _make("subtract", "broadcast_sub", "_minus_scalar", "_rminus_scalar", py.sub)
multiply = _make("multiply", "broadcast_mul", "_mul_scalar", None, py.mul)
divide = _make("divide", "broadcast_div", "_div_scalar", "_rdiv_scalar", py.truediv)
true_divide = divide
modulo = _make("modulo", "broadcast_mod", "_mod_scalar", "_rmod_scalar", py.mod)
power = _make("power", "broadcast_power", "_power_scalar", "_rpower_scalar", py.pow)
maximum = _make("maximum", "broadcast_maximum", "_maximum_scalar", None, max)
minimum = _make("minimum", "broadcast_minimum", "_minimum_scalar", None, min)
equal = _make("equal", "broadcast_equal", "_equal_scalar", None, lambda a, b: float(a == b))
not_equal = _make("not_equal", "broadcast_not_equal", "_not_equal_scalar", None, lambda a, b: float(a != b))
greater = _make("greater", "broadcast_greater", "_greater_scalar", "_lesser_scalar", lambda a, b: float(a > b))
greater_equal = _make(
    "greater_equal",
    "broadcast_greater_equal",
    "_greater_equal_scalar",
    "_lesser_equal_scalar",
    lambda a, b: float(a >= b),
)
lesser = _make("lesser", "broadcast_lesser", "_lesser_scalar", "_greater_scalar", lambda a, b: float(a < b))
lesser_equal = _make(
    "lesser_equal",
    "broadcast_lesser_equal",
    "_lesser_equal_scalar",
    "_greater_equal_scalar",
    lambda a, b: float(a <= b),
)

__all__ = [
    "add",
    "divide",
    "equal",
    "greater",
    "greater_equal",
    "lesser",
    "lesser_equal",
    "maximum",
    "minimum",
    "modulo",
    "multiply",
    "not_equal",
    "power",
    "subtract",
    "true_divide",
]
