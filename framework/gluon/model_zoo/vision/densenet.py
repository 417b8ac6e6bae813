"""DenseNet (Huang et al. 2016): each layer's output is concatenated to its input, so features accumulate."""

from __future__ import annotations

from typing import Any

from ....context import Context
from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from .common import CPU, DEFAULT_ROOT, build

#: depth -> (channels of the stem, growth rate, layers per dense block)
DENSENET_SPEC: dict[int, tuple[int, int, list[int]]] = {
    121: (64, 32, [6, 12, 24, 16]),
    161: (96, 48, [6, 12, 36, 24]),
    169: (64, 32, [6, 12, 32, 32]),
    201: (64, 32, [6, 12, 48, 32]),
}


def _dense_layer(growth_rate: int, bn_size: int, dropout: float) -> HybridConcurrent:
    """BN-ReLU-1x1 conv (bottleneck) and BN-ReLU-3x3 conv, concatenated after the input."""
    new_features = nn.HybridSequential(prefix="")
    new_features.add(nn.BatchNorm(), nn.Activation("relu"), nn.Conv2D(bn_size * growth_rate, 1, use_bias=False))
    new_features.add(nn.BatchNorm(), nn.Activation("relu"), nn.Conv2D(growth_rate, 3, padding=1, use_bias=False))
    if dropout:
        new_features.add(nn.Dropout(dropout))
    layer = HybridConcurrent(axis=1, prefix="")
    layer.add(nn.Identity(), new_features)
    return layer


def _dense_block(num_layers: int, bn_size: int, growth_rate: int, dropout: float, index: int) -> Any:
    block = nn.HybridSequential(prefix=f"stage{index}_")
    with block.name_scope():
        for _ in range(num_layers):
            block.add(_dense_layer(growth_rate, bn_size, dropout))
    return block


def _transition(channels: int) -> nn.HybridSequential:
    """BN-ReLU-1x1 conv halving the channels, then 2x2 average pooling halving the size."""
    seq = nn.HybridSequential(prefix="")
    seq.add(nn.BatchNorm(), nn.Activation("relu"), nn.Conv2D(channels, 1, use_bias=False))
    seq.add(nn.AvgPool2D(pool_size=2, strides=2))
    return seq


class DenseNet(HybridBlock):
    """Stem, dense blocks separated by transitions, BN-ReLU, 7x7 average pooling, the classifier."""

    def __init__(
        self,
        num_init_features: int,
        growth_rate: int,
        block_config: list[int],
        bn_size: int = 4,
        dropout: float = 0,
        classes: int = 1000,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(num_init_features, 7, strides=2, padding=3, use_bias=False))
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(3, strides=2, padding=1))
            channels = num_init_features
            for i, num_layers in enumerate(block_config):
                self.features.add(_dense_block(num_layers, bn_size, growth_rate, dropout, i + 1))
                channels += num_layers * growth_rate
                if i < len(block_config) - 1:
                    channels //= 2
                    self.features.add(_transition(channels))
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.AvgPool2D(pool_size=7), nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self.output(self.features(x))


def get_densenet(
    num_layers: int, pretrained: bool = False, ctx: Context = CPU, root: str = DEFAULT_ROOT, **kwargs: Any
) -> HybridBlock:
    """DenseNet of ``num_layers`` (121, 161, 169 or 201)."""
    if num_layers not in DENSENET_SPEC:
        raise ValueError(f"get_densenet: num_layers must be one of {sorted(DENSENET_SPEC)}, got {num_layers!r}")
    init, growth, config = DENSENET_SPEC[num_layers]
    return build(f"densenet{num_layers}", lambda **kw: DenseNet(init, growth, config, **kw), pretrained, kwargs)


def densenet121(**kwargs: Any) -> HybridBlock:
    return get_densenet(121, **kwargs)


def densenet161(**kwargs: Any) -> HybridBlock:
    return get_densenet(161, **kwargs)


def densenet169(**kwargs: Any) -> HybridBlock:
    return get_densenet(169, **kwargs)


def densenet201(**kwargs: Any) -> HybridBlock:
    return get_densenet(201, **kwargs)
