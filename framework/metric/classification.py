"""Classification metrics: accuracy, top-k accuracy, and the confusion-count scores F1, MCC and PCC.

Accuracy-like metrics count correct samples. F1 and MCC keep the four counts of a binary
classifier (true/false positives/negatives) and score them either per batch, averaged
("macro"), or once over all batches ("micro"). PCC keeps a whole K x K confusion matrix.
"""

from __future__ import annotations

import math
from typing import Any

import numpy

from .base import EvalMetric, MetricError, alias, as_numpy, check_label_shapes, register


@register
@alias("acc")
class Accuracy(EvalMetric):
    """Fraction of samples whose predicted class (argmax over ``axis``) equals the label.

    Predictions shaped like the labels are taken as class indices already.
    """

    def __init__(
        self,
        axis: int = 1,
        name: str = "accuracy",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names, has_global_stats=True)
        self.axis = axis

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            label_np = as_numpy(label, "Accuracy: label")
            pred_np = as_numpy(pred, "Accuracy: pred")
            if pred_np.shape != label_np.shape:
                if not -pred_np.ndim <= self.axis < pred_np.ndim:
                    raise MetricError(f"Accuracy: axis {self.axis} is out of range for predictions {pred_np.shape}")
                pred_np = numpy.argmax(pred_np, axis=self.axis)
            pred_label = pred_np.astype("int32").ravel()
            label_flat = label_np.astype("int32").ravel()
            check_label_shapes(label_flat, pred_label)
            self._add((pred_label == label_flat).sum(), len(pred_label))


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the ``top_k`` highest-scored classes (``top_k > 1``)."""

    def __init__(
        self,
        top_k: int = 1,
        name: str = "top_k_accuracy",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        super().__init__(name, top_k=top_k, output_names=output_names, label_names=label_names, has_global_stats=True)
        self.top_k = top_k
        if not isinstance(top_k, int) or top_k <= 1:
            raise MetricError(f"TopKAccuracy: top_k must be an int > 1 (use Accuracy for top 1), got {top_k!r}")
        self.name += f"_{self.top_k}"

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            pred_np = as_numpy(pred, "TopKAccuracy: pred").astype("float32")
            if pred_np.ndim > 2:
                raise MetricError(f"TopKAccuracy: predictions should be no more than 2 dims, got {pred_np.shape}")
            label_np = as_numpy(label, "TopKAccuracy: label").astype("int32")
            # argpartition: the top k classes end up in the last k columns, in no particular order.
            pred_label = numpy.argpartition(pred_np, -self.top_k)
            check_label_shapes(label_np, pred_label)
            num_samples = pred_label.shape[0]
            if pred_label.ndim == 1:
                correct = (pred_label.flat == label_np.flat).sum()
            else:
                num_classes = pred_label.shape[1]
                top_k = min(num_classes, self.top_k)
                correct = sum((pred_label[:, num_classes - 1 - j].flat == label_np.flat).sum() for j in range(top_k))
            self._add(correct, num_samples)


# ---------------------------------------------------------------------- binary confusion counts
_COUNTS = ("true_positives", "false_positives", "false_negatives", "true_negatives")


class _BinaryClassificationMetrics:
    """True/false positive/negative counts of a binary classifier, local and global (class 1 is positive)."""

    def __init__(self) -> None:
        self.reset_stats()

    def update_binary_stats(self, label: Any, pred: Any, owner: str) -> None:
        """Add one batch: ``pred`` is (batch, 2) class scores, ``label`` the 0/1 classes."""
        pred_np = as_numpy(pred, f"{owner}: pred")
        label_np = as_numpy(label, f"{owner}: label").astype("int32")
        if pred_np.ndim != 2:
            raise MetricError(f"{owner}: predictions must be (batch, 2) class scores, got shape {pred_np.shape}")
        pred_label = numpy.argmax(pred_np, axis=1)
        check_label_shapes(label_np, pred_np)
        if len(numpy.unique(label_np)) > 2:
            raise MetricError(
                f"{owner} currently only supports binary classification, got labels {numpy.unique(label_np)}"
            )
        pred_true = pred_label == 1
        label_true = label_np.ravel() == 1
        counts = {
            "true_positives": int((pred_true & label_true).sum()),
            "false_positives": int((pred_true & ~label_true).sum()),
            "false_negatives": int((~pred_true & label_true).sum()),
            "true_negatives": int((~pred_true & ~label_true).sum()),
        }
        for key, value in counts.items():
            setattr(self, key, getattr(self, key) + value)
            setattr(self, f"global_{key}", getattr(self, f"global_{key}") + value)

    def _counts(self, use_global: bool) -> tuple[int, int, int, int]:
        prefix = "global_" if use_global else ""
        tp, fp, fn, tn = (getattr(self, prefix + key) for key in _COUNTS)
        return tp, fp, fn, tn

    @staticmethod
    def _ratio(num: int, other: int) -> float:
        return float(num) / (num + other) if num + other > 0 else 0.0

    @staticmethod
    def _f(precision: float, recall: float) -> float:
        return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0

    @property
    def precision(self) -> float:
        return self._ratio(self.true_positives, self.false_positives)

    @property
    def global_precision(self) -> float:
        return self._ratio(self.global_true_positives, self.global_false_positives)

    @property
    def recall(self) -> float:
        return self._ratio(self.true_positives, self.false_negatives)

    @property
    def global_recall(self) -> float:
        return self._ratio(self.global_true_positives, self.global_false_negatives)

    @property
    def fscore(self) -> float:
        return self._f(self.precision, self.recall)

    @property
    def global_fscore(self) -> float:
        return self._f(self.global_precision, self.global_recall)

    def matthewscc(self, use_global: bool = False) -> float:
        """Matthews correlation coefficient of the counts; 0 before any sample.

        A zero marginal (say, no predicted positives) would make the denominator zero; like
        MXNet, the zero factors are left out of the product instead.
        """
        tp, fp, fn, tn = (float(c) for c in self._counts(use_global))
        if tp + fp + fn + tn == 0:
            return 0.0
        denominator = 1.0
        for term in (tp + fp, tp + fn, tn + fp, tn + fn):
            if term != 0.0:
                denominator *= term
        return (tp * tn - fp * fn) / math.sqrt(denominator)

    @property
    def total_examples(self) -> int:
        return sum(self._counts(False))

    @property
    def global_total_examples(self) -> int:
        return sum(self._counts(True))

    def local_reset_stats(self) -> None:
        for key in _COUNTS:
            setattr(self, key, 0)

    def reset_stats(self) -> None:
        self.local_reset_stats()
        for key in _COUNTS:
            setattr(self, f"global_{key}", 0)


class _BinaryScore(EvalMetric):
    """A score of the binary confusion counts, per batch ("macro") or over all batches ("micro")."""

    def __init__(self, name: str, output_names: list[str] | None, label_names: list[str] | None, average: str) -> None:
        if average not in ("macro", "micro"):
            raise MetricError(f"{type(self).__name__}: average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        self.metrics = _BinaryClassificationMetrics()
        super().__init__(
            name=name, output_names=output_names, label_names=label_names, average=average, has_global_stats=True
        )

    def _score(self, use_global: bool) -> float:
        raise NotImplementedError

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            self.metrics.update_binary_stats(label, pred, type(self).__name__)
        if self.average == "macro":
            # One score per update() call, then the counts start over.
            self.sum_metric += self._score(False)
            self.global_sum_metric += self._score(True)
            self.num_inst += 1
            self.global_num_inst += 1
            self.metrics.reset_stats()
        else:
            # One score over every sample so far, weighted so that get() returns it unchanged.
            self.sum_metric = self._score(False) * self.metrics.total_examples
            self.global_sum_metric = self._score(True) * self.metrics.global_total_examples
            self.num_inst = self.metrics.total_examples
            self.global_num_inst = self.metrics.global_total_examples

    def reset(self) -> None:
        super().reset()
        self.metrics.reset_stats()

    def reset_local(self) -> None:
        super().reset_local()
        self.metrics.local_reset_stats()


@register
class F1(_BinaryScore):
    """F1 score (harmonic mean of precision and recall) of a binary classifier; class 1 is positive.

    ``average="macro"`` averages the F1 of each ``update`` call; ``"micro"`` computes one F1
    from the counts of all of them.
    """

    def __init__(
        self,
        name: str = "f1",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
        average: str = "macro",
    ) -> None:
        super().__init__(name, output_names, label_names, average)

    def _score(self, use_global: bool) -> float:
        return self.metrics.global_fscore if use_global else self.metrics.fscore


@register
class MCC(_BinaryScore):
    """Matthews correlation coefficient of a binary classifier: in [-1, 1], 0 for chance.

    Unlike F1 it weighs both classes, so it stays honest when one class dominates.
    ``average`` as for :class:`F1`.
    """

    def __init__(
        self,
        name: str = "mcc",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
        average: str = "macro",
    ) -> None:
        super().__init__(name, output_names, label_names, average)

    def _score(self, use_global: bool) -> float:
        return self.metrics.matthewscc(use_global=use_global)


@register
class PCC(EvalMetric):
    """Multiclass Matthews correlation from a K x K confusion matrix (rows: predicted, columns: true).

    For two classes it equals MCC; for more its minimum lies between -1 and 0. The matrix
    grows when a larger class index appears. ``get()`` is NaN while a marginal is constant
    (every sample predicted, or labelled, as one class).
    """

    def __init__(
        self,
        name: str = "pcc",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
        has_global_stats: bool = True,
    ) -> None:
        self.k = 2
        super().__init__(
            name=name, output_names=output_names, label_names=label_names, has_global_stats=has_global_stats
        )

    def _grow(self, inc: int) -> None:
        """Make room for ``inc`` more classes in both matrices."""
        self.lcm = numpy.pad(self.lcm, ((0, inc), (0, inc)))
        self.gcm = numpy.pad(self.gcm, ((0, inc), (0, inc)))
        self.k += inc

    @staticmethod
    def _calc_mcc(cmat: numpy.ndarray) -> float:
        """Covariance of predicted and true one-hot classes over the product of their spreads."""
        n = cmat.sum()
        predicted = cmat.sum(axis=1)
        actual = cmat.sum(axis=0)
        cov_pp = numpy.sum(predicted * (n - predicted))
        cov_aa = numpy.sum(actual * (n - actual))
        if cov_pp == 0 or cov_aa == 0:
            return float("nan")
        cov_pa = numpy.sum(cmat.diagonal() * n - predicted * actual)
        return float(cov_pa / (cov_pp * cov_aa) ** 0.5)

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            label_np = as_numpy(label, "PCC: label").astype("int32")
            pred_np = as_numpy(pred, "PCC: pred")
            if pred_np.shape != label_np.shape:
                if pred_np.ndim != 2:
                    raise MetricError(
                        f"PCC: predictions must be class scores (N, classes) or class indices shaped like the labels; "
                        f"got predictions {pred_np.shape} and labels {label_np.shape}"
                    )
                pred_np = pred_np.argmax(axis=1)
            pred_np = pred_np.astype("int32").ravel()
            label_np = label_np.ravel()
            if pred_np.size != label_np.size:
                raise MetricError(f"PCC: {label_np.size} labels but {pred_np.size} predicted classes")
            if label_np.size == 0:
                continue
            if min(pred_np.min(), label_np.min()) < 0:
                raise MetricError("PCC: classes must be non-negative indices")
            largest = int(max(pred_np.max(), label_np.max()))
            if largest >= self.k:
                self._grow(largest + 1 - self.k)
            batch = numpy.zeros((self.k, self.k))
            numpy.add.at(batch, (pred_np, label_np), 1)
            self.lcm += batch
            self.gcm += batch
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self) -> float:
        return self._calc_mcc(self.lcm) * self.num_inst

    @property
    def global_sum_metric(self) -> float:
        return self._calc_mcc(self.gcm) * self.global_num_inst

    def reset(self) -> None:
        self.global_num_inst = 0
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self) -> None:
        self.num_inst = 0
        self.lcm = numpy.zeros((self.k, self.k))
