"""RNN checkpoints: save a model's cells with their weights *unpacked* (one array per gate), load them packed.

Unpacked names (``lstm_i2h_i_weight``...) do not depend on how the cells were built, so a model trained
with a ``FusedRNNCell`` can be loaded into the equivalent unfused cells (``cell.unfuse()``) and back.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..model import load_checkpoint, save_checkpoint
from ..ndarray import NDArray
from .base_cell import BaseRNNCell


def _cell_list(cells: BaseRNNCell | Sequence[BaseRNNCell]) -> list[BaseRNNCell]:
    return [cells] if isinstance(cells, BaseRNNCell) else list(cells)


def save_rnn_checkpoint(
    cells: BaseRNNCell | Sequence[BaseRNNCell],
    prefix: str,
    epoch: int,
    symbol: Any,
    arg_params: Mapping[str, NDArray],
    aux_params: Mapping[str, NDArray],
) -> None:
    """``mx.model.save_checkpoint`` after each cell's ``unpack_weights``."""
    arg_params = dict(arg_params)
    for cell in _cell_list(cells):
        arg_params = cell.unpack_weights(arg_params)
    save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)


def load_rnn_checkpoint(
    cells: BaseRNNCell | Sequence[BaseRNNCell], prefix: str, epoch: int
) -> tuple[Any, dict[str, NDArray], dict[str, NDArray]]:
    """``mx.model.load_checkpoint``, then each cell's ``pack_weights``: ``(symbol, arg_params, aux_params)``."""
    sym, arg_params, aux_params = load_checkpoint(prefix, epoch)
    for cell in _cell_list(cells):
        arg_params = cell.pack_weights(arg_params)
    return sym, arg_params, aux_params


def do_rnn_checkpoint(cells: BaseRNNCell | Sequence[BaseRNNCell], prefix: str, period: int = 1) -> Callable[..., None]:
    """An ``epoch_end_callback`` that saves an RNN checkpoint every ``period`` epochs (as epoch ``n + 1``)."""
    period = int(max(1, period))

    def _callback(iter_no: int, sym: Any = None, arg: Any = None, aux: Any = None) -> None:
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)

    return _callback


def rnn_unroll(
    cell: BaseRNNCell,
    length: int,
    inputs: Any = None,
    begin_state: Any = None,
    input_prefix: str = "",
    layout: str = "NTC",
) -> tuple[Any, list[Any]]:
    """Deprecated spelling of ``cell.unroll`` (kept because 1.x scripts call it)."""
    warnings.warn("rnn_unroll is deprecated. Please call cell.unroll directly.", DeprecationWarning, stacklevel=2)
    return cell.unroll(length=length, inputs=inputs, begin_state=begin_state, layout=layout)
