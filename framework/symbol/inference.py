"""Shape and type inference on a symbol: ``infer_shape``, ``infer_type`` and their partial forms.

The work is :mod:`framework.executor.infer`'s (the same passes ``bind`` runs); these functions,
which the ``Symbol`` methods of the same names call with the symbol's output entries, only turn
MXNet's calling conventions into known values per variable node and the result back into MXNet's
three lists:

* known values come positionally (in ``list_arguments`` order, ``None`` for unknown) or by
  keyword (any input name, auxiliary states included), never both;
* the result is ``(arguments, outputs, auxiliary states)``, each in its list order;
* ``infer_shape``/``infer_type`` answer ``(None, None, None)`` with a warning that names the
  arguments left unknown; the ``_partial`` forms answer what is known (``()`` or ``None`` for
  the rest). Conflicting values raise :class:`InferenceError` with the known values quoted.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ..executor.infer import infer_shapes, infer_types
from ..operator.infer import InferenceError, shape_known
from ..operator.node import Entry, Node, topo_sort
from .errors import SymbolError, SymbolTypeError
from .graph import mutated_ids


def _variables(order: list[Node]) -> tuple[list[Node], list[Node]]:
    """The graph's variables split into (arguments, auxiliary states), depth-first."""
    mutated = mutated_ids(order)
    variables = [n for n in order if n.is_variable]
    return [n for n in variables if n.id not in mutated], [n for n in variables if n.id in mutated]


def _known(
    noun: str, order: list[Node], args: tuple, kwargs: dict, convert: Callable[[Any, str], Any]
) -> tuple[dict[Node, Any], str]:
    """Known values by variable node, from positional (argument order) or keyword values."""
    if args and kwargs:
        raise SymbolError(f"Can only specify known argument {noun}s either by positional or kwargs way.")
    known: dict[Node, Any] = {}
    shown = []
    if args:
        nodes = _variables(order)[0]
        if len(args) > len(nodes):
            raise SymbolError(f"infer_{noun}: got {len(args)} positional {noun}s for {len(nodes)} arguments")
        for i, (node, value) in enumerate(zip(nodes, args, strict=False)):
            if value is not None:
                known[node] = convert(value, f"argument {i} ({node.name})")
                shown.append(f"{node.name}: {value}")
    else:
        by_name: dict[str, list[Node]] = {}
        for node in order:
            if node.is_variable:
                by_name.setdefault(node.name, []).append(node)
        for key, value in kwargs.items():
            if key not in by_name:
                raise SymbolError(
                    f"infer_{noun}: keyword argument name {key!r} not found; candidate arguments: {', '.join(by_name)}"
                )
            for node in by_name[key]:
                known[node] = convert(value, repr(key))
            shown.append(f"{key}: {value}")
    return known, ", ".join(shown)


def _as_shape(value: Any, where: str) -> tuple:
    if not isinstance(value, tuple):
        raise SymbolTypeError(f"Arguments need to be shapes (tuple), but {where} is {type(value)}.")
    return value


def _as_dtype_name(value: Any, where: str) -> str:
    try:
        return np.dtype(value).name
    except TypeError:
        raise SymbolTypeError(f"Arguments need to be dtypes, but {where} is {value!r}.") from None


class _Inferred(NamedTuple):
    arguments: list
    outputs: list
    aux: list
    argument_names: list[str]
    complete: bool


def _infer(kind: str, outputs: list[Entry], args: tuple, kwargs: dict) -> _Inferred:
    """Run the shape or type pass from the known values; every value, and whether all are known."""
    order = topo_sort(outputs)
    if kind == "shape":
        known, shown = _known("shape", order, args, kwargs, _as_shape)
        run, is_known = infer_shapes, shape_known
    else:
        known, shown = _known("type", order, args, kwargs, _as_dtype_name)
        run, is_known = infer_types, (lambda t: t is not None)
    try:
        table = run(outputs, known, nodes=order)
    except InferenceError as err:
        raise InferenceError(f"{err}\ninfer_{kind} arguments: {shown or 'none'}") from None
    arg_nodes, aux_nodes = _variables(order)
    return _Inferred(
        [table[(n.id, 0)] for n in arg_nodes],
        [table[(e.node.id, e.index)] for e in outputs],
        [table[(n.id, 0)] for n in aux_nodes],
        [n.name for n in arg_nodes],
        all(is_known(v) for v in table.values()),
    )


def infer_shape(outputs: list[Entry], args: tuple, kwargs: dict) -> tuple[list | None, list | None, list | None]:
    """``Symbol.infer_shape``: all three lists, or ``(None, None, None)`` and a warning naming the unknowns."""
    found = _infer("shape", outputs, args, kwargs)
    if found.complete:
        return list(found.arguments), list(found.outputs), list(found.aux)
    unknowns = []
    for name, shape in zip(found.argument_names, found.arguments, strict=True):
        if not shape_known(shape):
            if len(unknowns) >= 10:
                unknowns.append("...")
                break
            unknowns.append(f"{name}: {shape or ()}")
    warnings.warn(
        "Cannot decide shape for the following arguments (0s in shape means unknown dimensions). "
        "Consider providing them as input:\n\t" + "\n\t".join(unknowns),
        stacklevel=3,
    )
    return None, None, None


def infer_shape_partial(outputs: list[Entry], args: tuple, kwargs: dict) -> tuple[list, list, list]:
    """``Symbol.infer_shape_partial``: what is known; ``()`` for an unknown shape, 0 for an unknown dim."""
    found = _infer("shape", outputs, args, kwargs)
    return [s or () for s in found.arguments], [s or () for s in found.outputs], [s or () for s in found.aux]


def infer_type(outputs: list[Entry], args: tuple, kwargs: dict) -> tuple[list | None, list | None, list | None]:
    """``Symbol.infer_type``: NumPy types, or ``(None, None, None)`` and a warning naming the unknowns."""
    found = _infer("type", outputs, args, kwargs)
    if found.complete:
        return _np_types(found.arguments), _np_types(found.outputs), _np_types(found.aux)
    unknowns = [f"{n}: None" for n, t in zip(found.argument_names, found.arguments, strict=True) if t is None]
    warnings.warn(
        "Cannot decide type for the following arguments. Consider providing them as input:\n\t" + "\n\t".join(unknowns),
        stacklevel=3,
    )
    return None, None, None


def infer_type_partial(outputs: list[Entry], args: tuple, kwargs: dict) -> tuple[list, list, list]:
    """``Symbol.infer_type_partial``: NumPy types, None where a type cannot be inferred."""
    found = _infer("type", outputs, args, kwargs)
    return _np_types(found.arguments), _np_types(found.outputs), _np_types(found.aux)


def _np_types(names: list[str | None]) -> list[type | None]:
    return [None if name is None else np.dtype(name).type for name in names]
