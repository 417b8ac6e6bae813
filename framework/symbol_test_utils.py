"""The symbol checkers under the name they were first importable by (see framework/test_utils/symbolic.py).

``framework.test_utils`` gathers them with the comparisons they build on, so the checkers sit
inside that package and this module only hands their names on (downward: nothing in
``framework.test_utils`` imports this module). Tutorial 06 imports them from here.
"""

from __future__ import annotations

from .test_utils.symbolic import (
    SymbolCheckError,
    check_numeric_gradient,
    check_symbolic_backward,
    check_symbolic_forward,
    numeric_grad,
    simple_forward,
)

__all__ = [
    "SymbolCheckError",
    "check_numeric_gradient",
    "check_symbolic_backward",
    "check_symbolic_forward",
    "numeric_grad",
    "simple_forward",
]
