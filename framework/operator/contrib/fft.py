"""``_contrib_fft`` and ``_contrib_ifft``: 1-D discrete Fourier transforms over the last axis.

Complex numbers are stored as interleaved real and imaginary parts ``[re0, im0, re1, im1, ...]``:

* ``fft``: real ``(..., d)`` -> complex ``(..., 2d)``, ``X_k = sum_j x_j e^{-2 pi i jk/d}``;
* ``ifft``: complex ``(..., 2d)`` -> the real part ``(..., d)`` of ``sum_k X_k e^{+2 pi i jk/d}``.
  As in MXNet (which follows Caffe), ``ifft`` does *not* divide by ``d``, so
  ``ifft(fft(x)) = d * x``.

Inputs are 2-D ``(N, d)`` or 4-D ``(N1, N2, N3, d)``, the shapes MXNet accepts. Each transform
is linear, so its gradient is the other transform of the output gradient (exact, with no
``1/d``): ``_backward__contrib_fft`` takes the real part of an unnormalised inverse transform,
``_backward__contrib_ifft`` is a forward transform of the real gradient. MXNet computes these
with cuFFT on GPU only; MXLab uses ``xp.fft`` on CPU and GPU. ``compute_size`` (how many
transforms cuFFT runs per batch) is accepted and does not change the result.
"""

from __future__ import annotations

from typing import Any

from ..grad import elemwise_grad_use_none
from ..infer import InferenceError, ShapeT, elemwise_type, shape_assign, shape_known
from ..params import Param, ParamSet
from ..registry import register
from ..tensor.common import put


class FFTParam(ParamSet):
    compute_size = Param(int, 128, "Transforms per cuFFT batch in MXNet (no effect on the result).", low=1)


def _interleave(xp: Any, z: Any) -> Any:
    """Complex ``(..., d)`` -> real ``(..., 2d)`` as [re0, im0, re1, im1, ...]."""
    return xp.stack([z.real, z.imag], axis=-1).reshape(*z.shape[:-1], 2 * z.shape[-1])


def _complex(x: Any) -> Any:
    """Real ``(..., 2d)`` [re0, im0, ...] -> complex ``(..., d)``."""
    pairs = x.reshape(*x.shape[:-1], x.shape[-1] // 2, 2)
    return pairs[..., 0] + 1j * pairs[..., 1]


def _forward(xp: Any, real: Any) -> Any:
    return _interleave(xp, xp.fft.fft(real, axis=-1))


def _inverse_real(xp: Any, packed: Any) -> Any:
    z = _complex(packed)
    return (xp.fft.ifft(z, axis=-1) * z.shape[-1]).real  # undo numpy's 1/d


def _check_rank(attrs: Any, shape: tuple[int, ...]) -> None:
    if len(shape) not in (2, 4):
        raise InferenceError(f"{attrs.name}: the input must be 2-D (N, d) or 4-D (N1, N2, N3, d), got {shape}")


def _fft_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    data = in_shapes[0]
    if data is not None:
        _check_rank(attrs, data)
        shape_assign(out_shapes, 0, (*data[:-1], 2 * data[-1]), attrs.name, "output")
    elif out_shapes[0] is not None:
        _check_rank(attrs, out_shapes[0])
        shape_assign(in_shapes, 0, (*out_shapes[0][:-1], out_shapes[0][-1] // 2), attrs.name, "data")
    return shape_known(in_shapes[0])


def _ifft_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    data = in_shapes[0]
    if data is not None:
        _check_rank(attrs, data)
        if data[-1] % 2:
            raise InferenceError(f"{attrs.name}: the last axis holds (re, im) pairs and must be even, got {data}")
        shape_assign(out_shapes, 0, (*data[:-1], data[-1] // 2), attrs.name, "output")
    elif out_shapes[0] is not None:
        _check_rank(attrs, out_shapes[0])
        shape_assign(in_shapes, 0, (*out_shapes[0][:-1], 2 * out_shapes[0][-1]), attrs.name, "data")
    return shape_known(in_shapes[0])


def _compute(transform: Any) -> Any:
    def compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
        put(outputs[0], req[0], transform(op_ctx.xp, inputs[0]))

    return compute


for _name, _infer, _transform, _backward_infer, _backward_transform, _text in (
    ("fft", _fft_shape, _forward, _ifft_shape, _inverse_real, "1-D FFT of real rows: (..., d) -> (..., 2d) re/im."),
    ("ifft", _ifft_shape, _inverse_real, _fft_shape, _forward, "Real part of the unnormalised 1-D inverse FFT."),
):
    (
        register(f"_contrib_{_name}")
        .describe(_text)
        .set_params(FFTParam)
        .set_num_inputs(1)
        .set_input_names(["data"])
        .set_infer_shape(_infer)
        .set_infer_type(elemwise_type)
        .set_compute(_compute(_transform))
        .set_gradient(elemwise_grad_use_none(f"_backward__contrib_{_name}"))
    )
    (
        register(f"_backward__contrib_{_name}")
        .set_params(FFTParam)
        .set_num_inputs(1)
        .set_infer_shape(_backward_infer)
        .set_infer_type(elemwise_type)
        .set_compute(_compute(_backward_transform))
        .set_is_backward()
    )
