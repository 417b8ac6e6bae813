"""MobileNet v1 (Howard et al. 2017) and v2 (Sandler et al. 2018), with width multipliers.

Both are stacks of depthwise-separable convolutions: a 3x3 convolution with one group per
channel (``groups=channels``) followed by a 1x1 that mixes channels. v2 wraps them in
"inverted residual" bottlenecks (expand with 1x1, depthwise 3x3, linear 1x1 projection).
"""

from __future__ import annotations

from typing import Any

from ....context import Context
from ... import nn
from ...block import HybridBlock
from .common import CPU, DEFAULT_ROOT, build

#: MobileNet v1 after the stem: (depthwise channels, output channels, stride) at multiplier 1
MOBILENET_V1_LAYERS = (
    [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1), (256, 512, 2)]
    + [(512, 512, 1)] * 5
    + [(512, 1024, 2), (1024, 1024, 1)]
)
#: MobileNet v2 bottleneck groups: (expansion t, output channels, repeats, stride of the first)
MOBILENET_V2_GROUPS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)]  # fmt: skip


class RELU6(HybridBlock):
    """``min(max(x, 0), 6)``: ReLU capped at 6 (robust in low precision)."""

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.clip(x, 0, 6, name="relu6")


def _add_conv(
    seq: Any, channels: int, kernel: int = 1, stride: int = 1, pad: int = 0, groups: int = 1, **act: bool
) -> None:
    """Conv (no bias) + BatchNorm + (ReLU6 if ``relu6``, ReLU otherwise; none if ``active=False``).

    The layers are created in the caller's name scope, which fixes their names.
    """
    seq.add(nn.Conv2D(channels, kernel, stride, pad, groups=groups, use_bias=False), nn.BatchNorm(scale=True))
    if act.get("active", True):
        seq.add(RELU6() if act.get("relu6", False) else nn.Activation("relu"))


class MobileNet(HybridBlock):
    """MobileNet v1: a 3x3 stem then 13 depthwise-separable layers, global pooling, Dense."""

    def __init__(self, multiplier: float = 1.0, classes: int = 1000, **kwargs: Any):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                _add_conv(self.features, int(32 * multiplier), kernel=3, stride=2, pad=1)
                for depthwise, out, stride in MOBILENET_V1_LAYERS:
                    dw = int(depthwise * multiplier)
                    _add_conv(self.features, dw, kernel=3, stride=stride, pad=1, groups=dw)
                    _add_conv(self.features, int(out * multiplier))
                self.features.add(nn.GlobalAvgPool2D(), nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self.output(self.features(x))


class LinearBottleneck(HybridBlock):
    """Expand ``t`` times (1x1), depthwise 3x3, project linearly (1x1, no activation); shortcut if shapes match."""

    def __init__(self, in_channels: int, channels: int, t: int, stride: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.use_shortcut = stride == 1 and in_channels == channels
        with self.name_scope():
            self.out = nn.HybridSequential()
            wide = in_channels * t
            _add_conv(self.out, wide, relu6=True)
            _add_conv(self.out, wide, kernel=3, stride=stride, pad=1, groups=wide, relu6=True)
            _add_conv(self.out, channels, active=False)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        out = self.out(x)
        return F.elemwise_add(out, x) if self.use_shortcut else out


class MobileNetV2(HybridBlock):
    """MobileNet v2: stem, 17 linear bottlenecks, a 1x1 conv to 1280 channels, pooling, 1x1 conv classifier."""

    def __init__(self, multiplier: float = 1.0, classes: int = 1000, **kwargs: Any):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="features_")
            with self.features.name_scope():
                in_channels = int(32 * multiplier)
                _add_conv(self.features, in_channels, kernel=3, stride=2, pad=1, relu6=True)
                for t, channels, repeats, first_stride in MOBILENET_V2_GROUPS:
                    out = int(channels * multiplier)
                    for i in range(repeats):
                        stride = first_stride if i == 0 else 1
                        self.features.add(LinearBottleneck(in_channels=in_channels, channels=out, t=t, stride=stride))
                        in_channels = out
                last_channels = int(1280 * multiplier) if multiplier > 1.0 else 1280
                _add_conv(self.features, last_channels, relu6=True)
                self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.HybridSequential(prefix="output_")
            with self.output.name_scope():
                self.output.add(nn.Conv2D(classes, 1, use_bias=False, prefix="pred_"), nn.Flatten())

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self.output(self.features(x))


def _suffix(multiplier: float) -> str:
    """MXNet's spelling of a multiplier in model names: 1.0, 0.75, 0.5, 0.25."""
    text = f"{multiplier:.2f}"
    return text[:-1] if text in ("1.00", "0.50") else text


def get_mobilenet(
    multiplier: float, pretrained: bool = False, ctx: Context = CPU, root: str = DEFAULT_ROOT, **kwargs: Any
) -> HybridBlock:
    return build(f"mobilenet{_suffix(multiplier)}", lambda **kw: MobileNet(multiplier, **kw), pretrained, kwargs)


def get_mobilenet_v2(
    multiplier: float, pretrained: bool = False, ctx: Context = CPU, root: str = DEFAULT_ROOT, **kwargs: Any
) -> HybridBlock:
    return build(f"mobilenetv2_{_suffix(multiplier)}", lambda **kw: MobileNetV2(multiplier, **kw), pretrained, kwargs)


def mobilenet1_0(**kwargs: Any) -> HybridBlock:
    return get_mobilenet(1.0, **kwargs)


def mobilenet0_75(**kwargs: Any) -> HybridBlock:
    return get_mobilenet(0.75, **kwargs)


def mobilenet0_5(**kwargs: Any) -> HybridBlock:
    return get_mobilenet(0.5, **kwargs)


def mobilenet0_25(**kwargs: Any) -> HybridBlock:
    return get_mobilenet(0.25, **kwargs)


def mobilenet_v2_1_0(**kwargs: Any) -> HybridBlock:
    return get_mobilenet_v2(1.0, **kwargs)


def mobilenet_v2_0_75(**kwargs: Any) -> HybridBlock:
    return get_mobilenet_v2(0.75, **kwargs)


def mobilenet_v2_0_5(**kwargs: Any) -> HybridBlock:
    return get_mobilenet_v2(0.5, **kwargs)


def mobilenet_v2_0_25(**kwargs: Any) -> HybridBlock:
    return get_mobilenet_v2(0.25, **kwargs)
