"""Recurrent cells: one time step as a Block, and ``unroll`` to run a cell over a sequence.

A cell maps ``(input_t, states) -> (output_t, new_states)``. ``RNNCell``, ``LSTMCell`` and
``GRUCell`` compute the same step as one layer and direction of the fused ``RNN`` operator
(same gate order, same parameter names ``i2h_weight`` ...), so a stack of cells with a
layer's weights reproduces the layer step by step: what the fused operator hides, the cells
show. The other cells compose: ``SequentialRNNCell`` stacks cells (their states side by
side), ``BidirectionalCell`` runs two cells in opposite directions over a whole sequence, and
the modifiers wrap one cell (``DropoutCell`` on the output, ``ZoneoutCell`` keeping some of
the previous values, ``ResidualCell`` adding the input).

``unroll(length, inputs, begin_state, layout, merge_outputs, valid_length)`` calls the cell
once per step in Python; with ``valid_length`` each sample's states are those of its last
valid step and its outputs past that step are zeros.
"""

from __future__ import annotations

from typing import Any

from ... import ndarray as nd
from ... import symbol as sym
from ...ndarray import NDArray
from ..block import Block, BlockError, HybridBlock


def _split_steps(F: Any, x: Any, length: int, axis: int) -> list[Any]:
    """A tensor's ``length`` steps along ``axis``, each without that axis."""
    steps = F.split(x, axis=axis, num_outputs=length, squeeze_axis=True)
    return [steps] if length == 1 else list(steps)  # one output comes back unwrapped


def _reverse_steps(F: Any, steps: list[Any], valid_length: Any) -> list[Any]:
    """The steps in reverse order; with ``valid_length`` only each sample's valid prefix is reversed."""
    if valid_length is None:
        return list(reversed(steps))
    merged = F.SequenceReverse(F.stack(*steps, axis=0), sequence_length=valid_length, use_sequence_length=True)
    return _split_steps(F, merged, len(steps), 0)


def _format_sequence(length: int, inputs: Any, layout: str, merge: bool | None) -> tuple[Any, int, Any, int]:
    """``inputs`` as a list of ``length`` steps (merge False), one tensor (True) or as given (None).

    Returns ``(inputs, time_axis, F, batch_size)``; ``batch_size`` is 0 for symbols.
    """
    if "T" not in layout or "N" not in layout:
        raise BlockError(f"unroll: layout must contain 'T' and 'N', got {layout!r}")
    axis, batch_axis = layout.find("T"), layout.find("N")
    if isinstance(inputs, NDArray | sym.Symbol):
        F = nd if isinstance(inputs, NDArray) else sym
        batch_size = inputs.shape[batch_axis] if F is nd else 0
        if F is nd and inputs.shape[axis] != length:
            raise BlockError(f"unroll: inputs have {inputs.shape[axis]} steps on axis {axis}, length is {length}")
        if merge is False:
            inputs = _split_steps(F, inputs, length, axis)
        return inputs, axis, F, batch_size
    if not isinstance(inputs, list | tuple) or len(inputs) != length:
        raise BlockError(f"unroll: inputs must be a tensor or a list of {length} steps, got {type(inputs).__name__}")
    inputs = list(inputs)
    F = nd if isinstance(inputs[0], NDArray) else sym
    batch_size = inputs[0].shape[0] if F is nd else 0  # each step is (N, C)
    if merge is True:
        inputs = F.stack(*inputs, axis=axis)
    return inputs, axis, F, batch_size


def _begin_state(cell: RecurrentCell, F: Any, begin_state: Any, inputs: Any, batch_size: int) -> list[Any]:
    if begin_state is not None:
        return list(begin_state)
    if F is nd:
        first = inputs[0] if isinstance(inputs, list) else inputs
        return cell.begin_state(batch_size, func=nd.zeros, ctx=first.context, dtype=first.dtype)
    return cell.begin_state(0, func=sym.zeros)


def _mask_past_valid(F: Any, outputs: list[Any], length: int, valid_length: Any, axis: int, merge: bool) -> Any:
    """Zero every sample's outputs after its ``valid_length`` steps."""
    stacked = F.stack(*outputs, axis=axis)
    masked = F.SequenceMask(stacked, sequence_length=valid_length, use_sequence_length=True, axis=axis)
    if merge:
        return masked
    return _split_steps(F, masked, length, axis)


def _activation(F: Any, x: Any, activation: Any) -> Any:
    """A named activation (``tanh``, ``relu``, ``sigmoid``, ``softsign``, or any ``Activation``) or a Block."""
    if isinstance(activation, str):
        if activation in ("tanh", "relu", "sigmoid", "softsign"):
            return getattr(F, activation)(x)
        return F.Activation(x, act_type=activation)
    if isinstance(activation, Block):
        return activation(x)
    raise BlockError(f"cell: activation must be a name or a Block, got {activation!r}")


class RecurrentCell(Block):
    """Base class: state bookkeeping, ``begin_state``, ``unroll``."""

    def __init__(self, prefix: str | None = None, params: Any = None) -> None:
        super().__init__(prefix=prefix, params=params)
        self._modified = False  # set while a modifier cell wraps this one
        self.reset()

    def reset(self) -> None:
        """Forget the step count (called before each unroll)."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            if isinstance(cell, RecurrentCell):
                cell.reset()

    def state_info(self, batch_size: int = 0) -> list[dict[str, Any]]:
        """Shape and layout of each state."""
        raise NotImplementedError(f"{type(self).__name__} must implement state_info")

    def begin_state(self, batch_size: int = 0, func: Any = nd.zeros, **kwargs: Any) -> list[Any]:
        """Initial states made by ``func(name=..., shape=..., **kwargs)``."""
        if self._modified:
            raise BlockError(
                "After applying a modifier cell (e.g. ZoneoutCell) the base cell cannot be called directly. "
                "Call the modifier cell instead."
            )
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            made = {key: value for key, value in info.items() if key != "__layout__"}
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}", **{**made, **kwargs}))
        return states

    def unroll(
        self,
        length: int,
        inputs: Any,
        begin_state: Any = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
        valid_length: Any = None,
    ) -> tuple[Any, list[Any]]:
        """Run the cell over ``length`` steps; returns ``(outputs, final_states)``."""
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        states = _begin_state(self, F, begin_state, inputs, batch_size)
        outputs, all_states = [], []
        for step in range(length):
            output, states = self(inputs[step], states)
            outputs.append(output)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            # each sample's final states are those after its last valid step
            states = [
                F.SequenceLast(F.stack(*per_step, axis=0), sequence_length=valid_length, use_sequence_length=True)
                for per_step in zip(*all_states, strict=True)
            ]
            outputs = _mask_past_valid(F, outputs, length, valid_length, axis, True)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def forward(self, inputs: Any, states: Any) -> Any:
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A cell whose step is a ``hybrid_forward`` (so it can be hybridized)."""

    def hybrid_forward(self, F: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement hybrid_forward")


def _product_params(
    cell: HybridRecurrentCell,
    i2h_shape: tuple[int, ...],
    h2h_shape: tuple[int, ...],
    i2h_weight_initializer: Any,
    h2h_weight_initializer: Any,
    i2h_bias_initializer: Any,
    h2h_bias_initializer: Any,
) -> None:
    """Declare the ``i2h``/``h2h`` weights, then their biases (one per output row), in MXNet's order.

    Shared by the dense cells here and ``gluon.contrib.rnn``'s convolutional cells, which differ only
    in the weights' shapes (a matrix or a convolution kernel); a 0 in a shape is found at the first call.
    """
    rows = i2h_shape[0]
    inits = (i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer)
    shapes = (i2h_shape, h2h_shape, (rows,), (rows,))
    for name, shape, init in zip(("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"), shapes, inits, strict=True):
        setattr(cell, name, cell.params.get(name, shape=shape, init=init, allow_deferred_init=True))


class _GatedCell(HybridRecurrentCell):
    """The parameters every basic cell has: ``i2h``/``h2h`` weights ``(gates * H, in)`` and biases.

    Also shared: the two products and the states, ``_num_states`` arrays of ``(N, hidden_size)``.
    """

    _gates = 1
    _num_states = 1

    def __init__(
        self,
        hidden_size: int,
        i2h_weight_initializer: Any,
        h2h_weight_initializer: Any,
        i2h_bias_initializer: Any,
        h2h_bias_initializer: Any,
        input_size: int,
        prefix: str | None,
        params: Any,
    ) -> None:
        super().__init__(prefix=prefix, params=params)
        if hidden_size < 1:
            raise BlockError(f"{type(self).__name__}: hidden_size must be positive, got {hidden_size}")
        self._hidden_size = hidden_size
        self._input_size = input_size
        rows = self._gates * hidden_size
        _product_params(
            self, (rows, input_size), (rows, hidden_size), i2h_weight_initializer, h2h_weight_initializer,
            i2h_bias_initializer, h2h_bias_initializer,
        )  # fmt: skip

    def state_info(self, batch_size: int = 0) -> list[dict[str, Any]]:
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"} for _ in range(self._num_states)]

    def _products(self, F: Any, inputs: Any, h: Any, i2h_weight, h2h_weight, i2h_bias, h2h_bias) -> tuple[Any, Any]:
        rows = self._gates * self._hidden_size
        i2h = F.FullyConnected(inputs, i2h_weight, i2h_bias, num_hidden=rows, name=f"t{self._counter}_i2h")
        h2h = F.FullyConnected(h, h2h_weight, h2h_bias, num_hidden=rows, name=f"t{self._counter}_h2h")
        return i2h, h2h

    def __repr__(self) -> str:
        shape = self.i2h_weight.shape
        return f"{type(self).__name__}({shape[1] if shape[1] else None} -> {shape[0]})"


class RNNCell(_GatedCell):
    """Elman step: ``h' = activation(W_i2h x + b_i2h + W_h2h h + b_h2h)``."""

    def __init__(
        self,
        hidden_size: int,
        activation: Any = "tanh",
        i2h_weight_initializer: Any = None,
        h2h_weight_initializer: Any = None,
        i2h_bias_initializer: Any = "zeros",
        h2h_bias_initializer: Any = "zeros",
        input_size: int = 0,
        prefix: str | None = None,
        params: Any = None,
    ) -> None:
        super().__init__(
            hidden_size, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
            h2h_bias_initializer, input_size, prefix, params,
        )  # fmt: skip
        self._activation = activation

    def _alias(self) -> str:
        return "rnn"

    def hybrid_forward(self, F: Any, inputs: Any, states: Any, i2h_weight, h2h_weight, i2h_bias, h2h_bias) -> Any:
        i2h, h2h = self._products(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        output = _activation(F, i2h + h2h, self._activation)
        return output, [output]

    def __repr__(self) -> str:
        shape = self.i2h_weight.shape
        return f"{type(self).__name__}({shape[1] if shape[1] else None} -> {shape[0]}, {self._activation})"


class _SquashedGatesCell(_GatedCell):
    """The constructor LSTM and GRU share: MXNet gives both the same signature.

    ``recurrent_activation`` squashes the gates, ``activation`` the candidate (and LSTM's cell state).
    """

    def __init__(
        self,
        hidden_size: int,
        i2h_weight_initializer: Any = None,
        h2h_weight_initializer: Any = None,
        i2h_bias_initializer: Any = "zeros",
        h2h_bias_initializer: Any = "zeros",
        input_size: int = 0,
        prefix: str | None = None,
        params: Any = None,
        activation: Any = "tanh",
        recurrent_activation: Any = "sigmoid",
    ) -> None:
        super().__init__(
            hidden_size, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
            h2h_bias_initializer, input_size, prefix, params,
        )  # fmt: skip
        self._activation = activation
        self._recurrent_activation = recurrent_activation


class LSTMCell(_SquashedGatesCell):
    """LSTM step, gates ``i, f, g, o``: ``c' = f * c + i * g``, ``h' = o * activation(c')``."""

    _gates = 4
    _num_states = 2  # h and c

    def _alias(self) -> str:
        return "lstm"

    def hybrid_forward(self, F: Any, inputs: Any, states: Any, i2h_weight, h2h_weight, i2h_bias, h2h_bias) -> Any:
        i2h, h2h = self._products(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        gate_i, gate_f, gate_g, gate_o = F.SliceChannel(i2h + h2h, num_outputs=4)
        gate = self._recurrent_activation
        next_c = _activation(F, gate_f, gate) * states[1] + _activation(F, gate_i, gate) * _activation(
            F, gate_g, self._activation
        )
        next_h = _activation(F, gate_o, gate) * _activation(F, next_c, self._activation)
        return next_h, [next_h, next_c]


class GRUCell(_SquashedGatesCell):
    """GRU step, gates ``r, z, n``: ``n = activation(x_n + r * h_n)``, ``h' = (1 - z) * n + z * h``."""

    _gates = 3

    def _alias(self) -> str:
        return "gru"

    def hybrid_forward(self, F: Any, inputs: Any, states: Any, i2h_weight, h2h_weight, i2h_bias, h2h_bias) -> Any:
        prev = states[0]
        i2h, h2h = self._products(F, inputs, prev, i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        x_r, x_z, x_n = F.SliceChannel(i2h, num_outputs=3)
        h_r, h_z, h_n = F.SliceChannel(h2h, num_outputs=3)
        reset = _activation(F, x_r + h_r, self._recurrent_activation)
        update = _activation(F, x_z + h_z, self._recurrent_activation)
        candidate = _activation(F, x_n + reset * h_n, self._activation)
        next_h = (F.ones_like(update) - update) * candidate + update * prev
        return next_h, [next_h]


def _split_states(cells: list[RecurrentCell], states: list[Any]) -> list[list[Any]]:
    """Each cell's share of a stack's flat state list."""
    shares, start = [], 0
    for cell in cells:
        count = len(cell.state_info())
        shares.append(states[start : start + count])
        start += count
    return shares


class SequentialRNNCell(RecurrentCell):
    """Stacks cells: each step runs them in order; the states are the cells' states concatenated."""

    _is_container = True

    def hybrid_forward(self, *args: Any, **kwargs: Any) -> Any:
        """Not a graph of its own: a step calls each cell in turn (``__call__``), as in MXNet."""
        raise NotImplementedError(
            "SequentialRNNCell steps its cells in __call__ and has no hybrid_forward; "
            "HybridSequentialRNNCell is the hybridizable stack"
        )

    def add(self, cell: RecurrentCell) -> None:
        """Append a cell on top of the stack."""
        self.register_child(cell)

    def state_info(self, batch_size: int = 0) -> list[dict[str, Any]]:
        return [info for cell in self._children.values() for info in cell.state_info(batch_size)]

    def begin_state(self, batch_size: int = 0, func: Any = nd.zeros, **kwargs: Any) -> list[Any]:
        return [s for cell in self._children.values() for s in cell.begin_state(batch_size, func, **kwargs)]

    def _step(self, inputs: Any, states: Any) -> tuple[Any, list[Any]]:
        self._counter += 1
        next_states: list[Any] = []
        cells = list(self._children.values())
        for cell, share in zip(cells, _split_states(cells, list(states)), strict=True):
            if isinstance(cell, BidirectionalCell):
                raise BlockError("a BidirectionalCell cannot be stepped: unroll the stack instead")
            inputs, cell_states = cell(inputs, share)
            next_states.extend(cell_states)
        return inputs, next_states

    def __call__(self, inputs: Any, states: Any) -> Any:
        return self._step(inputs, states)

    def forward(self, inputs: Any, states: Any) -> Any:
        return self._step(inputs, states)

    def unroll(
        self,
        length: int,
        inputs: Any,
        begin_state: Any = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
        valid_length: Any = None,
    ) -> tuple[Any, list[Any]]:
        """Unroll each cell over the whole sequence in turn (so a BidirectionalCell may sit in the stack)."""
        self.reset()
        formatted, _, F, batch_size = _format_sequence(length, inputs, layout, None)
        states = _begin_state(self, F, begin_state, formatted, batch_size)
        cells = list(self._children.values())
        next_states: list[Any] = []
        for index, (cell, share) in enumerate(zip(cells, _split_states(cells, states), strict=True)):
            merge = None if index < len(cells) - 1 else merge_outputs
            inputs, cell_states = cell.unroll(length, inputs, share, layout, merge, valid_length)
            next_states.extend(cell_states)
        return inputs, next_states

    def __len__(self) -> int:
        return len(self._children)

    def __repr__(self) -> str:
        body = "\n".join(f"  ({key}): {block!r}".replace("\n", "\n  ") for key, block in self._children.items())
        return f"{type(self).__name__}(\n{body}\n)"

    def __getitem__(self, index: int) -> Any:
        return list(self._children.values())[index]


class HybridSequentialRNNCell(SequentialRNNCell, HybridRecurrentCell):
    """A SequentialRNNCell of hybrid cells; hybridized, each step is one cached graph."""

    def __call__(self, inputs: Any, states: Any) -> Any:
        return HybridBlock.__call__(self, inputs, states)

    def forward(self, inputs: Any, states: Any) -> Any:
        return HybridBlock.forward(self, inputs, states)

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:
        return self._step(inputs, states)


class DropoutCell(HybridRecurrentCell):
    """Dropout on the output of each step (no state); use between the cells of a stack."""

    def __init__(self, rate: float, axes: tuple = (), prefix: str | None = None, params: Any = None) -> None:
        super().__init__(prefix=prefix, params=params)
        if not 0 <= rate < 1:
            raise BlockError(f"DropoutCell: rate must be in [0, 1), got {rate!r}")
        self._rate = rate
        self._axes = axes

    def _alias(self) -> str:
        return "dropout"

    def state_info(self, batch_size: int = 0) -> list[dict[str, Any]]:
        return []

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:
        if self._rate > 0:
            inputs = F.Dropout(inputs, p=self._rate, axes=self._axes, name=f"t{self._counter}_fwd")
        return inputs, states

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rate={self._rate}, axes={self._axes})"


class ModifierCell(HybridRecurrentCell):
    """Wraps ``base_cell`` and changes its step; shares its parameters, and the base is no longer called directly."""

    def __init__(self, base_cell: RecurrentCell) -> None:
        if base_cell._modified:
            raise BlockError(f"Cell {base_cell.name} is already modified. One cell cannot be modified twice")
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self) -> Any:
        return self.base_cell.params

    def state_info(self, batch_size: int = 0) -> list[dict[str, Any]]:
        return self.base_cell.state_info(batch_size)

    def begin_state(self, batch_size: int = 0, func: Any = nd.zeros, **kwargs: Any) -> list[Any]:
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(batch_size, func, **kwargs)
        finally:
            self.base_cell._modified = True

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:
        """One step of the modified cell: each modifier (dropout, zoneout, residual) defines its own."""
        raise NotImplementedError(f"{type(self).__name__} must define hybrid_forward(F, inputs, states)")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_cell!r})"


class ZoneoutCell(ModifierCell):
    """Zoneout: in training each output / state unit keeps its previous value with probability p."""

    def __init__(self, base_cell: RecurrentCell, zoneout_outputs: float = 0.0, zoneout_states: float = 0.0) -> None:
        if isinstance(base_cell, BidirectionalCell):
            raise BlockError("BidirectionalCell doesn't support zoneout since it doesn't support step. Use unroll")
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        super().__init__(base_cell)
        self._prev_output = None

    def _alias(self) -> str:
        return "zoneout"

    def reset(self) -> None:
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p: float, like: Any) -> Any:
            # Dropout of ones: in training 0 (keep the old value) with probability p, else 1/(1-p); predicting, all 1
            return F.Dropout(F.ones_like(like), p=p)

        prev_output = self._prev_output if self._prev_output is not None else F.zeros_like(next_output)
        if self.zoneout_outputs != 0:
            next_output = F.where(keep_new(self.zoneout_outputs, next_output), next_output, prev_output)
        if self.zoneout_states != 0:
            next_states = [
                F.where(keep_new(self.zoneout_states, new), new, old)
                for new, old in zip(next_states, states, strict=True)
            ]
        self._prev_output = next_output
        return next_output, next_states

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p_out={self.zoneout_outputs}, p_state={self.zoneout_states}, {self.base_cell!r})"


class ResidualCell(ModifierCell):
    """Adds the step's input to the base cell's output (a residual connection; sizes must match)."""

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:
        output, states = self.base_cell(inputs, states)
        return F.elemwise_add(output, inputs, name=f"t{self._counter}_fwd"), states


class BidirectionalCell(HybridRecurrentCell):
    """Runs ``l_cell`` left to right and ``r_cell`` right to left; each step's outputs are concatenated.

    It has no single step (the right-to-left pass needs the whole sequence): use ``unroll``.
    """

    def __init__(self, l_cell: RecurrentCell, r_cell: RecurrentCell, output_prefix: str = "bi_") -> None:
        super().__init__(prefix="", params=None)
        self.register_child(l_cell, "l_cell")
        self.register_child(r_cell, "r_cell")
        self._output_prefix = output_prefix

    def __call__(self, inputs: Any, states: Any) -> Any:
        raise BlockError("Bidirectional cannot be stepped. Please use unroll")

    def state_info(self, batch_size: int = 0) -> list[dict[str, Any]]:
        return [info for cell in self._children.values() for info in cell.state_info(batch_size)]

    def begin_state(self, batch_size: int = 0, func: Any = nd.zeros, **kwargs: Any) -> list[Any]:
        return [s for cell in self._children.values() for s in cell.begin_state(batch_size, func, **kwargs)]

    def unroll(
        self,
        length: int,
        inputs: Any,
        begin_state: Any = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
        valid_length: Any = None,
    ) -> tuple[Any, list[Any]]:
        self.reset()
        steps, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        states = _begin_state(self, F, begin_state, steps, batch_size)
        l_cell, r_cell = self._children["l_cell"], self._children["r_cell"]
        l_states, r_states = _split_states([l_cell, r_cell], states)
        reversed_steps = _reverse_steps(F, steps, valid_length)
        l_out, l_states = l_cell.unroll(length, steps, l_states, layout, False, valid_length)
        r_out, r_states = r_cell.unroll(length, reversed_steps, r_states, layout, False, valid_length)
        r_out = _reverse_steps(F, r_out, valid_length)
        outputs = [
            F.concat(left, right, dim=1, name=f"{self._output_prefix}t{i}")
            for i, (left, right) in enumerate(zip(l_out, r_out, strict=True))
        ]
        if valid_length is not None:
            outputs = _mask_past_valid(F, outputs, length, valid_length, axis, False)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, [*l_states, *r_states]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(forward={self._children['l_cell']!r}, backward={self._children['r_cell']!r})"
