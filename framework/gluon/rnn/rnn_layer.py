"""Recurrent layers RNN, LSTM, GRU: Gluon's per-gate parameters fed to the one fused ``RNN`` operator.

A layer keeps each weight and bias as its own Parameter, named as MXNet 1.9.1 names them
(``l0_i2h_weight``, ``r1_h2h_bias``: direction, layer, which product, weight or bias). Each
forward flattens them and joins them with ``_rnn_param_concat`` in the fused operator's packed
order (every weight, then every bias; see framework/operator/rnn/layout.py), so one ``RNN``
call runs every layer, direction and time step. Before the first batch the input size may be
unknown: the traced graph's shape inference finds layer 0's input weights (``RNN`` knows the packed
vector's length, ``_rnn_param_concat`` the missing piece, ``Reshape`` the weight it flattens).

``layout`` 'TNC' (time-major, what the operator wants) or 'NTC' (swapped in and out). Called
without ``states`` a layer starts from zeros and returns only the output; called with them it
returns ``(output, new_states)``.
"""

from __future__ import annotations

from typing import Any

from ... import ndarray as nd
from ... import symbol as sym
from ...ndarray import NDArray
from ...operator.rnn.layout import GATES
from ..block import BlockError, HybridBlock
from ..parameter import Parameter

#: Gates stacked in one weight per mode (the operator's order: LSTM i, f, g, o; GRU r, z, n).


class _RNNLayer(HybridBlock):
    """The common machinery of RNN, LSTM and GRU: parameters, states, the fused call."""

    def __init__(
        self,
        hidden_size: int,
        num_layers: int,
        layout: str,
        dropout: float,
        bidirectional: bool,
        input_size: int,
        i2h_weight_initializer: Any,
        h2h_weight_initializer: Any,
        i2h_bias_initializer: Any,
        h2h_bias_initializer: Any,
        mode: str,
        projection_size: int | None,
        h2r_weight_initializer: Any,
        lstm_state_clip_min: float | None,
        lstm_state_clip_max: float | None,
        lstm_state_clip_nan: bool,
        dtype: Any,
        use_sequence_length: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if layout not in ("TNC", "NTC"):
            raise BlockError(f"{type(self).__name__}: invalid layout {layout!r}; must be 'TNC' or 'NTC'")
        if hidden_size < 1 or num_layers < 1:
            raise BlockError(
                f"{type(self).__name__}: hidden_size and num_layers must be positive, got {hidden_size}, {num_layers}"
            )
        self._hidden_size = hidden_size
        self._projection_size = projection_size or None
        self._num_layers = num_layers
        self._mode = mode
        self._layout = layout
        self._dropout = dropout
        self._dir = 2 if bidirectional else 1
        self._input_size = input_size
        self._initializers = {
            "i2h_weight_initializer": i2h_weight_initializer,
            "h2h_weight_initializer": h2h_weight_initializer,
            "i2h_bias_initializer": i2h_bias_initializer,
            "h2h_bias_initializer": h2h_bias_initializer,
        }
        self._clip = (lstm_state_clip_min, lstm_state_clip_max, lstm_state_clip_nan)
        self._dtype = dtype
        self._use_sequence_length = use_sequence_length
        self._gates = GATES[mode]
        rows, layer_input = self._gates * hidden_size, input_size
        recurrent = self._projection_size or hidden_size  # what h2h multiplies: the (projected) state
        for layer in range(num_layers):
            for direction in "lr"[: self._dir]:
                name = f"{direction}{layer}_"
                self._register(name + "i2h_weight", (rows, layer_input), i2h_weight_initializer)
                self._register(name + "h2h_weight", (rows, recurrent), h2h_weight_initializer)
                self._register(name + "i2h_bias", (rows,), i2h_bias_initializer)
                self._register(name + "h2h_bias", (rows,), h2h_bias_initializer)
                if self._projection_size:
                    self._register(name + "h2r_weight", (self._projection_size, hidden_size), h2r_weight_initializer)
            layer_input = recurrent * self._dir

    def _register(self, name: str, shape: tuple[int, ...], init: Any) -> None:
        setattr(self, name, self.params.get(name, shape=shape, init=init, allow_deferred_init=True, dtype=self._dtype))

    def __repr__(self) -> str:
        shape = self.l0_i2h_weight.shape
        extra = f", num_layers={self._num_layers}" if self._num_layers != 1 else ""
        extra += f", dropout={self._dropout}" if self._dropout != 0 else ""
        extra += ", bidirectional" if self._dir == 2 else ""
        mapping = f"{shape[1] if shape[1] else None} -> {shape[0] // self._gates}"
        return f"{type(self).__name__}({mapping}, {self._layout}{extra})"

    def _collect_params_with_prefix(self, prefix: str = "") -> dict[str, Parameter]:
        """Structural names as MXNet 1.9.1 saves a fused layer: those of its unfused cell stack.

        ``l0_i2h_weight`` is saved as ``_unfused.0.i2h_weight`` (one direction) or
        ``_unfused.0.l_cell.i2h_weight`` (bidirectional), so ``.params`` files move both ways.
        """
        if prefix:
            prefix += "."
        result = {}
        for key, param in self._reg_params.items():
            direction, layer, rest = key[0], key[1 : key.index("_")], key[key.index("_") + 1 :]
            cell = f"{direction}_cell." if self._dir == 2 else ""
            result[f"{prefix}_unfused.{layer}.{cell}{rest}"] = param
        return result

    def state_info(self, batch_size: int = 0) -> list[dict[str, Any]]:
        """Shape and layout of each begin state (hidden, and for an LSTM the cell)."""
        raise NotImplementedError(f"{type(self).__name__} must implement state_info")

    def cast(self, dtype: Any) -> None:
        super().cast(dtype)
        self._dtype = dtype

    def begin_state(self, batch_size: int = 0, func: Any = nd.zeros, **kwargs: Any) -> list[Any]:
        """The initial states, each made by ``func(name=..., shape=..., **kwargs)`` (zeros by default)."""
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            # ``__layout__`` describes the state to the reader; the creation functions take no such argument
            made = {key: value for key, value in info.items() if key != "__layout__"}
            states.append(func(name=f"{self.prefix}h0_{i}", **{**made, **kwargs}))
        return states

    def __call__(self, inputs: Any, states: Any = None, sequence_length: Any = None) -> Any:
        skip_states = states is None
        if skip_states:
            if isinstance(inputs, NDArray):
                batch_size = inputs.shape[self._layout.find("N")]
                states = self.begin_state(batch_size, ctx=inputs.context, dtype=inputs.dtype)
            else:
                states = self.begin_state(0, func=sym.zeros)
        if isinstance(states, NDArray | sym.Symbol):
            states = [states]
        if self._use_sequence_length:
            if sequence_length is None:
                raise BlockError(f"{self.name}: use_sequence_length=True needs a sequence_length input")
            out = super().__call__(inputs, states, sequence_length)
        else:
            out = super().__call__(inputs, states)
        return out[0] if skip_states else out

    def hybrid_forward(self, F: Any, inputs: Any, states: Any, sequence_length: Any = None, **params: Any) -> Any:
        if F is nd:
            batch_size = inputs.shape[self._layout.find("N")]
            for state, info in zip(states, self.state_info(batch_size), strict=True):
                if state.shape != info["shape"]:
                    raise BlockError(
                        f"{self.name}: invalid recurrent state shape. Expecting {info['shape']}, got {state.shape}."
                    )
        if self._layout == "NTC":
            inputs = F.swapaxes(inputs, 0, 1)
        products = ("i2h", "h2h", "h2r") if self._projection_size else ("i2h", "h2h")
        packed = [
            params[f"{direction}{layer}_{product}_{kind}"].reshape(-1)
            for kind in ("weight", "bias")
            for layer in range(self._num_layers)
            for direction in "lr"[: self._dir]
            for product in products
            if not (product == "h2r" and kind == "bias")
        ]
        flat = F._internal._rnn_param_concat(*packed, dim=0)
        # inputs by name: which of them exist depends on the mode (state_cell) and use_sequence_length
        named = {"data": inputs, "parameters": flat, "state": states[0]}
        if self._mode == "lstm":
            named["state_cell"] = states[1]
        if self._use_sequence_length:
            named["sequence_length"] = sequence_length
        clip_min, clip_max, clip_nan = self._clip
        rnn = F.RNN(
            **named,
            use_sequence_length=self._use_sequence_length,
            state_size=self._hidden_size,
            projection_size=self._projection_size,
            num_layers=self._num_layers,
            bidirectional=self._dir == 2,
            p=self._dropout,
            state_outputs=True,
            mode=self._mode,
            lstm_state_clip_min=clip_min,
            lstm_state_clip_max=clip_max,
            lstm_state_clip_nan=clip_nan,
        )
        outputs, new_states = rnn[0], [rnn[1], rnn[2]] if self._mode == "lstm" else [rnn[1]]
        if self._layout == "NTC":
            outputs = F.swapaxes(outputs, 0, 1)
        return outputs, new_states


def _state(layer: _RNNLayer, batch_size: int, width: int) -> dict[str, Any]:
    return {"shape": (layer._num_layers * layer._dir, batch_size, width), "__layout__": "LNC", "dtype": layer._dtype}


class RNN(_RNNLayer):
    """Elman RNN layers: ``h_t = activation(W_i2h x_t + b_i2h + W_h2h h_{t-1} + b_h2h)``, relu or tanh."""

    def __init__(
        self,
        hidden_size: int,
        num_layers: int = 1,
        activation: str = "relu",
        layout: str = "TNC",
        dropout: float = 0,
        bidirectional: bool = False,
        i2h_weight_initializer: Any = None,
        h2h_weight_initializer: Any = None,
        i2h_bias_initializer: Any = "zeros",
        h2h_bias_initializer: Any = "zeros",
        input_size: int = 0,
        dtype: Any = "float32",
        **kwargs: Any,
    ) -> None:
        if activation not in ("relu", "tanh"):
            raise BlockError(f"RNN: activation must be 'relu' or 'tanh', got {activation!r}")
        super().__init__(
            hidden_size, num_layers, layout, dropout, bidirectional, input_size,
            i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
            "rnn_" + activation, None, None, None, None, False, dtype, **kwargs,
        )  # fmt: skip

    def state_info(self, batch_size: int = 0) -> list[dict[str, Any]]:
        return [_state(self, batch_size, self._hidden_size)]


class LSTM(_RNNLayer):
    """LSTM layers (gates i, f, g, o), optionally with a projection of the hidden state (LSTMP) and cell clipping."""

    def __init__(
        self,
        hidden_size: int,
        num_layers: int = 1,
        layout: str = "TNC",
        dropout: float = 0,
        bidirectional: bool = False,
        input_size: int = 0,
        i2h_weight_initializer: Any = None,
        h2h_weight_initializer: Any = None,
        i2h_bias_initializer: Any = "zeros",
        h2h_bias_initializer: Any = "zeros",
        projection_size: int | None = None,
        h2r_weight_initializer: Any = None,
        state_clip_min: float | None = None,
        state_clip_max: float | None = None,
        state_clip_nan: bool = False,
        dtype: Any = "float32",
        **kwargs: Any,
    ) -> None:
        super().__init__(
            hidden_size, num_layers, layout, dropout, bidirectional, input_size,
            i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
            "lstm", projection_size, h2r_weight_initializer, state_clip_min, state_clip_max, state_clip_nan,
            dtype, **kwargs,
        )  # fmt: skip

    def state_info(self, batch_size: int = 0) -> list[dict[str, Any]]:
        hidden = _state(self, batch_size, self._projection_size or self._hidden_size)
        return [hidden, _state(self, batch_size, self._hidden_size)]


class GRU(_RNNLayer):
    """GRU layers (gates r, z, n; the reset gate multiplies ``W_h2h h + b_h2h``, as cuDNN and MXNet do)."""

    def __init__(
        self,
        hidden_size: int,
        num_layers: int = 1,
        layout: str = "TNC",
        dropout: float = 0,
        bidirectional: bool = False,
        input_size: int = 0,
        i2h_weight_initializer: Any = None,
        h2h_weight_initializer: Any = None,
        i2h_bias_initializer: Any = "zeros",
        h2h_bias_initializer: Any = "zeros",
        dtype: Any = "float32",
        **kwargs: Any,
    ) -> None:
        super().__init__(
            hidden_size, num_layers, layout, dropout, bidirectional, input_size,
            i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
            "gru", None, None, None, None, False, dtype, **kwargs,
        )  # fmt: skip

    def state_info(self, batch_size: int = 0) -> list[dict[str, Any]]:
        return [_state(self, batch_size, self._hidden_size)]
