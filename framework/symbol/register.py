"""Generated symbol functions: ``mx.sym.<op>`` for every registered operator.

MXNet generates ``mx.sym.FullyConnected`` and friends from its operator registry when the
library loads. MXLab generates each function the first time it is looked up (module
``__getattr__``), so operators registered later (in a tutorial, or loaded from a C library)
get one too. The function's signature and docstring come from the operator's input names
and parameters (``framework/operator/signature.py``, shared with ``mx.nd``); calling it builds
one node (:func:`framework.symbol.symbol.create_symbol`).

The name the function is reached by matters: it is the *hint* of automatic node names.
``mx.sym.FullyConnected`` names nodes ``fullyconnected0``, ``mx.sym._internal._Plus``
``_plus0`` and ``mx.sym.contrib.quadratic`` ``quadratic0``.

Namespaces (as in MXNet): ``mx.sym.<name>`` for operators whose names do not start with
``_``; ``mx.sym._internal.<name>`` and ``mx.sym.op.<name>`` for every operator;
``mx.sym.contrib.<x>`` for ``_contrib_<x>``; ``mx.sym.linalg.<x>`` for ``_linalg_<x>``.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from ..operator import registry
from ..operator.registry import OperatorError
from ..operator.signature import REQUIRED_MARK, FrontEnd, Keyword, make_docstring, make_signature
from .symbol import Symbol, create_symbol

_functions: dict[tuple[str, str], Callable[..., Symbol]] = {}


#: How ``mx.sym`` functions present their inputs and keywords (see ``operator/signature.py``).
SYM_FRONT_END = FrontEnd(
    input_type="Symbol",
    input_help="An input; a variable ``<name>_{name}`` is created if omitted.",
    variadic_help="The inputs (any number); missing ones are not created.",
    returns="Symbol",
    keywords=(
        Keyword("name", "str", "The node's name (default: the lower-cased function name and a counter)."),
        Keyword("attr", "dict of str to str", "Extra attributes such as ``{'__lr_mult__': '0.1'}``."),
    ),
    inputs_optional=True,
    params_positional=True,
    required_default=REQUIRED_MARK,
    var_keyword=True,
)


def symbol_function(access_name: str, hint: str | None = None) -> Callable[..., Symbol]:
    """The symbol function of the operator registered as ``access_name`` (cached).

    ``hint`` (default: ``access_name``) is lower-cased to name nodes automatically.
    """
    hint = (hint or access_name).lower()
    key = (access_name, hint)
    function = _functions.get(key)
    if function is not None:
        return function
    op = registry.get(access_name)  # raises OperatorError naming the operator

    def function(*args: Any, name: str | None = None, attr: dict | None = None, **kwargs: Any) -> Symbol:
        return create_symbol(access_name, hint, args, kwargs, name=name, attr=attr)

    function.__name__ = access_name
    function.__qualname__ = access_name
    function.__doc__ = make_docstring(op, SYM_FRONT_END, access_name)
    try:
        function.__signature__ = make_signature(op, SYM_FRONT_END)  # type: ignore[attr-defined]
    except (ValueError, TypeError):
        pass
    _functions[key] = function
    return function


class SymbolNamespace(types.ModuleType):
    """A module whose attributes are the symbol functions of operators ``<prefix><attribute>``."""

    def __init__(self, name: str, prefix: str, public_only: bool = False) -> None:
        super().__init__(name)
        self._prefix = prefix
        self._public_only = public_only

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or (self._public_only and name.startswith("_")):
            raise AttributeError(f"{self.__name__} has no attribute {name!r}")
        full = self._prefix + name
        if not registry.exists(full):
            raise AttributeError(f"{self.__name__} has no operator {name!r} (no operator {full!r} is registered)")
        function = symbol_function(full, hint=name)
        setattr(self, name, function)
        return function

    def __dir__(self) -> list[str]:
        names = [n[len(self._prefix) :] for n in registry.list_operators() if n.startswith(self._prefix)]
        return [n for n in names if not (self._public_only and n.startswith("_"))]


def lookup(name: str) -> Callable[..., Symbol]:
    """``mx.sym.<name>``: public operators only (``_``-names live in ``mx.sym._internal``)."""
    if name.startswith("_") or not registry.exists(name):
        raise AttributeError(f"module 'mx.sym' has no attribute {name!r}")
    return symbol_function(name)


__all__ = ["SYM_FRONT_END", "OperatorError", "SymbolNamespace", "lookup", "symbol_function"]
