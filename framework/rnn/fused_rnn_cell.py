"""``FusedRNNCell``: a whole multi-layer (bidirectional) RNN as one ``RNN`` operator with one packed weight vector.

The fused ``RNN`` operator (cuDNN's layout, which MXNet adopted) keeps every weight and bias of
every layer and direction in a single 1-D ``parameters`` array. The packed layout, which
:func:`packed_slices` computes and both directions of conversion use:

1. weights, layer by layer, and within a layer direction by direction (``l`` then ``r``):
   the i2h weight of each gate, then the h2h weight of each gate;
2. then the biases in the same order (i2h biases of each gate, then h2h biases).

Gates are in MXNet's order: LSTM ``i, f, c, o``; GRU ``r, z, n`` (named ``_r, _z, _o``); the plain
RNN modes have one. Layer 0's i2h weights are ``(hidden, input)``; deeper layers read the
concatenated directions of the layer below, ``(hidden, directions * hidden)``.

:meth:`FusedRNNCell.unpack_weights` splits ``lstm_parameters`` into the named per-gate arrays
(``lstm_l0_i2h_i_weight``...), and :meth:`FusedRNNCell.unfuse` builds the equivalent stack of step
cells whose (packed-per-cell) weights use those names, so a fused model's checkpoint can be
loaded into unfused cells and back.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import initializer as init
from .. import ndarray as nd
from .. import symbol
from ..operator.rnn.layout import GATE_LETTERS, RNNShape, gate_slices, param_size
from ..symbol import Symbol
from .base_cell import BaseRNNCell, RNNCellError, RNNParams, _normalize_sequence
from .cell_groups import BidirectionalCell, SequentialRNNCell
from .modifier_cells import DropoutCell
from .step_cells import GRUCell, LSTMCell, RNNCell

#: Each mode's gates as they appear in parameter names (``_i`` in ``l0_i2h_i_weight``).
GATE_NAMES = {mode: tuple(f"_{g}" if g else "" for g in letters) for mode, letters in GATE_LETTERS.items()}


def packed_slices(
    prefix: str, mode: str, num_layers: int, bidirectional: bool, num_input: int, num_hidden: int
) -> tuple[list[tuple[str, int, int, tuple[int, ...]]], int]:
    """The packed layout: ``[(name, start, stop, shape), ...]`` in storage order, and the total size.

    The layout is the fused operator's (``framework/operator/rnn/layout.py``), cut per gate.
    """
    spec = RNNShape(mode, num_layers, num_hidden, num_input, bidirectional)
    slices = [(prefix + p.name, p.offset, p.stop, p.shape) for p in gate_slices(spec)]
    return slices, param_size(spec)


class FusedRNNCell(BaseRNNCell):
    """A multi-layer RNN (``mode``: ``rnn_relu``, ``rnn_tanh``, ``lstm``, ``gru``) run by the fused ``RNN`` operator.

    Its one parameter is ``prefix + 'parameters'`` (packed, see the module docstring). It cannot be
    stepped; :meth:`unfuse` gives the equivalent stack of step cells.
    """

    _steppable = False

    def __init__(
        self,
        num_hidden: int,
        num_layers: int = 1,
        mode: str = "lstm",
        bidirectional: bool = False,
        dropout: float = 0.0,
        get_next_state: bool = False,
        forget_bias: float = 1.0,
        prefix: str | None = None,
        params: RNNParams | None = None,
    ) -> None:
        if mode not in GATE_NAMES:
            raise RNNCellError(f"FusedRNNCell: mode must be one of {sorted(GATE_NAMES)}, got {mode!r}")
        if prefix is None:
            prefix = f"{mode}_"
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._directions = ["l", "r"] if bidirectional else ["l"]
        self._gate_names = GATE_NAMES[mode]
        initializer = init.FusedRNN(None, num_hidden, num_layers, mode, bidirectional, forget_bias)
        self._parameter = self.params.get("parameters", init=initializer)

    @property
    def state_info(self) -> list[dict[str, Any]]:
        layers = len(self._directions) * self._num_layers
        count = 2 if self._mode == "lstm" else 1
        return [{"shape": (layers, 0, self._num_hidden), "__layout__": "LNC"} for _ in range(count)]

    def _num_input(self, total: int) -> int:
        """The input size that makes the packed vector ``total`` long (solving the layout's size for it)."""
        directions, gates, hidden = len(self._directions), len(self._gate_names), self._num_hidden
        num_input = total // directions // hidden // gates - (self._num_layers - 1) * (hidden + directions * hidden + 2)
        num_input -= hidden + 2
        return num_input

    def _layout(self, num_input: int) -> tuple[list[tuple[str, int, int, tuple[int, ...]]], int]:
        return packed_slices(
            self._prefix, self._mode, self._num_layers, self._bidirectional, num_input, self._num_hidden
        )

    def unpack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """Replace ``prefix + 'parameters'`` with the named per-layer, per-direction, per-gate arrays."""
        args = dict(args)
        packed = args.pop(self._parameter.name)
        values = packed.asnumpy().reshape(-1)
        slices, total = self._layout(self._num_input(values.size))
        if total != values.size:
            raise RNNCellError(
                f"FusedRNNCell: {self._parameter.name} has {values.size} values, which fits no input size for "
                f"mode={self._mode!r}, num_layers={self._num_layers}, num_hidden={self._num_hidden}"
            )
        for name, start, stop, shape in slices:
            args[name] = nd.array(values[start:stop].reshape(shape), ctx=packed.context, dtype=packed.dtype)
        return args

    def pack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """Inverse of :meth:`unpack_weights`: gather the named arrays into one packed vector."""
        args = dict(args)
        first = args[f"{self._prefix}l0_i2h{self._gate_names[0]}_weight"]
        slices, total = self._layout(first.shape[1])
        packed = np.zeros((total,), dtype=first.dtype)
        for name, start, stop, shape in slices:
            value = args.pop(name).asnumpy()
            if value.shape != shape:
                raise RNNCellError(f"FusedRNNCell.pack_weights: {name} has shape {value.shape}, expected {shape}")
            packed[start:stop] = value.reshape(-1)
        args[self._parameter.name] = nd.array(packed, ctx=first.context, dtype=first.dtype)
        return args

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        raise NotImplementedError("FusedRNNCell cannot be stepped; use unroll")

    def unroll(
        self,
        length: int,
        inputs: Any,
        begin_state: list[Symbol] | None = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
    ) -> tuple[Any, list[Symbol]]:
        """One ``RNN`` node over the whole (time-major) sequence."""
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, True)
        if axis == 1:
            warnings.warn("NTC layout detected. Consider using TNC for FusedRNNCell for faster speed", stacklevel=2)
            inputs = symbol.swapaxes(inputs, dim1=0, dim2=1)
        elif axis != 0:
            raise RNNCellError(f"FusedRNNCell.unroll: layout {layout!r} must have T first or second")
        states = self.begin_state() if begin_state is None else begin_state
        state_inputs = {"state": states[0]}
        if self._mode == "lstm":
            state_inputs["state_cell"] = states[1]
        rnn = symbol.RNN(
            data=inputs,
            parameters=self._parameter,
            state_size=self._num_hidden,
            num_layers=self._num_layers,
            bidirectional=self._bidirectional,
            p=self._dropout,
            state_outputs=self._get_next_state,
            mode=self._mode,
            name=f"{self._prefix}rnn",
            **state_inputs,
        )
        if not self._get_next_state:
            outputs, states = rnn, []
        else:
            count = 2 if self._mode == "lstm" else 1
            states = [rnn[1 + i] for i in range(count)]
            for state in states:
                state._set_attr(__layout__="LNC")
            outputs = rnn[0]
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self) -> SequentialRNNCell:
        """The equivalent stack of step cells, named so that :meth:`unpack_weights` feeds their (packed) weights."""
        hidden = self._num_hidden

        def make_cell(prefix: str) -> BaseRNNCell:
            if self._mode == "lstm":
                return LSTMCell(hidden, prefix=prefix)
            if self._mode == "gru":
                return GRUCell(hidden, prefix=prefix)
            return RNNCell(hidden, activation=self._mode[len("rnn_") :], prefix=prefix)

        stack = SequentialRNNCell()
        for layer in range(self._num_layers):
            if self._bidirectional:
                stack.add(
                    BidirectionalCell(
                        make_cell(f"{self._prefix}l{layer}_"),
                        make_cell(f"{self._prefix}r{layer}_"),
                        output_prefix=f"{self._prefix}bi_l{layer}_",
                    )
                )
            else:
                stack.add(make_cell(f"{self._prefix}l{layer}_"))
            if self._dropout > 0 and layer != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix=f"{self._prefix}_dropout{layer}_"))
        return stack
