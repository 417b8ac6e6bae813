"""The metric base class, its registry and the input checks every metric shares.

A metric accumulates over the batches of an epoch: ``update(labels, preds)`` adds one
batch (lists of NDArrays, one entry per output of the network), ``get()`` returns
``(name, value)`` so far, ``reset()`` starts over. Most metrics keep two numbers,
``sum_metric`` and ``num_inst``, and report their ratio; that is what makes a metric over
many batches equal to the metric over their concatenation (for per-sample metrics).

Each metric also keeps *global* sums that ``reset_local()`` leaves alone, so a Speedometer
can report the last few batches while the epoch total survives.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy

from ..base import MXLabError
from ..ndarray import NDArray


class MetricError(MXLabError, ValueError):
    """Labels and predictions do not fit the metric, or the metric is configured wrongly."""


def as_numpy(value: Any, what: str) -> numpy.ndarray:
    """The host copy of one label or prediction (``asnumpy()`` waits for the engine)."""
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
# Lower-case name or alias -> metric class; filled by the @register / @alias decorators of
# the family modules, read by mx.metric.create.
_REGISTRY: dict[str, type[EvalMetric]] = {}


def register(klass: type[EvalMetric], name: str | None = None) -> type[EvalMetric]:
    """Class decorator: make ``klass`` creatable by ``name`` (default its class name), case-insensitively.

    Registering a name again replaces the earlier class, with a warning naming both.
    """
    if not (isinstance(klass, type) and issubclass(klass, EvalMetric)):
        raise MetricError(f"mx.metric.register expects an EvalMetric subclass, got {klass!r}")
    key = (klass.__name__ if name is None else name).lower()
    previous = _REGISTRY.get(key)
    if previous is not None and previous is not klass:
        warnings.warn(
            f"metric {klass.__module__}.{klass.__name__} registered as {key!r} replaces "
            f"{previous.__module__}.{previous.__name__}",
            stacklevel=2,
        )
    _REGISTRY[key] = klass
    return klass


def alias(*aliases: str) -> Callable[[type[EvalMetric]], type[EvalMetric]]:
    """Class decorator: also register ``klass`` under each alias (``"acc"`` for Accuracy)."""

    def reg(klass: type[EvalMetric]) -> type[EvalMetric]:
        for name in aliases:
            register(klass, name)
        return klass

    return reg


def registered(name: str) -> type[EvalMetric]:
    """The class registered under ``name`` (case-insensitive), or a MetricError listing the names."""
    klass = _REGISTRY.get(name.lower())
    if klass is None:
        raise MetricError(f"metric {name!r} is not registered; registered metrics: {', '.join(sorted(_REGISTRY))}")
    return klass


# ---------------------------------------------------------------------- the base class
class EvalMetric:
    """Base class: keeps ``sum_metric`` / ``num_inst`` (local) and their global twins.

    Args:
        name: shown by ``get()``.
        output_names / label_names: which entries ``update_dict`` uses (default all).
        has_global_stats (keyword): keep global sums apart from the local ones; without it
            ``get_global`` is ``get``. Other keywords are remembered for ``get_config``.
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
        """Accumulate one batch into the local and global sums. A float32 batch value joins them
        as a Python float (float64), as in MXNet: a float32 running sum drifts in the sixth digit
        over an epoch. Counts (Accuracy's) stay integers."""
        if isinstance(value, numpy.floating):
            value = float(value)
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
        """``get_global()`` as ``(name, value)`` pairs; ``get_name_value()`` without global stats."""
        return _pairs(*self.get_global()) if self._has_global_stats else self.get_name_value()


def _pairs(name: Any, value: Any) -> list[tuple[str, float]]:
    names = name if isinstance(name, list) else [name]
    values = value if isinstance(value, list) else [value]
    return list(zip(names, values, strict=True))
