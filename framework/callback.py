"""``mx.callback``: functions a training loop calls after each batch or epoch (MXNet 1.x).

``Module.fit`` calls ``batch_end_callback(param)`` after every batch with a
:data:`BatchEndParam` (``epoch``, ``nbatch``, ``eval_metric``, ``locals``) and
``epoch_end_callback(epoch, symbol, arg_params, aux_params)`` after every epoch. The
callbacks here are the usual ones:

* :class:`Speedometer`: log samples per second and the training metric every few batches;
* :func:`log_train_metric`: log the training metric every few batches;
* :class:`ProgressBar`: log a text progress bar of the epoch;
* :class:`LogValidationMetricsCallback`: log the validation metric at the end of an epoch;
* :func:`do_checkpoint`: save the model every few epochs;
* :func:`module_checkpoint`: the same through a Module's own ``save_checkpoint``.

They report through :mod:`logging`, as MXNet's do.

Checkpointing needs the model serialiser, which lives above this module (MXNet's
``mx.model.save_checkpoint``). To keep layers importing downward only, the module that
provides it (the Module layer) registers it here with :func:`set_save_checkpoint`;
:func:`do_checkpoint` looks it up when it fires, and says so if nothing was registered.
A function can also be passed directly: ``do_checkpoint(prefix, save_fn=f)``.
"""

from __future__ import annotations

import logging
import math
import time
from collections import namedtuple
from collections.abc import Callable
from typing import Any

from .base import MXLabError

#: What a batch-end callback receives (MXNet's ``mx.model.BatchEndParam``).
BatchEndParam = namedtuple("BatchEndParam", ["epoch", "nbatch", "eval_metric", "locals"])

SaveCheckpointFn = Callable[..., None]
#: ``save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)``, set by set_save_checkpoint.
_save_checkpoint: SaveCheckpointFn | None = None


class CallbackError(MXLabError, ValueError):
    """A callback was configured wrongly or cannot do its job."""


def set_save_checkpoint(fn: SaveCheckpointFn | None) -> None:
    """Register the function :func:`do_checkpoint` calls (the Module layer registers its own)."""
    global _save_checkpoint
    if fn is not None and not callable(fn):
        raise CallbackError(f"set_save_checkpoint expects a callable or None, got {fn!r}")
    _save_checkpoint = fn


def _positive_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CallbackError(f"{what} must be a positive int, got {value!r}")
    return value


def module_checkpoint(mod: Any, prefix: str, period: int = 1, save_optimizer_states: bool = False) -> Callable:
    """Epoch-end callback: ``mod.save_checkpoint(prefix, epoch + 1, save_optimizer_states)`` every ``period``."""
    period = int(max(1, period))

    def _callback(iter_no: int, sym: Any = None, arg: Any = None, aux: Any = None) -> None:
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)

    return _callback


def do_checkpoint(prefix: str, period: int = 1, save_fn: SaveCheckpointFn | None = None) -> Callable:
    """Epoch-end callback saving ``prefix-symbol.json`` and ``prefix-%04d.params`` every ``period`` epochs.

    Epochs count from 0 in the callback and from 1 in file names: after the first epoch the
    file is ``prefix-0001.params``.
    """
    if not isinstance(prefix, str) or not prefix:
        raise CallbackError(f"do_checkpoint: prefix must be a non-empty string, got {prefix!r}")
    period = int(max(1, period))

    def _callback(iter_no: int, sym: Any, arg: dict, aux: dict) -> None:
        if (iter_no + 1) % period != 0:
            return
        save = save_fn or _save_checkpoint
        if save is None:
            raise CallbackError(
                "do_checkpoint: no save_checkpoint function is registered; register one with "
                "mx.callback.set_save_checkpoint (the Module layer does) or pass save_fn="
            )
        save(prefix, iter_no + 1, sym, arg, aux)

    return _callback


def log_train_metric(period: int, auto_reset: bool = False) -> Callable[[Any], None]:
    """Batch-end callback logging the training metric every ``period`` batches."""
    period = _positive_int(period, "log_train_metric: period")

    def _callback(param: Any) -> None:
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch, name, value)
            if auto_reset:
                param.eval_metric.reset_local()

    return _callback


class Speedometer:
    """Batch-end callback logging throughput (samples/sec) and the metric every ``frequent`` batches.

    The first call only starts the clock; the speed is ``frequent * batch_size`` over the time
    since the previous report. A batch count lower than the last one (a new epoch) restarts
    the clock. With ``auto_reset`` the metric is reset locally after each report, so each line
    shows the last ``frequent`` batches only.
    """

    def __init__(self, batch_size: int, frequent: int = 50, auto_reset: bool = True) -> None:
        self.batch_size = _positive_int(batch_size, "Speedometer: batch_size")
        self.frequent = _positive_int(frequent, "Speedometer: frequent")
        self.init = False
        self.tic = 0.0
        self.last_count = 0
        self.auto_reset = auto_reset
        #: The last measured speed in samples per second (None before the first report).
        self.last_speed: float | None = None

    def __call__(self, param: Any) -> None:
        count = param.nbatch
        if self.last_count > count:
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        elapsed = time.time() - self.tic
        speed = self.frequent * self.batch_size / elapsed if elapsed > 0 else float("inf")
        self.last_speed = speed
        if param.eval_metric is not None:
            name_value = param.eval_metric.get_name_value()
            flat = [item for pair in name_value for item in pair]
            if self.auto_reset:
                param.eval_metric.reset_local()
                msg = "Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(name_value)
                logging.info(msg, param.epoch, count - self.frequent, count, speed, *flat)
            else:
                msg = "Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(name_value)
                logging.info(msg, param.epoch, count, speed, *flat)
        else:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count, speed)
        self.tic = time.time()


class ProgressBar:
    """Batch-end callback logging ``[=====-----] 50%`` for ``nbatch`` out of ``total`` batches."""

    def __init__(self, total: int, length: int = 80) -> None:
        self.total = _positive_int(total, "ProgressBar: total")
        self.bar_len = _positive_int(length, "ProgressBar: length")

    def render(self, count: int) -> str:
        """The bar text for ``count`` batches done."""
        filled_len = round(self.bar_len * count / float(self.total))
        percents = math.ceil(100.0 * count / float(self.total))
        prog_bar = "=" * filled_len + "-" * (self.bar_len - filled_len)
        return f"[{prog_bar}] {percents}%"

    def __call__(self, param: Any) -> None:
        logging.info("%s\r", self.render(param.nbatch))


class LogValidationMetricsCallback:
    """Eval-end callback logging each validation metric of the epoch."""

    def __call__(self, param: Any) -> None:
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)


__all__ = [
    "BatchEndParam",
    "CallbackError",
    "LogValidationMetricsCallback",
    "ProgressBar",
    "Speedometer",
    "do_checkpoint",
    "log_train_metric",
    "module_checkpoint",
    "set_save_checkpoint",
]
