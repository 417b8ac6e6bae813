"""``BaseModule``: the training loop, written once against a small set of steps.

A concrete module implements the steps that :class:`~.interface.ModuleInterface` names
(``bind``, ``init_params``, ``init_optimizer``, ``forward``, ``backward``, ``update``,
``get_outputs``, ``update_metric``, ...). This class turns them into the high-level API every
MXNet user knows:

* :meth:`BaseModule.fit`: epochs of ``forward_backward`` + ``update`` + ``update_metric``
  over a data iterator, with callbacks, logging (``Epoch[0] Train-accuracy=0.93``), a
  progress bar (:mod:`.progress`), ``train.metric`` events for live curves, validation
  after each epoch, and a clear stop when the loss turns NaN;
* :meth:`BaseModule.score`: run a data set forward and evaluate a metric;
* :meth:`BaseModule.predict` / :meth:`BaseModule.iter_predict`: collect outputs;
* :meth:`BaseModule.save_params` / :meth:`BaseModule.load_params` / :meth:`BaseModule.set_params`:
  parameters to and from ``.params`` files and dicts.

The checks ``bind`` makes on input names and shapes are in :mod:`.input_checks`.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .. import events, metric
from .. import initializer as init
from .. import ndarray as nd
from ..base import MXLabError
from ..callback import BatchEndParam
from ..io import DataBatch
from ..model import params_dict, split_params
from ..ndarray import NDArray
from .executor_group import ModuleError
from .interface import ModuleInterface
from .progress import _EpochProgress, _num_batches, progress_enabled


class TrainingDivergedError(MXLabError, FloatingPointError):
    """``fit`` stopped because the loss (an output or the training metric) became NaN."""


def _as_list(obj: Any) -> list[Any]:
    return list(obj) if isinstance(obj, list | tuple) else [obj]


class BaseModule(ModuleInterface):
    """The high-level API (fit, score, predict) built on the steps of :class:`ModuleInterface`.

    Subclasses (``Module``) implement the intermediate steps; see :mod:`.interface`.
    """

    # ------------------------------------------------------------------ high-level API
    def forward_backward(self, data_batch: Any) -> None:
        """``forward(is_train=True)`` then ``backward()``: one step's computation."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def score(
        self,
        eval_data: Any,
        eval_metric: Any,
        num_batch: int | None = None,
        batch_end_callback: Any = None,
        score_end_callback: Any = None,
        reset: bool = True,
        epoch: int = 0,
        sparse_row_id_fn: Any = None,
    ) -> list[tuple[str, float]]:
        """Run ``eval_data`` forward (inference mode) and return ``eval_metric``'s ``(name, value)`` pairs."""
        self._require("score", bound=True, params=True)
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            if isinstance(eval_batch, list):
                self.update_metric(eval_metric, [b.label for b in eval_batch], pre_sliced=True)
            else:
                self.update_metric(eval_metric, eval_batch.label)
            if batch_end_callback is not None:
                params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals())
                for cb in _as_list(batch_end_callback):
                    cb(params)
            actual_num_batch += 1
        if score_end_callback:
            params = BatchEndParam(epoch=epoch, nbatch=actual_num_batch, eval_metric=eval_metric, locals=locals())
            for cb in _as_list(score_end_callback):
                cb(params)
        return eval_metric.get_name_value()

    def iter_predict(
        self, eval_data: Any, num_batch: int | None = None, reset: bool = True, sparse_row_id_fn: Any = None
    ) -> Iterable[tuple[list[NDArray], int, Any]]:
        """Yield ``(outputs, nbatch, batch)`` per batch; padded rows are cut off the outputs."""
        self._require("iter_predict", bound=True, params=True)
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = getattr(eval_batch, "pad", 0) or 0
            outputs = [out[0 : out.shape[0] - pad] for out in self.get_outputs()]
            yield outputs, nbatch, eval_batch

    def predict(
        self,
        eval_data: Any,
        num_batch: int | None = None,
        merge_batches: bool = True,
        reset: bool = True,
        always_output_list: bool = False,
        sparse_row_id_fn: Any = None,
    ) -> Any:
        """Run inference and collect the outputs.

        ``eval_data`` is a DataIter, or an NDArray / NumPy array used as one batch. With
        ``merge_batches`` each output's batches are concatenated; a single output is returned
        alone unless ``always_output_list``. Padded rows of the last batch are dropped.
        """
        self._require("predict", bound=True, params=True)
        if isinstance(eval_data, NDArray | np.ndarray):
            array = nd.array(eval_data) if isinstance(eval_data, np.ndarray) else eval_data
            self.forward(DataBatch([array]), is_train=False)
            return self.get_outputs()[0]
        if not (hasattr(eval_data, "reset") and hasattr(eval_data, "__iter__")):
            raise ModuleError(
                f"predict: eval_data must be an NDArray, a numpy array or a DataIter, got {type(eval_data).__name__}"
            )
        if reset:
            eval_data.reset()
        output_list = []
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = getattr(eval_batch, "pad", 0) or 0
            output_list.append([out[0 : out.shape[0] - pad].copy() for out in self.get_outputs()])
        if not output_list:
            return output_list
        if not merge_batches:
            return output_list
        num_outputs = len(output_list[0])
        if any(len(out) != num_outputs for out in output_list):
            raise ModuleError("predict: cannot merge batches, the number of outputs differs between batches")
        merged = [
            output_list[0][i] if len(output_list) == 1 else nd.concat(*[out[i] for out in output_list], dim=0)
            for i in range(num_outputs)
        ]
        if num_outputs == 1 and not always_output_list:
            return merged[0]
        return merged

    def fit(
        self,
        train_data: Any,
        eval_data: Any = None,
        eval_metric: Any = "acc",
        epoch_end_callback: Any = None,
        batch_end_callback: Any = None,
        kvstore: Any = "local",
        optimizer: Any = "sgd",
        optimizer_params: Any = (("learning_rate", 0.01),),
        eval_end_callback: Any = None,
        eval_batch_end_callback: Any = None,
        initializer: Any = None,
        arg_params: dict[str, NDArray] | None = None,
        aux_params: dict[str, NDArray] | None = None,
        allow_missing: bool = False,
        force_rebind: bool = False,
        force_init: bool = False,
        begin_epoch: int = 0,
        num_epoch: int | None = None,
        validation_metric: Any = None,
        monitor: Any = None,
        sparse_row_id_fn: Any = None,
        progress_bar: bool | None = None,
    ) -> None:
        """Train for epochs ``begin_epoch .. num_epoch - 1`` over ``train_data``.

        Binds, initializes (``initializer`` defaults to ``mx.init.Uniform(0.01)``; given
        ``arg_params`` win) and installs the optimizer unless already done, then per batch:
        forward, backward, update, update the metric, call ``batch_end_callback`` with a
        ``BatchEndParam``. After each epoch it logs ``Epoch[e] Train-<metric>``,
        ``Epoch[e] Time cost``, calls ``epoch_end_callback(epoch, symbol, arg_params,
        aux_params)``, scores ``eval_data`` with ``validation_metric`` (default: the
        training metric) and logs ``Epoch[e] Validation-<metric>``. A NaN output or metric
        raises :class:`TrainingDivergedError`. ``progress_bar``: see the module docstring.
        """
        if num_epoch is None:
            raise ModuleError("fit: please specify number of epochs (num_epoch=...)")
        self.bind(
            data_shapes=train_data.provide_data,
            label_shapes=train_data.provide_label,
            for_training=True,
            force_rebind=force_rebind,
        )
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(
            initializer=init.Uniform(0.01) if initializer is None else initializer,
            arg_params=arg_params,
            aux_params=aux_params,
            allow_missing=allow_missing,
            force_init=force_init,
        )
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        show = progress_enabled(progress_bar)

        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            nbatch, name_values = self._fit_epoch(
                train_data, eval_metric, epoch, batch_end_callback, monitor, sparse_row_id_fn, show, tic
            )
            for name, value in name_values:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, value)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)

            # sync the parameters (and auxiliary states) across devices
            arg_params_now, aux_params_now = self.get_params()
            self.set_params(arg_params_now, aux_params_now)
            if epoch_end_callback is not None:
                for cb in _as_list(epoch_end_callback):
                    cb(epoch, self.symbol, arg_params_now, aux_params_now)

            if eval_data is not None:
                result = self.score(
                    eval_data,
                    validation_metric,
                    score_end_callback=eval_end_callback,
                    batch_end_callback=eval_batch_end_callback,
                    epoch=epoch,
                )
                for name, value in result:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, value)
                    if events.enabled:
                        events.publish(
                            "train.metric",
                            epoch=epoch,
                            batch=nbatch,
                            name=f"validation-{name}",
                            value=value,
                            phase="validation",
                        )
            train_data.reset()

    def _fit_epoch(
        self,
        train_data: Any,
        eval_metric: Any,
        epoch: int,
        batch_end_callback: Any,
        monitor: Any,
        sparse_row_id_fn: Any,
        show: bool | None,
        tic: float,
    ) -> tuple[int, list[tuple[str, float]]]:
        """One pass over ``train_data``: the number of batches and the epoch's metric values."""
        eval_metric.reset()
        bar = _EpochProgress(show, _num_batches(train_data), epoch)
        nbatch, samples = 0, 0
        name_values: list[tuple[str, float]] = []
        try:
            data_iter = iter(train_data)
            try:
                next_batch = next(data_iter)
            except StopIteration:
                raise ModuleError(f"fit: the training data gave no batch in epoch {epoch}") from None
            end_of_batch = False
            while not end_of_batch:
                data_batch = next_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                if isinstance(data_batch, list):
                    self.update_metric(eval_metric, [b.label for b in data_batch], pre_sliced=True)
                    samples += sum(b.data[0].shape[0] for b in data_batch)
                else:
                    self.update_metric(eval_metric, data_batch.label)
                    samples += data_batch.data[0].shape[0]
                self._check_not_nan(eval_metric, epoch, nbatch)
                try:
                    next_batch = next(data_iter)
                    self.prepare(next_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if end_of_batch:
                    name_values = eval_metric.get_global_name_value()
                if events.enabled:
                    for name, value in eval_metric.get_name_value():
                        events.publish(
                            "train.metric", epoch=epoch, batch=nbatch, name=f"train-{name}", value=value, phase="train"
                        )
                elapsed = time.time() - tic
                bar.step(samples / elapsed if elapsed > 0 else 0.0, eval_metric.get_name_value)
                if batch_end_callback is not None:
                    params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals())
                    for cb in _as_list(batch_end_callback):
                        cb(params)
                nbatch += 1
        finally:
            bar.close()
        return nbatch, name_values

    def _check_not_nan(self, eval_metric: Any, epoch: int, nbatch: int) -> None:
        """Stop training with a clear message when an output or the metric is NaN."""
        culprit = None
        names = getattr(self, "output_names", None) or []
        for i, per_device in enumerate(self.get_outputs(merge_multi_context=False)):
            for out in per_device:
                if math.isnan(float(out.asnumpy().sum(dtype=np.float64))):
                    culprit = f"output {names[i]!r}" if i < len(names) else f"output {i}"
                    break
            if culprit:
                break
        if culprit is None:
            for name, value in eval_metric.get_name_value():
                if isinstance(value, float) and math.isnan(value):
                    culprit = f"training metric {name!r}"
                    break
        if culprit is None:
            return
        lr = getattr(getattr(self, "_optimizer", None), "learning_rate", None)
        hint = f" (it is {lr:g})" if isinstance(lr, float) else ""
        raise TrainingDivergedError(
            f"Epoch[{epoch}] Batch[{nbatch}]: the loss is NaN ({culprit} holds NaN); training stopped. The parameters "
            f"diverged: lower the learning rate{hint}, clip gradients (optimizer_params={{'clip_gradient': 5.0}}), "
            "or check the input data for NaN."
        )

    # ------------------------------------------------------------------ parameters on files
    def save_params(self, fname: str) -> None:
        """Write the parameters to ``fname`` as ``arg:``/``aux:`` entries (MXNet's .params format)."""
        arg_params, aux_params = self.get_params()
        nd.save(fname, params_dict(arg_params, aux_params))

    def load_params(self, fname: str) -> None:
        """Read parameters written by :meth:`save_params` (or MXNet) and set them."""
        arg_params, aux_params = split_params(nd.load(fname), fname)
        self.set_params(arg_params, aux_params)

    def set_params(
        self,
        arg_params: Mapping[str, NDArray],
        aux_params: Mapping[str, NDArray] | None,
        allow_missing: bool = False,
        force_init: bool = True,
        allow_extra: bool = False,
    ) -> None:
        """Assign parameter values: ``init_params`` without an initializer.

        With ``allow_missing`` the names absent from the dicts keep their current values, so the
        module must be bound (its arrays exist); :meth:`_assign_present_params` does the copy.
        """
        if not allow_missing:
            self.init_params(
                initializer=None,
                arg_params=arg_params,
                aux_params=aux_params if aux_params is not None else {},
                allow_missing=False,
                force_init=force_init,
                allow_extra=allow_extra,
            )
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. set_params call ignored.", stacklevel=2)
            return
        self._require("set_params", bound=True)
        self._assign_present_params(arg_params, aux_params if aux_params is not None else {}, allow_extra)
        self.params_initialized = True

    def _assign_present_params(
        self, arg_params: Mapping[str, NDArray], aux_params: Mapping[str, NDArray], allow_extra: bool
    ) -> None:
        """Copy the given values in, keeping the current value of every name not given.

        ``init_params`` without an initializer does exactly that; a module whose parameters live on
        devices overrides this to copy there directly.
        """
        self.init_params(
            initializer=None,
            arg_params=arg_params,
            aux_params=aux_params,
            allow_missing=True,
            force_init=True,
            allow_extra=allow_extra,
        )
