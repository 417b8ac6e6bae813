"""The checks ``bind`` makes on a module's input names and shapes, with messages that say what to fix.

A module is created with ``data_names``/``label_names`` and bound with ``data_shapes``/
``label_shapes``; the two must agree, and every name must be an argument of the symbol.
``Module`` and ``BucketingModule`` both run these checks, so they live once, apart from the
training loop.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from .executor_group import ModuleError, as_desc


def _check_input_names(symbol: Any, names: Sequence[str], typename: str, throw: bool) -> None:
    """Every name must be an argument of ``symbol``; say which arguments could be meant."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(("_weight", "_bias", "_gamma", "_beta"))]
        msg = (
            f"You created Module with Module(..., {typename}_names={list(names)}) but input with name {name!r} "
            f"is not found in symbol.list_arguments(). Did you mean one of:\n\t" + "\n\t".join(candidates)
        )
        if throw:
            raise ModuleError(msg)
        warnings.warn(msg, stacklevel=3)


def _check_names_match(names: Sequence[str], shapes: Sequence[Any], what: str, throw: bool) -> None:
    actual = [d.name for d in shapes]
    if sorted(names) != sorted(actual):
        msg = (
            f"Data provided by {what}_shapes don't match names specified by {what}_names "
            f"({[(d.name, tuple(d.shape)) for d in shapes]} vs. {list(names)})"
        )
        if throw:
            raise ModuleError(msg)
        warnings.warn(msg, stacklevel=3)


def _parse_data_desc(
    data_names: Sequence[str], label_names: Sequence[str], data_shapes: Any, label_shapes: Any
) -> tuple[list[Any], list[Any] | None]:
    """Descriptors from ``(name, shape)`` pairs or DataDescs, checked against the module's names."""
    looks_like_one_pair = isinstance(data_shapes, tuple) and bool(data_shapes) and isinstance(data_shapes[0], str)
    if data_shapes is None or isinstance(data_shapes, str) or looks_like_one_pair:
        raise ModuleError(
            f"bind: data_shapes must be a list of (name, shape) pairs or DataDescs such as "
            f"[('data', (32, 784))], got {data_shapes!r}"
        )
    data = [as_desc(x, "data_shapes") for x in data_shapes]
    _check_names_match(data_names, data, "data", True)
    if label_shapes is not None:
        labels = [as_desc(x, "label_shapes") for x in label_shapes]
        _check_names_match(label_names, labels, "label", False)
        return data, labels
    _check_names_match(label_names, [], "label", False)
    return data, None
