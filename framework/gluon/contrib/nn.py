"""``mx.gluon.contrib.nn``: containers that run every child on the same input and concatenate.

The model zoo's DenseNet (input next to the new features) and SqueezeNet (the fire module's
two expand paths) are built from :class:`HybridConcurrent`.
"""

from __future__ import annotations

from typing import Any

from ... import ndarray as nd
from .. import nn as _nn
from ..nn import Identity

__all__ = ["Concurrent", "HybridConcurrent", "Identity"]


class Concurrent(_nn.Sequential):
    """Feed the input to every child and concatenate their outputs along ``axis``."""

    def __init__(self, axis: int = -1, prefix: str | None = None, params: Any = None) -> None:
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x: Any) -> Any:
        outputs = [block(x) for block in self._children.values()]
        return nd.concat(*outputs, dim=self.axis)


class HybridConcurrent(_nn.HybridSequential):
    """:class:`Concurrent` for HybridBlocks: traced, the branches and the concat are one graph."""

    def __init__(self, axis: int = -1, prefix: str | None = None, params: Any = None) -> None:
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        outputs = [block(x) for block in self._children.values()]
        return F.concat(*outputs, dim=self.axis)
