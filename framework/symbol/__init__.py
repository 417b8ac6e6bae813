"""``mx.sym``: symbolic graphs, built before they run.

* ``Symbol`` and ``Group``: :mod:`.symbol` (structure, composition), its operator methods
  (``a + b``, ``x.reshape``): :mod:`.methods`, built on node
  creation (:mod:`.creation`) and the output list every symbol is (:mod:`.outputs`), with
  inference in :mod:`.inference`; ``Variable`` / ``var``: :mod:`.variable`; ``load``, ``load_json``:
  :mod:`.loading` (the JSON layouts: :mod:`.json_format`); ``optimize_for``'s backends: :mod:`.backends`;
* ``mx.sym.<operator>``: generated from the operator registry on first use (:mod:`.register`);
  ``_``-prefixed operators are in ``mx.sym._internal``, ``_contrib_<x>`` in
  ``mx.sym.contrib``, ``_linalg_<x>`` in ``mx.sym.linalg``, the samplers in ``mx.sym.random``;
* ``arange``, ``linspace``, ``eye``, ``histogram``, ``split_v2``, ``zeros``, ``pow``, ``maximum``, ...:
  hand-written front ends (:mod:`.functions`);
* the errors: :mod:`.errors`; attribute-key spelling: :mod:`.attr_keys`; graph reading and copying
  (output names, auxiliary states, deep copy): :mod:`.graph`;
* automatic names and ``Prefix``: :mod:`.naming` (MXNet's ``mx.name``); ``AttrScope``:
  :mod:`.attribute` (MXNet's ``mx.attribute``).
"""

from __future__ import annotations

from typing import Any

from .. import operator as _operators  # noqa: F401 - registers the built-in operators
from ..absent import absent_attribute
from ..operator import registry as _registry
from . import (  # noqa: F401 - from_autograd: mx.autograd.get_symbol; methods: a + b, x.reshape, ... on Symbol
    attribute,
    contrib_functions,
    control_flow,
    from_autograd,
    methods,
    naming,
    random,
)
from .attribute import AttrScope
from .errors import NotImplementedForSymbol, SymbolError, SymbolTypeError
from .functions import (
    arange,
    eye,
    full,
    histogram,
    hypot,
    linspace,
    maximum,
    minimum,
    ones,
    pow,
    power,
    split_v2,
    zeros,
)
from .json_format import SymbolJSONError
from .loading import load, load_json
from .naming import NameManager, Prefix
from .register import SymbolNamespace, lookup, symbol_function
from .symbol import Group, Symbol
from .variable import Variable, var

_internal = SymbolNamespace("mx.sym._internal", "")
op = SymbolNamespace("mx.sym.op", "")
contrib = SymbolNamespace("mx.sym.contrib", "_contrib_")
for _name, _function in {**contrib_functions.FUNCTIONS, **control_flow.FUNCTIONS}.items():  # hand-written contrib
    setattr(contrib, _name, _function)
linalg = SymbolNamespace("mx.sym.linalg", "_linalg_")
image = SymbolNamespace("mx.sym.image", "_image_")

# MXNet's generated operator modules (gen_<prefix>), which scripts sometimes import directly:
# the same symbol functions as the namespaces above.
gen_op = op
gen_contrib = SymbolNamespace("mx.sym.gen_contrib", "_contrib_")  # the operators only
gen_linalg = linalg
gen_image = image
gen_random = SymbolNamespace("mx.sym.gen_random", "_random_")
gen__internal = _internal


def __getattr__(name: str) -> Any:
    try:
        function = lookup(name)
    except AttributeError:
        raise absent_attribute("mx.symbol", name, shown="mx.sym") from None
    globals()[name] = function
    return function


def __dir__() -> list[str]:
    return sorted(set(globals()) | {n for n in _registry.list_operators() if not n.startswith("_")})


__all__ = [
    "AttrScope",
    "attribute",
    "Group",
    "NameManager",
    "NotImplementedForSymbol",
    "Prefix",
    "Symbol",
    "SymbolError",
    "SymbolJSONError",
    "SymbolTypeError",
    "Variable",
    "arange",
    "contrib",
    "eye",
    "full",
    "histogram",
    "hypot",
    "linalg",
    "linspace",
    "load",
    "load_json",
    "maximum",
    "minimum",
    "naming",
    "ones",
    "op",
    "pow",
    "power",
    "random",
    "split_v2",
    "symbol_function",
    "var",
    "zeros",
]
