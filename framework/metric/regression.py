"""Regression metrics: mean absolute/squared error, its root, and Pearson's correlation.

MAE, MSE and RMSE compute one error per (label, prediction) pair and average those batch
values, as MXNet does (so a small last batch weighs as much as a full one).
PearsonCorrelation either averages the per-batch correlations ("macro") or computes one
correlation over every sample seen ("micro"), from running means and sums of squares.
"""

from __future__ import annotations

from typing import Any

import numpy

from .base import EvalMetric, MetricError, alias, as_numpy, check_label_shapes, register


def _as_columns(label: Any, pred: Any, owner: str) -> tuple[numpy.ndarray, numpy.ndarray]:
    """Labels and predictions with 1-d arrays turned into columns (N, 1), as MXNet does."""
    label_np = as_numpy(label, f"{owner}: label")
    pred_np = as_numpy(pred, f"{owner}: pred")
    if label_np.ndim == 1:
        label_np = label_np.reshape(label_np.shape[0], 1)
    if pred_np.ndim == 1:
        pred_np = pred_np.reshape(pred_np.shape[0], 1)
    try:
        numpy.broadcast_shapes(label_np.shape, pred_np.shape)
    except ValueError:
        raise MetricError(f"{owner}: labels {label_np.shape} and predictions {pred_np.shape} do not match") from None
    return label_np, pred_np


class _Regression(EvalMetric):
    """Per-batch mean of an error; ``get()`` averages the batch values."""

    def __init__(self, name: str, output_names: list[str] | None = None, label_names: list[str] | None = None) -> None:
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    @staticmethod
    def _error(label: numpy.ndarray, pred: numpy.ndarray) -> Any:
        raise NotImplementedError

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            self._add(self._error(*_as_columns(label, pred, type(self).__name__)), 1)


@register
class MAE(_Regression):
    """Mean absolute error, averaged per batch."""

    def __init__(
        self, name: str = "mae", output_names: list[str] | None = None, label_names: list[str] | None = None
    ) -> None:
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _error(label: numpy.ndarray, pred: numpy.ndarray) -> Any:
        return numpy.abs(label - pred).mean()


@register
class MSE(_Regression):
    """Mean squared error, averaged per batch."""

    def __init__(
        self, name: str = "mse", output_names: list[str] | None = None, label_names: list[str] | None = None
    ) -> None:
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _error(label: numpy.ndarray, pred: numpy.ndarray) -> Any:
        return ((label - pred) ** 2.0).mean()


@register
class RMSE(_Regression):
    """Root mean squared error of each batch, averaged over batches."""

    def __init__(
        self, name: str = "rmse", output_names: list[str] | None = None, label_names: list[str] | None = None
    ) -> None:
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _error(label: numpy.ndarray, pred: numpy.ndarray) -> Any:
        return numpy.sqrt(((label - pred) ** 2.0).mean())


class _RunningMoments:
    """Count, means, sums of squared deviations and co-deviation of (label, pred) pairs.

    Batches merge exactly (Chan et al.'s pairwise update), so the result equals the one
    computed over the concatenation of all batches, without keeping them.
    """

    def __init__(self) -> None:
        self.count = 0
        self.mean_label = self.mean_pred = 0.0
        self.ss_label = self.ss_pred = self.co_deviation = 0.0

    def add(self, label: numpy.ndarray, pred: numpy.ndarray) -> None:
        n = label.size
        if n == 0:
            return
        batch_mean_label, batch_mean_pred = label.mean(), pred.mean()
        dev_label, dev_pred = label - batch_mean_label, pred - batch_mean_pred
        total = self.count + n
        shift_label = batch_mean_label - self.mean_label
        shift_pred = batch_mean_pred - self.mean_pred
        weight = self.count * n / total
        self.ss_label += float((dev_label * dev_label).sum()) + weight * shift_label * shift_label
        self.ss_pred += float((dev_pred * dev_pred).sum()) + weight * shift_pred * shift_pred
        self.co_deviation += float((dev_label * dev_pred).sum()) + weight * shift_label * shift_pred
        self.mean_label += shift_label * n / total
        self.mean_pred += shift_pred * n / total
        self.count = total

    def pearson(self) -> float:
        """The correlation so far; NaN with fewer than two samples or a constant side."""
        if self.count < 2 or self.ss_label == 0.0 or self.ss_pred == 0.0:
            return float("nan")
        return float(self.co_deviation / numpy.sqrt(self.ss_label * self.ss_pred))


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of predictions and labels (any shape; both flattened).

    ``average="macro"`` averages the correlation of each (label, prediction) pair;
    ``"micro"`` computes one correlation over every sample since the last reset.
    """

    def __init__(
        self,
        name: str = "pearsonr",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
        average: str = "macro",
    ) -> None:
        if average not in ("macro", "micro"):
            raise MetricError(f"PearsonCorrelation: average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        super().__init__(
            name, output_names=output_names, label_names=label_names, average=average, has_global_stats=True
        )

    def reset(self) -> None:
        super().reset()
        self._local = _RunningMoments()
        self._global = _RunningMoments()

    def reset_local(self) -> None:
        super().reset_local()
        self._local = _RunningMoments()

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            label_np = as_numpy(label, "PearsonCorrelation: label")
            pred_np = as_numpy(pred, "PearsonCorrelation: pred")
            check_label_shapes(label_np, pred_np, shape=True)
            label_np = label_np.ravel().astype(numpy.float64)
            pred_np = pred_np.ravel().astype(numpy.float64)
            if self.average == "macro":
                with numpy.errstate(divide="ignore", invalid="ignore"):
                    self._add(float(numpy.corrcoef(pred_np, label_np)[0, 1]), 1)
            else:
                self._local.add(label_np, pred_np)
                self._global.add(label_np, pred_np)
                self.num_inst += 1
                self.global_num_inst += 1

    def get(self) -> tuple[str, float]:
        if self.average == "macro" or self.num_inst == 0:
            return super().get()
        return (self.name, self._local.pearson())

    def get_global(self) -> tuple[str, float]:
        if self.average == "macro" or self.global_num_inst == 0:
            return super().get_global()
        return (self.name, self._global.pearson())
