"""``mx.model.FeedForward``: MXNet's first training API, kept because 0.x-era scripts still use it.

``FeedForward(symbol, num_epoch=10, learning_rate=0.1).fit(X, y)`` takes NumPy arrays (or data
iterators), trains, and keeps the learned ``arg_params``/``aux_params`` on the object; ``predict``
and ``score`` run an inference executor with them; ``save``/``load`` use the ``mx.model``
checkpoint files. MXNet deprecated it in favour of ``mx.mod.Module``, and here it is a thin
adapter onto Module: ``fit`` builds a Module (a BucketingModule when given a ``sym_gen``) and calls
its ``fit``, so the training loop, the optimizer and the KVStore are the Module's. Extra keyword
arguments of the constructor are the optimizer's (``learning_rate=0.1, momentum=0.9``), as in MXNet.

It lives in its own file (not in model.py, the checkpoint functions) because it stands above
``mx.mod``, which itself uses the checkpoint functions; ``mx.model.FeedForward`` reaches it.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from . import metric
from .base import MXLabError
from .callback import BatchEndParam, LogValidationMetricsCallback
from .context import Context, cpu
from .initializer import Uniform
from .io import DataIter, NDArrayIter, ResizeIter
from .model import load_checkpoint, save_checkpoint
from .module import BucketingModule, Module
from .ndarray import NDArray
from .symbol import Symbol, load_json


class FeedForwardError(MXLabError, ValueError):
    """FeedForward was given data, labels or arguments it cannot use."""


def _as_numpy_or_ndarray(value: Any) -> Any:
    return np.array(value) if isinstance(value, list) else value


class FeedForward:
    """A network and its parameters, trained and used with NumPy-style calls (the legacy API).

    Args:
        symbol: the network, or a ``sym_gen(bucket_key) -> Symbol`` for bucketing iterators.
        ctx: a Context or a list of them (default ``cpu()``).
        num_epoch: epochs ``fit`` trains; ``epoch_size``: batches per epoch (default: one pass).
        optimizer: a name or an ``mx.optimizer.Optimizer``; ``initializer``: for parameters not given.
        numpy_batch_size: the batch size when ``fit``/``predict`` get NumPy arrays.
        arg_params / aux_params: starting values (kept after ``fit``: the learned values).
        allow_extra_params: drop given parameters the symbol does not have (else they are an error).
        begin_epoch: the first epoch's number (``load`` sets it to the checkpoint's).
        kwargs: the optimizer's parameters.
    """

    def __init__(
        self,
        symbol: Symbol | Callable[[Any], Symbol],
        ctx: Context | Sequence[Context] | None = None,
        num_epoch: int | None = None,
        epoch_size: int | None = None,
        optimizer: Any = "sgd",
        initializer: Any = Uniform(0.01),  # noqa: B008 - MXNet's default
        numpy_batch_size: int = 128,
        arg_params: Mapping[str, NDArray] | None = None,
        aux_params: Mapping[str, NDArray] | None = None,
        allow_extra_params: bool = False,
        begin_epoch: int = 0,
        **kwargs: Any,
    ) -> None:
        warnings.warn(
            "mxnet.model.FeedForward has been deprecated. Please use mxnet.mod.Module instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        if isinstance(symbol, Symbol):
            self.symbol: Symbol | None = symbol
            self.sym_gen = None
        elif callable(symbol):
            self.symbol = None
            self.sym_gen = symbol
        else:
            raise FeedForwardError(f"FeedForward: symbol must be a Symbol or a sym_gen function, got {symbol!r}")
        self.arg_params = dict(arg_params) if arg_params is not None else None
        self.aux_params = dict(aux_params) if aux_params is not None else None
        self.allow_extra_params = allow_extra_params
        self.argument_checked = False
        if self.sym_gen is None:
            self._check_arguments()
        if ctx is None:
            ctx = [cpu()]
        elif isinstance(ctx, Context):
            ctx = [ctx]
        self.ctx = list(ctx)
        self.num_epoch = num_epoch
        self.epoch_size = epoch_size
        self.kwargs = kwargs.copy()
        self.optimizer = optimizer
        self.initializer = initializer
        self.numpy_batch_size = numpy_batch_size
        self.begin_epoch = begin_epoch
        self._pred_exec: Any = None
        self._pred_shapes: tuple[Any, ...] | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the symbol as its JSON and drop the inference executor (rebuilt on demand)."""
        state = self.__dict__.copy()
        state["symbol"] = self.symbol.tojson() if self.symbol is not None else None
        state["_pred_exec"] = None
        state["_pred_shapes"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        symbol = state["symbol"]
        state["symbol"] = load_json(symbol) if symbol is not None else None
        self.__dict__.update(state)

    # ------------------------------------------------------------------ arguments and data
    def _check_arguments(self) -> None:
        """Once per symbol: no duplicated argument names; drop extra given parameters if allowed."""
        if self.argument_checked:
            return
        self.argument_checked = True
        arg_names = self.symbol.list_arguments()
        aux_names = self.symbol.list_auxiliary_states()
        for names, kind in ((arg_names, "argument"), (aux_names, "auxiliary state")):
            duplicated = sorted({name for name in names if names.count(name) > 1})
            if duplicated:
                raise FeedForwardError(f"FeedForward: the symbol has duplicated {kind} names {duplicated}")
        for attr, known in (("arg_params", set(arg_names)), ("aux_params", set(aux_names))):
            given = getattr(self, attr)
            if not given:
                continue
            extra = sorted(set(given) - known)
            if extra and not self.allow_extra_params:
                raise FeedForwardError(
                    f"FeedForward: {attr} has {extra}, which the symbol does not have "
                    "(allow_extra_params=True drops them)"
                )
            setattr(self, attr, {k: v for k, v in given.items() if k in known})

    def _init_iter(self, X: Any, y: Any, is_train: bool) -> DataIter:
        """A DataIter for ``X`` (NumPy/NDArray with labels ``y``, or already a DataIter)."""
        if isinstance(X, np.ndarray | NDArray):
            if y is None:
                if is_train:
                    raise FeedForwardError("FeedForward: y must be specified when X is a numpy.ndarray")
                y = np.zeros(X.shape[0])
            if not isinstance(y, np.ndarray | NDArray):
                raise FeedForwardError(f"FeedForward: y must be an ndarray when X is one, got {type(y).__name__}")
            if X.shape[0] != y.shape[0]:
                raise FeedForwardError(f"FeedForward: {X.shape[0]} data points but {y.shape[0]} labels")
            if y.ndim == 2 and y.shape[1] == 1:
                y = y.reshape(-1)
            if y.ndim != 1:
                raise FeedForwardError(f"FeedForward: labels must be 1-D (or N x 1), got shape {tuple(y.shape)}")
            batch_size = min(X.shape[0], self.numpy_batch_size)
            if is_train:
                return NDArrayIter(X, y, batch_size, shuffle=True, last_batch_handle="roll_over")
            return NDArrayIter(X, y, batch_size, shuffle=False)
        if not isinstance(X, DataIter):
            raise FeedForwardError(
                f"FeedForward: X must be a DataIter, NDArray or numpy.ndarray, got {type(X).__name__}"
            )
        return X

    def _init_eval_iter(self, eval_data: Any) -> DataIter | None:
        """``eval_data`` as a DataIter: a DataIter, or an ``(X, y)`` pair."""
        if eval_data is None:
            return None
        if isinstance(eval_data, tuple | list):
            if len(eval_data) != 2 or eval_data[0] is None:
                raise FeedForwardError("FeedForward: eval_data must be a DataIter or an (X, y) pair")
            if eval_data[1] is None and isinstance(eval_data[0], DataIter):
                return eval_data[0]
            return self._init_iter(_as_numpy_or_ndarray(eval_data[0]), _as_numpy_or_ndarray(eval_data[1]), True)
        if not isinstance(eval_data, DataIter):
            raise FeedForwardError(
                f"FeedForward: eval_data must be a DataIter or an (X, y) pair, got {type(eval_data).__name__}"
            )
        return eval_data

    # ------------------------------------------------------------------ training
    def fit(
        self,
        X: Any,
        y: Any = None,
        eval_data: Any = None,
        eval_metric: Any = "acc",
        epoch_end_callback: Any = None,
        batch_end_callback: Any = None,
        kvstore: Any = "local",
        logger: Any = None,
        work_load_list: Sequence[float] | None = None,
        monitor: Any = None,
        eval_end_callback: Any = LogValidationMetricsCallback(),  # noqa: B008 - MXNet's default
        eval_batch_end_callback: Any = None,
    ) -> None:
        """Train for epochs ``begin_epoch .. num_epoch - 1``; the learned values land in ``arg_params``."""
        if self.num_epoch is None:
            raise FeedForwardError("FeedForward.fit: give num_epoch to the constructor")
        data = self._init_iter(X, y, is_train=True)
        eval_iter = self._init_eval_iter(eval_data)
        logger = logging if logger is None else logger
        data_names = [desc[0] for desc in data.provide_data]
        label_names = [desc[0] for desc in data.provide_label]
        if self.sym_gen is not None:
            self.symbol = self.sym_gen(data.default_bucket_key)
            self._check_arguments()
            sym_gen = self.sym_gen
            module: Any = BucketingModule(
                lambda key: (sym_gen(key), data_names, label_names),
                default_bucket_key=data.default_bucket_key,
                logger=logger,
                context=self.ctx,
                work_load_list=work_load_list,
            )
        else:
            module = Module(
                self.symbol, data_names, label_names, logger=logger, context=self.ctx, work_load_list=work_load_list
            )
        train_iter = data if self.epoch_size is None else ResizeIter(data, self.epoch_size)
        module.fit(
            train_iter,
            eval_data=eval_iter,
            eval_metric=eval_metric,
            epoch_end_callback=epoch_end_callback,
            batch_end_callback=batch_end_callback,
            kvstore=kvstore,
            optimizer=self.optimizer,
            optimizer_params=self.kwargs,
            eval_end_callback=eval_end_callback,
            eval_batch_end_callback=eval_batch_end_callback,
            initializer=self.initializer,
            arg_params=self.arg_params,
            aux_params=self.aux_params,
            allow_missing=True,
            begin_epoch=self.begin_epoch,
            num_epoch=self.num_epoch,
            monitor=monitor,
        )
        arg_params, aux_params = module.get_params()
        self.arg_params = {name: value.copy() for name, value in arg_params.items()}
        self.aux_params = {name: value.copy() for name, value in aux_params.items()}
        self._pred_exec = None

    # ------------------------------------------------------------------ inference
    def _init_predictor(self, input_shapes: list[Any], type_dict: dict[str, Any] | None = None) -> None:
        """An inference executor for ``input_shapes`` with the current parameters (reused while shapes match)."""
        if self.arg_params is None:
            raise FeedForwardError("FeedForward: no parameters yet; call fit (or give arg_params) first")
        shapes = tuple((desc[0], tuple(desc[1])) for desc in input_shapes)
        if self._pred_exec is not None and self._pred_shapes == shapes:
            return
        executor = self.symbol.simple_bind(self.ctx[0], grad_req="null", type_dict=type_dict, **dict(shapes))
        executor.copy_params_from(self.arg_params, self.aux_params, allow_extra_params=True)
        self._pred_exec = executor
        self._pred_shapes = shapes

    def _bind_for(self, X: DataIter, with_labels: bool = False) -> list[NDArray]:
        """Bind for ``X``'s data shapes (and label shapes, which help inference when scoring)."""
        inputs = list(X.provide_data)
        if with_labels:
            known = set(self.symbol.list_arguments())
            inputs += [desc for desc in (getattr(X, "provide_label", None) or []) if desc[0] in known]
        type_dict = {desc[0]: getattr(desc, "dtype", np.float32) for desc in inputs}
        self._init_predictor(inputs, type_dict)
        return [self._pred_exec.arg_dict[desc[0]] for desc in X.provide_data]

    def predict(self, X: Any, num_batch: int | None = None, return_data: bool = False, reset: bool = True) -> Any:
        """The network's outputs for ``X`` (padding dropped); with ``return_data`` also ``(data, label)``."""
        X = self._init_iter(X, None, is_train=False)
        if reset:
            X.reset()
        data_arrays = self._bind_for(X)
        outputs: list[list[np.ndarray]] = [[] for _ in self._pred_exec.outputs]
        data_list: list[list[np.ndarray]] = [[] for _ in data_arrays]
        label_list: list[list[np.ndarray]] = []
        for i, batch in enumerate(X):
            if num_batch is not None and i == num_batch:
                break
            for target, source in zip(data_arrays, batch.data, strict=True):
                source.copyto(target)
            self._pred_exec.forward(is_train=False)
            real_size = X.batch_size - (batch.pad or 0)
            for per_output, out in zip(outputs, self._pred_exec.outputs, strict=True):
                per_output.append(out[0:real_size].asnumpy())
            if return_data:
                for per_data, value in zip(data_list, batch.data, strict=True):
                    per_data.append(value[0:real_size].asnumpy())
                labels = batch.label or []
                if not label_list:
                    label_list = [[] for _ in labels]
                for per_label, value in zip(label_list, labels, strict=True):
                    per_label.append(value[0:real_size].asnumpy())
        merged = [np.concatenate(parts) for parts in outputs]
        result = merged[0] if len(merged) == 1 else merged
        if not return_data:
            return result
        data = [np.concatenate(parts) for parts in data_list]
        label = [np.concatenate(parts) for parts in label_list]
        return result, (data[0] if len(data) == 1 else data), (label[0] if len(label) == 1 else label)

    def score(
        self,
        X: Any,
        eval_metric: Any = "acc",
        num_batch: int | None = None,
        batch_end_callback: Any = None,
        reset: bool = True,
    ) -> float:
        """``eval_metric`` of the network's outputs over ``X`` (a DataIter with labels)."""
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        X = self._init_iter(X, None, is_train=False)
        if reset:
            X.reset()
        data_arrays = self._bind_for(X, with_labels=True)
        for i, batch in enumerate(X):
            if num_batch is not None and i == num_batch:
                break
            for target, source in zip(data_arrays, batch.data, strict=True):
                source.copyto(target)
            self._pred_exec.forward(is_train=False)
            eval_metric.update(batch.label, self._pred_exec.outputs)
            if batch_end_callback is not None:
                params = BatchEndParam(epoch=0, nbatch=i, eval_metric=eval_metric, locals=locals())
                for callback in batch_end_callback if isinstance(batch_end_callback, list) else [batch_end_callback]:
                    callback(params)
        return eval_metric.get()[1]

    # ------------------------------------------------------------------ files
    def save(self, prefix: str, epoch: int | None = None, remove_amp_cast: bool = True) -> None:
        """``mx.model.save_checkpoint`` of the symbol and parameters (epoch defaults to ``num_epoch``)."""
        if epoch is None:
            epoch = self.num_epoch
        if epoch is None:
            raise FeedForwardError("FeedForward.save: give epoch (num_epoch is not set either)")
        save_checkpoint(prefix, epoch, self.symbol, self.arg_params, self.aux_params, remove_amp_cast=remove_amp_cast)

    @staticmethod
    def load(prefix: str, epoch: int, ctx: Context | Sequence[Context] | None = None, **kwargs: Any) -> FeedForward:
        """A FeedForward from a checkpoint; training would continue from ``epoch``."""
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        return FeedForward(symbol, ctx=ctx, arg_params=arg_params, aux_params=aux_params, begin_epoch=epoch, **kwargs)

    @staticmethod
    def create(
        symbol: Any,
        X: Any,
        y: Any = None,
        ctx: Context | Sequence[Context] | None = None,
        num_epoch: int | None = None,
        epoch_size: int | None = None,
        optimizer: Any = "sgd",
        initializer: Any = Uniform(0.01),  # noqa: B008 - MXNet's default
        eval_data: Any = None,
        eval_metric: Any = "acc",
        epoch_end_callback: Any = None,
        batch_end_callback: Any = None,
        kvstore: Any = "local",
        logger: Any = None,
        work_load_list: Sequence[float] | None = None,
        eval_end_callback: Any = LogValidationMetricsCallback(),  # noqa: B008 - MXNet's default
        eval_batch_end_callback: Any = None,
        **kwargs: Any,
    ) -> FeedForward:
        """Construct and ``fit`` in one call (the functional form)."""
        model = FeedForward(
            symbol,
            ctx=ctx,
            num_epoch=num_epoch,
            epoch_size=epoch_size,
            optimizer=optimizer,
            initializer=initializer,
            **kwargs,
        )
        model.fit(
            X,
            y,
            eval_data=eval_data,
            eval_metric=eval_metric,
            epoch_end_callback=epoch_end_callback,
            batch_end_callback=batch_end_callback,
            kvstore=kvstore,
            logger=logger,
            work_load_list=work_load_list,
            eval_end_callback=eval_end_callback,
            eval_batch_end_callback=eval_batch_end_callback,
        )
        return model
