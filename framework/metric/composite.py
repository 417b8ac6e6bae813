"""Metrics built from other metrics or from user functions, and ``create``, which builds any metric.

``create`` accepts a registered name or alias (``"acc"``), an instance, a config dict or
its JSON (what ``get_config`` returns), a list of any of those (a
:class:`CompositeEvalMetric`), or a function ``feval(label, pred)`` (a :class:`CustomMetric`).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy

from .base import EvalMetric, MetricError, alias, as_numpy, check_label_shapes, register, registered


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
    return registered(metric)(*args, **kwargs)


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
            reval = self._feval(as_numpy(label, f"{self.name}: label"), as_numpy(pred, f"{self.name}: pred"))
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
