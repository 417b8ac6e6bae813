"""The step cells: ``RNNCell`` (Elman), ``LSTMCell`` and ``GRUCell``, one time step each as symbols.

Each holds its four weight variables (``i2h``/``h2h`` weight and bias, every gate's rows in one
matrix, in MXNet's gate order) and builds one step: two ``FullyConnected`` nodes, the gate
activations and the new states. Node names follow MXNet's (``lstm_t0_i2h``, ``lstm_t0_out``...),
so a graph unrolled here reads like one unrolled by MXNet, and checkpoints carry the same
parameter names. They are separate from :mod:`.base_cell` (what every cell shares) because
each is one recurrence's maths.
"""

from __future__ import annotations

from typing import Any

from .. import initializer as init
from .. import symbol
from ..symbol import Symbol
from .base_cell import BaseRNNCell, RNNParams


def _hidden_state_info(num_hidden: int, count: int) -> list[dict[str, Any]]:
    return [{"shape": (0, num_hidden), "__layout__": "NC"} for _ in range(count)]


class RNNCell(BaseRNNCell):
    """Elman step: ``h' = activation(W_i x + b_i + W_h h + b_h)``; the output is ``h'``."""

    _gate_names = ("",)

    def __init__(
        self, num_hidden: int, activation: Any = "tanh", prefix: str = "rnn_", params: RNNParams | None = None
    ) -> None:
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._activation = activation
        self._iW = self.params.get("i2h_weight")
        self._iB = self.params.get("i2h_bias")
        self._hW = self.params.get("h2h_weight")
        self._hB = self.params.get("h2h_bias")

    @property
    def state_info(self) -> list[dict[str, Any]]:
        return _hidden_state_info(self._num_hidden, 1)

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        i2h = symbol.FullyConnected(
            data=inputs, weight=self._iW, bias=self._iB, num_hidden=self._num_hidden, name=f"{name}i2h"
        )
        h2h = symbol.FullyConnected(
            data=states[0], weight=self._hW, bias=self._hB, num_hidden=self._num_hidden, name=f"{name}h2h"
        )
        output = self._get_activation(i2h + h2h, self._activation, name=f"{name}out")
        return output, [output]


class LSTMCell(BaseRNNCell):
    """Long short-term memory step; gates in MXNet's order i, f, c (candidate), o.

    ``c' = sigmoid(f) * c + sigmoid(i) * tanh(g)``, ``h' = sigmoid(o) * tanh(c')``; states ``[h, c]``.
    The i2h bias starts at ``forget_bias`` for the forget gate (``mx.init.LSTMBias``).
    """

    _gate_names = ("_i", "_f", "_c", "_o")

    def __init__(
        self, num_hidden: int, prefix: str = "lstm_", params: RNNParams | None = None, forget_bias: float = 1.0
    ) -> None:
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get("i2h_weight")
        self._hW = self.params.get("h2h_weight")
        self._iB = self.params.get("i2h_bias", init=init.LSTMBias(forget_bias=forget_bias))
        self._hB = self.params.get("h2h_bias")

    @property
    def state_info(self) -> list[dict[str, Any]]:
        return _hidden_state_info(self._num_hidden, 2)

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        hidden4 = self._num_hidden * 4
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB, num_hidden=hidden4, name=f"{name}i2h")
        h2h = symbol.FullyConnected(
            data=states[0], weight=self._hW, bias=self._hB, num_hidden=hidden4, name=f"{name}h2h"
        )
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, name=f"{name}slice")
        in_gate = symbol.Activation(gates[0], act_type="sigmoid", name=f"{name}i")
        forget_gate = symbol.Activation(gates[1], act_type="sigmoid", name=f"{name}f")
        in_transform = symbol.Activation(gates[2], act_type="tanh", name=f"{name}c")
        out_gate = symbol.Activation(gates[3], act_type="sigmoid", name=f"{name}o")
        next_c = symbol._internal._plus(forget_gate * states[1], in_gate * in_transform, name=f"{name}state")
        next_h = symbol._internal._mul(out_gate, symbol.Activation(next_c, act_type="tanh"), name=f"{name}out")
        return next_h, [next_h, next_c]


class GRUCell(BaseRNNCell):
    """Gated recurrent unit step; gates in MXNet's order r (reset), z (update), n (candidate).

    ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``, ``h' = (1 - z) * n + z * h``.
    """

    _gate_names = ("_r", "_z", "_o")

    def __init__(self, num_hidden: int, prefix: str = "gru_", params: RNNParams | None = None) -> None:
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get("i2h_weight")
        self._iB = self.params.get("i2h_bias")
        self._hW = self.params.get("h2h_weight")
        self._hB = self.params.get("h2h_bias")

    @property
    def state_info(self) -> list[dict[str, Any]]:
        return _hidden_state_info(self._num_hidden, 1)

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        prev_h = states[0]
        hidden3 = self._num_hidden * 3
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB, num_hidden=hidden3, name=f"{name}_i2h")
        h2h = symbol.FullyConnected(data=prev_h, weight=self._hW, bias=self._hB, num_hidden=hidden3, name=f"{name}_h2h")
        i2h_r, i2h_z, i2h_n = symbol.SliceChannel(i2h, num_outputs=3, name=f"{name}_i2h_slice")
        h2h_r, h2h_z, h2h_n = symbol.SliceChannel(h2h, num_outputs=3, name=f"{name}_h2h_slice")
        reset_gate = symbol.Activation(i2h_r + h2h_r, act_type="sigmoid", name=f"{name}_r_act")
        update_gate = symbol.Activation(i2h_z + h2h_z, act_type="sigmoid", name=f"{name}_z_act")
        candidate = symbol.Activation(i2h_n + reset_gate * h2h_n, act_type="tanh", name=f"{name}_h_act")
        next_h = symbol._internal._plus((1.0 - update_gate) * candidate, update_gate * prev_h, name=f"{name}out")
        return next_h, [next_h]
