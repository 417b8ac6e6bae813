"""Gluon parameters: a named weight with one copy per context, and a dictionary of them.

A layer declares its weights as :class:`Parameter` objects; a block collects them in a
:class:`ParameterDict`; a :class:`Constant` is a parameter that is never trained. Read the
modules in this order:

- :mod:`.errors`: ``DeferredInitializationError`` and ``ParameterError``.
- :mod:`.parameter`: ``Parameter``, one array per context, and deferred initialization
  (the shape's unknown dimensions are filled in by the first forward pass).
- :mod:`.constant`: ``Constant``, a parameter with a fixed value and ``grad_req='null'``.
- :mod:`.parameter_dict`: ``ParameterDict``, names with a prefix, sharing, ``.params`` files.

``mx.gluon.parameter`` is MXNet's module name, so every name above is importable from here.
"""

from __future__ import annotations

from ...ndarray.ndarray import NDArray
from ...symbol.symbol import Symbol
from .constant import Constant
from .errors import DeferredInitializationError, ParameterError
from .parameter import GRAD_REQS, Parameter
from .parameter_dict import ParameterDict

#: What a Gluon block computes on: symbols while tracing, arrays when running (MXNet's name).
tensor_types = (Symbol, NDArray)

__all__ = [
    "GRAD_REQS",
    "Constant",
    "DeferredInitializationError",
    "Parameter",
    "ParameterDict",
    "ParameterError",
    "tensor_types",
]
