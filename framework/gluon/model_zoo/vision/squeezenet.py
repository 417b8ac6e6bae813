"""SqueezeNet 1.0 and 1.1 (Iandola et al. 2016): "fire" modules, a 1x1 squeeze then 1x1 and 3x3 expands side by side."""

from __future__ import annotations

from typing import Any

from ....context import Context
from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from .common import CPU, DEFAULT_ROOT, build

POOL = "pool"
#: the feature extractor after the stem: "pool" or a fire module's (squeeze, expand 1x1, expand 3x3)
FIRES: dict[str, list[Any]] = {
    "1.0": [POOL, (16, 64, 64), (16, 64, 64), (32, 128, 128), POOL, (32, 128, 128), (48, 192, 192),
            (48, 192, 192), (64, 256, 256), POOL, (64, 256, 256)],
    "1.1": [POOL, (16, 64, 64), (16, 64, 64), POOL, (32, 128, 128), (32, 128, 128), POOL, (48, 192, 192),
            (48, 192, 192), (64, 256, 256), (64, 256, 256)],
}  # fmt: skip
STEM = {"1.0": (96, 7), "1.1": (64, 3)}  # (channels, kernel) of the first convolution, stride 2


def _conv_relu(channels: int, kernel: int, padding: int = 0) -> nn.HybridSequential:
    seq = nn.HybridSequential(prefix="")
    seq.add(nn.Conv2D(channels, kernel, padding=padding), nn.Activation("relu"))
    return seq


def _fire(squeeze: int, expand1x1: int, expand3x3: int) -> nn.HybridSequential:
    """Squeeze to few channels, then concatenate a 1x1 and a 3x3 expansion along channels."""
    fire = nn.HybridSequential(prefix="")
    fire.add(_conv_relu(squeeze, 1))
    expand = HybridConcurrent(axis=1, prefix="")
    expand.add(_conv_relu(expand1x1, 1), _conv_relu(expand3x3, 3, 1))
    fire.add(expand)
    return fire


class SqueezeNet(HybridBlock):
    """SqueezeNet ``version`` "1.0" or "1.1"; the classifier is a 1x1 convolution and average pooling."""

    def __init__(self, version: str, classes: int = 1000, **kwargs: Any):
        super().__init__(**kwargs)
        if version not in FIRES:
            raise ValueError(f"SqueezeNet: version must be '1.0' or '1.1', got {version!r}")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            channels, kernel = STEM[version]
            self.features.add(nn.Conv2D(channels, kernel_size=kernel, strides=2), nn.Activation("relu"))
            for item in FIRES[version]:
                if item == POOL:
                    self.features.add(nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True))
                else:
                    self.features.add(_fire(*item))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.HybridSequential(prefix="")
            self.output.add(nn.Conv2D(classes, kernel_size=1), nn.Activation("relu"), nn.AvgPool2D(13), nn.Flatten())

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self.output(self.features(x))


def get_squeezenet(
    version: str, pretrained: bool = False, ctx: Context = CPU, root: str = DEFAULT_ROOT, **kwargs: Any
) -> HybridBlock:
    return build(f"squeezenet{version}", lambda **kw: SqueezeNet(version, **kw), pretrained, kwargs)


def squeezenet1_0(**kwargs: Any) -> HybridBlock:
    return get_squeezenet("1.0", **kwargs)


def squeezenet1_1(**kwargs: Any) -> HybridBlock:
    return get_squeezenet("1.1", **kwargs)
