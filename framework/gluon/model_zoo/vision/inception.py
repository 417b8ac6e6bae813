"""Inception v3 (Szegedy et al. 2015, "Rethinking the Inception Architecture"), for 299x299 images.

After a stem of plain convolutions, eleven "mixed" blocks each run a few branches side by side
and concatenate them along channels: small convolutions (1x1 to cut channels first), factorized
ones (a 7x7 as 1x7 then 7x1, a 3x3 as 1x3 beside 3x1) and a pooling branch. Every convolution
is a unit of Conv2D (no bias), BatchNorm (epsilon 1e-3) and ReLU.

The blocks are described by tables of branches; building them in table order gives MXNet 1.9.1's
parameter names (``inception30_A1_conv4_weight``, ``inception30_E2_batchnorm8_gamma``): the mixed
blocks are ``HybridConcurrent`` with prefixes ``A1_`` ... ``E2_``, everything inside has an empty
prefix, so layer counters run through the whole block.
"""

from __future__ import annotations

from typing import Any

from ....context import Context
from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from .common import CPU, DEFAULT_ROOT, build

#: A convolution unit: (channels, kernel, strides, padding); kernel and padding may be (h, w) pairs.
Conv = tuple[int, Any, int, Any]
#: The pooling steps of the branches: 3x3 average keeping the size, 3x3 max halving it.
AVG, MAX = "avg", "max"


def _unit(channels: int, kernel: Any, strides: int = 1, padding: Any = 0) -> Conv:
    return (channels, kernel, strides, padding)


def _mixed_a(pool_features: int) -> list[list[Any]]:
    """35x35 grid: 1x1; 1x1 then 5x5; 1x1 then two 3x3; average pool then 1x1."""
    return [
        [_unit(64, 1)],
        [_unit(48, 1), _unit(64, 5, padding=2)],
        [_unit(64, 1), _unit(96, 3, padding=1), _unit(96, 3, padding=1)],
        [AVG, _unit(pool_features, 1)],
    ]


#: 35x35 -> 17x17: a strided 3x3; 1x1, 3x3, strided 3x3; max pool.
MIXED_B = [
    [_unit(384, 3, strides=2)],
    [_unit(64, 1), _unit(96, 3, padding=1), _unit(96, 3, strides=2)],
    [MAX],
]


def _row(channels: int) -> Conv:
    """A 1x7 convolution keeping the grid size."""
    return _unit(channels, (1, 7), padding=(0, 3))


def _col(channels: int) -> Conv:
    """A 7x1 convolution keeping the grid size."""
    return _unit(channels, (7, 1), padding=(3, 0))


def _mixed_c(c7: int) -> list[list[Any]]:
    """17x17 grid, 7x7 convolutions factorized into 1x7 and 7x1 (``c7`` channels inside)."""
    return [
        [_unit(192, 1)],
        [_unit(c7, 1), _row(c7), _col(192)],
        [_unit(c7, 1), _col(c7), _row(c7), _col(c7), _row(192)],
        [AVG, _unit(192, 1)],
    ]


#: 17x17 -> 8x8: 1x1 then strided 3x3; 1x1, 1x7, 7x1, strided 3x3; max pool.
MIXED_D = [
    [_unit(192, 1), _unit(320, 3, strides=2)],
    [_unit(192, 1), _row(192), _col(192), _unit(192, 3, strides=2)],
    [MAX],
]

#: The two halves a branch of an E block ends in, side by side: a 1x3 and a 3x1.
SPLIT = [[_unit(384, (1, 3), padding=(0, 1))], [_unit(384, (3, 1), padding=(1, 0))]]
#: 8x8 grid: 1x1; 1x1 then the split; 1x1, 3x3 then the split; average pool then 1x1.
MIXED_E = [
    [_unit(320, 1)],
    ([_unit(384, 1)], SPLIT),
    ([_unit(448, 1), _unit(384, 3, padding=1)], SPLIT),
    [AVG, _unit(192, 1)],
]

#: The feature extractor after the stem: (prefix, branches) of each mixed block.
MIXED = [
    ("A1_", _mixed_a(32)),
    ("A2_", _mixed_a(64)),
    ("A3_", _mixed_a(64)),
    ("B_", MIXED_B),
    ("C1_", _mixed_c(128)),
    ("C2_", _mixed_c(160)),
    ("C3_", _mixed_c(160)),
    ("C4_", _mixed_c(192)),
    ("D_", MIXED_D),
    ("E1_", MIXED_E),
    ("E2_", MIXED_E),
]


def _conv_unit(channels: int, kernel: Any, strides: int, padding: Any) -> nn.HybridSequential:
    unit = nn.HybridSequential(prefix="")
    unit.add(nn.Conv2D(channels, kernel, strides=strides, padding=padding, use_bias=False))
    unit.add(nn.BatchNorm(epsilon=0.001), nn.Activation("relu"))
    return unit


def _branch(steps: list[Any]) -> nn.HybridSequential:
    """Convolution units and pooling steps one after the other."""
    branch = nn.HybridSequential(prefix="")
    for step in steps:
        if step == AVG:
            branch.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
        elif step == MAX:
            branch.add(nn.MaxPool2D(pool_size=3, strides=2))
        else:
            branch.add(_conv_unit(*step))
    return branch


def _mixed(prefix: str, branches: list[Any]) -> HybridConcurrent:
    """The branches of one block, concatenated along channels; a (head, split) branch ends in two halves."""
    block = HybridConcurrent(axis=1, prefix=prefix)
    with block.name_scope():
        for branch in branches:
            if isinstance(branch, tuple):
                head, halves = branch
                split = nn.HybridSequential(prefix="")
                split.add(_branch(head))
                side_by_side = HybridConcurrent(axis=1, prefix="")
                side_by_side.add(*[_branch(half) for half in halves])
                split.add(side_by_side)
                block.add(split)
            else:
                block.add(_branch(branch))
    return block


class Inception3(HybridBlock):
    """Inception v3: the stem, eleven mixed blocks, 8x8 average pooling, dropout and the classifier."""

    def __init__(self, classes: int = 1000, **kwargs: Any):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            stem = [
                _unit(32, 3, strides=2),
                _unit(32, 3),
                _unit(64, 3, padding=1),
                MAX,
                _unit(80, 1),
                _unit(192, 3),
                MAX,
            ]
            for step in stem:
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2) if step == MAX else _conv_unit(*step))
            for prefix, branches in MIXED:
                self.features.add(_mixed(prefix, branches))
            self.features.add(nn.AvgPool2D(pool_size=8), nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self.output(self.features(x))


def inception_v3(pretrained: bool = False, ctx: Context = CPU, root: str = DEFAULT_ROOT, **kwargs: Any) -> HybridBlock:
    """Inception v3 for 299x299 inputs (``pretrained=True`` raises: MXLab does not download)."""
    return build("inceptionv3", Inception3, pretrained, kwargs)
