"""Cells made of cells: ``SequentialRNNCell`` (a stack) and ``BidirectionalCell`` (two directions).

A group's states, initial states and weights are its children's, in order, and the children
share one parameter table with the group. A stack feeds each child's output to the next,
step by step or (for children that can only be unrolled whole) sequence by sequence; a
bidirectional cell runs one child forwards and one backwards over the whole sequence and
concatenates their outputs. They are separate from the step cells because they compute
nothing themselves: they route sequences and states between cells.
"""

from __future__ import annotations

from typing import Any

from .. import symbol
from ..symbol import Symbol
from .base_cell import BaseRNNCell, RNNCellError, RNNParams, _normalize_sequence


class _CellGroup(BaseRNNCell):
    """A cell made of child cells (``_cells``): its states, initial states and weights are the children's, in order.

    Children share one parameter table with the group: the group's when it was given ``params``
    (``_override_cell_params``), else their own, which the group takes in.
    """

    _cells: list[BaseRNNCell]
    _override_cell_params: bool

    def _adopt(self, cell: BaseRNNCell) -> None:
        """Make this group and ``cell`` share one parameter table (the group's, when it was given one)."""
        if self._override_cell_params:
            if not cell._own_params:
                raise RNNCellError(
                    f"{type(self).__name__}: give params either to the container or to the child cells, not both"
                )
            cell.params._params.update(self.params._params)
        self.params._params.update(cell.params._params)

    @property
    def state_info(self) -> list[dict[str, Any]]:
        return [info for cell in self._cells for info in cell.state_info]

    def begin_state(self, **kwargs: Any) -> list[Symbol]:
        if self._modified:
            raise RNNCellError("begin_state: this cell is wrapped by a modifier cell; call the modifier cell instead")
        return [state for cell in self._cells for state in cell.begin_state(**kwargs)]

    def unpack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args


class SequentialRNNCell(_CellGroup):
    """A stack of cells: each step feeds one cell's output to the next; states are the cells' states in order.

    Args:
        params: parameters shared by every added cell (then the cells must not have been given their own).
    """

    def __init__(self, params: RNNParams | None = None) -> None:
        super().__init__(prefix="", params=params)
        self._override_cell_params = params is not None
        self._cells: list[BaseRNNCell] = []

    def add(self, cell: BaseRNNCell) -> None:
        """Append ``cell`` to the stack."""
        self._adopt(cell)
        self._cells.append(cell)

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        self._counter += 1
        next_states: list[Symbol] = []
        position = 0
        for cell in self._cells:
            if not cell._steppable:
                raise RNNCellError(f"SequentialRNNCell: {type(cell).__name__} cannot be stepped; use unroll")
            count = len(cell.state_info)
            inputs, cell_states = cell(inputs, states[position : position + count])
            position += count
            next_states.extend(cell_states)
        return inputs, next_states

    def unroll(
        self,
        length: int,
        inputs: Any,
        begin_state: list[Symbol] | None = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
    ) -> tuple[Any, list[Symbol]]:
        """Unroll each cell over the whole sequence in turn (so fused and bidirectional cells can be stacked)."""
        self.reset()
        begin_state = self.begin_state() if begin_state is None else begin_state
        position = 0
        next_states: list[Symbol] = []
        last = len(self._cells) - 1
        for i, cell in enumerate(self._cells):
            count = len(cell.state_info)
            inputs, states = cell.unroll(
                length,
                inputs=inputs,
                begin_state=begin_state[position : position + count],
                layout=layout,
                merge_outputs=None if i < last else merge_outputs,
            )
            position += count
            next_states.extend(states)
        return inputs, next_states


class BidirectionalCell(_CellGroup):
    """Runs ``l_cell`` forwards and ``r_cell`` backwards over the sequence; each step's output concatenates both.

    It cannot be stepped (the backward direction needs the whole sequence): use :meth:`unroll`.
    """

    _steppable = False

    def __init__(
        self, l_cell: BaseRNNCell, r_cell: BaseRNNCell, params: RNNParams | None = None, output_prefix: str = "bi_"
    ) -> None:
        super().__init__("", params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        self._cells = [l_cell, r_cell]
        for cell in self._cells:
            self._adopt(cell)

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        raise NotImplementedError("BidirectionalCell cannot be stepped; use unroll")

    def unroll(
        self,
        length: int,
        inputs: Any,
        begin_state: list[Symbol] | None = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
    ) -> tuple[Any, list[Symbol]]:
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        l_cell, r_cell = self._cells
        split = len(l_cell.state_info)
        l_outputs, l_states = l_cell.unroll(
            length, inputs=inputs, begin_state=states[:split], layout=layout, merge_outputs=merge_outputs
        )
        r_outputs, r_states = r_cell.unroll(
            length,
            inputs=list(reversed(inputs)),
            begin_state=states[split:],
            layout=layout,
            merge_outputs=merge_outputs,
        )
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, Symbol) and isinstance(r_outputs, Symbol)
            if not merge_outputs:
                if isinstance(l_outputs, Symbol):
                    l_outputs = list(symbol.SliceChannel(l_outputs, axis=axis, num_outputs=length, squeeze_axis=1))
                if isinstance(r_outputs, Symbol):
                    r_outputs = list(symbol.SliceChannel(r_outputs, axis=axis, num_outputs=length, squeeze_axis=1))
        if merge_outputs:
            # the backward direction's outputs run back to front: reverse them along time to line up
            l_outputs = [l_outputs]
            r_outputs = [symbol.reverse(r_outputs, axis=axis)]
        else:
            r_outputs = list(reversed(r_outputs))
        outputs = [
            symbol.Concat(
                l_out,
                r_out,
                dim=1 + int(merge_outputs),
                name=f"{self._output_prefix}out" if merge_outputs else f"{self._output_prefix}t{i}",
            )
            for i, (l_out, r_out) in enumerate(zip(l_outputs, r_outputs, strict=True))
        ]
        if merge_outputs:
            outputs = outputs[0]
        # as MXNet 1.x: the states of each direction as a list of their own
        return outputs, [l_states, r_states]
