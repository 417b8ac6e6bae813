"""Window geometry along each spatial axis, shared by Convolution, Deconvolution and Pooling.

All three slide a ``kernel``-sized window over a channel-first input (NCW, NCHW, NCDHW),
``stride`` apart, over the input padded by ``pad`` on both sides; a convolution's window
may also be dilated (``dilate - 1`` gaps between taps), so it spans
``dilate * (kernel - 1) + 1`` input elements. Per axis, the number of window positions is

    out = (size + 2 * pad - span) // stride + 1      (pooling's 'full' convention: ceil)

and a deconvolution (the transposed convolution) maps ``size`` positions back to

    out = stride * (size - 1) + span - 2 * pad + adj.

:class:`Geometry` holds the per-axis parameters with their defaults filled in
(:func:`per_axis`); the sizes above are its methods, so every operator computes them the
same way. :func:`label` and :func:`check_rank` word the errors the three share.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..infer import InferenceError, ShapeT
from ..node import NodeAttrs
from ..params import OperatorParamError

#: The only layouts MXLab computes: channel-first, by number of spatial axes.
CHANNEL_FIRST = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


class Geometry(NamedTuple):
    """The per-axis window parameters, defaults filled in (pooling's ``dilate`` is all 1s)."""

    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    dilate: tuple[int, ...]
    pad: tuple[int, ...]

    def dilated(self, axis: int) -> int:
        """The extent of the dilated kernel along ``axis``."""
        return self.dilate[axis] * (self.kernel[axis] - 1) + 1

    def padded(self, axis: int, size: int) -> int:
        """The input length along ``axis`` once padded on both sides."""
        return size + 2 * self.pad[axis]

    def padded_shape(self, spatial: tuple[int, ...]) -> tuple[int, ...]:
        """The padded spatial shape of an input whose spatial shape is ``spatial``."""
        return tuple(self.padded(axis, size) for axis, size in enumerate(spatial))

    def out_size(self, axis: int, size: int, ceil: bool = False) -> int:
        """Window positions along ``axis`` for an input of length ``size`` (floor, or ceil)."""
        span = self.padded(axis, size) - self.dilated(axis)
        stride = self.stride[axis]
        return 1 + (-(-span // stride) if ceil else span // stride)

    def transposed_out_size(self, axis: int, size: int, adj: int = 0) -> int:
        """Output length of the transposed window map (deconvolution) along ``axis``."""
        return self.stride[axis] * (size - 1) + self.dilated(axis) - 2 * self.pad[axis] + adj


def label(attrs: NodeAttrs) -> str:
    """How error messages name the node: the operator, plus the node name when it differs."""
    op_name = attrs.op.name if attrs.op is not None else "op"
    return op_name if attrs.name == op_name else f"{op_name} '{attrs.name}'"


def per_axis(who: str, params: Any, name: str, kernel: tuple[int, ...], default: int, low: int) -> tuple[int, ...]:
    """The parameter ``name`` (stride, dilate, pad, ...) with one value per kernel axis.

    Empty means ``default`` on every axis; otherwise it must have the kernel's rank and
    every value must be at least ``low``.
    """
    value = tuple(getattr(params, name))
    if not value:
        return (default,) * len(kernel)
    if len(value) != len(kernel):
        raise OperatorParamError(
            f"{who}: {name} must have the same number of dimensions as kernel, "
            f"but kernel is {kernel} while {name} is {value}"
        )
    if min(value) < low:
        raise OperatorParamError(f"{who}: {name} must be >= {low} in every dimension, got {name}={value}")
    return value


def check_layout(who: str, layout: str | None, nd: int, what: str) -> None:
    """Only the channel-first layout of an ``nd``-D window is computed; ``what`` names the window."""
    if layout is not None and layout != CHANNEL_FIRST.get(nd):
        raise OperatorParamError(
            f"{who}: layout {layout!r} is not supported for {what}; MXLab computes the channel-first "
            f"layout {CHANNEL_FIRST.get(nd)} only (NHWC/NDHWC are cuDNN-only layouts in MXNet)"
        )


def check_rank(who: str, shape: ShapeT, rank: int, what: str) -> None:
    """Raise when a known shape has the wrong number of dimensions for the kernel."""
    if shape is not None and len(shape) != rank:
        axes = {3: "(batch, channel, x)", 4: "(batch, channel, y, x)", 5: "(batch, channel, d, y, x)"}.get(rank, "")
        raise InferenceError(f"{who}: {what} should be {rank}-D {axes} for this kernel, got shape {tuple(shape)}")
