"""``mx.rnn`` cells: one step of a recurrence, written as symbols, and ``unroll`` to repeat it.

A cell is a function ``cell(inputs, states) -> (output, next_states)`` that builds the symbols of
one time step. ``cell.unroll(length, inputs)`` calls it ``length`` times, feeding each step the
states the previous step returned, so a recurrent network becomes an ordinary (long) symbol
graph that the executor plans and runs like any other. Every step reuses the *same* weight
variables (``lstm_i2h_weight``...), which is what makes it a recurrence: their gradients are
summed over the steps by the gradient pass.

* :class:`RNNParams` hands out the weight variables of a cell, by name, once each;
* :class:`RNNCell`, :class:`LSTMCell`, :class:`GRUCell` are the step cells (names as MXNet 1.x);
* :class:`SequentialRNNCell` stacks cells, :class:`BidirectionalCell` runs two cells in opposite
  directions over the sequence;
* modifier cells wrap a cell: :class:`DropoutCell` (a stateless step), :class:`ZoneoutCell`,
  :class:`ResidualCell`.

Node names follow MXNet's (``lstm_t0_i2h``, ``lstm_t0_out``...), so a graph unrolled here reads
like one unrolled by MXNet, and checkpoints carry the same parameter names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import initializer as init
from .. import ndarray as nd
from .. import symbol
from ..base import MXLabError
from ..symbol import Symbol


class RNNCellError(MXLabError, ValueError):
    """A cell was used in a way it does not support (bad sequence, modified cell called directly...)."""


class RNNParams:
    """The weight variables of a cell: ``get(name)`` returns ``Variable(prefix + name)``, the same one each time.

    Cells that share an ``RNNParams`` share their weights (tied encoders/decoders).
    """

    def __init__(self, prefix: str = "") -> None:
        self._prefix = prefix
        self._params: dict[str, Symbol] = {}

    def get(self, name: str, **kwargs: Any) -> Symbol:
        """The variable ``prefix + name``; ``kwargs`` (``init=``, ``shape=``...) apply when it is first made."""
        full_name = self._prefix + name
        if full_name not in self._params:
            self._params[full_name] = symbol.Variable(full_name, **kwargs)
        return self._params[full_name]


def _normalize_sequence(
    length: int | None, inputs: Any, layout: str, merge: bool | None, in_layout: str | None = None
) -> tuple[Any, int]:
    """Turn ``inputs`` into what a caller wants: a list of per-step symbols (``merge=False``), one symbol with a
    time axis (``merge=True``), or whichever form it already has (``merge=None``). Returns it and the time axis."""
    if not isinstance(layout, str) or "T" not in layout:
        raise RNNCellError(f"unroll: layout must name the time axis 'T' (e.g. 'NTC' or 'TNC'), got {layout!r}")
    axis = layout.find("T")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    if isinstance(inputs, Symbol):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise RNNCellError(
                    "unroll: inputs is a grouped symbol; pass list(inputs), or one symbol with a time axis to split"
                )
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length, squeeze_axis=1))
    else:
        inputs = list(inputs)
        if length is not None and len(inputs) != length:
            raise RNNCellError(f"unroll: {len(inputs)} input symbols for length={length}")
        if merge is True:
            inputs = symbol.Concat(*[symbol.expand_dims(step, axis=axis) for step in inputs], dim=axis)
            in_axis = axis
    if isinstance(inputs, Symbol) and axis != in_axis:
        inputs = symbol.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis


class BaseRNNCell:
    """The cell interface: ``__call__`` (one step), ``state_info``, ``begin_state``, ``unroll``, weight (un)packing.

    Args:
        prefix: prepended to every variable and node name of the cell.
        params: share another cell's ``RNNParams`` (default: a new one with ``prefix``).
    """

    # MXNet's per-gate weight names: the rows of i2h/h2h weights, gate by gate (see unpack_weights)
    _gate_names: Sequence[str] = ()
    # False for cells that can only be unrolled as a whole (fused, bidirectional)
    _steppable = True

    def __init__(self, prefix: str = "", params: RNNParams | None = None) -> None:
        if params is None:
            params = RNNParams(prefix)
            self._own_params = True
        else:
            self._own_params = False
        self._prefix = prefix
        self._params = params
        self._modified = False
        self.reset()

    def reset(self) -> None:
        """Restart the step and begin-state counters (node names ``t0``, ``begin_state_0`` again)."""
        self._init_counter = -1
        self._counter = -1

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        raise NotImplementedError(f"{type(self).__name__} does not implement a step (__call__)")

    @property
    def params(self) -> RNNParams:
        """The cell's parameters; reading them means they may be shared, so the cell no longer owns them."""
        self._own_params = False
        return self._params

    @property
    def state_info(self) -> list[dict[str, Any]]:
        """One dict per state: its shape (0 = batch size, inferred) and ``__layout__``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement state_info")

    @property
    def state_shape(self) -> list[Any]:
        """The shapes of ``state_info``."""
        return [info["shape"] for info in self.state_info]

    @property
    def _gate_count(self) -> int:
        return len(self._gate_names)

    def begin_state(self, func: Callable[..., Symbol] = symbol.zeros, **kwargs: Any) -> list[Symbol]:
        """The initial states: ``func(name=prefix + 'begin_state_%d', shape=..., __layout__=...)`` per state.

        The default ``mx.sym.zeros`` makes zero states whose batch dimension (0) shape inference fills in;
        ``func=mx.sym.Variable`` makes them inputs the caller feeds.
        """
        if self._modified:
            raise RNNCellError(
                "begin_state: this cell is wrapped by a modifier cell (DropoutCell, ZoneoutCell, ResidualCell); "
                "call the modifier cell instead"
            )
        states = []
        for info in self.state_info:
            self._init_counter += 1
            name = f"{self._prefix}begin_state_{self._init_counter}"
            states.append(func(name=name, **kwargs) if info is None else func(name=name, **{**kwargs, **info}))
        return states

    def unpack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """Split the fused gate weights (``lstm_i2h_weight``) into one array per gate (``lstm_i2h_i_weight``...)."""
        args = dict(args)
        if not self._gate_names:
            return args
        hidden = self._num_hidden
        for group in ("i2h", "h2h"):
            for kind in ("weight", "bias"):
                fused = args.pop(f"{self._prefix}{group}_{kind}")
                for j, gate in enumerate(self._gate_names):
                    args[f"{self._prefix}{group}{gate}_{kind}"] = fused[j * hidden : (j + 1) * hidden].copy()
        return args

    def pack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """Inverse of :meth:`unpack_weights`: concatenate the per-gate arrays back into one per group."""
        args = dict(args)
        if not self._gate_names:
            return args
        for group in ("i2h", "h2h"):
            for kind in ("weight", "bias"):
                parts = [args.pop(f"{self._prefix}{group}{gate}_{kind}") for gate in self._gate_names]
                args[f"{self._prefix}{group}_{kind}"] = nd.concat(*parts, dim=0)
        return args

    def unroll(
        self,
        length: int,
        inputs: Any,
        begin_state: list[Symbol] | None = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
    ) -> tuple[Any, list[Symbol]]:
        """Repeat the step ``length`` times.

        Args:
            inputs: one symbol with a time axis (split along ``layout``'s ``T``) or a list of per-step symbols.
            begin_state: the first step's states (default :meth:`begin_state`).
            merge_outputs: True for one output symbol with a time axis, False for a list, None for whichever
                is cheaper (a list here).

        Returns ``(outputs, last_states)``.
        """
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        outputs = []
        for step in range(length):
            output, states = self(inputs[step], states)
            outputs.append(output)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, inputs: Symbol, activation: Any, **kwargs: Any) -> Symbol:
        """``Activation(act_type=activation)`` for a name, else ``activation(inputs)`` for a symbol function."""
        if isinstance(activation, str):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)


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


class _CellGroup(BaseRNNCell):
    """A cell made of child cells (``_cells``): its states, initial states and weights are the children's, in order.

    Children share one parameter table with the group: the group's when it was given ``params``
    (``_override_cell_params``), else their own, which the group takes in.
    """

    _cells: list[BaseRNNCell]
    _override_cell_params: bool

    def _adopt(self, cell: BaseRNNCell) -> None:
        """Make this group and ``cell`` share one parameter table (the group's, when it was given one)."""
        if self._override_cell_params:
            if not cell._own_params:
                raise RNNCellError(
                    f"{type(self).__name__}: give params either to the container or to the child cells, not both"
                )
            cell.params._params.update(self.params._params)
        self.params._params.update(cell.params._params)

    @property
    def state_info(self) -> list[dict[str, Any]]:
        return [info for cell in self._cells for info in cell.state_info]

    def begin_state(self, **kwargs: Any) -> list[Symbol]:
        if self._modified:
            raise RNNCellError("begin_state: this cell is wrapped by a modifier cell; call the modifier cell instead")
        return [state for cell in self._cells for state in cell.begin_state(**kwargs)]

    def unpack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args


class SequentialRNNCell(_CellGroup):
    """A stack of cells: each step feeds one cell's output to the next; states are the cells' states in order.

    Args:
        params: parameters shared by every added cell (then the cells must not have been given their own).
    """

    def __init__(self, params: RNNParams | None = None) -> None:
        super().__init__(prefix="", params=params)
        self._override_cell_params = params is not None
        self._cells: list[BaseRNNCell] = []

    def add(self, cell: BaseRNNCell) -> None:
        """Append ``cell`` to the stack."""
        self._adopt(cell)
        self._cells.append(cell)

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        self._counter += 1
        next_states: list[Symbol] = []
        position = 0
        for cell in self._cells:
            if not cell._steppable:
                raise RNNCellError(f"SequentialRNNCell: {type(cell).__name__} cannot be stepped; use unroll")
            count = len(cell.state_info)
            inputs, cell_states = cell(inputs, states[position : position + count])
            position += count
            next_states.extend(cell_states)
        return inputs, next_states

    def unroll(
        self,
        length: int,
        inputs: Any,
        begin_state: list[Symbol] | None = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
    ) -> tuple[Any, list[Symbol]]:
        """Unroll each cell over the whole sequence in turn (so fused and bidirectional cells can be stacked)."""
        self.reset()
        begin_state = self.begin_state() if begin_state is None else begin_state
        position = 0
        next_states: list[Symbol] = []
        last = len(self._cells) - 1
        for i, cell in enumerate(self._cells):
            count = len(cell.state_info)
            inputs, states = cell.unroll(
                length,
                inputs=inputs,
                begin_state=begin_state[position : position + count],
                layout=layout,
                merge_outputs=None if i < last else merge_outputs,
            )
            position += count
            next_states.extend(states)
        return inputs, next_states


class BidirectionalCell(_CellGroup):
    """Runs ``l_cell`` forwards and ``r_cell`` backwards over the sequence; each step's output concatenates both.

    It cannot be stepped (the backward direction needs the whole sequence): use :meth:`unroll`.
    """

    _steppable = False

    def __init__(
        self, l_cell: BaseRNNCell, r_cell: BaseRNNCell, params: RNNParams | None = None, output_prefix: str = "bi_"
    ) -> None:
        super().__init__("", params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        self._cells = [l_cell, r_cell]
        for cell in self._cells:
            self._adopt(cell)

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        raise NotImplementedError("BidirectionalCell cannot be stepped; use unroll")

    def unroll(
        self,
        length: int,
        inputs: Any,
        begin_state: list[Symbol] | None = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
    ) -> tuple[Any, list[Symbol]]:
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        l_cell, r_cell = self._cells
        split = len(l_cell.state_info)
        l_outputs, l_states = l_cell.unroll(
            length, inputs=inputs, begin_state=states[:split], layout=layout, merge_outputs=merge_outputs
        )
        r_outputs, r_states = r_cell.unroll(
            length,
            inputs=list(reversed(inputs)),
            begin_state=states[split:],
            layout=layout,
            merge_outputs=merge_outputs,
        )
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, Symbol) and isinstance(r_outputs, Symbol)
            if not merge_outputs:
                if isinstance(l_outputs, Symbol):
                    l_outputs = list(symbol.SliceChannel(l_outputs, axis=axis, num_outputs=length, squeeze_axis=1))
                if isinstance(r_outputs, Symbol):
                    r_outputs = list(symbol.SliceChannel(r_outputs, axis=axis, num_outputs=length, squeeze_axis=1))
        if merge_outputs:
            # the backward direction's outputs run back to front: reverse them along time to line up
            l_outputs = [l_outputs]
            r_outputs = [symbol.reverse(r_outputs, axis=axis)]
        else:
            r_outputs = list(reversed(r_outputs))
        outputs = [
            symbol.Concat(
                l_out,
                r_out,
                dim=1 + int(merge_outputs),
                name=f"{self._output_prefix}out" if merge_outputs else f"{self._output_prefix}t{i}",
            )
            for i, (l_out, r_out) in enumerate(zip(l_outputs, r_outputs, strict=True))
        ]
        if merge_outputs:
            outputs = outputs[0]
        # as MXNet 1.x: the states of each direction as a list of their own
        return outputs, [l_states, r_states]


class ModifierCell(BaseRNNCell):
    """A cell that wraps ``base_cell`` and changes its step; parameters and states are the base cell's."""

    def __init__(self, base_cell: BaseRNNCell) -> None:
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self) -> RNNParams:
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self) -> list[dict[str, Any]]:
        return self.base_cell.state_info

    def begin_state(self, init_sym: Callable[..., Symbol] = symbol.zeros, **kwargs: Any) -> list[Symbol]:
        if self._modified:
            raise RNNCellError("begin_state: this cell is wrapped by a modifier cell; call the modifier cell instead")
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(init_sym, **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        return self.base_cell.pack_weights(args)


class DropoutCell(BaseRNNCell):
    """Dropout on the input, as a stateless cell (put it between the cells of a SequentialRNNCell)."""

    def __init__(self, dropout: float, prefix: str = "dropout_", params: RNNParams | None = None) -> None:
        super().__init__(prefix, params)
        if not 0.0 <= float(dropout) < 1.0:
            raise RNNCellError(f"DropoutCell: dropout must be in [0, 1), got {dropout!r}")
        self.dropout = dropout

    @property
    def state_info(self) -> list[dict[str, Any]]:
        return []

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(
        self,
        length: int,
        inputs: Any,
        begin_state: list[Symbol] | None = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
    ) -> tuple[Any, list[Symbol]]:
        """A merged input gets one Dropout over the whole sequence instead of one per step."""
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, Symbol):
            return self(inputs, [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout, merge_outputs=merge_outputs)


class ZoneoutCell(ModifierCell):
    """Zoneout: in training, each unit keeps its previous output/state with probability ``zoneout_outputs`` /
    ``zoneout_states`` instead of taking the new one (the mask is a Dropout of ones, so inference keeps all new)."""

    def __init__(self, base_cell: BaseRNNCell, zoneout_outputs: float = 0.0, zoneout_states: float = 0.0) -> None:
        if not base_cell._steppable:
            raise RNNCellError(
                f"ZoneoutCell: {type(base_cell).__name__} cannot be stepped; unfuse it, or wrap the cells underneath"
            )
        if isinstance(base_cell, SequentialRNNCell) and any(not c._steppable for c in base_cell._cells):
            raise RNNCellError("ZoneoutCell: a SequentialRNNCell with bidirectional or fused cells cannot be stepped")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self.prev_output: Symbol | None = None

    def reset(self) -> None:
        super().reset()
        self.prev_output = None

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p: float, like: Symbol) -> Symbol:
            return symbol.Dropout(symbol.ones_like(like), p=p)

        prev_output = self.prev_output if self.prev_output is not None else symbol.zeros_like(next_output)
        output = (
            symbol.where(keep_new(self.zoneout_outputs, next_output), next_output, prev_output)
            if self.zoneout_outputs != 0.0
            else next_output
        )
        if self.zoneout_states != 0.0:
            next_states = [
                symbol.where(keep_new(self.zoneout_states, new), new, old)
                for new, old in zip(next_states, states, strict=True)
            ]
        self.prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """Adds the step's input to the base cell's output (``output + inputs``): a residual connection."""

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        output, states = self.base_cell(inputs, states)
        output = symbol.elemwise_add(output, inputs, name=f"{output.name}_plus_residual")
        return output, states

    def unroll(
        self,
        length: int,
        inputs: Any,
        begin_state: list[Symbol] | None = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
    ) -> tuple[Any, list[Symbol]]:
        """Unroll the base cell as a whole, then add the inputs (in the form the outputs came in)."""
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(
                length, inputs=inputs, begin_state=begin_state, layout=layout, merge_outputs=merge_outputs
            )
        finally:
            self.base_cell._modified = True
        merge_outputs = isinstance(outputs, Symbol) if merge_outputs is None else merge_outputs
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if merge_outputs:
            outputs = symbol.elemwise_add(outputs, inputs, name=f"{outputs.name}_plus_residual")
        else:
            outputs = [
                symbol.elemwise_add(out, step, name=f"{out.name}_plus_residual")
                for out, step in zip(outputs, inputs, strict=True)
            ]
        return outputs, states
