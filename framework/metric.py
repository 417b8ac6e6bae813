"""``mx.metric``: running evaluation metrics (MXNet 1.x's ``metric.py``).

A metric accumulates over the batches of an epoch: ``update(labels, preds)`` adds one
batch (lists of NDArrays, one entry per output of the network), ``get()`` returns
``(name, value)`` so far, ``reset()`` starts over. Most metrics keep two numbers,
``sum_metric`` and ``num_inst``, and report their ratio; that is what makes a metric over
many batches equal to the metric over their concatenation (for per-sample metrics).

Each metric also keeps *global* sums that ``reset_local()`` leaves alone, so a Speedometer
can report the last few batches while the epoch total survives.

Values are computed with NumPy on the host (``asnumpy()`` waits for the arrays), as MXNet
1.x does; they match MXNet's for the same inputs. Metrics are registered by name for
:func:`create`: ``create("acc")``, ``create(["acc", "ce"])``, ``create(my_function)``.

Differences from MXNet 1.9.1, on purpose: NumPy arrays are accepted wherever NDArrays are;
``CompositeEvalMetric.get_metric`` raises for a bad index (MXNet returns the exception);
``F1(average=...)`` accepts only "macro" and "micro".
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy

from .base import MXLabError
from .ndarray import NDArray


class MetricError(MXLabError, ValueError):
    """Labels and predictions do not fit the metric, or the metric is configured wrongly."""


def _as_numpy(value: Any, what: str) -> numpy.ndarray:
    if isinstance(value, NDArray):
        return value.asnumpy()
    if isinstance(value, numpy.ndarray):
        return value
    raise MetricError(f"{what} must be an NDArray (or a NumPy array), got {type(value).__name__}")


def check_label_shapes(labels: Any, preds: Any, wrap: bool = False, shape: bool = False) -> tuple[Any, Any]:
    """Check that labels and predictions pair up (by count, or by shape with ``shape=True``).

    With ``wrap=True`` single arrays are wrapped in lists first.
    """
    if wrap:
        if isinstance(labels, NDArray | numpy.ndarray):
            labels = [labels]
        if isinstance(preds, NDArray | numpy.ndarray):
            preds = [preds]
    if shape:
        label_shape, pred_shape = labels.shape, preds.shape
    else:
        label_shape, pred_shape = len(labels), len(preds)
    if label_shape != pred_shape:
        raise MetricError(f"Shape of labels {label_shape} does not match shape of predictions {pred_shape}")
    return labels, preds


# ---------------------------------------------------------------------- registry
_REGISTRY: dict[str, type[EvalMetric]] = {}


def register(klass: type[EvalMetric]) -> type[EvalMetric]:
    """Class decorator: make ``klass`` creatable by its lower-case class name."""
    if not (isinstance(klass, type) and issubclass(klass, EvalMetric)):
        raise MetricError(f"mx.metric.register expects an EvalMetric subclass, got {klass!r}")
    _REGISTRY[klass.__name__.lower()] = klass
    return klass


def alias(*aliases: str) -> Callable[[type[EvalMetric]], type[EvalMetric]]:
    """Class decorator: also register ``klass`` under each alias (``"acc"`` for Accuracy)."""

    def reg(klass: type[EvalMetric]) -> type[EvalMetric]:
        for name in aliases:
            _REGISTRY[name.lower()] = klass
        return klass

    return reg


def _create(metric: Any, *args: Any, **kwargs: Any) -> EvalMetric:
    """Instance, name, JSON or config dict -> metric (MXNet's registry ``create``)."""
    if isinstance(metric, EvalMetric):
        if args or kwargs:
            raise MetricError(f"{metric.name} is already an instance; additional arguments are invalid")
        return metric
    if isinstance(metric, dict):
        config = dict(metric)
        if "metric" not in config:
            raise MetricError(f"mx.metric.create: a config dict needs a 'metric' key, got keys {sorted(config)}")
        return _create(config.pop("metric"), **config)
    if not isinstance(metric, str):
        raise MetricError(
            f"mx.metric.create: expected a name, list, callable or EvalMetric, got {type(metric).__name__}"
        )
    if metric.startswith("["):
        name, config = json.loads(metric)
        return _create(name, **config)
    if metric.startswith("{"):
        return _create(json.loads(metric))
    klass = _REGISTRY.get(metric.lower())
    if klass is None:
        raise MetricError(f"metric {metric!r} is not registered; registered metrics: {', '.join(sorted(_REGISTRY))}")
    return klass(*args, **kwargs)


def create(metric: Any, *args: Any, **kwargs: Any) -> EvalMetric:
    """A metric from a name (``"acc"``), an instance, a list of those, or a function.

    A function ``feval(label, pred)`` on NumPy arrays becomes a :class:`CustomMetric`; a
    list becomes a :class:`CompositeEvalMetric` of its elements.
    """
    if callable(metric) and not isinstance(metric, type):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    return _create(metric, *args, **kwargs)


# ---------------------------------------------------------------------- the base class
class EvalMetric:
    """Base class: keeps ``sum_metric`` / ``num_inst`` (local) and their global twins.

    Args:
        name: shown by ``get()``.
        output_names / label_names: which entries ``update_dict`` uses (default all).
    """

    def __init__(
        self, name: str, output_names: list[str] | None = None, label_names: list[str] | None = None, **kwargs: Any
    ) -> None:
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self) -> str:
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self) -> dict[str, Any]:
        """The arguments that recreate this metric with ``mx.metric.create(**config)``."""
        config = self._kwargs.copy()
        config.update(
            {
                "metric": type(self).__name__,
                "name": self.name,
                "output_names": self.output_names,
                "label_names": self.label_names,
            }
        )
        return config

    def update_dict(self, label: dict[str, Any], pred: dict[str, Any]) -> None:
        """``update`` with name -> array dicts, picking ``label_names`` / ``output_names``."""
        preds = [pred[name] for name in self.output_names] if self.output_names is not None else list(pred.values())
        labels = [label[name] for name in self.label_names] if self.label_names is not None else list(label.values())
        self.update(labels, preds)

    def update(self, labels: Any, preds: Any) -> None:
        """Add one batch: ``labels`` and ``preds`` are lists of arrays, one per output."""
        raise NotImplementedError(f"{type(self).__name__} must implement update(labels, preds)")

    def reset(self) -> None:
        """Forget everything (local and global)."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self) -> None:
        """Forget the local sums only; the global ones keep the whole epoch."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def _add(self, value: float, count: int) -> None:
        """Accumulate one batch into the local and global sums."""
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def get(self) -> tuple[Any, Any]:
        """``(name, sum_metric / num_inst)``, NaN before any update."""
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, float(self.sum_metric / self.num_inst))

    def get_global(self) -> tuple[Any, Any]:
        """Like ``get`` over everything since ``reset()`` (ignores ``reset_local``)."""
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, float(self.global_sum_metric / self.global_num_inst))

    def get_name_value(self) -> list[tuple[str, float]]:
        """``get()`` as a list of ``(name, value)`` pairs (several for composite metrics)."""
        return _pairs(*self.get())

    def get_global_name_value(self) -> list[tuple[str, float]]:
        return _pairs(*self.get_global()) if self._has_global_stats else self.get_name_value()


def _pairs(name: Any, value: Any) -> list[tuple[str, float]]:
    names = name if isinstance(name, list) else [name]
    values = value if isinstance(value, list) else [value]
    return list(zip(names, values, strict=True))


# ---------------------------------------------------------------------- composite
@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get()`` returns lists of names and values."""

    def __init__(
        self,
        metrics: list[Any] | None = None,
        name: str = "composite",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric: Any) -> None:
        """Add a child metric (anything ``create`` accepts)."""
        self.metrics.append(create(metric))

    def get_metric(self, index: int) -> EvalMetric:
        """The child metric at ``index``."""
        try:
            return self.metrics[index]
        except IndexError:
            raise MetricError(f"Metric index {index} is out of range 0 and {len(self.metrics)}") from None

    def update_dict(self, labels: dict[str, Any], preds: dict[str, Any]) -> None:
        if self.label_names is not None:
            labels = OrderedDict(i for i in labels.items() if i[0] in self.label_names)
        if self.output_names is not None:
            preds = OrderedDict(i for i in preds.items() if i[0] in self.output_names)
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels: Any, preds: Any) -> None:
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self) -> None:
        for metric in getattr(self, "metrics", []):  # reset() runs in __init__ before metrics exist
            metric.reset()

    def reset_local(self) -> None:
        for metric in self.metrics:
            metric.reset_local()

    def _collect(self, getter: str) -> tuple[list[str], list[float]]:
        names: list[str] = []
        values: list[float] = []
        for metric in self.metrics:
            name, value = getattr(metric, getter)()
            names.extend(name if isinstance(name, list) else [name])
            values.extend(value if isinstance(value, list) else [value])
        return names, values

    def get(self) -> tuple[list[str], list[float]]:
        return self._collect("get")

    def get_global(self) -> tuple[list[str], list[float]]:
        return self._collect("get_global")

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config["metrics"] = [m.get_config() for m in self.metrics]
        return config


# ---------------------------------------------------------------------- classification
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
            label_np = _as_numpy(label, "Accuracy: label")
            pred_np = _as_numpy(pred, "Accuracy: pred")
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
            pred_np = _as_numpy(pred, "TopKAccuracy: pred").astype("float32")
            if pred_np.ndim > 2:
                raise MetricError(f"TopKAccuracy: predictions should be no more than 2 dims, got {pred_np.shape}")
            label_np = _as_numpy(label, "TopKAccuracy: label").astype("int32")
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


class _BinaryClassificationMetrics:
    """True/false positive/negative counts of a binary classifier, local and global."""

    def __init__(self) -> None:
        self.reset_stats()

    def update_binary_stats(self, label: Any, pred: Any, owner: str) -> None:
        pred_np = _as_numpy(pred, f"{owner}: pred")
        label_np = _as_numpy(label, f"{owner}: label").astype("int32")
        if pred_np.ndim != 2:
            raise MetricError(f"{owner}: predictions must be (batch, 2) class scores, got shape {pred_np.shape}")
        pred_label = numpy.argmax(pred_np, axis=1)
        check_label_shapes(label_np, pred_np)
        if len(numpy.unique(label_np)) > 2:
            raise MetricError(
                f"{owner} currently only supports binary classification, got labels {numpy.unique(label_np)}"
            )
        pred_true = pred_label == 1
        pred_false = ~pred_true
        label_true = label_np.ravel() == 1
        label_false = ~label_true
        counts = {
            "true_positives": int((pred_true & label_true).sum()),
            "false_positives": int((pred_true & label_false).sum()),
            "false_negatives": int((pred_false & label_true).sum()),
            "true_negatives": int((pred_false & label_false).sum()),
        }
        for key, value in counts.items():
            setattr(self, key, getattr(self, key) + value)
            setattr(self, f"global_{key}", getattr(self, f"global_{key}") + value)

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
    def recall(self) -> float:
        return self._ratio(self.true_positives, self.false_negatives)

    @property
    def fscore(self) -> float:
        return self._f(self.precision, self.recall)

    @property
    def global_fscore(self) -> float:
        precision = self._ratio(self.global_true_positives, self.global_false_positives)
        recall = self._ratio(self.global_true_positives, self.global_false_negatives)
        return self._f(precision, recall)

    @property
    def total_examples(self) -> int:
        return self.false_negatives + self.false_positives + self.true_negatives + self.true_positives

    @property
    def global_total_examples(self) -> int:
        return (
            self.global_false_negatives
            + self.global_false_positives
            + self.global_true_negatives
            + self.global_true_positives
        )

    def local_reset_stats(self) -> None:
        self.false_positives = self.false_negatives = self.true_positives = self.true_negatives = 0

    def reset_stats(self) -> None:
        self.local_reset_stats()
        self.global_false_positives = self.global_false_negatives = 0
        self.global_true_positives = self.global_true_negatives = 0


@register
class F1(EvalMetric):
    """F1 score (harmonic mean of precision and recall) of a binary classifier; class 1 is positive.

    ``average="macro"`` averages the F1 of each batch; ``"micro"`` computes one F1 from the
    counts of all batches.
    """

    def __init__(
        self,
        name: str = "f1",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
        average: str = "macro",
    ) -> None:
        if average not in ("macro", "micro"):
            raise MetricError(f"F1: average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        self.metrics = _BinaryClassificationMetrics()
        super().__init__(name=name, output_names=output_names, label_names=label_names, has_global_stats=True)

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            self.metrics.update_binary_stats(label, pred, "F1")
        if self.average == "macro":
            self.sum_metric += self.metrics.fscore
            self.global_sum_metric += self.metrics.global_fscore
            self.num_inst += 1
            self.global_num_inst += 1
            self.metrics.reset_stats()
        else:
            self.sum_metric = self.metrics.fscore * self.metrics.total_examples
            self.global_sum_metric = self.metrics.global_fscore * self.metrics.global_total_examples
            self.num_inst = self.metrics.total_examples
            self.global_num_inst = self.metrics.global_total_examples

    def reset(self) -> None:
        super().reset()
        self.metrics.reset_stats()

    def reset_local(self) -> None:
        super().reset_local()
        self.metrics.local_reset_stats()


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
            pred_np = _as_numpy(pred, "Perplexity: pred")
            label_np = _as_numpy(label, "Perplexity: label")
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


# ---------------------------------------------------------------------- regression
def _as_columns(label: Any, pred: Any, owner: str) -> tuple[numpy.ndarray, numpy.ndarray]:
    """Labels and predictions with 1-d arrays turned into columns (N, 1), as MXNet does."""
    label_np = _as_numpy(label, f"{owner}: label")
    pred_np = _as_numpy(pred, f"{owner}: pred")
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


# ---------------------------------------------------------------------- probabilistic
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
            label_np = _as_numpy(label, f"{owner}: label").ravel()
            pred_np = _as_numpy(pred, f"{owner}: pred")
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
            values = _as_numpy(pred, "Loss: pred")
            self._add(float(values.sum()), values.size)


# ---------------------------------------------------------------------- user functions
@register
class CustomMetric(EvalMetric):
    """A metric from a function ``feval(label, pred)`` on NumPy arrays.

    ``feval`` returns the batch's value (counted as one instance) or a
    ``(sum_metric, num_inst)`` tuple.
    """

    def __init__(
        self,
        feval: Callable[[numpy.ndarray, numpy.ndarray], Any],
        name: str | None = None,
        allow_extra_outputs: bool = False,
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        if not callable(feval):
            raise MetricError(f"CustomMetric: feval must be callable(label, pred), got {feval!r}")
        if name is None:
            name = getattr(feval, "__name__", type(feval).__name__)
            if "<" in name:
                name = f"custom({name})"
        super().__init__(
            name,
            feval=feval,
            allow_extra_outputs=allow_extra_outputs,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=True,
        )
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels: Any, preds: Any) -> None:
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels, strict=False):  # extra outputs are skipped
            reval = self._feval(_as_numpy(label, f"{self.name}: label"), _as_numpy(pred, f"{self.name}: pred"))
            if isinstance(reval, tuple):
                sum_metric, num_inst = reval
                self._add(sum_metric, num_inst)
            else:
                self._add(reval, 1)

    def get_config(self) -> dict[str, Any]:
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(
    numpy_feval: Callable[[numpy.ndarray, numpy.ndarray], Any],
    name: str | None = None,
    allow_extra_outputs: bool = False,
) -> CustomMetric:
    """A :class:`CustomMetric` from a function of NumPy arrays (``mx.metric.np(f)``)."""

    def feval(label: numpy.ndarray, pred: numpy.ndarray) -> Any:
        return numpy_feval(label, pred)

    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)


__all__ = [
    "Accuracy",
    "CompositeEvalMetric",
    "CrossEntropy",
    "CustomMetric",
    "EvalMetric",
    "F1",
    "Loss",
    "MAE",
    "MSE",
    "MetricError",
    "NegativeLogLikelihood",
    "Perplexity",
    "RMSE",
    "TopKAccuracy",
    "alias",
    "check_label_shapes",
    "create",
    "np",
    "register",
]
