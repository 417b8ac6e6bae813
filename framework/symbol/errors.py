"""The exceptions of ``mx.sym``, in their own module so that every symbol module can raise them.

Both subclass MXLab's base error and the Python error a caller would expect (``ValueError``,
``TypeError``, ``NotImplementedError``), as MXNet's ``MXNetError`` does.
"""

from __future__ import annotations

from ..base import MXLabError


class SymbolError(MXLabError, ValueError):
    """A symbol was composed, named or given attributes in a way MXNet does not allow."""


class SymbolTypeError(MXLabError, TypeError):
    """A symbol operation got an argument of the wrong type (an NDArray, a string, ...)."""


class NotImplementedForSymbol(MXLabError, NotImplementedError):
    """An NDArray-only operation (``bool(sym)``, ``sym += 1``) was used on a Symbol."""

    def __init__(self, function: str, alias: str) -> None:
        super().__init__(
            f"Function {function} (namely operator {alias!r}) is not implemented for Symbol "
            "and only available in NDArray."
        )
