"""``mx.test_utils``: MXNet's testing helpers in one namespace.

The checks on arrays and functions (tolerant comparison, numeric gradients of functions,
``req`` checks) are in :mod:`framework.imperative_test_utils`; the checks on symbols (forward,
backward and numeric gradients through the executor) are in :mod:`framework.symbol_test_utils`.
``check_numeric_gradient`` takes either, as MXNet's does: this module picks the checker.
Messages speak the learner's language: which input, which index, what autograd said and
what finite differences said, never a bare traceback from inside the checker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import imperative_test_utils, symbol_test_utils
from .context import Context
from .imperative_test_utils import (
    DEFAULT_TOLERANCES,
    NUMERIC_EPS,
    almost_equal,
    assert_almost_equal,
    check_req,
    default_context,
    default_tolerances,
    rand_shape_nd,
)
from .symbol import Symbol
from .symbol_test_utils import SymbolCheckError, check_symbolic_backward, check_symbolic_forward, simple_forward


def check_numeric_gradient(
    fn: Callable[..., Any] | Symbol,
    location: Sequence[np.ndarray] | Any,
    aux_states: Any = None,
    numeric_eps: float | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    grad_nodes: Sequence[int] | Any = None,
    use_forward_train: bool = True,
    ctx: Context | None = None,
    grad_stype_dict: Any = None,
    dtype: Any = np.float64,
    seed: int = 0,
) -> None:
    """Compare the gradients of ``fn`` with central finite differences.

    A Symbol goes to :func:`framework.symbol_test_utils.check_numeric_gradient` (seed 004's
    usage, MXNet's signature); a function of NDArrays to
    :func:`framework.imperative_test_utils.check_numeric_gradient` (autograd's gradients).
    """
    if isinstance(fn, Symbol):
        return symbol_test_utils.check_numeric_gradient(
            fn,
            location,
            aux_states,
            numeric_eps,
            rtol,
            atol,
            grad_nodes,
            use_forward_train,
            ctx,
            grad_stype_dict,
            dtype,
        )
    return imperative_test_utils.check_numeric_gradient(
        fn,
        location,
        aux_states,
        numeric_eps,
        rtol,
        atol,
        grad_nodes,
        use_forward_train,
        ctx,
        grad_stype_dict,
        dtype,
        seed,
    )


__all__ = [
    "DEFAULT_TOLERANCES",
    "NUMERIC_EPS",
    "SymbolCheckError",
    "almost_equal",
    "assert_almost_equal",
    "check_numeric_gradient",
    "check_req",
    "check_symbolic_backward",
    "check_symbolic_forward",
    "default_context",
    "default_tolerances",
    "rand_shape_nd",
    "simple_forward",
]
