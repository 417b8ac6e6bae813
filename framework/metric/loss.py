"""Loss metrics: report the mean of what the network outputs, for networks whose output is the loss.

``Torch`` and ``Caffe`` are the same metric under the names MXNet gave it for networks
wrapping those frameworks' criterions.
"""

from __future__ import annotations

from typing import Any

import numpy

from ..ndarray import NDArray
from .base import EvalMetric, as_numpy, register


@register
class Loss(EvalMetric):
    """The mean of the network's outputs: for networks whose output *is* the loss (``MakeLoss``)."""

    def __init__(
        self, name: str = "loss", output_names: list[str] | None = None, label_names: list[str] | None = None
    ) -> None:
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    def update(self, _: Any, preds: Any) -> None:
        if isinstance(preds, NDArray | numpy.ndarray):
            preds = [preds]
        for pred in preds:
            values = as_numpy(pred, f"{type(self).__name__}: pred")
            self._add(float(values.sum()), values.size)


@register
class Torch(Loss):
    """:class:`Loss` named "torch" (MXNet's metric for Torch criterions)."""

    def __init__(
        self, name: str = "torch", output_names: list[str] | None = None, label_names: list[str] | None = None
    ) -> None:
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """:class:`Loss` named "caffe" (MXNet's metric for Caffe criterions)."""

    def __init__(
        self, name: str = "caffe", output_names: list[str] | None = None, label_names: list[str] | None = None
    ) -> None:
        super().__init__(name, output_names=output_names, label_names=label_names)
