"""MXNet's hand-written ``mx.nd.contrib`` functions besides the optimizer updates.

* ``isfinite`` / ``isinf`` / ``isnan``: 1 where the element is finite / infinite / NaN, else 0
  (the ``_contrib_is*`` operators, with MXNet's required ``data`` argument).
* ``rand_zipfian``: candidate sampling for sampled softmax over a large vocabulary. Class ids
  are drawn from ``[0, range_max)`` with the log-uniform (approximately Zipfian) law
  ``P(k) = log((k + 2) / (k + 1)) / log(range_max + 1)``, which favours small ids: vocabularies
  sorted by frequency put frequent words there. A draw is ``floor(exp(u)) - 1`` for ``u``
  uniform on ``[0, log(range_max + 1))``. The expected counts (``num_sampled * P(k)``) of the
  true and of the sampled classes let the loss correct for the sampling.
"""

from __future__ import annotations

import math
from typing import Any

from ..context import Context, current_context
from ..operator.params import OperatorParamError, python_scalar
from . import op
from . import random as _random
from .ndarray import NDArray


def isfinite(data: NDArray) -> NDArray:
    """1 where ``data`` is neither infinite nor NaN, else 0."""
    return op._contrib_isfinite(data)


def isinf(data: NDArray) -> NDArray:
    """1 where ``data`` is +inf or -inf, else 0."""
    return op._contrib_isinf(data)


def isnan(data: NDArray) -> NDArray:
    """1 where ``data`` is NaN, else 0."""
    return op._contrib_isnan(data)


def _check_sampling(num_sampled: Any, range_max: Any) -> tuple[int, int]:
    num_sampled, range_max = python_scalar(num_sampled), python_scalar(range_max)
    for name, value in (("num_sampled", num_sampled), ("range_max", range_max)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise OperatorParamError(f"rand_zipfian: {name} must be a positive integer, got {value!r}")
    return num_sampled, range_max


def rand_zipfian(
    true_classes: NDArray, num_sampled: int, range_max: int, ctx: Context | None = None
) -> tuple[NDArray, NDArray, NDArray]:
    """``(sampled_classes, expected_count_true, expected_count_sampled)``; see the module docstring.

    ``sampled_classes`` is int64 of shape ``(num_sampled,)``; the expected counts are float64,
    shaped like ``true_classes`` and like the samples.
    """
    num_sampled, range_max = _check_sampling(num_sampled, range_max)
    ctx = ctx if ctx is not None else current_context()
    log_range = math.log(range_max + 1)
    draws = _random.uniform(0, log_range, shape=(num_sampled,), dtype="float64", ctx=ctx)
    sampled = (draws.exp() - 1).astype("int64") % range_max

    def expected_count(classes: NDArray) -> NDArray:
        k = classes.astype("float64")
        return ((k + 2.0) / (k + 1.0)).log() / log_range * num_sampled

    return sampled, expected_count(true_classes.as_in_context(ctx)), expected_count(sampled)


FUNCTIONS = {"isfinite": isfinite, "isinf": isinf, "isnan": isnan, "rand_zipfian": rand_zipfian}

__all__ = ["FUNCTIONS", "isfinite", "isinf", "isnan", "rand_zipfian"]
