"""Two contrib cells: ``LSTMPCell`` (an LSTM with a projected output) and ``VariationalDropoutCell``.

* :class:`LSTMPCell` (Sak et al., 2014) is an LSTM step whose hidden state ``h`` (``hidden_size``)
  is projected to ``r`` (``projection_size``) by ``h2r_weight``; ``r`` is both the output and the
  recurrent input, so the ``h2h`` product is ``(4H, P)`` instead of ``(4H, H)``.
* :class:`VariationalDropoutCell` (Gal and Ghahramani, 2016) drops the same units at every step of a
  sequence: its masks are drawn at the first step after ``reset`` (``unroll`` resets) and reused.
"""

from __future__ import annotations

from typing import Any

from ...block import BlockError
from ...rnn.rnn_cell import (
    BidirectionalCell,
    HybridRecurrentCell,
    ModifierCell,
    RecurrentCell,
    SequentialRNNCell,
    _begin_state,
    _format_sequence,
)

__all__ = ["LSTMPCell", "VariationalDropoutCell"]


class LSTMPCell(HybridRecurrentCell):
    """LSTM with projection: ``c' = f*c + i*g``, ``h = o * tanh(c')``, output and state ``r' = W_h2r h``.

    States ``[r, c]`` of shapes ``(N, projection_size)`` and ``(N, hidden_size)``.
    """

    def __init__(
        self,
        hidden_size: int,
        projection_size: int,
        i2h_weight_initializer: Any = None,
        h2h_weight_initializer: Any = None,
        h2r_weight_initializer: Any = None,
        i2h_bias_initializer: Any = "zeros",
        h2h_bias_initializer: Any = "zeros",
        input_size: int = 0,
        prefix: str | None = None,
        params: Any = None,
    ) -> None:
        super().__init__(prefix=prefix, params=params)
        if hidden_size < 1 or projection_size < 1:
            raise BlockError(
                f"LSTMPCell: hidden_size and projection_size must be positive, got {hidden_size}, {projection_size}"
            )
        self._hidden_size = hidden_size
        self._input_size = input_size
        self._projection_size = projection_size
        rows = 4 * hidden_size
        get = self.params.get
        self.i2h_weight = get(
            "i2h_weight", shape=(rows, input_size), init=i2h_weight_initializer, allow_deferred_init=True
        )
        self.h2h_weight = get(
            "h2h_weight", shape=(rows, projection_size), init=h2h_weight_initializer, allow_deferred_init=True
        )
        self.h2r_weight = get(
            "h2r_weight", shape=(projection_size, hidden_size), init=h2r_weight_initializer, allow_deferred_init=True
        )
        self.i2h_bias = get("i2h_bias", shape=(rows,), init=i2h_bias_initializer, allow_deferred_init=True)
        self.h2h_bias = get("h2h_bias", shape=(rows,), init=h2h_bias_initializer, allow_deferred_init=True)

    def _alias(self) -> str:
        return "lstmp"

    def state_info(self, batch_size: int = 0) -> list[dict[str, Any]]:
        return [
            {"shape": (batch_size, self._projection_size), "__layout__": "NC"},
            {"shape": (batch_size, self._hidden_size), "__layout__": "NC"},
        ]

    def hybrid_forward(
        self, F: Any, inputs: Any, states: Any, i2h_weight, h2h_weight, h2r_weight, i2h_bias, h2h_bias
    ) -> Any:
        name = f"t{self._counter}_"
        rows = 4 * self._hidden_size
        i2h = F.FullyConnected(inputs, i2h_weight, i2h_bias, num_hidden=rows, name=f"{name}i2h")
        h2h = F.FullyConnected(states[0], h2h_weight, h2h_bias, num_hidden=rows, name=f"{name}h2h")
        gate_i, gate_f, gate_g, gate_o = F.SliceChannel(i2h + h2h, num_outputs=4, name=f"{name}slice")
        in_gate = F.Activation(gate_i, act_type="sigmoid", name=f"{name}i")
        forget_gate = F.Activation(gate_f, act_type="sigmoid", name=f"{name}f")
        in_transform = F.Activation(gate_g, act_type="tanh", name=f"{name}c")
        out_gate = F.Activation(gate_o, act_type="sigmoid", name=f"{name}o")
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * in_transform, name=f"{name}state")
        hidden = F.elemwise_mul(out_gate, F.Activation(next_c, act_type="tanh"), name=f"{name}hidden")
        next_r = F.FullyConnected(hidden, h2r_weight, num_hidden=self._projection_size, no_bias=True, name=f"{name}out")
        return next_r, [next_r, next_c]

    def __repr__(self) -> str:
        shape = self.i2h_weight.shape
        return f"{type(self).__name__}({shape[1] or None} -> {shape[0]} -> {self._projection_size})"


class VariationalDropoutCell(ModifierCell):
    """Dropout with one mask per sequence on the inputs, the first state and the outputs of ``base_cell``.

    A mask is ``Dropout(ones)``: in training its units are 0 or ``1/(1-p)``, when predicting all 1.
    """

    def __init__(
        self, base_cell: RecurrentCell, drop_inputs: float = 0.0, drop_states: float = 0.0, drop_outputs: float = 0.0
    ) -> None:
        for what, p in (("drop_inputs", drop_inputs), ("drop_states", drop_states), ("drop_outputs", drop_outputs)):
            if not 0.0 <= p < 1.0:
                raise BlockError(f"VariationalDropoutCell: {what} must be in [0, 1), got {p}")
        if drop_states and isinstance(base_cell, BidirectionalCell):
            raise BlockError(
                "VariationalDropoutCell: a BidirectionalCell has no single state to drop; "
                "wrap the cells inside it instead"
            )
        if drop_states and isinstance(base_cell, SequentialRNNCell) and _has_bidirectional(base_cell):
            raise BlockError(
                "VariationalDropoutCell: a SequentialRNNCell holding a BidirectionalCell has no single state "
                "to drop; wrap the cells inside it instead"
            )
        self.drop_inputs = drop_inputs
        self.drop_states = drop_states
        self.drop_outputs = drop_outputs
        super().__init__(base_cell)
        self._clear_masks()

    def _alias(self) -> str:
        return "vardrop"

    def _clear_masks(self) -> None:
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def reset(self) -> None:
        super().reset()
        self._clear_masks()

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:
        # masks are drawn once, at the first step of a sequence, and reused for the following steps
        if self.drop_states and self.drop_states_mask is None:
            self.drop_states_mask = F.Dropout(F.ones_like(states[0]), p=self.drop_states)
        if self.drop_inputs and self.drop_inputs_mask is None:
            self.drop_inputs_mask = F.Dropout(F.ones_like(inputs), p=self.drop_inputs)
        if self.drop_states:
            states = [states[0] * self.drop_states_mask, *states[1:]]
        if self.drop_inputs:
            inputs = inputs * self.drop_inputs_mask
        output, next_states = self.base_cell(inputs, states)
        if self.drop_outputs:
            if self.drop_outputs_mask is None:
                self.drop_outputs_mask = F.Dropout(F.ones_like(output), p=self.drop_outputs)
            output = output * self.drop_outputs_mask
        return output, next_states

    def unroll(
        self,
        length: int,
        inputs: Any,
        begin_state: Any = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
        valid_length: Any = None,
    ) -> tuple[Any, list[Any]]:
        """Without state dropout the base cell unrolls alone, with one mask shared along the time axis."""
        if self.drop_states:
            return super().unroll(length, inputs, begin_state, layout, merge_outputs, valid_length)
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, True)
        states = _begin_state(self, F, begin_state, inputs, batch_size)
        if self.drop_inputs:  # Dropout's axes: the mask is broadcast along time, so every step shares it
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(axis,))
        outputs, states = self.base_cell.unroll(length, inputs, states, layout, True, valid_length)
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(axis,))
        # past valid_length the base cell's outputs are zeros, and dropout keeps zeros zero
        merge = True if merge_outputs is None else merge_outputs
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge)
        return outputs, states

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p_out = {self.drop_outputs}, p_state = {self.drop_states})"


def _has_bidirectional(cell: SequentialRNNCell) -> bool:
    return any(isinstance(child, BidirectionalCell) for child in cell._children.values())
