"""Scenario "train an MLP": ``Module.fit`` learns the handwritten digits, with live curves.

The network is 64 pixels -> FullyConnected(hidden) + relu -> FullyConnected(10) + softmax,
trained with ``Module.fit`` on scikit-learn's bundled digits (:mod:`.digits`). ``fit``
publishes a ``train.metric`` event per batch for every training metric and per epoch for
every validation metric; the scenario asks for two metrics, accuracy and cross-entropy
(the loss the softmax output minimises), so the UI can draw both curves:

* ``train-accuracy`` / ``train-cross-entropy``, ``phase="train"``, after every batch, for
  that batch alone (a batch-end callback resets the metric's *local* sums after each
  batch; the epoch's totals are kept in its *global* sums, which ``fit`` logs);
* ``validation-accuracy`` / ``validation-cross-entropy``, ``phase="validation"``, after
  every epoch, over the 360 validation images (scored as one batch, so that no padded
  image is counted twice).

With ``monitor_interval`` > 0 (the default) ``fit`` also runs an ``mx.mon.Monitor``: every
``monitor_interval``-th batch it records the root mean square of every layer output and
argument whose name matches ``monitor_pattern``, and publishes each as a ``monitor.stat``
event, which the UI's Training panel shows as a live table per layer.

:func:`train_digits` is shared with the data-parallel scenario (:mod:`.kvstore_parallel`).
"""

from __future__ import annotations

import gc
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator

import framework as mx
from framework import symbol as sym
from framework.module import Module

from . import digits
from .base import RunContext, Scenario, ScenarioParams, register

METRICS = ("acc", "ce")
#: SGD runs with momentum, as in MXNet's image-classification examples.
SGD_MOMENTUM = 0.9


class TrainMLPParams(ScenarioParams):
    """Parameters of the MLP training scenario (the defaults reach about 96% in a fraction of a second)."""

    hidden: int = Field(64, ge=8, le=512, description="units in the hidden layer (relu)")
    epochs: int = Field(5, ge=1, le=30, description="passes over the 1437 training images")
    batch_size: int = Field(32, ge=8, le=256, description="images per training batch (one optimizer step each)")
    learning_rate: float = Field(0.1, ge=0.0001, le=1.0, description="optimizer step size")
    optimizer: Literal["sgd", "adam"] = Field(
        "sgd", description="sgd (with momentum 0.9) or adam; adam wants a smaller learning rate, e.g. 0.01"
    )
    seed: int = Field(0, ge=0, le=2**31 - 1, description="seeds the initial weights and the batch order")
    monitor_interval: int = Field(
        5,
        ge=0,
        le=1000,
        description="mx.mon.Monitor records each layer's statistic every this many batches, for the Monitor "
        "table (0: no monitor)",
    )
    monitor_pattern: str = Field(
        ".*",
        min_length=1,
        max_length=200,
        description="regular expression: the arrays the monitor records (e.g. .*_output or fc1_.*)",
    )
    monitor_sort: bool = Field(False, description="Monitor's sort: rows by name instead of forward order")

    @field_validator("monitor_pattern")
    @classmethod
    def _pattern_compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(f"not a regular expression: {error}") from None
        return pattern


def mlp_symbol(hidden: int) -> sym.Symbol:
    """64 -> hidden relu -> 10 softmax."""
    h = sym.FullyConnected(sym.Variable("data"), num_hidden=hidden, name="fc1")
    h = sym.Activation(h, act_type="relu", name="relu1")
    h = sym.FullyConnected(h, num_hidden=digits.NUM_CLASSES, name="fc2")
    return sym.SoftmaxOutput(h, name="softmax")


@dataclass
class TrainingOutcome:
    """What :func:`train_digits` returns: the trained module, per-epoch metrics, wall time."""

    module: Module
    history: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    batches_per_epoch: int = 0


def _epoch_values(metric: mx.metric.EvalMetric, prefix: str) -> dict[str, float]:
    """The metric over the whole epoch (its global sums: the per-batch resets touch only the local ones)."""
    return {f"{prefix}_{name.replace('-', '_')}": float(value) for name, value in metric.get_global_name_value()}


def train_digits(
    *,
    hidden: int,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    optimizer: str,
    seed: int,
    context: list[mx.Context],
    kvstore: str | None = "local",
    ctx: RunContext | None = None,
    monitor: mx.mon.Monitor | None = None,
) -> TrainingOutcome:
    """Train :func:`mlp_symbol` on the digits with ``Module.fit`` and collect the metrics per epoch
    (``monitor``, if given, is installed by ``fit`` and publishes its statistics as events)."""
    data = digits.load()
    mx.random.seed(seed)
    np.random.seed(seed)  # NDArrayIter shuffles with NumPy's global generator (as MXNet does)
    train_iter = mx.io.NDArrayIter(data.x_train, data.y_train, batch_size=batch_size, shuffle=True)
    val_iter = mx.io.NDArrayIter(data.x_val, data.y_val, batch_size=len(data.x_val))
    optimizer_params: dict[str, Any] = {"learning_rate": learning_rate}
    if optimizer == "sgd":
        optimizer_params["momentum"] = SGD_MOMENTUM
    train_metric = mx.metric.create(list(METRICS))
    module = Module(
        mlp_symbol(hidden),
        data_names=["data"],
        label_names=["softmax_label"],
        context=context,
        logger=logging.getLogger(__name__),
    )
    outcome = TrainingOutcome(module)
    train_row: dict[str, Any] = {}

    def per_batch(param: Any) -> None:
        # fit published this batch's values; forget them so the next event is the next batch alone.
        outcome.batches_per_epoch = max(outcome.batches_per_epoch, param.nbatch + 1)
        param.eval_metric.reset_local()

    def at_epoch_end(epoch: int, symbol: Any, arg_params: Any, aux_params: Any) -> None:
        train_row.clear()
        train_row.update({"epoch": epoch, **_epoch_values(train_metric, "train")})

    def after_validation(param: Any) -> None:
        row = {**train_row, **_epoch_values(param.eval_metric, "validation")}
        outcome.history.append(row)
        if ctx is not None:
            shown = ", ".join(f"{k}={v:.4f}" for k, v in row.items() if k != "epoch")
            ctx.log(f"epoch {param.epoch}: {shown}")

    start = time.perf_counter()
    module.fit(
        train_iter,
        eval_data=val_iter,
        eval_metric=train_metric,
        validation_metric=mx.metric.create(list(METRICS)),
        batch_end_callback=per_batch,
        epoch_end_callback=at_epoch_end,
        eval_end_callback=after_validation,
        kvstore=kvstore,
        optimizer=optimizer,
        optimizer_params=optimizer_params,
        initializer=mx.init.Xavier(),
        num_epoch=epochs,
        progress_bar=False,
        monitor=monitor,
    )
    mx.nd.waitall()
    outcome.seconds = time.perf_counter() - start
    return outcome


def run(params: TrainMLPParams, ctx: RunContext) -> dict[str, Any]:
    """Train, then report the last epoch's metrics and the per-epoch history."""
    net = mlp_symbol(params.hidden)
    shape = {"data": (params.batch_size, digits.NUM_FEATURES)}
    ctx.set_graph(mx.viz.plot_network(net, title="mlp", shape=shape).source)
    monitor = None
    if params.monitor_interval > 0:
        monitor = mx.mon.Monitor(params.monitor_interval, pattern=params.monitor_pattern, sort=params.monitor_sort)
    outcome = train_digits(
        hidden=params.hidden,
        epochs=params.epochs,
        batch_size=params.batch_size,
        learning_rate=params.learning_rate,
        optimizer=params.optimizer,
        seed=params.seed,
        context=[mx.cpu(0)],
        kvstore=None,
        ctx=ctx,
        monitor=monitor,
    )
    last = outcome.history[-1]
    num_parameters = sum(array.size for array in outcome.module.get_params()[0].values())
    result = {
        "train_accuracy": last["train_accuracy"],
        "train_loss": last["train_cross_entropy"],
        "validation_accuracy": last["validation_accuracy"],
        "validation_loss": last["validation_cross_entropy"],
        "epochs": params.epochs,
        "batches_per_epoch": outcome.batches_per_epoch,
        "num_train": len(digits.load().x_train),
        "num_validation": len(digits.load().x_val),
        "num_parameters": int(num_parameters),
        "history": outcome.history,
        "seconds": round(outcome.seconds, 4),
    }
    # Free the module's arrays now, so their storage.free events belong to this run (the monitor
    # holds the module's executors too).
    del outcome, monitor
    gc.collect()
    mx.nd.waitall()
    return result


register(
    Scenario(
        name="train_mlp",
        title="Train an MLP on handwritten digits",
        description="Module.fit trains 64 -> hidden relu -> 10 softmax on scikit-learn's 8x8 digits; watch the "
        "loss and accuracy per batch and the validation accuracy per epoch.",
        params=TrainMLPParams,
        run=run,
        tutorial="tutorials/11-train-end-to-end.md",
        panels=("memory", "plan", "graph", "training"),
    )
)
