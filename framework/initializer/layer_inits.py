"""Initializers that know one layer's weight layout: a Deconvolution's bilinear upsampling
filter (:class:`Bilinear`), an LSTM's biases (:class:`LSTMBias`) and a fused RNN's packed
parameter vector (:class:`FusedRNN`), which it cuts into each gate's matrix for another
initializer to fill.
"""

from __future__ import annotations

import numpy as np

from ..ndarray import NDArray, zeros
from ..operator.rnn.layout import GATES, RNNShape, gate_slices, input_size_from_param_size
from .base import InitDesc, Initializer, InitializerError, bilinear_kernel, create, register


@register
class Bilinear(Initializer):
    """Weights of a bilinear upsampling filter, for ``Deconvolution`` layers."""

    def __init__(self) -> None:
        super().__init__()

    def _init_weight(self, _: str, arr: NDArray) -> None:
        arr[:] = bilinear_kernel(arr.shape)


@register
class LSTMBias(Initializer):
    """LSTM biases: 0, except the forget gate's (the second quarter), set to ``forget_bias``."""

    def __init__(self, forget_bias: float = 1.0) -> None:
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name: str, arr: NDArray) -> None:
        if arr.shape[0] % 4:
            raise InitializerError(f"LSTMBias: {name!r} must hold 4 gates (first dim divisible by 4), got {arr.shape}")
        arr[:] = 0.0
        num_hidden = arr.shape[0] // 4
        arr[num_hidden : 2 * num_hidden] = self.forget_bias


#: MXNet's names of each gate in the unpacked fused-RNN weights (``l0_i2h_f_weight``).


@register
class FusedRNN(Initializer):
    """The packed ``parameters`` vector of a fused ``RNN``, one gate's matrix at a time.

    The vector is cut into each gate's weight and bias (MXNet's names: ``l0_i2h_f_weight``,
    ``r1_h2h_o_bias``...), so an initializer scaled by fan-in and fan-out (Xavier) sees one
    ``(H, inputs)`` matrix, not the whole vector. Weights get ``init`` (the global initializer
    when None), biases its bias rule, and an LSTM's forget-gate biases (both ``i2h`` and
    ``h2h``) ``forget_bias``.
    """

    def __init__(
        self,
        init: Initializer | str | None,
        num_hidden: int,
        num_layers: int,
        mode: str,
        bidirectional: bool = False,
        forget_bias: float = 1.0,
    ) -> None:
        if isinstance(init, str):
            init = create(init)
        if mode not in GATES:
            raise InitializerError(f"FusedRNN: mode must be one of {sorted(GATES)}, got {mode!r}")
        super().__init__(
            init=None if init is None else init.dumps(),
            num_hidden=num_hidden,
            num_layers=num_layers,
            mode=mode,
            bidirectional=bidirectional,
            forget_bias=forget_bias,
        )
        self._init = init
        self._spec = RNNShape(mode, int(num_layers), int(num_hidden), 0, bool(bidirectional))
        self._forget_bias = float(forget_bias)

    def _init_weight(self, desc: str, arr: NDArray) -> None:
        spec = self._spec
        input_size = input_size_from_param_size(spec, arr.size)
        if input_size is None:
            raise InitializerError(
                f"FusedRNN: {desc!r} has {arr.size} elements, which fits no input size for mode={spec.mode!r}, "
                f"num_layers={spec.num_layers}, num_hidden={spec.state_size}, bidirectional={spec.bidirectional}"
            )
        init = self._init if self._init is not None else getattr(desc, "global_init", None)
        if init is None:
            raise InitializerError(f"FusedRNN: {desc!r} needs init= or a global initializer to fall back to")
        packed = np.zeros(arr.size, dtype=arr.dtype)
        hidden = spec.state_size
        full = RNNShape(spec.mode, spec.num_layers, hidden, input_size, spec.bidirectional)
        for piece in gate_slices(full):
            rows = packed[piece.offset : piece.stop].reshape(piece.shape)
            if spec.mode == "lstm" and piece.name.endswith("_f_bias"):
                rows[...] = self._forget_bias
                continue
            part = zeros(rows.shape, dtype=arr.dtype)
            init(InitDesc(piece.name, global_init=getattr(desc, "global_init", None)), part)
            rows[...] = part.asnumpy()
        arr[:] = packed
