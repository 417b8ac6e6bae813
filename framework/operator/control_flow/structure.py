"""Nested lists of arrays, as the control-flow front ends take and return them.

``foreach``'s data and states, ``while_loop``'s loop variables and a branch's outputs may each
be one array or a (nested) list of arrays, in NDArray and Symbol code alike. Both front ends
flatten such a value to a list of leaves, work on the list, and rebuild the caller's structure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...base import MXLabError


class ControlFlowError(MXLabError, ValueError):
    """A control-flow call was given, or its body returned, something of the wrong kind or shape."""


def flatten(value: Any, is_leaf: Callable[[Any], bool], what: str) -> tuple[list[Any], Any]:
    """The leaves of ``value`` in order, and its structure (None for a lone leaf, else a nested list)."""
    if is_leaf(value):
        return [value], None
    if isinstance(value, list | tuple):
        leaves: list[Any] = []
        shape = []
        for i, item in enumerate(value):
            sub_leaves, sub_shape = flatten(item, is_leaf, f"{what}[{i}]")
            shape.append((len(sub_leaves), sub_shape))
            leaves.extend(sub_leaves)
        return leaves, shape
    raise ControlFlowError(f"{what} must be an array or a (nested) list of arrays, got {type(value).__name__}")


def regroup(leaves: list[Any], structure: Any) -> Any:
    """Rebuild a value of ``structure`` (from :func:`flatten`) from its leaves."""
    if structure is None:
        return leaves[0]
    result, start = [], 0
    for count, sub in structure:
        result.append(regroup(leaves[start : start + count], sub))
        start += count
    return result


def check_callable(value: Any, what: str) -> None:
    if not callable(value):
        raise ControlFlowError(f"{what} must be a callable, got {type(value).__name__} {value!r:.40}")


def split_pair(result: Any, what: str) -> tuple[Any, Any]:
    """A body's ``(outputs, states)`` pair; anything else names the function and what it returned."""
    if not (isinstance(result, tuple | list) and len(result) == 2):
        raise ControlFlowError(
            f"{what} must return a pair (outputs, states), got {type(result).__name__}"
            + (f" of length {len(result)}" if isinstance(result, tuple | list) else "")
        )
    return result[0], result[1]


def check_same_count(given: list[Any], returned: list[Any], what: str) -> None:
    if len(given) != len(returned):
        raise ControlFlowError(f"{what}: {len(given)} were given, but the function returned {len(returned)}")


def check_while_loop_args(cond: Any, func: Any, max_iterations: Any) -> None:
    """The argument checks ``while_loop`` makes in NDArray and Symbol code alike (same contract, same messages)."""
    check_callable(cond, "while_loop: cond")
    check_callable(func, "while_loop: func")
    if max_iterations is None:
        raise ControlFlowError("while_loop: max_iterations must be given")
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, int) or max_iterations < 0:
        raise ControlFlowError(f"while_loop: max_iterations must be an int >= 0, got {max_iterations!r}")
