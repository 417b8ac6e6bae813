"""``mx.rnn.rnn_cell``: MXNet's module of symbolic recurrent cells, gathered from their own modules.

A cell builds the symbols of one time step, ``cell(inputs, states) -> (output, next_states)``, and
``cell.unroll(length, inputs)`` repeats it into an ordinary symbol graph. Read the modules in
this order:

* :mod:`.base_cell`: :class:`RNNParams` (a cell's weight variables, once each), :class:`BaseRNNCell`
  (the interface and ``unroll``) and :class:`RNNCellError`;
* :mod:`.step_cells`: :class:`RNNCell`, :class:`LSTMCell`, :class:`GRUCell` (names as MXNet 1.x);
* :mod:`.cell_groups`: :class:`SequentialRNNCell` stacks cells, :class:`BidirectionalCell` runs two
  cells in opposite directions over the sequence;
* :mod:`.modifier_cells`: cells that wrap a cell, :class:`ZoneoutCell` and :class:`ResidualCell`,
  and the stateless :class:`DropoutCell`.

MXNet's module of this name also holds ``FusedRNNCell`` and the convolutional cells;
``framework/rnn/__init__.py`` adds them here from their own modules.
"""

from __future__ import annotations

# MXNet's module of these names: each import is here to be re-exported.
from .base_cell import BaseRNNCell, RNNCellError, RNNParams  # noqa: F401
from .cell_groups import BidirectionalCell, SequentialRNNCell  # noqa: F401
from .modifier_cells import DropoutCell, ModifierCell, ResidualCell, ZoneoutCell  # noqa: F401
from .step_cells import GRUCell, LSTMCell, RNNCell  # noqa: F401
