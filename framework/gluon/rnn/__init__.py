"""``mx.gluon.rnn``: recurrent layers on the fused ``RNN`` operator (:mod:`.rnn_layer`)."""

from __future__ import annotations

from .rnn_layer import GRU, LSTM, RNN

__all__ = ["GRU", "LSTM", "RNN"]
