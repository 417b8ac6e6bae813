"""The exceptions of ``mx.sym``, in their own module so that every symbol module can raise them.

Both subclass MXLab's base error and the Python error a caller would expect (``ValueError``,
``TypeError``, ``NotImplementedError``), as MXNet's ``MXNetError`` does.
"""

from __future__ import annotations

from ..base import MXLabError
from ..errors import NotImplementedForSymbol  # defined with the base errors: mx.base names it too

__all__ = ["NotImplementedForSymbol", "SymbolError", "SymbolTypeError"]


class SymbolError(MXLabError, ValueError):
    """A symbol was composed, named or given attributes in a way MXNet does not allow."""


class SymbolTypeError(MXLabError, TypeError):
    """A symbol operation got an argument of the wrong type (an NDArray, a string, ...)."""
