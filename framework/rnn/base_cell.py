"""The interface every ``mx.rnn`` cell implements, and ``unroll``, which repeats a cell's step.

A cell is a function ``cell(inputs, states) -> (output, next_states)`` that builds the symbols of
one time step. ``cell.unroll(length, inputs)`` calls it ``length`` times, feeding each step the
states the previous step returned, so a recurrent network becomes an ordinary (long) symbol
graph that the executor plans and runs like any other. Every step reuses the *same* weight
variables (``lstm_i2h_weight``...), handed out once each by :class:`RNNParams`: that is what
makes it a recurrence, and the gradient pass sums their gradients over the steps.

:class:`BaseRNNCell` holds what every cell shares (parameters, step counters, ``begin_state``,
``unroll``, per-gate weight (un)packing); the concrete cells build on it in
:mod:`.step_cells`, :mod:`.cell_groups`, :mod:`.modifier_cells` and the fused and
convolutional cells' modules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

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
