"""``mx.gluon.contrib.nn``: the contrib layers (:mod:`.basic_layers`)."""

from __future__ import annotations

from . import basic_layers
from .basic_layers import (
    Concurrent,
    HybridConcurrent,
    Identity,
    PixelShuffle1D,
    PixelShuffle2D,
    PixelShuffle3D,
    SyncBatchNorm,
)

__all__ = [
    "Concurrent",
    "HybridConcurrent",
    "Identity",
    "PixelShuffle1D",
    "PixelShuffle2D",
    "PixelShuffle3D",
    "SyncBatchNorm",
    "basic_layers",
]
