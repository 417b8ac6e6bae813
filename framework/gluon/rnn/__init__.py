"""``mx.gluon.rnn``: recurrent layers on the fused ``RNN`` operator (:mod:`.rnn_layer`) and cells (:mod:`.rnn_cell`)."""

from __future__ import annotations

from .rnn_cell import (
    BidirectionalCell,
    DropoutCell,
    GRUCell,
    HybridRecurrentCell,
    HybridSequentialRNNCell,
    LSTMCell,
    ModifierCell,
    RecurrentCell,
    ResidualCell,
    RNNCell,
    SequentialRNNCell,
    ZoneoutCell,
)
from .rnn_layer import GRU, LSTM, RNN

__all__ = [
    "GRU",
    "LSTM",
    "RNN",
    "BidirectionalCell",
    "DropoutCell",
    "GRUCell",
    "HybridRecurrentCell",
    "HybridSequentialRNNCell",
    "LSTMCell",
    "ModifierCell",
    "RNNCell",
    "RecurrentCell",
    "ResidualCell",
    "SequentialRNNCell",
    "ZoneoutCell",
]
