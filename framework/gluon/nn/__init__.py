"""``mx.gluon.nn``: neural network layers as (Hybrid)Blocks.

Not here (their operators do not exist in MXLab yet): ``InstanceNorm``, ``LayerNorm`` and
``GroupNorm``.
"""

from __future__ import annotations

from ..block import Block, HybridBlock, SymbolBlock
from .activations import ELU, GELU, SELU, Activation, LeakyReLU, PReLU, Swish
from .basic_layers import (
    BatchNorm,
    Dense,
    Dropout,
    Embedding,
    Flatten,
    HybridLambda,
    HybridSequential,
    Identity,
    Lambda,
    Sequential,
)
from .conv_layers import (
    AvgPool1D,
    AvgPool2D,
    AvgPool3D,
    Conv1D,
    Conv1DTranspose,
    Conv2D,
    Conv2DTranspose,
    Conv3D,
    Conv3DTranspose,
    GlobalAvgPool1D,
    GlobalAvgPool2D,
    GlobalAvgPool3D,
    GlobalMaxPool1D,
    GlobalMaxPool2D,
    GlobalMaxPool3D,
    MaxPool1D,
    MaxPool2D,
    MaxPool3D,
    ReflectionPad2D,
)

__all__ = [
    "ELU",
    "GELU",
    "SELU",
    "Activation",
    "AvgPool1D",
    "AvgPool2D",
    "AvgPool3D",
    "BatchNorm",
    "Block",
    "Conv1D",
    "Conv1DTranspose",
    "Conv2D",
    "Conv2DTranspose",
    "Conv3D",
    "Conv3DTranspose",
    "Dense",
    "Dropout",
    "Embedding",
    "Flatten",
    "GlobalAvgPool1D",
    "GlobalAvgPool2D",
    "GlobalAvgPool3D",
    "GlobalMaxPool1D",
    "GlobalMaxPool2D",
    "GlobalMaxPool3D",
    "HybridBlock",
    "HybridLambda",
    "HybridSequential",
    "Identity",
    "Lambda",
    "LeakyReLU",
    "MaxPool1D",
    "MaxPool2D",
    "MaxPool3D",
    "PReLU",
    "ReflectionPad2D",
    "Sequential",
    "Swish",
    "SymbolBlock",
]
