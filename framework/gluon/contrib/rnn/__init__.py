"""``mx.gluon.contrib.rnn``: convolutional cells (:mod:`.conv_rnn_cell`), ``LSTMPCell`` and
``VariationalDropoutCell`` (:mod:`.rnn_cell`)."""

from __future__ import annotations

from . import conv_rnn_cell, rnn_cell
from .conv_rnn_cell import (
    Conv1DGRUCell,
    Conv1DLSTMCell,
    Conv1DRNNCell,
    Conv2DGRUCell,
    Conv2DLSTMCell,
    Conv2DRNNCell,
    Conv3DGRUCell,
    Conv3DLSTMCell,
    Conv3DRNNCell,
)
from .rnn_cell import LSTMPCell, VariationalDropoutCell

__all__ = [
    "Conv1DGRUCell",
    "Conv1DLSTMCell",
    "Conv1DRNNCell",
    "Conv2DGRUCell",
    "Conv2DLSTMCell",
    "Conv2DRNNCell",
    "Conv3DGRUCell",
    "Conv3DLSTMCell",
    "Conv3DRNNCell",
    "LSTMPCell",
    "VariationalDropoutCell",
    "conv_rnn_cell",
    "rnn_cell",
]
