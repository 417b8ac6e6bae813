"""The gate arithmetic of the convolutional recurrent cells, written once for ``mx.rnn`` and Gluon.

A convolutional cell's step is two convolutions (``i2h`` on the input, ``h2h`` on the state)
followed by gate arithmetic that is the same whatever built the convolutions. ``mx.rnn``'s
symbolic cells (:mod:`.conv_rnn_cell`) and ``mx.gluon.contrib.rnn``'s cells both hand their two
convolution results to the functions here, passing ``F`` (the ``symbol`` or ``ndarray`` module)
so one implementation serves graphs and imperative arrays alike.

Each step function takes ``activate(x, name)``, the cell's own activation (a name or a function,
resolved by the caller), and ``axis``, the channel axis where the gates lie side by side.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: ``activate(x, name)``: the cell's activation applied to ``x``, naming the node ``name``
Activate = Callable[[Any, str], Any]


def rnn_step(F: Any, i2h: Any, h2h: Any, states: list, activate: Activate, axis: int, name: str) -> tuple:
    """Elman step: ``h' = activate(i2h + h2h)``; the output is the new state."""
    output = activate(i2h + h2h, f"{name}out")
    return output, [output]


def lstm_step(F: Any, i2h: Any, h2h: Any, states: list, activate: Activate, axis: int, name: str) -> tuple:
    """LSTM step with gates ``i, f, c, o`` stacked along ``axis``; states ``[h, c]``."""
    gates = F.SliceChannel(i2h + h2h, num_outputs=4, axis=axis, name=f"{name}slice")
    in_gate = F.Activation(gates[0], act_type="sigmoid", name=f"{name}i")
    forget_gate = F.Activation(gates[1], act_type="sigmoid", name=f"{name}f")
    in_transform = activate(gates[2], f"{name}c")
    out_gate = F.Activation(gates[3], act_type="sigmoid", name=f"{name}o")
    next_c = F.elemwise_add(forget_gate * states[1], in_gate * in_transform, name=f"{name}state")
    next_h = F.elemwise_mul(out_gate, activate(next_c, f"{name}c_act"), name=f"{name}out")
    return next_h, [next_h, next_c]


def gru_step(F: Any, i2h: Any, h2h: Any, states: list, activate: Activate, axis: int, name: str) -> tuple:
    """GRU step with gates ``r, z`` and the candidate stacked along ``axis``; the reset gate scales h2h's part."""
    i2h_r, i2h_z, i2h_n = F.SliceChannel(i2h, num_outputs=3, axis=axis, name=f"{name}i2h_slice")
    h2h_r, h2h_z, h2h_n = F.SliceChannel(h2h, num_outputs=3, axis=axis, name=f"{name}h2h_slice")
    reset_gate = F.Activation(i2h_r + h2h_r, act_type="sigmoid", name=f"{name}r_act")
    update_gate = F.Activation(i2h_z + h2h_z, act_type="sigmoid", name=f"{name}z_act")
    candidate = activate(i2h_n + reset_gate * h2h_n, f"{name}h_act")
    next_h = F.elemwise_add((1.0 - update_gate) * candidate, update_gate * states[0], name=f"{name}out")
    return next_h, [next_h]


@dataclass(frozen=True)
class GateKind:
    """What distinguishes the three convolutional cells: gate names, how many states, the step."""

    gate_names: tuple[str, ...]
    num_states: int
    step: Callable[..., tuple]


RNN_GATES = GateKind(("",), 1, rnn_step)
LSTM_GATES = GateKind(("_i", "_f", "_c", "_o"), 2, lstm_step)
GRU_GATES = GateKind(("_r", "_z", "_o"), 1, gru_step)
