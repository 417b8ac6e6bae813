"""``mx.rnn``: MXNet 1.x's symbolic recurrent cells, the bucketing sentence iterator and RNN checkpoints.

* :mod:`.rnn_cell`: the cells (``RNNCell``, ``LSTMCell``, ``GRUCell``, stacking, bidirectional, modifiers)
  and ``unroll``, which repeats a cell's step into an ordinary symbol graph, gathered from
  :mod:`.base_cell`, :mod:`.step_cells`, :mod:`.cell_groups` and :mod:`.modifier_cells`;
* :mod:`.conv_rnn_cell`: the convolutional cells (``ConvRNNCell``, ``ConvLSTMCell``, ``ConvGRUCell``);
* :mod:`.fused_rnn_cell`: ``FusedRNNCell`` (the fused ``RNN`` operator, its packed weight layout;
  the ``FusedRNN`` initializer that fills it is ``mx.init.FusedRNN``);
* :mod:`.io`: ``encode_sentences`` and ``BucketSentenceIter`` for ``mx.mod.BucketingModule``;
* :mod:`.rnn`: ``save_rnn_checkpoint`` / ``load_rnn_checkpoint`` / ``do_rnn_checkpoint``.

docs/rnn.md walks through them.
"""

from __future__ import annotations

from ..model import load_checkpoint, save_checkpoint
from . import io, rnn, rnn_cell
from .conv_rnn_cell import BaseConvRNNCell, ConvGRUCell, ConvLSTMCell, ConvRNNCell
from .fused_rnn_cell import FusedRNNCell
from .io import BucketSentenceIter, encode_sentences
from .rnn import do_rnn_checkpoint, load_rnn_checkpoint, rnn_unroll, save_rnn_checkpoint
from .rnn_cell import (
    BaseRNNCell,
    BidirectionalCell,
    DropoutCell,
    GRUCell,
    LSTMCell,
    ModifierCell,
    ResidualCell,
    RNNCell,
    RNNCellError,
    RNNParams,
    SequentialRNNCell,
    ZoneoutCell,
)

# MXNet's rnn_cell module also holds FusedRNNCell and the convolutional cells; here they have files of their own
rnn_cell.FusedRNNCell = FusedRNNCell
rnn_cell.BaseConvRNNCell = BaseConvRNNCell
rnn_cell.ConvRNNCell = ConvRNNCell
rnn_cell.ConvLSTMCell = ConvLSTMCell
rnn_cell.ConvGRUCell = ConvGRUCell

__all__ = [
    "BaseConvRNNCell",
    "BaseRNNCell",
    "BidirectionalCell",
    "BucketSentenceIter",
    "ConvGRUCell",
    "ConvLSTMCell",
    "ConvRNNCell",
    "DropoutCell",
    "FusedRNNCell",
    "GRUCell",
    "LSTMCell",
    "ModifierCell",
    "RNNCell",
    "RNNCellError",
    "RNNParams",
    "ResidualCell",
    "SequentialRNNCell",
    "ZoneoutCell",
    "do_rnn_checkpoint",
    "encode_sentences",
    "io",
    "load_checkpoint",
    "load_rnn_checkpoint",
    "rnn",
    "rnn_cell",
    "rnn_unroll",
    "save_checkpoint",
    "save_rnn_checkpoint",
]
