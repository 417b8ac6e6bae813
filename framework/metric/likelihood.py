"""Likelihood metrics: perplexity, cross-entropy and negative log-likelihood of class probabilities.

All three read the probability the network gave to the true class and average its negative
logarithm over samples; perplexity reports the exponential of that average.
"""

from __future__ import annotations

import math
from typing import Any

import numpy

from .base import EvalMetric, MetricError, alias, as_numpy, check_label_shapes, register


@register
class Perplexity(EvalMetric):
    """``exp(mean(-log p(label)))`` over all non-ignored labels (language models).

    Args:
        ignore_label: a label value to skip (padding), or None to count every label.
        axis: the class axis of the predictions (default the last).
    """

    def __init__(
        self,
        ignore_label: int | None,
        axis: int = -1,
        name: str = "perplexity",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        super().__init__(
            name, ignore_label=ignore_label, output_names=output_names, label_names=label_names, has_global_stats=True
        )
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        loss = 0.0
        num = 0
        for label, pred in zip(labels, preds, strict=True):
            pred_np = as_numpy(pred, "Perplexity: pred")
            label_np = as_numpy(label, "Perplexity: label")
            classes = pred_np.shape[self.axis]
            if label_np.size * classes != pred_np.size:
                raise MetricError(
                    f"Perplexity: shape mismatch: labels {label_np.shape} vs. predictions {pred_np.shape}"
                )
            flat = numpy.moveaxis(pred_np, self.axis, -1).reshape(-1, classes)
            index = numpy.clip(label_np.reshape(-1).astype("int64"), 0, classes - 1)  # MXNet's pick clips
            prob = flat[numpy.arange(flat.shape[0]), index]
            if self.ignore_label is not None:
                ignore = (label_np.reshape(-1) == self.ignore_label).astype(prob.dtype)
                num -= int(ignore.sum())
                prob = prob * (1 - ignore) + ignore
            loss -= float(numpy.log(numpy.maximum(prob.dtype.type(1e-10), prob)).sum())
            num += prob.size
        self._add(loss, num)

    def get(self) -> tuple[str, float]:
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.sum_metric / self.num_inst))

    def get_global(self) -> tuple[str, float]:
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.global_sum_metric / self.global_num_inst))


class _LogLoss(EvalMetric):
    """Mean of ``-log(p[label] + eps)`` over samples; predictions are (N, classes) probabilities."""

    def __init__(
        self, eps: float, name: str, output_names: list[str] | None = None, label_names: list[str] | None = None
    ) -> None:
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names, has_global_stats=True)
        self.eps = eps

    def update(self, labels: Any, preds: Any) -> None:
        owner = type(self).__name__
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            label_np = as_numpy(label, f"{owner}: label").ravel()
            pred_np = as_numpy(pred, f"{owner}: pred")
            if pred_np.ndim != 2 or label_np.shape[0] != pred_np.shape[0]:
                raise MetricError(
                    f"{owner}: expected predictions (N, classes) and N labels, got predictions {pred_np.shape} "
                    f"and {label_np.shape[0]} labels"
                )
            index = label_np.astype(numpy.int64)
            if index.size and (index.min() < 0 or index.max() >= pred_np.shape[1]):
                raise MetricError(f"{owner}: labels must be class indices in [0, {pred_np.shape[1]}), got {label_np}")
            prob = pred_np[numpy.arange(label_np.shape[0]), index]
            self._add((-numpy.log(prob + self.eps)).sum(), label_np.shape[0])


@register
@alias("ce")
class CrossEntropy(_LogLoss):
    """Cross-entropy of predicted class probabilities against integer labels."""

    def __init__(
        self,
        eps: float = 1e-12,
        name: str = "cross-entropy",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        super().__init__(eps, name, output_names, label_names)


@register
@alias("nll_loss")
class NegativeLogLikelihood(_LogLoss):
    """Negative log-likelihood of the labels under the predicted class probabilities."""

    def __init__(
        self,
        eps: float = 1e-12,
        name: str = "nll-loss",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        super().__init__(eps, name, output_names, label_names)
