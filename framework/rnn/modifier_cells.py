"""Cells that change another cell's step: ``DropoutCell``, ``ZoneoutCell``, ``ResidualCell``.

A :class:`ModifierCell` wraps ``base_cell``: its parameters and states are the base cell's, and
the wrapped cell may no longer be called directly (``begin_state`` says to call the modifier).
``ZoneoutCell`` keeps some of the previous output and states in training; ``ResidualCell`` adds
the step's input to the output. ``DropoutCell`` is a stateless cell of its own, put between
the cells of a stack. They are separate from the step cells because they add no recurrence,
only a change around one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import symbol
from ..symbol import Symbol
from .base_cell import BaseRNNCell, RNNCellError, RNNParams, _normalize_sequence
from .cell_groups import SequentialRNNCell


class ModifierCell(BaseRNNCell):
    """A cell that wraps ``base_cell`` and changes its step; parameters and states are the base cell's."""

    def __init__(self, base_cell: BaseRNNCell) -> None:
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self) -> RNNParams:
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self) -> list[dict[str, Any]]:
        return self.base_cell.state_info

    def begin_state(self, init_sym: Callable[..., Symbol] = symbol.zeros, **kwargs: Any) -> list[Symbol]:
        if self._modified:
            raise RNNCellError("begin_state: this cell is wrapped by a modifier cell; call the modifier cell instead")
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(init_sym, **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        return self.base_cell.pack_weights(args)


class DropoutCell(BaseRNNCell):
    """Dropout on the input, as a stateless cell (put it between the cells of a SequentialRNNCell)."""

    def __init__(self, dropout: float, prefix: str = "dropout_", params: RNNParams | None = None) -> None:
        super().__init__(prefix, params)
        if not 0.0 <= float(dropout) < 1.0:
            raise RNNCellError(f"DropoutCell: dropout must be in [0, 1), got {dropout!r}")
        self.dropout = dropout

    @property
    def state_info(self) -> list[dict[str, Any]]:
        return []

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(
        self,
        length: int,
        inputs: Any,
        begin_state: list[Symbol] | None = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
    ) -> tuple[Any, list[Symbol]]:
        """A merged input gets one Dropout over the whole sequence instead of one per step."""
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, Symbol):
            return self(inputs, [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout, merge_outputs=merge_outputs)


class ZoneoutCell(ModifierCell):
    """Zoneout: in training, each unit keeps its previous output/state with probability ``zoneout_outputs`` /
    ``zoneout_states`` instead of taking the new one (the mask is a Dropout of ones, so inference keeps all new)."""

    def __init__(self, base_cell: BaseRNNCell, zoneout_outputs: float = 0.0, zoneout_states: float = 0.0) -> None:
        if not base_cell._steppable:
            raise RNNCellError(
                f"ZoneoutCell: {type(base_cell).__name__} cannot be stepped; unfuse it, or wrap the cells underneath"
            )
        if isinstance(base_cell, SequentialRNNCell) and any(not c._steppable for c in base_cell._cells):
            raise RNNCellError("ZoneoutCell: a SequentialRNNCell with bidirectional or fused cells cannot be stepped")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self.prev_output: Symbol | None = None

    def reset(self) -> None:
        super().reset()
        self.prev_output = None

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p: float, like: Symbol) -> Symbol:
            return symbol.Dropout(symbol.ones_like(like), p=p)

        prev_output = self.prev_output if self.prev_output is not None else symbol.zeros_like(next_output)
        output = (
            symbol.where(keep_new(self.zoneout_outputs, next_output), next_output, prev_output)
            if self.zoneout_outputs != 0.0
            else next_output
        )
        if self.zoneout_states != 0.0:
            next_states = [
                symbol.where(keep_new(self.zoneout_states, new), new, old)
                for new, old in zip(next_states, states, strict=True)
            ]
        self.prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """Adds the step's input to the base cell's output (``output + inputs``): a residual connection."""

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        output, states = self.base_cell(inputs, states)
        output = symbol.elemwise_add(output, inputs, name=f"{output.name}_plus_residual")
        return output, states

    def unroll(
        self,
        length: int,
        inputs: Any,
        begin_state: list[Symbol] | None = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
    ) -> tuple[Any, list[Symbol]]:
        """Unroll the base cell as a whole, then add the inputs (in the form the outputs came in)."""
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(
                length, inputs=inputs, begin_state=begin_state, layout=layout, merge_outputs=merge_outputs
            )
        finally:
            self.base_cell._modified = True
        merge_outputs = isinstance(outputs, Symbol) if merge_outputs is None else merge_outputs
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if merge_outputs:
            outputs = symbol.elemwise_add(outputs, inputs, name=f"{outputs.name}_plus_residual")
        else:
            outputs = [
                symbol.elemwise_add(out, step, name=f"{out.name}_plus_residual")
                for out, step in zip(outputs, inputs, strict=True)
            ]
        return outputs, states
