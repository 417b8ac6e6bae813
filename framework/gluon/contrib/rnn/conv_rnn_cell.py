"""Gluon's convolutional recurrent cells: ``Conv{1,2,3}D{RNN,LSTM,GRU}Cell``.

The state of a convolutional cell is a feature map (``(N, hidden_channels, *spatial)``), and the
two dense products of an ordinary cell become convolutions: ``i2h`` on the input with the given
kernel, padding and dilation (stride 1), ``h2h`` on the state with an odd kernel padded so the state
keeps its size. The gate arithmetic after the two convolutions is ``mx.rnn``'s
(:mod:`framework.rnn.conv_gates`), written once for symbols and arrays.

``input_shape`` is one step's input without the batch axis (``(C, H, W)`` for NCHW); from it the
cell knows its parameter shapes and its state's spatial size before seeing data. The nine public
classes differ only in the number of spatial axes (which sets the defaults: :func:`_dims_init`)
and the gate kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....rnn.conv_gates import GRU_GATES, LSTM_GATES, RNN_GATES, GateKind
from ...block import BlockError
from ...nn.conv_layers import _tuple
from ...rnn.rnn_cell import HybridRecurrentCell, _activation, _product_params

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
]

Spec = int | Sequence[int]


class _BaseConvRNNCell(HybridRecurrentCell):
    """Parameters, shapes and the two convolutions; subclasses choose ``_kind`` (gates) and the dims."""

    _kind: GateKind
    _alias_name = "conv_rnn"

    def __init__(
        self,
        input_shape: Sequence[int],
        hidden_channels: int,
        i2h_kernel: Spec,
        h2h_kernel: Spec,
        i2h_pad: Spec,
        i2h_dilate: Spec,
        h2h_dilate: Spec,
        i2h_weight_initializer: Any,
        h2h_weight_initializer: Any,
        i2h_bias_initializer: Any,
        h2h_bias_initializer: Any,
        dims: int,
        conv_layout: str,
        activation: Any,
        prefix: str | None = None,
        params: Any = None,
    ) -> None:
        super().__init__(prefix=prefix, params=params)
        who = type(self).__name__
        if len(conv_layout) != dims + 2 or "C" not in conv_layout or conv_layout[0] != "N":
            raise BlockError(f"{who}: conv_layout must be N, C and {dims} spatial axes, got {conv_layout!r}")
        if len(input_shape) != dims + 1:
            raise BlockError(
                f"{who}: input_shape is one step without the batch axis ({dims + 1} sizes), got {input_shape}"
            )
        self._hidden_channels = hidden_channels
        self._input_shape = tuple(input_shape)
        self._conv_layout = conv_layout
        self._activation = activation
        self._i2h_kernel = _tuple(i2h_kernel, dims, f"{who}: i2h_kernel")
        self._i2h_pad = _tuple(i2h_pad, dims, f"{who}: i2h_pad")
        self._i2h_dilate = _tuple(i2h_dilate, dims, f"{who}: i2h_dilate")
        self._h2h_kernel = _tuple(h2h_kernel, dims, f"{who}: h2h_kernel")
        self._h2h_dilate = _tuple(h2h_dilate, dims, f"{who}: h2h_dilate")
        if any(k % 2 == 0 for k in self._h2h_kernel):
            raise BlockError(f"{who}: h2h_kernel sizes must be odd (the state keeps its size), got {h2h_kernel}")
        # padding d*(k-1)/2 on each side keeps a stride-1 convolution's output the size of its input
        self._h2h_pad = tuple(d * (k - 1) // 2 for k, d in zip(self._h2h_kernel, self._h2h_dilate, strict=True))
        self._stride = (1,) * dims
        self._channel_axis = conv_layout.find("C")

        in_channels = self._input_shape[self._channel_axis - 1]
        spatial = [size for axis, size in enumerate(self._input_shape, start=1) if axis != self._channel_axis]
        # a size of 0 is unknown and stays unknown
        out = tuple(
            size + 2 * p - d * (k - 1) if size else 0
            for size, k, p, d in zip(spatial, self._i2h_kernel, self._i2h_pad, self._i2h_dilate, strict=True)
        )
        rows = hidden_channels * len(self._kind.gate_names)
        if self._channel_axis == 1:
            i2h_shape = (rows, in_channels, *self._i2h_kernel)
            h2h_shape = (rows, hidden_channels, *self._h2h_kernel)
            self._state_shape = (hidden_channels, *out)
        else:
            i2h_shape = (rows, *self._i2h_kernel, in_channels)
            h2h_shape = (rows, *self._h2h_kernel, hidden_channels)
            self._state_shape = (*out, hidden_channels)
        _product_params(
            self, i2h_shape, h2h_shape, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
            h2h_bias_initializer,
        )  # fmt: skip

    def _alias(self) -> str:
        return self._alias_name

    def state_info(self, batch_size: int = 0) -> list[dict[str, Any]]:
        info = {"shape": (batch_size, *self._state_shape), "__layout__": self._conv_layout}
        return [dict(info) for _ in range(self._kind.num_states)]

    def hybrid_forward(self, F: Any, inputs: Any, states: Any, i2h_weight, h2h_weight, i2h_bias, h2h_bias) -> Any:
        name = f"t{self._counter}_"
        filters = self._hidden_channels * len(self._kind.gate_names)
        i2h = F.Convolution(
            inputs, i2h_weight, i2h_bias, num_filter=filters, kernel=self._i2h_kernel, stride=self._stride,
            pad=self._i2h_pad, dilate=self._i2h_dilate, layout=self._conv_layout, name=f"{name}i2h",
        )  # fmt: skip
        h2h = F.Convolution(
            states[0], h2h_weight, h2h_bias, num_filter=filters, kernel=self._h2h_kernel, stride=self._stride,
            pad=self._h2h_pad, dilate=self._h2h_dilate, layout=self._conv_layout, name=f"{name}h2h",
        )  # fmt: skip

        def activate(x: Any, node_name: str) -> Any:
            return _activation(F, x, self._activation)

        return self._kind.step(F, i2h, h2h, list(states), activate, self._channel_axis, name)

    def __repr__(self) -> str:
        shape = self.i2h_weight.shape
        in_channels = shape[1 if self._channel_axis == 1 else -1]
        return f"{type(self).__name__}({in_channels or None} -> {shape[0]}, {self._activation}, {self._conv_layout})"


def _dims_init(dims: int, layout: str) -> Any:
    """The public constructor for cells over ``dims`` spatial axes: MXNet's defaults for that many axes.

    The nine cells differ in their defaults only by the number of axes (the padding and dilation
    tuples, the layout), so one function body serves all (the defaults are bound here).
    """

    def __init__(
        self: _BaseConvRNNCell,
        input_shape: Sequence[int],
        hidden_channels: int,
        i2h_kernel: Spec,
        h2h_kernel: Spec,
        i2h_pad: Spec = (0,) * dims,
        i2h_dilate: Spec = (1,) * dims,
        h2h_dilate: Spec = (1,) * dims,
        i2h_weight_initializer: Any = None,
        h2h_weight_initializer: Any = None,
        i2h_bias_initializer: Any = "zeros",
        h2h_bias_initializer: Any = "zeros",
        conv_layout: str = layout,
        activation: Any = "tanh",
        prefix: str | None = None,
        params: Any = None,
    ) -> None:
        _BaseConvRNNCell.__init__(
            self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad, i2h_dilate, h2h_dilate,
            i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
            dims, conv_layout, activation, prefix, params,
        )  # fmt: skip

    return __init__


class Conv1DRNNCell(_BaseConvRNNCell):
    """Elman step over ``(N, C, W)`` feature maps: ``h' = activation(conv_i(x) + conv_h(h))``."""

    _kind, _alias_name = RNN_GATES, "conv_rnn"
    __init__ = _dims_init(1, "NCW")


class Conv2DRNNCell(_BaseConvRNNCell):
    """Elman step over ``(N, C, H, W)`` feature maps."""

    _kind, _alias_name = RNN_GATES, "conv_rnn"
    __init__ = _dims_init(2, "NCHW")


class Conv3DRNNCell(_BaseConvRNNCell):
    """Elman step over ``(N, C, D, H, W)`` feature maps."""

    _kind, _alias_name = RNN_GATES, "conv_rnn"
    __init__ = _dims_init(3, "NCDHW")


class Conv1DLSTMCell(_BaseConvRNNCell):
    """Convolutional LSTM (Shi et al., 2015) over ``(N, C, W)``; states ``[h, c]``, gates i, f, c, o."""

    _kind, _alias_name = LSTM_GATES, "conv_lstm"
    __init__ = _dims_init(1, "NCW")


class Conv2DLSTMCell(_BaseConvRNNCell):
    """Convolutional LSTM over ``(N, C, H, W)``; states ``[h, c]``, gates i, f, c, o."""

    _kind, _alias_name = LSTM_GATES, "conv_lstm"
    __init__ = _dims_init(2, "NCHW")


class Conv3DLSTMCell(_BaseConvRNNCell):
    """Convolutional LSTM over ``(N, C, D, H, W)``; states ``[h, c]``, gates i, f, c, o."""

    _kind, _alias_name = LSTM_GATES, "conv_lstm"
    __init__ = _dims_init(3, "NCDHW")


class Conv1DGRUCell(_BaseConvRNNCell):
    """Convolutional GRU over ``(N, C, W)``; gates r, z and the candidate."""

    _kind, _alias_name = GRU_GATES, "conv_gru"
    __init__ = _dims_init(1, "NCW")


class Conv2DGRUCell(_BaseConvRNNCell):
    """Convolutional GRU over ``(N, C, H, W)``; gates r, z and the candidate."""

    _kind, _alias_name = GRU_GATES, "conv_gru"
    __init__ = _dims_init(2, "NCHW")


class Conv3DGRUCell(_BaseConvRNNCell):
    """Convolutional GRU over ``(N, C, D, H, W)``; gates r, z and the candidate."""

    _kind, _alias_name = GRU_GATES, "conv_gru"
    __init__ = _dims_init(3, "NCDHW")
