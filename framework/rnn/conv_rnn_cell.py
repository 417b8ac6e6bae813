"""Convolutional recurrent cells: the step cells with every FullyConnected replaced by a Convolution.

For sequences of images (video frames, radar maps) the state is itself an image: ``(batch, num_hidden,
height, width)``. The input-to-hidden transform is a convolution with the given kernel/stride/pad, and the
hidden-to-hidden one a convolution with an odd kernel padded to keep the state's size, so the state can
be fed back step after step. The state's spatial size is found once, by shape inference on the i2h
convolution for ``input_shape``. Gates are split along the channel axis of ``conv_layout``; the gate
arithmetic itself lives in :mod:`.conv_gates`, shared with ``mx.gluon.contrib.rnn``'s cells.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from .. import symbol
from ..symbol import Symbol
from .base_cell import BaseRNNCell, RNNCellError, RNNParams
from .conv_gates import GRU_GATES, LSTM_GATES, RNN_GATES, GateKind

# MXNet's default activation for the convolutional cells
_LEAKY = functools.partial(symbol.LeakyReLU, act_type="leaky", slope=0.2)


class BaseConvRNNCell(BaseRNNCell):
    """The shared part of the convolutional cells: parameters, state shape and the two convolutions.

    Args:
        input_shape: the shape of one step's input, batch included (``(N, C, H, W)`` for NCHW).
        num_hidden: channels of the state.
        h2h_kernel: odd sizes, so the padding ``dilate * (kernel - 1) // 2`` keeps the state's size.
        i2h_*: the input convolution's kernel, stride, pad and dilation.
        *_initializer: initializers of the four parameters (None: the global one).
        activation: an ``act_type`` name or a symbol function.
        conv_layout: ``NCHW`` (or another layout Convolution takes); its ``C`` is where the gates split.
    """

    def __init__(
        self,
        input_shape: Sequence[int],
        num_hidden: int,
        h2h_kernel: Sequence[int],
        h2h_dilate: Sequence[int],
        i2h_kernel: Sequence[int],
        i2h_stride: Sequence[int],
        i2h_pad: Sequence[int],
        i2h_dilate: Sequence[int],
        i2h_weight_initializer: Any,
        h2h_weight_initializer: Any,
        i2h_bias_initializer: Any,
        h2h_bias_initializer: Any,
        activation: Any,
        prefix: str = "",
        params: RNNParams | None = None,
        conv_layout: str = "NCHW",
    ) -> None:
        super().__init__(prefix=prefix, params=params)
        h2h_kernel, h2h_dilate = tuple(h2h_kernel), tuple(h2h_dilate)
        if any(k % 2 == 0 for k in h2h_kernel):
            raise RNNCellError(f"{type(self).__name__}: h2h_kernel sizes must be odd, got {h2h_kernel}")
        self._h2h_kernel = h2h_kernel
        self._h2h_dilate = h2h_dilate
        self._h2h_pad = tuple(d * (k - 1) // 2 for k, d in zip(h2h_kernel, h2h_dilate, strict=True))
        self._i2h_kernel = tuple(i2h_kernel)
        self._i2h_stride = tuple(i2h_stride)
        self._i2h_pad = tuple(i2h_pad)
        self._i2h_dilate = tuple(i2h_dilate)
        self._num_hidden = num_hidden
        self._input_shape = tuple(input_shape)
        self._conv_layout = conv_layout
        self._activation = activation
        probe = symbol.Convolution(
            data=symbol.Variable("data"),
            num_filter=num_hidden,
            kernel=self._i2h_kernel,
            stride=self._i2h_stride,
            pad=self._i2h_pad,
            dilate=self._i2h_dilate,
            layout=conv_layout,
        )
        state_shape = probe.infer_shape(data=self._input_shape)[1][0]
        self._state_shape = (0, *state_shape[1:])  # 0: the batch size, inferred when unrolled
        self._iW = self.params.get("i2h_weight", init=i2h_weight_initializer)
        self._hW = self.params.get("h2h_weight", init=h2h_weight_initializer)
        self._iB = self.params.get("i2h_bias", init=i2h_bias_initializer)
        self._hB = self.params.get("h2h_bias", init=h2h_bias_initializer)

    # which cell this is: its gate names, state count and step (set by each subclass)
    _kind: GateKind

    @property
    def _gate_names(self) -> tuple[str, ...]:
        return self._kind.gate_names

    @property
    def state_info(self) -> list[dict[str, Any]]:
        return [{"shape": self._state_shape, "__layout__": self._conv_layout} for _ in range(self._kind.num_states)]

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        i2h, h2h = self._conv_forward(inputs, states, name)

        def activate(x: Symbol, node_name: str) -> Symbol:
            return self._get_activation(x, self._activation, name=node_name)

        return self._kind.step(symbol, i2h, h2h, states, activate, self._channel_axis(), name)

    def _conv_forward(self, inputs: Symbol, states: list[Symbol], name: str) -> tuple[Symbol, Symbol]:
        filters = self._num_hidden * self._gate_count
        i2h = symbol.Convolution(
            name=f"{name}i2h",
            data=inputs,
            num_filter=filters,
            kernel=self._i2h_kernel,
            stride=self._i2h_stride,
            pad=self._i2h_pad,
            dilate=self._i2h_dilate,
            weight=self._iW,
            bias=self._iB,
            layout=self._conv_layout,
        )
        h2h = symbol.Convolution(
            name=f"{name}h2h",
            data=states[0],
            num_filter=filters,
            kernel=self._h2h_kernel,
            dilate=self._h2h_dilate,
            pad=self._h2h_pad,
            stride=(1,) * len(self._h2h_kernel),
            weight=self._hW,
            bias=self._hB,
            layout=self._conv_layout,
        )
        return i2h, h2h

    def _channel_axis(self) -> int:
        return self._conv_layout.find("C")


def _cell_init(default_prefix: str) -> Any:
    """The public constructor of a convolutional cell: MXNet's defaults, with the cell's own prefix.

    The three cells take the same arguments and differ only in the default ``prefix``, so one
    function body serves all three (the default is bound when ``__init__`` is defined).
    """

    def __init__(
        self: BaseConvRNNCell,
        input_shape: Sequence[int],
        num_hidden: int,
        h2h_kernel: Sequence[int] = (3, 3),
        h2h_dilate: Sequence[int] = (1, 1),
        i2h_kernel: Sequence[int] = (3, 3),
        i2h_stride: Sequence[int] = (1, 1),
        i2h_pad: Sequence[int] = (1, 1),
        i2h_dilate: Sequence[int] = (1, 1),
        i2h_weight_initializer: Any = None,
        h2h_weight_initializer: Any = None,
        i2h_bias_initializer: Any = "zeros",
        h2h_bias_initializer: Any = "zeros",
        activation: Any = _LEAKY,
        prefix: str = default_prefix,
        params: RNNParams | None = None,
        conv_layout: str = "NCHW",
    ) -> None:
        BaseConvRNNCell.__init__(
            self, input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel, i2h_stride, i2h_pad, i2h_dilate,
            i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer, activation,
            prefix=prefix, params=params, conv_layout=conv_layout,
        )  # fmt: skip

    return __init__


class ConvRNNCell(BaseConvRNNCell):
    """Convolutional Elman step: ``h' = activation(conv_i(x) + conv_h(h))``."""

    _kind = RNN_GATES
    __init__ = _cell_init("ConvRNN_")


class ConvLSTMCell(BaseConvRNNCell):
    """Convolutional LSTM step (gates i, f, c, o along the channel axis); states ``[h, c]``."""

    _kind = LSTM_GATES
    __init__ = _cell_init("ConvLSTM_")


class ConvGRUCell(BaseConvRNNCell):
    """Convolutional GRU step (gates r, z, candidate along the channel axis)."""

    _kind = GRU_GATES
    __init__ = _cell_init("ConvGRU_")
