"""``BaseModule``: the training loop, written once against a small set of steps.

A module is a computation machine with a life cycle: *bound* (shapes known, memory
allocated), *parameters initialized*, *optimizer installed*. Once a subclass implements the
intermediate steps

* ``bind``, ``init_params``, ``init_optimizer``: get ready;
* ``forward(batch)``, ``backward()``, ``update()``: one training step;
* ``get_outputs()``, ``update_metric(metric, labels)``: look at the result;

this class turns them into the high-level API every MXNet user knows:

* :meth:`BaseModule.fit`: epochs of ``forward_backward`` + ``update`` + ``update_metric``
  over a data iterator, with callbacks, logging (``Epoch[0] Train-accuracy=0.93``), a
  progress bar, ``train.metric`` events for live curves, validation after each epoch, and
  a clear stop when the loss turns NaN;
* :meth:`BaseModule.score`: run a data set forward and evaluate a metric;
* :meth:`BaseModule.predict` / :meth:`BaseModule.iter_predict`: collect outputs.

The progress bar (tqdm, one per epoch: batches, samples/second and the running metric)
shows only on an interactive terminal by default; ``MXLAB_PROGRESS=0`` hides it and
``MXLAB_PROGRESS=1`` forces it, and ``fit(progress_bar=...)`` overrides both.
"""

from __future__ import annotations

import logging
import math
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from .. import config, events, metric
from .. import initializer as init
from .. import ndarray as nd
from ..base import MXLabError
from ..callback import BatchEndParam
from ..io import DataBatch
from ..model import params_dict, split_params
from ..ndarray import NDArray
from .executor_group import ModuleError, as_desc


class TrainingDivergedError(MXLabError, FloatingPointError):
    """``fit`` stopped because the loss (an output or the training metric) became NaN."""


# ----------------------------------------------------------------------------- input checks
def _check_input_names(symbol: Any, names: Sequence[str], typename: str, throw: bool) -> None:
    """Every name must be an argument of ``symbol``; say which arguments could be meant."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(("_weight", "_bias", "_gamma", "_beta"))]
        msg = (
            f"You created Module with Module(..., {typename}_names={list(names)}) but input with name {name!r} "
            f"is not found in symbol.list_arguments(). Did you mean one of:\n\t" + "\n\t".join(candidates)
        )
        if throw:
            raise ModuleError(msg)
        warnings.warn(msg, stacklevel=3)


def _check_names_match(names: Sequence[str], shapes: Sequence[Any], what: str, throw: bool) -> None:
    actual = [d.name for d in shapes]
    if sorted(names) != sorted(actual):
        msg = (
            f"Data provided by {what}_shapes don't match names specified by {what}_names "
            f"({[(d.name, tuple(d.shape)) for d in shapes]} vs. {list(names)})"
        )
        if throw:
            raise ModuleError(msg)
        warnings.warn(msg, stacklevel=3)


def _parse_data_desc(
    data_names: Sequence[str], label_names: Sequence[str], data_shapes: Any, label_shapes: Any
) -> tuple[list[Any], list[Any] | None]:
    """Descriptors from ``(name, shape)`` pairs or DataDescs, checked against the module's names."""
    looks_like_one_pair = isinstance(data_shapes, tuple) and bool(data_shapes) and isinstance(data_shapes[0], str)
    if data_shapes is None or isinstance(data_shapes, str) or looks_like_one_pair:
        raise ModuleError(
            f"bind: data_shapes must be a list of (name, shape) pairs or DataDescs such as "
            f"[('data', (32, 784))], got {data_shapes!r}"
        )
    data = [as_desc(x, "data_shapes") for x in data_shapes]
    _check_names_match(data_names, data, "data", True)
    if label_shapes is not None:
        labels = [as_desc(x, "label_shapes") for x in label_shapes]
        _check_names_match(label_names, labels, "label", False)
        return data, labels
    _check_names_match(label_names, [], "label", False)
    return data, None


def _as_list(obj: Any) -> list[Any]:
    return list(obj) if isinstance(obj, list | tuple) else [obj]


# ----------------------------------------------------------------------------- progress bar
def progress_enabled(progress_bar: bool | None) -> bool | None:
    """True (show), False (hide) or None (show on a terminal only), from the argument or ``MXLAB_PROGRESS``."""
    if progress_bar is not None:
        return bool(progress_bar)
    return config.get("MXLAB_PROGRESS")


def _num_batches(data_iter: Any) -> int | None:
    """How many batches an epoch of ``data_iter`` has, when it can tell."""
    try:
        return len(data_iter)
    except TypeError:
        pass
    num_data, batch_size = getattr(data_iter, "num_data", None), getattr(data_iter, "batch_size", None)
    if isinstance(num_data, int) and isinstance(batch_size, int) and batch_size > 0:
        handle = getattr(data_iter, "last_batch_handle", "pad")
        if handle == "discard":
            return num_data // batch_size
        if handle == "pad":
            return -(-num_data // batch_size)
    return None


class _EpochProgress:
    """One epoch's tqdm bar; every method is a no-op when the bar is hidden."""

    def __init__(self, enabled: bool | None, total: int | None, epoch: int) -> None:
        self._bar = None
        if enabled is False:
            return
        if enabled is None and "ipykernel" in sys.modules:
            enabled = True  # a notebook: stderr is not a terminal, but the bar renders
        # disable=None lets tqdm hide itself when stderr is not a terminal (tests, CI logs).
        self._bar = tqdm(
            total=total,
            desc=f"Epoch[{epoch}]",
            unit="batch",
            leave=True,
            file=sys.stderr,
            dynamic_ncols=True,
            mininterval=0.25,
            disable=None if enabled is None else False,
        )
        if self._bar.disable:
            self._bar = None

    def step(self, samples_per_sec: float, name_values: Callable[[], list[tuple[str, float]]]) -> None:
        bar = self._bar
        if bar is None:
            return
        shown = [f"{samples_per_sec:.0f} samples/s"] + [f"{n}={v:.4f}" for n, v in name_values()]
        bar.set_postfix_str(", ".join(shown), refresh=False)
        bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


# ----------------------------------------------------------------------------- the base class
class BaseModule:
    """The module life cycle and the high-level API (fit, score, predict) built on it.

    Subclasses (``Module``) implement the intermediate steps; see the module docstring.
    """

    def __init__(self, logger: Any = logging) -> None:
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol: Any = None
        self._total_exec_bytes = 0

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

    # ------------------------------------------------------------------ states and hooks
    def get_states(self, merge_multi_context: bool = True) -> list[Any]:
        self._require("get_states", bound=True, params=True)
        if merge_multi_context:
            raise ModuleError("get_states: merge_multi_context=True is not supported")
        return []

    def set_states(self, states: Any = None, value: Any = None) -> None:
        self._require("set_states", bound=True, params=True)
        if states or value:
            raise ModuleError("set_states: this module has no states")

    def prepare(self, data_batch: Any, sparse_row_id_fn: Any = None) -> None:
        """Get ready for ``data_batch`` (bucketing, sparse pulls); nothing to do here."""
        if sparse_row_id_fn is not None:
            warnings.warn("sparse_row_id_fn is not invoked for BaseModule.", UserWarning, stacklevel=2)

    def _require(self, what: str, bound: bool = False, params: bool = False, optimizer: bool = False) -> None:
        """A clear error when a step is called before the module is ready for it."""
        if bound and not self.binded:
            raise ModuleError(f"{what}: call bind(...) first (the module is not bound)")
        if params and not self.params_initialized:
            raise ModuleError(f"{what}: call init_params(...) first (the parameters are not initialized)")
        if optimizer and not self.optimizer_initialized:
            raise ModuleError(f"{what}: call init_optimizer(...) first (no optimizer is installed)")

    # ------------------------------------------------------------------ the steps subclasses provide
    def _unimplemented(self, name: str) -> NotImplementedError:
        """The error for a step of the BaseModule interface this subclass did not provide."""
        return NotImplementedError(f"{type(self).__name__} does not implement {name} (a BaseModule subclass must)")

    @property
    def symbol(self) -> Any:
        """The network this module runs."""
        return self._symbol

    @property
    def data_names(self) -> list[str]:
        raise self._unimplemented("data_names")

    @property
    def output_names(self) -> list[str]:
        raise self._unimplemented("output_names")

    @property
    def data_shapes(self) -> list[Any]:
        raise self._unimplemented("data_shapes")

    @property
    def label_shapes(self) -> list[Any] | None:
        raise self._unimplemented("label_shapes")

    @property
    def output_shapes(self) -> list[Any]:
        raise self._unimplemented("output_shapes")

    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
        raise self._unimplemented("get_params")

    def init_params(
        self,
        initializer: Any = None,
        arg_params: dict[str, NDArray] | None = None,
        aux_params: dict[str, NDArray] | None = None,
        allow_missing: bool = False,
        force_init: bool = False,
        allow_extra: bool = False,
    ) -> None:
        raise self._unimplemented("init_params")

    def install_monitor(self, mon: Any) -> None:
        raise self._unimplemented("install_monitor")

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        raise self._unimplemented("forward")

    def backward(self, out_grads: Any = None) -> None:
        raise self._unimplemented("backward")

    def get_outputs(self, merge_multi_context: bool = True) -> list[Any]:
        raise self._unimplemented("get_outputs")

    def get_input_grads(self, merge_multi_context: bool = True) -> list[Any]:
        raise self._unimplemented("get_input_grads")

    def update(self) -> None:
        raise self._unimplemented("update")

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        raise self._unimplemented("update_metric")

    def bind(
        self,
        data_shapes: Any,
        label_shapes: Any = None,
        for_training: bool = True,
        inputs_need_grad: bool = False,
        force_rebind: bool = False,
        shared_module: Any = None,
        grad_req: Any = "write",
    ) -> None:
        raise self._unimplemented("bind")

    def init_optimizer(
        self,
        kvstore: Any = "local",
        optimizer: Any = "sgd",
        optimizer_params: Any = (("learning_rate", 0.01),),
        force_init: bool = False,
    ) -> None:
        raise self._unimplemented("init_optimizer")
