"""``Module``: a symbol, its parameters and an optimizer, trained on one or more devices.

``mx.mod.Module(symbol, data_names, label_names, context=[...])`` is MXNet 1.x's
workhorse. Its life cycle, step by step::

    mod = mx.mod.Module(net, data_names=["data"], label_names=["softmax_label"], context=[mx.cpu(0)])
    mod.bind(data_shapes=[("data", (32, 64))], label_shapes=[("softmax_label", (32,))])
    mod.init_params(mx.init.Xavier())          # values live in mod._arg_params (on the CPU)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    mod.forward(batch, is_train=True); mod.backward(); mod.update()
    mod.update_metric(metric, batch.label)

or all of it at once with ``mod.fit(train_iter, eval_data=val_iter, num_epoch=10)``
(:class:`~framework.module.base_module.BaseModule`).

Where things live:

* ``bind`` builds a :class:`~.executor_group.DataParallelExecutorGroup`: one executor per
  context, each fed a slice of the batch.
* The module keeps a master copy of the parameters on the CPU (``get_params``); the
  executors' copies are what the computation uses. After ``update`` the master copy is
  stale (``_params_dirty``) until ``get_params`` pulls the devices' values back.
* ``update`` sums the per-device gradients through a KVStore-shaped store
  (:mod:`.aggregation`) and runs the optimizer: inside the store when it can (then the new
  weights are pulled to every device), else on every device with its own copy of the
  optimizer state. With one device no store is needed and the update runs in place.

The optimizer's ``rescale_grad`` defaults to ``1 / batch_size``: executors compute
gradients *summed* over the samples, as MXNet's do.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from .. import optimizer as opt
from ..atomic_file import write_bytes_atomic
from ..context import Context, cpu
from ..initializer import InitDesc, Uniform
from ..io import DataDesc
from ..model import load_checkpoint, params_file, symbol_file
from ..ndarray import NDArray, zeros
from . import aggregation
from .base_module import BaseModule
from .executor_group import DataParallelExecutorGroup, ModuleError, get_batch_axis
from .input_checks import _check_input_names, _parse_data_desc


class Module(BaseModule):
    """A module that wraps one ``Symbol`` and runs it data-parallel on ``context``.

    Args:
        symbol: the network (its outputs are the module's outputs).
        data_names: arguments fed from ``DataBatch.data``.
        label_names: arguments fed from ``DataBatch.label`` (may be empty).
        logger: where ``fit`` logs (default: the ``logging`` module, as MXNet).
        context: a Context or a list of them (one executor each).
        work_load_list: relative share of the batch per context (default even).
        fixed_param_names: parameters that are not trained (no gradient, no update).
        state_names: extra inputs kept on the devices, set with ``set_states``.
        group2ctxs: model-parallel placement of ``ctx_group`` attributes.
        compression_params: gradient compression for the KVStore.
    """

    def __init__(
        self,
        symbol: Any,
        data_names: Sequence[str] | None = ("data",),
        label_names: Sequence[str] | None = ("softmax_label",),
        logger: Any = logging,
        context: Context | Sequence[Context] | None = None,
        work_load_list: Sequence[float] | None = None,
        fixed_param_names: Sequence[str] | None = None,
        state_names: Sequence[str] | None = None,
        group2ctxs: Any = None,
        compression_params: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(logger=logger)
        if not hasattr(symbol, "list_arguments"):
            raise ModuleError(f"Module: symbol must be a Symbol, got {type(symbol).__name__}")
        context = cpu() if context is None else context
        contexts = [context] if isinstance(context, Context) else list(context)
        if not contexts or not all(isinstance(c, Context) for c in contexts):
            raise ModuleError(f"Module: context must be a Context or a non-empty list of Contexts, got {context!r}")
        self._context = contexts
        work_load_list = [1] * len(contexts) if work_load_list is None else list(work_load_list)
        if len(work_load_list) != len(contexts):
            raise ModuleError(
                f"Module: work_load_list has {len(work_load_list)} entries for {len(contexts)} contexts {contexts}"
            )
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._symbol = symbol

        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        _check_input_names(symbol, data_names, "data", True)
        _check_input_names(symbol, label_names, "label", False)
        _check_input_names(symbol, state_names, "state", True)
        _check_input_names(symbol, fixed_param_names, "fixed_param", True)

        input_names = data_names + label_names + state_names
        self._param_names = [name for name in symbol.list_arguments() if name not in input_names]
        self._fixed_param_names = fixed_param_names
        self._aux_names = symbol.list_auxiliary_states()
        self._data_names = data_names
        self._label_names = label_names
        self._state_names = state_names
        self._output_names = symbol.list_outputs()

        self._arg_params: dict[str, NDArray] | None = None
        self._aux_params: dict[str, NDArray] | None = None
        self._params_dirty = False
        self._compression_params = compression_params
        self._optimizer: opt.Optimizer | None = None
        self._kvstore: Any = None
        self._update_on_kvstore: bool | None = None
        self._updater: Any = None
        self._preload_opt_states: str | None = None
        self._grad_req: Any = None
        self._exec_group: DataParallelExecutorGroup | None = None
        self._data_shapes: list[Any] | None = None
        self._label_shapes: list[Any] | None = None

    # ------------------------------------------------------------------ checkpoints
    @staticmethod
    def load(prefix: str, epoch: int, load_optimizer_states: bool = False, **kwargs: Any) -> Module:
        """A module from ``prefix-symbol.json`` + ``prefix-%04d.params`` (bind it before use).

        ``kwargs`` go to the constructor (``data_names``, ``label_names``, ``context``...).
        With ``load_optimizer_states``, ``prefix-%04d.states`` is read by ``init_optimizer``.
        """
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        mod = Module(symbol=symbol, **kwargs)
        mod._arg_params = arg_params
        mod._aux_params = aux_params
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = f"{prefix}-{int(epoch):04d}.states"
        return mod

    def save_checkpoint(
        self, prefix: str, epoch: int, save_optimizer_states: bool = False, remove_amp_cast: bool = True
    ) -> None:
        """Write ``prefix-symbol.json``, ``prefix-%04d.params`` (and ``.states`` if asked)."""
        self._symbol.save(symbol_file(prefix))
        name = params_file(prefix, epoch)
        self.save_params(name)
        logging.info('Saved checkpoint to "%s"', name)
        if save_optimizer_states:
            state_name = f"{prefix}-{int(epoch):04d}.states"
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to "%s"', state_name)

    # ------------------------------------------------------------------ names and shapes
    @property
    def data_names(self) -> list[str]:
        return self._data_names

    @property
    def label_names(self) -> list[str]:
        return self._label_names

    @property
    def output_names(self) -> list[str]:
        return self._output_names

    @property
    def data_shapes(self) -> list[Any]:
        self._require("data_shapes", bound=True)
        return self._data_shapes

    @property
    def label_shapes(self) -> list[Any] | None:
        self._require("label_shapes", bound=True)
        return self._label_shapes

    @property
    def output_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        self._require("output_shapes", bound=True)
        return self._exec_group.get_output_shapes()

    # ------------------------------------------------------------------ parameters
    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
        """``(arg_params, aux_params)``: the CPU copies, refreshed from the devices if stale."""
        self._require("get_params", params=True)
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(
        self,
        initializer: Any = None,
        arg_params: Mapping[str, NDArray] | None = None,
        aux_params: Mapping[str, NDArray] | None = None,
        allow_missing: bool = False,
        force_init: bool = False,
        allow_extra: bool = False,
    ) -> None:
        """Fill the parameters: from ``arg_params``/``aux_params`` when given, else ``initializer``.

        A name missing from a given dict is an error unless ``allow_missing`` (then the
        initializer fills it). Called again without ``force_init`` it only warns.
        """
        if self.params_initialized and not force_init:
            warnings.warn(
                "Parameters already initialized and force_init=False. init_params call ignored.", stacklevel=2
            )
            return
        self._require("init_params", bound=True)
        if initializer is None and arg_params is None and aux_params is None:
            initializer = Uniform(0.01)

        def fill(desc: InitDesc, array: NDArray, given: Mapping[str, NDArray] | None, kind: str) -> None:
            if given is not None:
                if desc in given:
                    source = given[desc]
                    if tuple(source.shape) != tuple(array.shape):
                        raise ModuleError(
                            f"init_params: {kind} {str(desc)!r} has shape {tuple(source.shape)} in the given "
                            f"parameters, but the network needs {tuple(array.shape)}"
                        )
                    if source is not array:
                        (source if source.dtype == array.dtype else source.astype(array.dtype)).copyto(array)
                    return
                if not allow_missing:
                    raise ModuleError(
                        f"init_params: {kind} {str(desc)!r} is not presented in the given parameters "
                        f"({sorted(given)}); pass allow_missing=True to initialize it with the initializer"
                    )
            if initializer is not None:
                initializer(desc, array)

        attrs = self._symbol.attr_dict()
        for name, array in sorted(self._arg_params.items()):
            fill(InitDesc(name, attrs.get(name)), array, arg_params, "argument")
        for name, array in sorted(self._aux_params.items()):
            fill(InitDesc(name, attrs.get(name)), array, aux_params, "auxiliary state")
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    def _assign_present_params(
        self, arg_params: Mapping[str, NDArray], aux_params: Mapping[str, NDArray], allow_extra: bool
    ) -> None:
        """Copy straight to the devices; the CPU copies are stale until ``get_params`` pulls them."""
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)
        self._params_dirty = True

    def _sync_params_from_devices(self) -> None:
        """Pull the devices' current parameter values into the CPU copies."""
        self._exec_group.get_params(self._arg_params, self._aux_params)
        self._params_dirty = False

    # ------------------------------------------------------------------ binding
    def _reset_bind(self) -> None:
        self.binded = False
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    def bind(
        self,
        data_shapes: Any,
        label_shapes: Any = None,
        for_training: bool = True,
        inputs_need_grad: bool = False,
        force_rebind: bool = False,
        shared_module: Module | None = None,
        grad_req: Any = "write",
    ) -> None:
        """Allocate one executor per context for inputs of ``data_shapes`` / ``label_shapes``.

        ``data_shapes`` is ``[("data", (batch, ...)), ...]`` or ``data_iter.provide_data``.
        Binding again is ignored (with a warning) unless ``force_rebind``.
        """
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if not for_training and inputs_need_grad:
            raise ModuleError("bind: inputs_need_grad=True needs for_training=True")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        self._data_shapes, self._label_shapes = _parse_data_desc(
            self._data_names, self._label_names, data_shapes, label_shapes
        )
        shared_group = None
        if shared_module is not None:
            if not (isinstance(shared_module, Module) and shared_module.binded and shared_module.params_initialized):
                raise ModuleError("bind: shared_module must be a bound Module with initialized parameters")
            shared_group = shared_module._exec_group
            if len(shared_group.execs) < len(self._context):
                raise ModuleError("bind: shared_module has fewer executors than this module has contexts")

        self._exec_group = DataParallelExecutorGroup(
            self._symbol,
            self._context,
            self._work_load_list,
            self._data_shapes,
            self._label_shapes,
            self._param_names,
            for_training,
            inputs_need_grad,
            shared_group,
            logger=self.logger,
            fixed_param_names=self._fixed_param_names,
            grad_req=grad_req,
            state_names=self._state_names,
            group2ctxs=self._group2ctxs,
        )
        self._total_exec_bytes = self._exec_group._total_exec_bytes
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            # parameters came first (Module.load, or a re-bind): give them to the new executors
            self._exec_group.set_params(self._arg_params, self._aux_params)
        else:
            self._arg_params = {
                name: zeros(block[0].shape, dtype=block[0].dtype)
                for name, block in zip(self._param_names, self._exec_group.param_arrays, strict=True)
            }
            self._aux_params = {
                name: zeros(block[0].shape, dtype=block[0].dtype)
                for name, block in zip(self._aux_names, self._exec_group.aux_arrays, strict=True)
            }
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)
        self.binded = True

    def reshape(self, data_shapes: Any, label_shapes: Any = None) -> None:
        """Re-bind the executors for new input shapes (parameters and memory are shared)."""
        self._require("reshape", bound=True)
        data, labels = _parse_data_desc(self._data_names, self._label_names, data_shapes, label_shapes)
        self._exec_group.reshape(data, labels)  # raises before anything changes if the shapes do not fit
        self._data_shapes, self._label_shapes = data, labels

    # ------------------------------------------------------------------ optimizer
    def init_optimizer(
        self,
        kvstore: Any = "local",
        optimizer: Any = "sgd",
        optimizer_params: Any = (("learning_rate", 0.01),),
        force_init: bool = False,
    ) -> None:
        """Install the optimizer (a name plus ``optimizer_params``, or an Optimizer) and the store.

        ``kvstore``: ``'local'``/``'device'`` (a store only when there are several devices),
        ``'dist_sync'``/``'dist_async'``/``'dist_device_sync'`` or a store from ``mx.kv.create``
        (several workers: ``rescale_grad`` then covers the global batch of the ``*_sync`` types),
        None (each device updates its own copy; gradients are not summed) or a KVStore-like
        object with ``init``/``push``/``pull``.
        """
        self._require("init_optimizer", bound=True, params=True)
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self._sync_params_from_devices()

        kv, update_on_kvstore = aggregation.create_kvstore(kvstore, len(self._context), self._arg_params)
        batch_size = self._exec_group.batch_size
        if kv is not None and "dist" in getattr(kv, "type", "") and "_sync" in kv.type:
            batch_size *= kv.num_workers
        rescale_grad = 1.0 / batch_size

        names = self._exec_group.param_names
        if update_on_kvstore:
            idx2name = dict(enumerate(names))
        else:
            n = len(self._context)
            idx2name = {i * n + k: name for k in range(n) for i, name in enumerate(names)}
        if isinstance(optimizer, str):
            params = dict(optimizer_params)
            params.setdefault("rescale_grad", rescale_grad)
            optimizer = opt.create(optimizer, sym=self._symbol, param_idx2name=idx2name, **params)
        elif isinstance(optimizer, opt.Optimizer):
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn(
                    "Optimizer created manually outside Module but rescale_grad is not normalized to "
                    f"1.0/batch_size/num_workers ({optimizer.rescale_grad} vs. {rescale_grad}). Is this intended?",
                    stacklevel=2,
                )
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        else:
            raise ModuleError(
                "init_optimizer: optimizer must be a name such as 'sgd' or an mx.optimizer.Optimizer, "
                f"got {optimizer!r}"
            )

        self._optimizer = optimizer
        self._kvstore = kv
        self._update_on_kvstore = update_on_kvstore
        self._updater = None
        if kv is not None:
            if self._compression_params:
                kv.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kv.set_optimizer(self._optimizer)
            aggregation.initialize_kvstore(
                kv, self._exec_group.param_arrays, self._arg_params, self._param_names, update_on_kvstore
            )
        if not update_on_kvstore:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module: Module) -> None:
        """Use ``shared_module``'s optimizer, store and updater (bucketing)."""
        if not shared_module.optimizer_initialized:
            raise ModuleError("borrow_optimizer: the shared module has no optimizer installed")
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname: str) -> None:
        """Write the optimizer state (momentum etc.) to ``fname``."""
        self._require("save_optimizer_states", optimizer=True)
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            write_bytes_atomic(fname, self._updater.get_states())

    def load_optimizer_states(self, fname: str) -> None:
        """Read an optimizer state written by :meth:`save_optimizer_states`."""
        self._require("load_optimizer_states", optimizer=True)
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
        else:
            with open(fname, "rb") as f:
                self._updater.set_states(f.read())

    # ------------------------------------------------------------------ computation
    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Run forward on a batch (``is_train`` defaults to ``for_training``).

        A batch whose shapes differ from the bound ones (a smaller last batch, another
        image size) re-shapes the executors first; memory and parameters are shared.
        """
        self._require("forward", bound=True, params=True)
        current = tuple(tuple(d.shape) for d in self._data_shapes)
        first = data_batch[0].data if isinstance(data_batch, list) else data_batch.data
        if first is None or len(first) != len(self._data_names):
            raise ModuleError(
                f"forward: the batch has {0 if first is None else len(first)} data arrays, the module expects "
                f"{len(self._data_names)} ({self._data_names})"
            )
        if isinstance(data_batch, list):
            new = tuple((len(data_batch) * a.shape[0], *a.shape[1:]) for a in first)
        else:
            new = tuple(tuple(a.shape) for a in first)
        if current != new:
            self._reshape_for(data_batch, new)
        self._exec_group.forward(data_batch, is_train)

    def _reshape_for(self, data_batch: Any, new_shapes: tuple[tuple[int, ...], ...]) -> None:
        provided = getattr(data_batch, "provide_data", None)
        if provided:
            data_shapes = provided
        else:
            data_shapes = [
                DataDesc(d.name, shape, d.dtype, d.layout)
                for d, shape in zip(self._data_shapes, new_shapes, strict=True)
            ]
        labels = getattr(data_batch, "label", None) if not isinstance(data_batch, list) else None
        provided_label = getattr(data_batch, "provide_label", None)
        if provided_label:
            label_shapes = provided_label
        elif labels and self._label_shapes:
            label_shapes = [
                DataDesc(d.name, tuple(a.shape), d.dtype, d.layout)
                for d, a in zip(self._label_shapes, labels, strict=True)
            ]
        else:
            # no labels in this batch (prediction): keep the label inputs, resized to the new batch
            label_shapes = self._resized_label_shapes(new_shapes) or None
        self.reshape(data_shapes, label_shapes)

    def _resized_label_shapes(self, new_shapes: tuple[tuple[int, ...], ...]) -> list[DataDesc]:
        """The label inputs (given at bind, or only inferred) with the batch axis of the new data."""
        first = self._data_shapes[0]
        axis = get_batch_axis(first.layout)
        if axis < 0:
            return list(self._label_shapes or [])
        batch = new_shapes[0][axis]
        known = self._label_shapes
        if not known:  # bound without labels: the executors inferred their shapes (sliced per device)
            bound = self._exec_group.execs[0].arg_dict
            known = []
            for name in self._label_names:
                if name in bound:
                    known.append(DataDesc(name, tuple(bound[name].shape), bound[name].dtype))
        resized = []
        for d in known:
            shape = list(d.shape)
            label_axis = get_batch_axis(d.layout)
            if label_axis >= 0:
                shape[label_axis] = batch
            resized.append(DataDesc(d.name, tuple(shape), d.dtype, d.layout))
        return resized

    def backward(self, out_grads: NDArray | Sequence[NDArray] | None = None) -> None:
        """Run backward; ``out_grads`` are needed only for outputs that are not loss layers."""
        self._require("backward", bound=True, params=True)
        self._exec_group.backward(out_grads=out_grads)

    def update(self) -> None:
        """Apply one optimizer step from the gradients of the last forward/backward."""
        self._require("update", bound=True, params=True, optimizer=True)
        if not self.for_training:
            raise ModuleError("update: the module is bound with for_training=False (no gradients)")
        self._params_dirty = True
        group = self._exec_group
        if self._update_on_kvstore:
            aggregation.update_params_on_kvstore(
                group.param_arrays, group.grad_arrays, self._kvstore, group.param_names, group.grad_segments
            )
        else:
            aggregation.update_params(
                group.param_arrays,
                group.grad_arrays,
                updater=self._updater,
                num_device=len(self._context),
                kvstore=self._kvstore,
                param_names=group.param_names,
                grad_segments=group.grad_segments,
            )

    def get_outputs(self, merge_multi_context: bool = True) -> list[Any]:
        """Outputs of the last forward, merged across devices (or ``[[out1_dev1, ...], ...]``)."""
        self._require("get_outputs", bound=True, params=True)
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list[Any]:
        """Gradients with respect to the data inputs (bind with ``inputs_need_grad=True``)."""
        self._require("get_input_grads", bound=True, params=True)
        if not self.inputs_need_grad:
            raise ModuleError("get_input_grads: bind the module with inputs_need_grad=True to get input gradients")
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context: bool = True) -> list[Any]:
        self._require("get_states", bound=True, params=True)
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states: Any = None, value: Any = None) -> None:
        self._require("set_states", bound=True, params=True)
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        """Add the last forward's outputs (against ``labels``) to ``eval_metric``."""
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon: Any) -> None:
        self._require("install_monitor", bound=True)
        self._exec_group.install_monitor(mon)
