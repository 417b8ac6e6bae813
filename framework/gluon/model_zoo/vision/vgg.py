"""VGG (Simonyan and Zisserman 2014): 11, 13, 16 or 19 layers, optionally with BatchNorm."""

from __future__ import annotations

from typing import Any

from .... import initializer
from ....context import Context
from ... import nn
from ...block import HybridBlock
from .common import CPU, DEFAULT_ROOT, build

#: depth -> (3x3 convolutions per block, channels per block); each block ends with a 2x2 max-pool
VGG_SPEC: dict[int, tuple[list[int], list[int]]] = {
    11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
    13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
    16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
    19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512]),
}


class VGG(HybridBlock):
    """Blocks of 3x3 convolutions and max-pooling, then two Dense(4096) with dropout and the classifier."""

    def __init__(
        self, layers: list[int], filters: list[int], classes: int = 1000, batch_norm: bool = False, **kwargs: Any
    ):
        super().__init__(**kwargs)
        if len(layers) != len(filters):
            raise ValueError(f"VGG: layers and filters differ in length ({len(layers)} vs {len(filters)})")
        conv_init = initializer.Xavier(rnd_type="gaussian", factor_type="out", magnitude=2)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            for count, channels in zip(layers, filters, strict=True):
                for _ in range(count):
                    self.features.add(
                        nn.Conv2D(channels, 3, padding=1, weight_initializer=conv_init, bias_initializer="zeros")
                    )
                    if batch_norm:
                        self.features.add(nn.BatchNorm())
                    self.features.add(nn.Activation("relu"))
                self.features.add(nn.MaxPool2D(strides=2))
            for _ in range(2):
                self.features.add(
                    nn.Dense(4096, activation="relu", weight_initializer="normal", bias_initializer="zeros"),
                    nn.Dropout(rate=0.5),
                )
            self.output = nn.Dense(classes, weight_initializer="normal", bias_initializer="zeros")

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self.output(self.features(x))


def get_vgg(
    num_layers: int, pretrained: bool = False, ctx: Context = CPU, root: str = DEFAULT_ROOT, **kwargs: Any
) -> HybridBlock:
    """VGG of ``num_layers`` (11, 13, 16 or 19); ``batch_norm=True`` adds BatchNorm after each convolution."""
    if num_layers not in VGG_SPEC:
        raise ValueError(f"get_vgg: num_layers must be one of {sorted(VGG_SPEC)}, got {num_layers!r}")
    layers, filters = VGG_SPEC[num_layers]
    name = f"vgg{num_layers}{'_bn' if kwargs.get('batch_norm') else ''}"
    return build(name, lambda **kw: VGG(layers, filters, **kw), pretrained, kwargs)


def vgg11(**kwargs: Any) -> HybridBlock:
    return get_vgg(11, **kwargs)


def vgg13(**kwargs: Any) -> HybridBlock:
    return get_vgg(13, **kwargs)


def vgg16(**kwargs: Any) -> HybridBlock:
    return get_vgg(16, **kwargs)


def vgg19(**kwargs: Any) -> HybridBlock:
    return get_vgg(19, **kwargs)


def vgg11_bn(**kwargs: Any) -> HybridBlock:
    return get_vgg(11, batch_norm=True, **kwargs)


def vgg13_bn(**kwargs: Any) -> HybridBlock:
    return get_vgg(13, batch_norm=True, **kwargs)


def vgg16_bn(**kwargs: Any) -> HybridBlock:
    return get_vgg(16, batch_norm=True, **kwargs)


def vgg19_bn(**kwargs: Any) -> HybridBlock:
    return get_vgg(19, batch_norm=True, **kwargs)
