"""What a symbol is underneath: a non-empty list of output entries (node, output index) of the graph.

Node creation (:mod:`.creation`) needs no more of a symbol than this, and
:class:`~.symbol.Symbol` makes its operators (``a + b``) with node creation: so the list lives
here, below both. ``Symbol`` subclasses :class:`SymbolOutputs`; node creation recognises its
inputs by it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..operator.node import Entry
from .errors import SymbolError, SymbolTypeError


class SymbolOutputs:
    """The outputs of a graph: ``outputs`` is a list of :class:`Entry` (node, output index)."""

    __slots__ = ("outputs",)

    def __init__(self, outputs: Sequence[Entry]) -> None:
        outputs = list(outputs)
        if not outputs or not all(isinstance(e, Entry) for e in outputs):
            raise SymbolTypeError(f"Symbol: outputs must be a non-empty list of Entry objects, got {outputs!r}")
        self.outputs: list[Entry] = outputs


def single_output(value: object, what: str) -> Entry:
    """The one output entry of the symbol ``value``; ``what`` names it in the error otherwise."""
    if not isinstance(value, SymbolOutputs):
        raise SymbolTypeError(f"{what} must be a Symbol, got {value!r}")
    if len(value.outputs) != 1:
        raise SymbolError(f"{what} is a group of {len(value.outputs)} outputs; a single output is required")
    return value.outputs[0]
