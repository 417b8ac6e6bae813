"""ResNet v1 (He et al. 2015) and v2 (pre-activation, He et al. 2016), 18 to 152 layers.

Naming follows MXNet 1.9.1: the stem and head live in ``features`` (no prefix of its own),
each stage is a ``stageN_`` HybridSequential, and residual blocks take the empty prefix, so
their layers are counted per stage (``resnetv10_stage2_conv3_weight``).
"""

from __future__ import annotations

from typing import Any

from ....context import Context
from ... import nn
from ...block import HybridBlock
from .common import CPU, DEFAULT_ROOT, build

#: depth -> (block kind, blocks per stage, channels: stem then one per stage)
RESNET_SPEC: dict[int, tuple[str, list[int], list[int]]] = {
    18: ("basic", [2, 2, 2, 2], [64, 64, 128, 256, 512]),
    34: ("basic", [3, 4, 6, 3], [64, 64, 128, 256, 512]),
    50: ("bottleneck", [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
    101: ("bottleneck", [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
    152: ("bottleneck", [3, 8, 36, 3], [64, 256, 512, 1024, 2048]),
}


def _conv3x3(channels: int, stride: int, in_channels: int) -> nn.Conv2D:
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1, use_bias=False, in_channels=in_channels)


def _projection(channels: int, stride: int, in_channels: int) -> nn.Conv2D:
    """The 1x1 convolution that reshapes the shortcut when a block changes size."""
    return nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False, in_channels=in_channels)


class BasicBlockV1(HybridBlock):
    """Two 3x3 convolutions with BatchNorm; ReLU after adding the shortcut."""

    def __init__(self, channels: int, stride: int, downsample: bool = False, in_channels: int = 0, **kwargs: Any):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix="")
        self.body.add(_conv3x3(channels, stride, in_channels), nn.BatchNorm(), nn.Activation("relu"))
        self.body.add(_conv3x3(channels, 1, channels), nn.BatchNorm())
        self.downsample = None
        if downsample:
            self.downsample = nn.HybridSequential(prefix="")
            self.downsample.add(_projection(channels, stride, in_channels), nn.BatchNorm())

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        shortcut = self.downsample(x) if self.downsample else x
        return F.Activation(self.body(x) + shortcut, act_type="relu")


class BottleneckV1(BasicBlockV1):
    """1x1 (reduce to channels/4), 3x3, 1x1 (expand) convolutions; the stride is on the first."""

    def __init__(self, channels: int, stride: int, downsample: bool = False, in_channels: int = 0, **kwargs: Any):
        HybridBlock.__init__(self, **kwargs)
        narrow = channels // 4
        self.body = nn.HybridSequential(prefix="")
        self.body.add(nn.Conv2D(narrow, kernel_size=1, strides=stride), nn.BatchNorm(), nn.Activation("relu"))
        self.body.add(_conv3x3(narrow, 1, narrow), nn.BatchNorm(), nn.Activation("relu"))
        self.body.add(nn.Conv2D(channels, kernel_size=1, strides=1), nn.BatchNorm())
        self.downsample = None
        if downsample:
            self.downsample = nn.HybridSequential(prefix="")
            self.downsample.add(_projection(channels, stride, in_channels), nn.BatchNorm())


class BasicBlockV2(HybridBlock):
    """Pre-activation: BatchNorm and ReLU come before each 3x3 convolution; plain addition at the end."""

    def __init__(self, channels: int, stride: int, downsample: bool = False, in_channels: int = 0, **kwargs: Any):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)
        self.downsample = _projection(channels, stride, in_channels) if downsample else None

    def _convs(self) -> list[tuple[Any, Any]]:
        return [(self.bn1, self.conv1), (self.bn2, self.conv2)]

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        shortcut = x
        for i, (bn, conv) in enumerate(self._convs()):
            x = F.Activation(bn(x), act_type="relu")
            if i == 0 and self.downsample:
                shortcut = self.downsample(x)  # the projection sees the pre-activated input
            x = conv(x)
        return x + shortcut


class BottleneckV2(BasicBlockV2):
    """Pre-activation bottleneck: 1x1, 3x3 (with the stride), 1x1."""

    def __init__(self, channels: int, stride: int, downsample: bool = False, in_channels: int = 0, **kwargs: Any):
        HybridBlock.__init__(self, **kwargs)
        narrow = channels // 4
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(narrow, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(narrow, stride, narrow)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)
        self.downsample = _projection(channels, stride, in_channels) if downsample else None

    def _convs(self) -> list[tuple[Any, Any]]:
        return [(self.bn1, self.conv1), (self.bn2, self.conv2), (self.bn3, self.conv3)]


def _make_stage(block: type, count: int, channels: int, stride: int, index: int, in_channels: int) -> Any:
    """Stage ``index``: ``count`` blocks; the first may change size (stride, projection)."""
    stage = nn.HybridSequential(prefix=f"stage{index}_")
    with stage.name_scope():
        stage.add(block(channels, stride, channels != in_channels, in_channels=in_channels, prefix=""))
        for _ in range(count - 1):
            stage.add(block(channels, 1, False, in_channels=channels, prefix=""))
    return stage


class ResNetV1(HybridBlock):
    """ResNet v1: stem (7x7 conv, or a 3x3 for ``thumbnail`` inputs of 32x32), four stages, pooling, Dense."""

    def __init__(
        self, block: type, layers: list[int], channels: list[int], classes: int = 1000, thumbnail: bool = False, **kw
    ):
        super().__init__(**kw)
        if len(layers) != len(channels) - 1:
            raise ValueError(f"ResNetV1: {len(layers)} stages need {len(layers) + 1} channel counts, got {channels}")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            if thumbnail:
                self.features.add(_conv3x3(channels[0], 1, 0))
            else:
                self.features.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False), nn.BatchNorm())
                self.features.add(nn.Activation("relu"), nn.MaxPool2D(3, 2, 1))
            for i, count in enumerate(layers):
                self.features.add(_make_stage(block, count, channels[i + 1], 1 if i == 0 else 2, i + 1, channels[i]))
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self.output(self.features(x))


class ResNetV2(HybridBlock):
    """ResNet v2: a BatchNorm on the raw input, the stem, four pre-activation stages, BN-ReLU, pooling, Dense."""

    def __init__(
        self, block: type, layers: list[int], channels: list[int], classes: int = 1000, thumbnail: bool = False, **kw
    ):
        super().__init__(**kw)
        if len(layers) != len(channels) - 1:
            raise ValueError(f"ResNetV2: {len(layers)} stages need {len(layers) + 1} channel counts, got {channels}")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.BatchNorm(scale=False, center=False))  # input normalisation, learned statistics
            if thumbnail:
                self.features.add(_conv3x3(channels[0], 1, 0))
            else:
                self.features.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False), nn.BatchNorm())
                self.features.add(nn.Activation("relu"), nn.MaxPool2D(3, 2, 1))
            in_channels = channels[0]
            for i, count in enumerate(layers):
                self.features.add(_make_stage(block, count, channels[i + 1], 1 if i == 0 else 2, i + 1, in_channels))
                in_channels = channels[i + 1]
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.GlobalAvgPool2D(), nn.Flatten())
            self.output = nn.Dense(classes, in_units=in_channels)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self.output(self.features(x))


_NETS = {1: ResNetV1, 2: ResNetV2}
_BLOCKS = {
    1: {"basic": BasicBlockV1, "bottleneck": BottleneckV1},
    2: {"basic": BasicBlockV2, "bottleneck": BottleneckV2},
}


def get_resnet(
    version: int, num_layers: int, pretrained: bool = False, ctx: Context = CPU, root: str = DEFAULT_ROOT, **kwargs: Any
) -> HybridBlock:
    """ResNet ``version`` (1 or 2) of ``num_layers`` (18, 34, 50, 101 or 152)."""
    if num_layers not in RESNET_SPEC:
        raise ValueError(f"get_resnet: num_layers must be one of {sorted(RESNET_SPEC)}, got {num_layers!r}")
    if version not in _NETS:
        raise ValueError(f"get_resnet: version must be 1 or 2, got {version!r}")
    kind, layers, channels = RESNET_SPEC[num_layers]
    name = f"resnet{num_layers}_v{version}"
    return build(name, lambda **kw: _NETS[version](_BLOCKS[version][kind], layers, channels, **kw), pretrained, kwargs)


def resnet18_v1(**kwargs: Any) -> HybridBlock:
    return get_resnet(1, 18, **kwargs)


def resnet34_v1(**kwargs: Any) -> HybridBlock:
    return get_resnet(1, 34, **kwargs)


def resnet50_v1(**kwargs: Any) -> HybridBlock:
    return get_resnet(1, 50, **kwargs)


def resnet101_v1(**kwargs: Any) -> HybridBlock:
    return get_resnet(1, 101, **kwargs)


def resnet152_v1(**kwargs: Any) -> HybridBlock:
    return get_resnet(1, 152, **kwargs)


def resnet18_v2(**kwargs: Any) -> HybridBlock:
    return get_resnet(2, 18, **kwargs)


def resnet34_v2(**kwargs: Any) -> HybridBlock:
    return get_resnet(2, 34, **kwargs)


def resnet50_v2(**kwargs: Any) -> HybridBlock:
    return get_resnet(2, 50, **kwargs)


def resnet101_v2(**kwargs: Any) -> HybridBlock:
    return get_resnet(2, 101, **kwargs)


def resnet152_v2(**kwargs: Any) -> HybridBlock:
    return get_resnet(2, 152, **kwargs)
