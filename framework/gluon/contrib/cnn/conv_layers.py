"""Deformable convolution layers over ``_contrib_DeformableConvolution`` and its modulated variant.

A deformable convolution (Dai et al., 2017) samples its input at the kernel's taps moved by
learned offsets. The layer learns those offsets with an ordinary convolution of the same geometry
on the same input (``offset_weight``/``offset_bias``, initialised to zero so training starts as a
plain convolution), then runs the deformable operator with them (``deformable_conv_weight``/
``deformable_conv_bias``). The modulated version (v2, Zhu et al., 2019) predicts a third value
per tap as well, a mask ``2 * sigmoid(m)`` (1 at initialisation) that scales each sample.

Parameter names and the offset channel order follow MXNet 1.9.1, so its ``.params`` files load.
The operators compute NCHW only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...block import BlockError, HybridBlock
from ...nn import Activation
from ...nn.conv_layers import _tuple

__all__ = ["DeformableConvolution", "ModulatedDeformableConvolution"]


class _DeformableConvolutionBase(HybridBlock):
    """The offset convolution, the deformable weights, the forward and the repr; subclasses say how offsets are used."""

    #: values the offset convolution predicts per kernel tap and deformable group (dy, dx [, mask])
    _per_tap = 2
    #: MXNet registers the offset parameters first in one layer and last in the other
    _offset_params_first = True

    def __init__(
        self,
        channels: int,
        kernel_size: int | Sequence[int],
        strides: int | Sequence[int],
        padding: int | Sequence[int],
        dilation: int | Sequence[int],
        groups: int,
        num_deformable_group: int,
        layout: str,
        use_bias: bool,
        in_channels: int,
        activation: str | None,
        weight_initializer: Any,
        bias_initializer: Any,
        offset_weight_initializer: Any,
        offset_bias_initializer: Any,
        offset_use_bias: bool,
        op_name: str,
        adj: Any,
        prefix: str | None,
        params: Any,
    ) -> None:
        super().__init__(prefix=prefix, params=params)
        who = type(self).__name__
        if layout != "NCHW":
            raise BlockError(f"{who}: MXLab's deformable convolution computes layout 'NCHW' only, got {layout!r}")
        if adj:
            raise BlockError(f"{who}: adj belongs to transposed convolutions, got adj={adj!r}")
        if in_channels and (in_channels % groups or in_channels % num_deformable_group):
            raise BlockError(
                f"{who}: in_channels {in_channels} must be divisible by groups {groups} "
                f"and num_deformable_group {num_deformable_group}"
            )
        kernel = _tuple(kernel_size, 2, f"{who}: kernel_size")
        geometry = {
            "kernel": kernel,
            "stride": _tuple(strides, 2, f"{who}: strides"),
            "dilate": _tuple(dilation, 2, f"{who}: dilation"),
            "pad": _tuple(padding, 2, f"{who}: padding"),
            "num_group": groups,
            "layout": layout,
        }
        taps = kernel[0] * kernel[1]
        self._channels = channels
        self._in_channels = in_channels
        self._op_name = op_name
        self._offset_split = 2 * num_deformable_group * taps  # the first channels are (dy, dx) pairs
        offset_channels = self._per_tap * num_deformable_group * taps
        self._kwargs_offset = {**geometry, "num_filter": offset_channels, "no_bias": not offset_use_bias}
        self._kwargs_deformable_conv = {
            **geometry,
            "num_filter": channels,
            "num_deformable_group": num_deformable_group,
            "no_bias": not use_bias,
        }
        per_group = in_channels // groups if in_channels else 0  # 0: known at the first call
        # (attribute, shape, initializer, present?) in MXNet's registration order for this layer
        offset_specs = [
            ("offset_weight", (offset_channels, per_group, *kernel), offset_weight_initializer, True),
            ("offset_bias", (offset_channels,), offset_bias_initializer, offset_use_bias),
        ]
        conv_specs = [
            ("deformable_conv_weight", (channels, per_group, *kernel), weight_initializer, True),
            ("deformable_conv_bias", (channels,), bias_initializer, use_bias),
        ]
        specs = offset_specs + conv_specs if self._offset_params_first else conv_specs + offset_specs
        with self.name_scope():
            for attribute, shape, init, present in specs:
                param = (
                    self.params.get(attribute, shape=shape, init=init, allow_deferred_init=True) if present else None
                )
                setattr(self, attribute, param)
            self.act = Activation(activation, prefix=activation + "_") if activation else None

    def _offsets(self, F: Any, x: Any, offset_weight: Any, offset_bias: Any) -> Any:
        if offset_bias is None:
            return F.Convolution(x, offset_weight, **self._kwargs_offset)
        return F.Convolution(x, offset_weight, offset_bias, **self._kwargs_offset)

    def hybrid_forward(
        self, F: Any, x: Any, offset_weight: Any, deformable_conv_weight: Any, offset_bias: Any = None,
        deformable_conv_bias: Any = None,
    ) -> Any:  # fmt: skip
        """Shared by both layers: predict the offsets, run the subclass's operator, then the activation."""
        predicted = self._offsets(F, x, offset_weight, offset_bias)
        weights = [deformable_conv_weight]
        if deformable_conv_bias is not None:
            weights.append(deformable_conv_bias)
        out = self._deform(F, x, predicted, weights)
        return self.act(out) if self.act is not None else out

    def _deform(self, F: Any, x: Any, predicted: Any, weights: list[Any]) -> Any:
        """The deformable operator on ``x`` given the offset convolution's output and ``[weight(, bias)]``."""
        raise NotImplementedError(f"{type(self).__name__} must say how its offsets are used (_deform)")

    def __repr__(self) -> str:
        kw = self._kwargs_deformable_conv
        text = f"kernel_size={kw['kernel']}, stride={kw['stride']}"
        if kw["pad"] != (0, 0):
            text += f", padding={kw['pad']}"
        if kw["dilate"] != (1, 1):
            text += f", dilation={kw['dilate']}"
        if kw["num_group"] != 1:
            text += f", groups={kw['num_group']}"
        if self.deformable_conv_bias is None:
            text += ", bias=False"
        if self.act is not None:
            text += f", {self.act}"
        shape = self.deformable_conv_weight.shape
        return f"{type(self).__name__}({shape[1] or None} -> {shape[0]}, {text})"


class DeformableConvolution(_DeformableConvolutionBase):
    """2-D deformable convolution (v1): each tap moved by a learned ``(dy, dx)`` per output position."""

    _per_tap = 2
    _offset_params_first = True

    def __init__(
        self,
        channels: int,
        kernel_size: int | Sequence[int] = (1, 1),
        strides: int | Sequence[int] = (1, 1),
        padding: int | Sequence[int] = (0, 0),
        dilation: int | Sequence[int] = (1, 1),
        groups: int = 1,
        num_deformable_group: int = 1,
        layout: str = "NCHW",
        use_bias: bool = True,
        in_channels: int = 0,
        activation: str | None = None,
        weight_initializer: Any = None,
        bias_initializer: Any = "zeros",
        offset_weight_initializer: Any = "zeros",
        offset_bias_initializer: Any = "zeros",
        offset_use_bias: bool = True,
        op_name: str = "DeformableConvolution",
        adj: Any = None,
        prefix: str | None = None,
        params: Any = None,
    ) -> None:
        super().__init__(
            channels, kernel_size, strides, padding, dilation, groups, num_deformable_group, layout, use_bias,
            in_channels, activation, weight_initializer, bias_initializer, offset_weight_initializer,
            offset_bias_initializer, offset_use_bias, op_name, adj, prefix, params,
        )  # fmt: skip

    def _alias(self) -> str:
        return "deformable_conv"

    def _deform(self, F: Any, x: Any, predicted: Any, weights: list[Any]) -> Any:
        # every predicted channel is an offset (dy, dx per tap and deformable group)
        return F.contrib.DeformableConvolution(x, predicted, *weights, name="fwd", **self._kwargs_deformable_conv)


class ModulatedDeformableConvolution(_DeformableConvolutionBase):
    """2-D modulated deformable convolution (v2): moved taps, each sample scaled by ``2 * sigmoid(mask)``."""

    _per_tap = 3
    _offset_params_first = False

    def __init__(
        self,
        channels: int,
        kernel_size: int | Sequence[int] = (1, 1),
        strides: int | Sequence[int] = (1, 1),
        padding: int | Sequence[int] = (0, 0),
        dilation: int | Sequence[int] = (1, 1),
        groups: int = 1,
        num_deformable_group: int = 1,
        layout: str = "NCHW",
        use_bias: bool = True,
        in_channels: int = 0,
        activation: str | None = None,
        weight_initializer: Any = None,
        bias_initializer: Any = "zeros",
        offset_weight_initializer: Any = "zeros",
        offset_bias_initializer: Any = "zeros",
        offset_use_bias: bool = True,
        op_name: str = "ModulatedDeformableConvolution",
        adj: Any = None,
        prefix: str | None = None,
        params: Any = None,
    ) -> None:
        super().__init__(
            channels, kernel_size, strides, padding, dilation, groups, num_deformable_group, layout, use_bias,
            in_channels, activation, weight_initializer, bias_initializer, offset_weight_initializer,
            offset_bias_initializer, offset_use_bias, op_name, adj, prefix, params,
        )  # fmt: skip

    def _alias(self) -> str:
        return "modulated_deformable_conv"

    def _deform(self, F: Any, x: Any, predicted: Any, weights: list[Any]) -> Any:
        # the first channels are the offsets, the rest the masks (2 * sigmoid: 1 at initialisation)
        offset = F.slice_axis(predicted, axis=1, begin=0, end=self._offset_split)
        mask = F.sigmoid(F.slice_axis(predicted, axis=1, begin=self._offset_split, end=None)) * 2
        kwargs = self._kwargs_deformable_conv
        return F.contrib.ModulatedDeformableConvolution(x, offset, mask, *weights, name="fwd", **kwargs)
