"""AlexNet (Krizhevsky et al. 2012), the single-tower variant of "One weird trick" (Krizhevsky 2014)."""

from __future__ import annotations

from typing import Any

from ....context import Context
from ... import nn
from ...block import HybridBlock
from .common import CPU, DEFAULT_ROOT, build

#: (channels, kernel, stride, padding, max-pool after it) of the five convolutions
ALEXNET_CONVS = [(64, 11, 4, 2, True), (192, 5, 1, 2, True), (384, 3, 1, 1, False), (256, 3, 1, 1, False),
                 (256, 3, 1, 1, True)]  # fmt: skip


class AlexNet(HybridBlock):
    """Five convolutions with ReLU and three max-pools, two Dense(4096) with dropout, the classifier."""

    def __init__(self, classes: int = 1000, **kwargs: Any):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                for channels, kernel, stride, pad, pool in ALEXNET_CONVS:
                    self.features.add(nn.Conv2D(channels, kernel, strides=stride, padding=pad, activation="relu"))
                    if pool:
                        self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                self.features.add(nn.Flatten())
                for _ in range(2):
                    self.features.add(nn.Dense(4096, activation="relu"), nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self.output(self.features(x))


def alexnet(pretrained: bool = False, ctx: Context = CPU, root: str = DEFAULT_ROOT, **kwargs: Any) -> HybridBlock:
    return build("alexnet", AlexNet, pretrained, kwargs)
