"""The imperative checkers under the name they were first importable by (see framework/test_utils/imperative.py).

``framework.test_utils`` gathers them with the comparisons they build on, so the checkers sit
inside that package and this module only hands their names on (downward: nothing in
``framework.test_utils`` imports this module).
"""

from __future__ import annotations

from .test_utils.imperative import check_imperative_gradient, check_req

__all__ = ["check_imperative_gradient", "check_req"]
