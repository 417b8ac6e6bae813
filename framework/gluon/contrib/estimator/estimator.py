"""``Estimator``: a ready-made Gluon training loop whose every step is an event for handlers.

``fit`` runs epochs of batches; around each it calls the event handlers (:mod:`.event_handler`)
in priority order: the gradient update, metrics, validation, checkpoints, early stopping and
logging are all handlers, and those ``fit`` was not given are added with their defaults. What
happens to one batch (split, forward, loss, backward) is the :class:`~.BatchProcessor`'s.
"""

from __future__ import annotations

import copy
import logging
import sys
import warnings
from typing import Any

from .... import context as _context
from .... import initializer as _initializer
from ....metric import MAE, MSE, Accuracy, EvalMetric
from ....metric import Loss as LossMetric
from ...block import BlockError
from ...data.dataloader import DataLoader
from ...loss import L1Loss, L2Loss, Loss, SoftmaxCrossEntropyLoss
from ...parameter import ParameterError
from ...trainer import Trainer
from .batch_processor import BatchProcessor
from .event_handler import (
    BatchBegin,
    BatchEnd,
    EpochBegin,
    EpochEnd,
    EventHandler,
    GradientUpdateHandler,
    LoggingHandler,
    MetricHandler,
    StoppingHandler,
    TrainBegin,
    TrainEnd,
    ValidationHandler,
)

__all__ = ["Estimator"]


def _suggest_metric_for_loss(loss: Loss) -> EvalMetric | None:
    """The metric that usually goes with ``loss`` (accuracy for classification, MAE/MSE for regression)."""
    if isinstance(loss, SoftmaxCrossEntropyLoss):
        return Accuracy()
    if isinstance(loss, L1Loss):
        return MAE()
    if isinstance(loss, L2Loss):
        return MSE()
    return None


class Estimator:
    """Train and evaluate ``net`` with ``loss``; see ``fit`` and ``evaluate``."""

    logger: logging.Logger | None = None

    def __init__(
        self,
        net: Any,
        loss: Loss,
        train_metrics: Any = None,
        val_metrics: Any = None,
        initializer: Any = None,
        trainer: Trainer | None = None,
        context: Any = None,
        val_net: Any = None,
        val_loss: Loss | None = None,
        batch_processor: BatchProcessor | None = None,
    ) -> None:
        self.net = net
        self.loss = self._check_loss(loss)
        self._train_metrics = _check_metrics(train_metrics)
        self._val_metrics = _check_metrics(val_metrics)
        self._add_default_training_metrics()
        self._add_validation_metrics()
        self.val_loss = self.loss if val_loss is None else self._check_loss(val_loss)
        self.val_net = self.net if val_net is None else val_net
        self.logger = logging.Logger(name="Estimator", level=logging.INFO)
        self.logger.addHandler(logging.StreamHandler(sys.stdout))
        self.context = self._check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)
        self.max_epoch: int | None = None
        self.max_batch: int | None = None

    # ------------------------------------------------------------------ checks and defaults
    def _check_loss(self, loss: Any) -> Loss:
        if not isinstance(loss, Loss):
            raise BlockError(f"Estimator: loss must be a mx.gluon.loss.Loss, got {type(loss).__name__}")
        return loss

    def _check_context(self, context: Any) -> list:
        if context is None:  # every GPU if there are any, else the CPU
            gpus = _context.num_gpus()
            return [_context.gpu(i) for i in range(gpus)] if gpus else [_context.cpu()]
        contexts = list(context) if isinstance(context, list | tuple) else [context]
        if not contexts or not all(isinstance(c, _context.Context) for c in contexts):
            raise BlockError(f"Estimator: context must be a Context or a list of Contexts, got {context!r}")
        return contexts

    def _check_batch_processor(self, batch_processor: Any) -> BatchProcessor:
        if batch_processor is None:
            return BatchProcessor()
        if not isinstance(batch_processor, BatchProcessor):
            raise BlockError(
                f"Estimator: batch_processor must be a BatchProcessor, got {type(batch_processor).__name__}"
            )
        return batch_processor

    def _is_initialized(self) -> bool:
        """Every parameter initialized (deferred initialization counts: its contexts are known)."""
        try:
            for param in self.net.collect_params().values():
                param.list_ctx()
        except ParameterError:
            return False
        return True

    def _initialize(self, initializer: Any) -> None:
        if not self._is_initialized():
            self.net.initialize(
                init=initializer if initializer is not None else _initializer.Xavier(), ctx=self.context
            )
        elif initializer is not None:
            warnings.warn(
                "Estimator: the network is already initialized; the initializer given is not used "
                "(call net.initialize(force_reinit=True) to re-initialize)",
                stacklevel=3,
            )

    def _check_trainer(self, trainer: Any) -> Trainer:
        if trainer is None:
            warnings.warn("Estimator: no trainer given, using SGD with learning rate 0.001", stacklevel=3)
            return Trainer(self.net.collect_params(), "sgd", {"learning_rate": 0.001})
        if not isinstance(trainer, Trainer):
            raise BlockError(f"Estimator: trainer must be a mx.gluon.Trainer, got {type(trainer).__name__}")
        return trainer

    def _add_default_training_metrics(self) -> None:
        if not self._train_metrics:
            suggested = _suggest_metric_for_loss(self.loss)
            if suggested is not None:
                self._train_metrics = [suggested]
            self._train_metrics.append(LossMetric(self.loss.name.rstrip("1234567890")))
        for metric in self._train_metrics:
            # handlers tell the two sets apart by these prefixes
            metric.name = "training " + metric.name

    def _add_validation_metrics(self) -> None:
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(metric) for metric in self._train_metrics]
        for metric in self._val_metrics:
            base = metric.name[len("training ") :] if metric.name.startswith("training ") else metric.name
            metric.name = "validation " + base

    @property
    def train_metrics(self) -> list[EvalMetric]:
        return self._train_metrics

    @property
    def val_metrics(self) -> list[EvalMetric]:
        return self._val_metrics

    # ------------------------------------------------------------------ the loops
    def evaluate(self, val_data: Any, batch_axis: int = 0, event_handlers: Any = None) -> None:
        """One pass over ``val_data`` updating ``val_metrics`` (read them with ``metric.get()``)."""
        _check_data("evaluate", "val_data", val_data)
        for metric in self.val_metrics:
            metric.reset()
        handlers = self._prepare_default_validation_handlers(event_handlers)
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = self._categorize_handlers(handlers)
        for handler in epoch_begin:
            handler.epoch_begin(self)
        for batch in val_data:
            for handler in batch_begin:
                handler.batch_begin(self, batch=batch)
            _, label, pred, loss = self.batch_processor.evaluate_batch(self, batch, batch_axis)
            for handler in batch_end:
                handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
        for handler in epoch_end:
            handler.epoch_end(self)

    def fit(
        self,
        train_data: Any,
        val_data: Any = None,
        epochs: int | None = None,
        event_handlers: Any = None,
        batches: int | None = None,
        batch_axis: int = 0,
    ) -> None:
        """Train for ``epochs`` epochs or ``batches`` batches (exactly one of them), validating on ``val_data``."""
        _check_data("fit", "train_data", train_data)
        if val_data is not None:
            _check_data("fit", "val_data", val_data)
        if (epochs is None) == (batches is None):
            raise BlockError(
                f"Estimator.fit: give exactly one of epochs and batches, got epochs={epochs}, batches={batches}"
            )
        for what, value in (("epochs", epochs), ("batches", batches)):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise BlockError(f"Estimator.fit: {what} must be a positive int, got {value!r}")
        self.max_epoch, self.max_batch = epochs, batches
        handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = self._categorize_handlers(handlers)
        for handler in train_begin:
            handler.train_begin(self)
        while True:
            for handler in epoch_begin:
                handler.epoch_begin(self)
            for batch in train_data:
                for handler in batch_begin:
                    handler.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.fit_batch(self, batch, batch_axis)
                stop = [h.batch_end(self, batch=batch, pred=pred, label=label, loss=loss) for h in batch_end]
                if any(stop):
                    break
            if any([h.epoch_end(self) for h in epoch_end]):  # a list: every handler sees the epoch end
                break
        for handler in train_end:
            handler.train_end(self)

    # ------------------------------------------------------------------ handlers
    def _prepare_default_handlers(self, val_data: Any, event_handlers: Any) -> list[EventHandler]:
        handlers = _check_event_handlers(event_handlers)
        added: list[EventHandler] = []

        def missing(kind: type) -> bool:
            return not any(isinstance(h, kind) for h in handlers)

        if missing(StoppingHandler):
            added.append(StoppingHandler(self.max_epoch, self.max_batch))
        if missing(GradientUpdateHandler):
            added.append(GradientUpdateHandler())
        if missing(MetricHandler):
            added.append(MetricHandler(metrics=self.train_metrics))
        if val_data is not None and missing(ValidationHandler):
            added.append(ValidationHandler(val_data=val_data, eval_fn=self.evaluate))
        if missing(LoggingHandler):
            shown = self.train_metrics + (self.val_metrics if val_data is not None else [])
            added.append(LoggingHandler(metrics=shown))
        handlers = handlers + added
        handlers.sort(key=lambda h: getattr(h, "priority", 0))  # stable: given handlers first among equals
        return handlers

    def _prepare_default_validation_handlers(self, event_handlers: Any) -> list[EventHandler]:
        handlers = _check_event_handlers(event_handlers)
        if not any(isinstance(h, MetricHandler) for h in handlers):
            handlers.append(MetricHandler(metrics=self.val_metrics))
        handlers.sort(key=lambda h: getattr(h, "priority", 0))
        return handlers

    def _categorize_handlers(self, handlers: list[EventHandler]) -> tuple[list, list, list, list, list, list]:
        kinds = (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd)
        return tuple([h for h in handlers if isinstance(h, kind)] for kind in kinds)  # type: ignore[return-value]


def _check_metrics(metrics: Any) -> list[EvalMetric]:
    if metrics is None:
        return []
    metrics = list(metrics) if isinstance(metrics, list | tuple) else [metrics]
    for metric in metrics:
        if not isinstance(metric, EvalMetric):
            raise BlockError(f"Estimator: metrics must be mx.metric.EvalMetric instances, got {type(metric).__name__}")
    return metrics


def _check_event_handlers(event_handlers: Any) -> list[EventHandler]:
    if event_handlers is None:
        return []
    handlers = list(event_handlers) if isinstance(event_handlers, list | tuple) else [event_handlers]
    for handler in handlers:
        if not isinstance(handler, EventHandler):
            raise BlockError(
                f"Estimator: event handlers must subclass the estimator's event mixins (TrainBegin, BatchEnd...), "
                f"got {type(handler).__name__}"
            )
    return handlers


def _check_data(method: str, name: str, data: Any) -> None:
    if not isinstance(data, DataLoader):
        raise BlockError(f"Estimator.{method}: {name} must be a mx.gluon.data.DataLoader, got {type(data).__name__}")
