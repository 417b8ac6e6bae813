"""``mx.sym.Variable`` (``var``): a named input of a graph, with the hints inference reads.

A variable is a node without an operator. What MXNet lets a user attach to it is kept as
hidden attributes, the strings that ``tojson`` writes and ``bind``/``simple_bind`` read:
``__shape__`` and ``__dtype__`` (inference), ``__lr_mult__``/``__wd_mult__`` (the optimizer),
``__init__`` (the initializer), ``__storage_type__``, and any ``__name__``-style attribute.
The current :class:`~framework.symbol.attribute.AttrScope` adds its attributes first; the
arguments given here win.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import DTYPE_TO_FLAG
from ..errors import check_stype
from ..operator.node import Entry, Node, NodeAttrs
from . import attribute
from .attr_keys import is_dunder, normalize_attr_key
from .errors import SymbolError, SymbolTypeError
from .symbol import Symbol

_STORAGE_TYPES = {"default": 0}


def Variable(
    name: str,
    attr: dict[str, str] | None = None,
    shape: Sequence[int] | None = None,
    lr_mult: float | None = None,
    wd_mult: float | None = None,
    dtype: Any = None,
    init: Any = None,
    stype: str | None = None,
    **kwargs: Any,
) -> Symbol:
    """A named input of a graph; ``shape`` (0 = unknown dimension) and ``dtype`` guide inference."""
    if not isinstance(name, str):
        raise SymbolTypeError(f"Variable: name must be a string, got {name!r}")
    extra: dict[str, str] = {}
    for key, value in attribute.current().get(attr).items():  # `with AttrScope(...)`; attr= wins
        extra[normalize_attr_key(key)] = str(value)
    if shape is not None:
        extra["__shape__"] = str(shape)
    if lr_mult is not None:
        extra["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        extra["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        try:
            extra["__dtype__"] = str(DTYPE_TO_FLAG[np.dtype(dtype)])
        except (TypeError, KeyError):
            known = ", ".join(d.name for d in DTYPE_TO_FLAG)
            raise SymbolError(f"Variable {name!r}: dtype must be one of {known}, got {dtype!r}") from None
    if init is not None:
        extra["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        check_stype(stype, f"Variable {name!r}")
        extra["__storage_type__"] = str(_STORAGE_TYPES[stype])
    for key, value in kwargs.items():
        if not is_dunder(key):
            raise SymbolError(
                f"Variable {name!r}: attribute name={key} is not supported; additional attributes "
                "must start and end with double underscores, e.g. __yourattr__"
            )
        extra[key] = str(value)
    return Symbol([Entry(Node(None, NodeAttrs(name, None, None, extra)), 0, 0)])


var = Variable
