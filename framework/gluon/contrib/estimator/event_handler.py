"""The Estimator's event handlers: what happens at the begin/end of training, of an epoch, of a batch.

A handler subclasses one mixin per event it handles (``TrainBegin``, ``EpochEnd``, ...) and gets
the Estimator as argument. A ``batch_end`` that returns True ends the epoch, an ``epoch_end`` that
returns True ends training (so a handler that stops, like StoppingHandler, returns True from both).
The loop calls the handlers of one event in ``priority`` order (lower first), so the gradient
update (-2000) runs before the metrics (-1000), validation (-1000) and logging (last).
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any

import numpy as np

from ....metric import EvalMetric
from ....metric import Loss as LossMetric
from ...block import BlockError, HybridBlock

__all__ = [
    "BatchBegin",
    "BatchEnd",
    "CheckpointHandler",
    "EarlyStoppingHandler",
    "EpochBegin",
    "EpochEnd",
    "GradientUpdateHandler",
    "LoggingHandler",
    "MetricHandler",
    "StoppingHandler",
    "TrainBegin",
    "TrainEnd",
    "ValidationHandler",
]


class EventHandler:
    """Base of the mixins (lets the Estimator tell handlers from other objects)."""


class TrainBegin(EventHandler):
    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Called once before the first epoch."""


class TrainEnd(EventHandler):
    def train_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Called once after training stopped."""


class EpochBegin(EventHandler):
    def epoch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Called before each epoch."""


class EpochEnd(EventHandler):
    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Called after each epoch; True ends training."""
        return False


class BatchBegin(EventHandler):
    def batch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Called before each batch (``batch=`` the batch)."""


class BatchEnd(EventHandler):
    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Called after each batch (``batch``, ``pred``, ``label``, ``loss``); True ends the epoch."""
        return False


class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Stops after ``max_epoch`` epochs or ``max_batch`` batches (the Estimator adds one from ``fit``)."""

    def __init__(self, max_epoch: int | None = None, max_batch: int | None = None) -> None:
        self.max_epoch = max_epoch
        self.max_batch = max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.max_epoch = estimator.max_epoch
        self.max_batch = estimator.max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        self.current_batch += 1
        if self.current_batch == self.max_batch:
            self.stop_training = True
        return self.stop_training

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        self.current_epoch += 1
        if self.current_epoch == self.max_epoch:
            self.stop_training = True
        return self.stop_training


class MetricHandler(EpochBegin, BatchEnd):
    """Resets ``metrics`` at each epoch and updates them after each batch (``Loss`` metrics from the loss)."""

    def __init__(self, metrics: list[EvalMetric], priority: float = -1000) -> None:
        self.metrics = _as_metric_list(metrics)
        self.priority = priority

    def epoch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        for metric in self.metrics:
            metric.reset()

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        pred, label, loss = kwargs["pred"], kwargs["label"], kwargs["loss"]
        for metric in self.metrics:
            if isinstance(metric, LossMetric):
                metric.update(0, loss)  # a Loss metric averages the loss values; the labels are unused
            else:
                metric.update(label, pred)
        return False


class GradientUpdateHandler(BatchEnd):
    """After each batch, ``trainer.step(batch_size)`` with the batch size counted from the losses."""

    def __init__(self, priority: float = -2000) -> None:
        self.priority = priority

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        loss = kwargs["loss"]
        batch_size = sum(each.shape[0] for each in loss) if isinstance(loss, list) else loss.shape[0]
        estimator.trainer.step(batch_size)
        return False


class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Runs ``eval_fn(val_data=..., event_handlers=...)`` every ``epoch_period`` epochs / ``batch_period`` batches."""

    def __init__(
        self,
        val_data: Any,
        eval_fn: Any,
        epoch_period: int | None = 1,
        batch_period: int | None = None,
        priority: float = -1000,
        event_handlers: Any = None,
    ) -> None:
        self.val_data = val_data
        self.eval_fn = eval_fn
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.priority = priority
        self.event_handlers = event_handlers
        self.current_batch = 0
        self.current_epoch = 0

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.current_batch = 0
        self.current_epoch = 0

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self.eval_fn(val_data=self.val_data, event_handlers=self.event_handlers)
        return False

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self.eval_fn(val_data=self.val_data, event_handlers=self.event_handlers)
        return False


class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Logs the metrics through ``estimator.logger`` at each epoch's end, or every ``log_interval`` batches."""

    def __init__(
        self, log_interval: str | int = "epoch", metrics: list[EvalMetric] | None = None, priority: float = np.inf
    ) -> None:
        if not (log_interval == "epoch" or (isinstance(log_interval, int) and log_interval > 0)):
            raise BlockError(f"LoggingHandler: log_interval must be 'epoch' or a positive int, got {log_interval!r}")
        self.log_interval = log_interval
        self.metrics = _as_metric_list(metrics or [])
        self.priority = priority
        self.batch_index = 0
        self.current_epoch = 0
        self.processed_samples = 0
        self.train_start = self.epoch_start = self.batch_start = self.interval_time = 0.0

    def _metric_text(self) -> str:
        return ", ".join(f"{name}: {value:.4f}" for m in self.metrics for name, value in _name_values(m))

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.train_start = time.time()
        self.current_epoch = 0
        self.batch_index = 0
        trainer = estimator.trainer
        estimator.logger.info(
            "Training begin: using optimizer %s with current learning rate %.4f ",
            type(trainer._optimizer).__name__,
            trainer.learning_rate,
        )
        if estimator.max_epoch:
            estimator.logger.info("Train for %d epochs.", estimator.max_epoch)
        else:
            estimator.logger.info("Train for %d batches.", estimator.max_batch)

    def train_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        elapsed = time.time() - self.train_start
        estimator.logger.info(
            "[Epoch %d] Train finished using total %ds with %s", self.current_epoch, elapsed, self._metric_text()
        )

    def epoch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.epoch_start = time.time()
        self.processed_samples = 0
        self.interval_time = 0.0
        if self.log_interval != "epoch":
            estimator.logger.info(
                "[Epoch %d] Begin, current learning rate: %.4f", self.current_epoch, estimator.trainer.learning_rate
            )

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        elapsed = time.time() - self.epoch_start
        estimator.logger.info("[Epoch %d] Finished in %.3fs, %s", self.current_epoch, elapsed, self._metric_text())
        self.current_epoch += 1
        self.batch_index = 0
        return False

    def batch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        if self.log_interval != "epoch":
            self.batch_start = time.time()

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        if self.log_interval != "epoch":
            batch = kwargs["batch"]
            self.processed_samples += batch[0].shape[0]
            self.interval_time += time.time() - self.batch_start  # the batches' own time, handlers' included
            if self.batch_index % self.log_interval == 0:
                estimator.logger.info(
                    "[Epoch %d][Batch %d][Samples %d] time/interval: %.3fs %s",
                    self.current_epoch, self.batch_index, self.processed_samples, self.interval_time,
                    self._metric_text(),
                )  # fmt: skip
                self.interval_time = 0.0
        self.batch_index += 1
        return False


class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Saves ``<model_prefix>-epoch<E>batch<B>.params`` (and the trainer's ``.states``) periodically.

    With ``save_best`` it also keeps ``<model_prefix>-best.params`` for the best ``monitor`` value;
    it keeps the last ``max_checkpoints`` periodic checkpoints, and with ``resume_from_checkpoint``
    loads the latest one at ``train_begin`` and trains only the epochs/batches left.
    """

    def __init__(
        self,
        model_dir: str,
        model_prefix: str = "model",
        monitor: EvalMetric | None = None,
        verbose: int = 0,
        save_best: bool = False,
        mode: str = "auto",
        epoch_period: int | None = 1,
        batch_period: int | None = None,
        max_checkpoints: int = 5,
        resume_from_checkpoint: bool = False,
    ) -> None:
        self.monitor = monitor
        self.verbose = verbose
        if not os.path.exists(model_dir):
            os.makedirs(model_dir)
        self.model_dir = model_dir
        self.model_prefix = model_prefix
        self.save_best = save_best
        if self.save_best and not isinstance(self.monitor, EvalMetric):
            raise BlockError(
                "CheckpointHandler: save_best=True needs a monitor, an EvalMetric such as the Estimator's "
                "train_metrics or val_metrics"
            )
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.max_checkpoints = max_checkpoints
        self.resume_from_checkpoint = resume_from_checkpoint
        self.saved_checkpoints: list[str] = []
        if self.save_best:
            self.monitor_op, self.best = _comparison("CheckpointHandler", mode, self.monitor)

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.current_batch = 0
        self.current_epoch = 0
        if self.save_best:
            self.best = np.inf if self.monitor_op is np.less else -np.inf
        if self.resume_from_checkpoint:
            self._resume(estimator)

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self._save_checkpoint(estimator)
        return False

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        return False

    def _save_checkpoint(self, estimator: Any) -> None:
        prefix = f"{self.model_prefix}-epoch{self.current_epoch}batch{self.current_batch}"
        self._save_params_and_trainer(estimator, prefix)
        if self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: saved checkpoint to %s", self.current_epoch, prefix)
        self.saved_checkpoints.append(prefix)
        while len(self.saved_checkpoints) > self.max_checkpoints:
            oldest = self.saved_checkpoints.pop(0)
            for ext in (".params", ".states"):
                path = os.path.join(self.model_dir, oldest + ext)
                if os.path.exists(path):
                    os.remove(path)
        if self.save_best:
            _, value = _name_values(self.monitor)[0]
            if np.isnan(value):
                warnings.warn(
                    f"CheckpointHandler: monitor {self.monitor.name} is NaN, skipping save_best", stacklevel=2
                )
            elif self.monitor_op(value, self.best):
                self.best = value
                self._save_params_and_trainer(estimator, f"{self.model_prefix}-best")
                if self.verbose > 0:
                    estimator.logger.info(
                        "CheckpointHandler: %s improved to %.4f, saved best model", self.monitor.name, value
                    )

    def _save_params_and_trainer(self, estimator: Any, prefix: str) -> None:
        net = estimator.net
        if isinstance(net, HybridBlock) and getattr(net, "_cached_graph", None):
            net.export(os.path.join(self.model_dir, prefix))  # a hybridized net: its symbol too, as MXNet does
        net.save_parameters(os.path.join(self.model_dir, prefix + ".params"))
        estimator.trainer.save_states(os.path.join(self.model_dir, prefix + ".states"))

    def _resume(self, estimator: Any) -> None:
        """Load the checkpoint with the highest epoch (then batch) and shorten the remaining training."""
        found = []
        prefix = f"{self.model_prefix}-epoch"
        for name in os.listdir(self.model_dir):
            if name.startswith(prefix) and name.endswith(".params") and "batch" in name:
                epoch, _, batch = name[len(prefix) : -len(".params")].partition("batch")
                if epoch.isdigit() and batch.isdigit():
                    found.append((int(epoch), int(batch), name[: -len(".params")]))
        if not found:
            estimator.logger.info(
                "CheckpointHandler: no checkpoint of %s in %s, training from scratch", self.model_prefix, self.model_dir
            )
            return
        epoch, batch, stem = max(found)
        estimator.net.load_parameters(os.path.join(self.model_dir, stem + ".params"), ctx=estimator.context)
        estimator.trainer.load_states(os.path.join(self.model_dir, stem + ".states"))
        self.current_epoch, self.current_batch = epoch, batch
        if estimator.max_epoch:
            if epoch >= estimator.max_epoch:
                raise BlockError(
                    f"CheckpointHandler: the checkpoint {stem} already trained {epoch} epochs, "
                    f"fit asked for {estimator.max_epoch}; remove the checkpoints or ask for more epochs"
                )
            estimator.max_epoch -= epoch
        if estimator.max_batch:
            if batch >= estimator.max_batch:
                raise BlockError(
                    f"CheckpointHandler: the checkpoint {stem} already trained {batch} batches, "
                    f"fit asked for {estimator.max_batch}; remove the checkpoints or ask for more batches"
                )
            estimator.max_batch -= batch
        estimator.logger.info("CheckpointHandler: resumed from %s (epoch %d, batch %d)", stem, epoch, batch)


class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Stops when ``monitor`` has not improved by ``min_delta`` for more than ``patience`` epochs."""

    def __init__(
        self,
        monitor: EvalMetric,
        min_delta: float = 0,
        patience: int = 0,
        mode: str = "auto",
        baseline: float | None = None,
    ) -> None:
        if not isinstance(monitor, EvalMetric):
            raise BlockError(
                "EarlyStoppingHandler: monitor must be an EvalMetric, "
                "such as one of the Estimator's train_metrics or val_metrics"
            )
        self.monitor = monitor
        self.baseline = baseline
        self.patience = patience
        self.min_delta = min_delta
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        self.monitor_op, self.best = _comparison("EarlyStoppingHandler", mode, monitor)
        # min_delta counts in the direction of improvement
        self.min_delta = abs(min_delta) if self.monitor_op is np.greater else -abs(min_delta)

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        _, value = _name_values(self.monitor)[0]
        if np.isnan(value):
            warnings.warn(
                f"EarlyStoppingHandler: monitor {self.monitor.name} is NaN, skipping this epoch", stacklevel=2
            )
        elif self.monitor_op(value - self.min_delta, self.best):
            self.best = value
            self.wait = 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = self.current_epoch
                self.stop_training = True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        if self.stopped_epoch > 0:
            estimator.logger.info(
                "[Epoch %d] EarlyStoppingHandler: early stopping due to %s not improving",
                self.stopped_epoch,
                self.monitor.name,
            )


# ----------------------------------------------------------------------------- helpers
def _as_metric_list(metrics: Any) -> list[EvalMetric]:
    metrics = list(metrics) if isinstance(metrics, list | tuple) else [metrics]
    for metric in metrics:
        if not isinstance(metric, EvalMetric):
            raise BlockError(f"metrics must be mx.metric.EvalMetric instances, got {type(metric).__name__}")
    return metrics


def _name_values(metric: EvalMetric) -> list[tuple[str, float]]:
    """``metric.get()`` as (name, value) pairs whether it holds one value or several."""
    names, values = metric.get()
    if isinstance(names, list | tuple):
        return list(zip(names, values, strict=True))
    return [(names, values)]


def _comparison(who: str, mode: str, monitor: EvalMetric) -> tuple[Any, float]:
    """``(np.less or np.greater, worst value)``: ``auto`` reads 'acc' or 'f1' in the name as higher-is-better."""
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{who}: mode {mode!r} is unknown, using 'auto'", stacklevel=3)
        mode = "auto"
    if mode == "auto":
        name = monitor.get()[0]
        name = name[0] if isinstance(name, list | tuple) else name
        mode = "max" if ("acc" in name or "f1" in name) else "min"
    return (np.less, np.inf) if mode == "min" else (np.greater, -np.inf)
