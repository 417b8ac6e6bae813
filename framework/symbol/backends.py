"""Graph backends for ``Symbol.optimize_for``: named rewrites of a whole symbol (MXNet 1.9.1).

In MXNet a *backend* is a graph pass or a partitioner that rewrites a symbol before it runs;
``sym.optimize_for("myPass")`` looks the name up and applies it. MXLab has no built-in
backends: extension libraries (``mx.library.load``) add theirs here when they load, so this
module only keeps the table and the uniform call. It sits in the symbol layer and knows
nothing of libraries; the library layer registers into it (layers import only downward).

A backend is a function called with keywords ``symbol, args, aux, ctx, shape_dict, type_dict,
skip_infer, options`` that returns ``(symbol, new_args, new_aux)``: ``args``/``aux`` map names
to NDArrays (the known parameters, possibly empty), ``shape_dict``/``type_dict`` add input
shapes and dtypes, ``options`` are the keyword arguments as strings, and ``new_args``/``new_aux``
are parameters the backend made.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

from .errors import SymbolError, SymbolTypeError

BackendFn = Callable[..., tuple[Any, dict, dict]]


class SymbolBackendError(SymbolError):
    """optimize_for named a backend that no loaded library provides, or a backend failed."""


class _Backend:
    def __init__(self, name: str, kind: str, owner: str, fn: BackendFn) -> None:
        self.name, self.kind, self.owner, self.fn = name, kind, owner, fn


_backends: dict[str, _Backend] = {}
_lock = threading.Lock()


def register_backend(name: str, kind: str, owner: str, fn: BackendFn) -> None:
    """Add backend ``name`` (``kind``: "pass" or "partitioner"; ``owner``: who provides it)."""
    with _lock:
        found = _backends.get(name)
        if found is not None:
            raise SymbolBackendError(
                f"backend {name!r} ({kind} of {owner}) is already registered as the {found.kind} of {found.owner}"
            )
        _backends[name] = _Backend(name, kind, owner, fn)


def list_backends() -> dict[str, str]:
    """Registered backend names -> "<kind> of <owner>"."""
    with _lock:
        return {b.name: f"{b.kind} of {b.owner}" for b in _backends.values()}


def get_backend(name: str) -> _Backend:
    """The backend called ``name``; the error lists what is registered."""
    if not isinstance(name, str):
        raise SymbolBackendError(f"optimize_for: backend must be a string, got {type(name).__name__}")
    with _lock:
        found = _backends.get(name)
        known = sorted(_backends)
    if found is None:
        have = ", ".join(known) if known else "none (load a library with mx.library.load first)"
        raise SymbolBackendError(
            f"optimize_for: unknown backend {name!r}; registered graph passes and partitioners: {have}"
        )
    return found


def option_strings(kwargs: dict[str, Any]) -> dict[str, str]:
    """Backend options as the strings a library sees (``True`` -> "True", as MXNet's str())."""
    return {str(k): v if isinstance(v, str) else str(v) for k, v in kwargs.items()}


def _named(arrays: Any, names: list[str], what: str) -> dict[str, Any]:
    """``optimize_for``'s args/aux as a name -> NDArray dict (a list follows ``names``)."""
    if arrays is None:
        return {}
    if isinstance(arrays, dict):
        return dict(arrays)
    if isinstance(arrays, list | tuple):
        if len(arrays) != len(names):
            raise SymbolError(f"optimize_for: {what} has {len(arrays)} arrays, the symbol has {len(names)}: {names}")
        return dict(zip(names, arrays, strict=True))
    raise SymbolTypeError(f"optimize_for: {what} must be a dict or a list of NDArrays, got {type(arrays).__name__}")


def optimize(
    symbol: Any,
    backend: str,
    args: Any,
    aux: Any,
    ctx: Any,
    shape_dict: dict | None,
    type_dict: dict | None,
    stype_dict: dict | None,
    skip_infer: bool,
    options: dict[str, Any],
) -> Any:
    """``symbol.optimize_for(backend, ...)``: look the backend up, call it, hand back what it made.

    ``args``/``aux`` may be dicts or lists in the symbol's argument/auxiliary order; parameters
    the backend creates are added to them when they are dicts (MXNet 1.9.1), with a warning
    otherwise, since a list cannot receive new names.
    """
    found = get_backend(backend)
    if stype_dict and any(v not in ("default", 0) for v in stype_dict.values()):
        raise SymbolBackendError(f"optimize_for({backend!r}): MXLab arrays are dense; stype_dict {stype_dict}")
    out, new_args, new_aux = found.fn(
        symbol=symbol,
        args=_named(args, symbol.list_arguments(), "args"),
        aux=_named(aux, symbol.list_auxiliary_states(), "aux"),
        ctx=ctx,
        shape_dict=dict(shape_dict or {}),
        type_dict=dict(type_dict or {}),
        skip_infer=skip_infer,
        options=option_strings(options),
    )
    for given, made, what in ((args, new_args, "args"), (aux, new_aux, "aux")):
        if not made:
            continue
        if isinstance(given, dict):
            given.update(made)
        else:
            warnings.warn(
                f"optimize_for({backend!r}) created new {what} {sorted(made)}; pass {what} as a dict to receive them",
                stacklevel=3,
            )
    return out
