"""``BucketingModule``: one Module per bucket (input length), all sharing one set of parameters and memory.

A recurrent network unrolled for ``T`` steps is a different symbol for every ``T``. Bucketing keeps a
small set of lengths (the *buckets*; ``mx.rnn.BucketSentenceIter`` pads each sentence to the shortest
that fits) and builds the symbol of a bucket on first use with ``sym_gen(bucket_key)``.

How the sharing works:

* the module of ``default_bucket_key`` (the largest bucket, normally) is bound first and owns the
  parameters, the optimizer and the memory;
* every other bucket's Module binds with ``shared_module=`` that default module: its executors take the
  *same* parameter and gradient arrays (so an update made while training one bucket is seen by all) and
  draw their intermediate buffers from the default executors' memory (so a shorter bucket costs no new
  memory), and it borrows the default module's optimizer, store and updater;
* each batch names its bucket (``DataBatch.bucket_key``); ``forward`` switches to that bucket's module
  (building it if needed) and every later step (``backward``, ``update``, ``get_outputs``...) goes to it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import ndarray as nd
from .. import symbol as sym
from ..context import Context, cpu
from ..initializer import Uniform
from ..model import load_params, params_file
from ..ndarray import NDArray
from ..symbol.naming import NameManager
from .base_module import BaseModule
from .executor_group import ModuleError
from .input_checks import _check_input_names
from .module import Module

SymGen = Callable[[Any], tuple[Any, Sequence[str] | None, Sequence[str] | None]]


class BucketingModule(BaseModule):
    """A module whose symbol depends on the batch's ``bucket_key``.

    Args:
        sym_gen: ``sym_gen(bucket_key) -> (symbol, data_names, label_names)``.
        default_bucket_key: the bucket bound first; its module owns the parameters and memory, so it
            should be the largest bucket.
        logger, context, work_load_list, fixed_param_names, state_names, group2ctxs, compression_params:
            as for :class:`~framework.module.Module`, given to every bucket's module.
    """

    def __init__(
        self,
        sym_gen: SymGen,
        default_bucket_key: Hashable = None,
        logger: Any = logging,
        context: Context | Sequence[Context] = cpu(),  # noqa: B008 - MXNet's default, an immutable value
        work_load_list: Sequence[float] | None = None,
        fixed_param_names: Sequence[str] | None = None,
        state_names: Sequence[str] | None = None,
        group2ctxs: Any = None,
        compression_params: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise ModuleError("BucketingModule: default_bucket_key is required (normally the largest bucket)")
        if not callable(sym_gen):
            raise ModuleError(f"BucketingModule: sym_gen must be callable, got {type(sym_gen).__name__}")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        # set by load / load_dict: the saved symbols per bucket, and parameters waiting for the first bind
        self._loaded_symbols: dict[Hashable, Any] = {}
        self._preloaded: tuple[dict[str, NDArray], dict[str, NDArray]] | None = None
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        _check_input_names(symbol, data_names, "data", True)
        _check_input_names(symbol, label_names, "label", False)
        _check_input_names(symbol, state_names, "state", True)
        _check_input_names(symbol, fixed_param_names, "fixed_param", True)

        self._compression_params = compression_params
        self._fixed_param_names = fixed_param_names
        self._state_names = state_names
        self._context = context
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs

        self._buckets: dict[Hashable, Module] = {}
        self._curr_module: Module | None = None
        self._curr_bucket_key: Hashable = None
        self._params_dirty = False
        self._monitor: Any = None
        self._grad_req: Any = None

    def _call_sym_gen(self, bucket_key: Hashable) -> tuple[Any, Any, Any]:
        """``sym_gen(bucket_key)`` under a fresh name manager, so automatic names restart for every bucket."""
        with NameManager():
            result = self._sym_gen(bucket_key)
        if not (isinstance(result, tuple | list) and len(result) == 3):
            raise ModuleError(
                f"BucketingModule: sym_gen({bucket_key!r}) must return (symbol, data_names, label_names), "
                f"got {result!r}"
            )
        symbol, data_names, label_names = result
        return self._loaded_symbols.get(bucket_key, symbol), data_names, label_names

    def _new_module(self, symbol: Any, data_names: Any, label_names: Any) -> Module:
        return Module(
            symbol,
            data_names,
            label_names,
            logger=self.logger,
            context=self._context,
            work_load_list=self._work_load_list,
            fixed_param_names=self._fixed_param_names,
            state_names=self._state_names,
            group2ctxs=self._group2ctxs,
            compression_params=self._compression_params,
        )

    def _reset_bind(self) -> None:
        self.binded = False
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    # ------------------------------------------------------------------ what the current bucket has
    @property
    def data_names(self) -> list[str]:
        if self.binded:
            return self._curr_module.data_names
        return list(self._call_sym_gen(self._default_bucket_key)[1] or [])

    @property
    def output_names(self) -> list[str]:
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self) -> list[Any]:
        self._require("data_shapes", bound=True)
        return self._curr_module.data_shapes

    @property
    def label_shapes(self) -> list[Any] | None:
        self._require("label_shapes", bound=True)
        return self._curr_module.label_shapes

    @property
    def output_shapes(self) -> list[Any]:
        self._require("output_shapes", bound=True)
        return self._curr_module.output_shapes

    @property
    def symbol(self) -> Any:
        self._require("symbol", bound=True)
        return self._curr_module.symbol

    # ------------------------------------------------------------------ parameters
    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
        self._require("get_params", params=True)
        if self._preloaded is not None:
            return self._preloaded
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def _assign_present_params(
        self, arg_params: Mapping[str, NDArray], aux_params: Mapping[str, NDArray], allow_extra: bool
    ) -> None:
        """Assign through the current bucket's module (the buckets share its arrays)."""
        self._curr_module.set_params(
            arg_params, aux_params, allow_missing=True, force_init=True, allow_extra=allow_extra
        )
        self._params_dirty = True

    def init_params(
        self,
        initializer: Any = Uniform(0.01),  # noqa: B008 - MXNet's default
        arg_params: Mapping[str, NDArray] | None = None,
        aux_params: Mapping[str, NDArray] | None = None,
        allow_missing: bool = False,
        force_init: bool = False,
        allow_extra: bool = False,
    ) -> None:
        if self.params_initialized and not force_init:
            return
        self._require("init_params", bound=True)
        self._curr_module.init_params(
            initializer=initializer,
            arg_params=arg_params,
            aux_params=aux_params,
            allow_missing=allow_missing,
            force_init=force_init,
            allow_extra=allow_extra,
        )
        self._params_dirty = False
        self.params_initialized = True

    def get_states(self, merge_multi_context: bool = True) -> list[Any]:
        self._require("get_states", bound=True, params=True)
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states: Any = None, value: Any = None) -> None:
        self._require("set_states", bound=True, params=True)
        self._curr_module.set_states(states, value)

    # ------------------------------------------------------------------ binding and buckets
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
        """Bind the default bucket's module for ``data_shapes`` (the largest bucket's shapes)."""
        arg_params = aux_params = None
        if self.params_initialized:
            arg_params, aux_params = self.get_params()
            self._preloaded = None
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise ModuleError(
                "BucketingModule.bind: shared_module is not supported (the buckets share among themselves)"
            )
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        symbol, data_names, label_names = self._call_sym_gen(self._default_bucket_key)
        module = self._new_module(symbol, data_names, label_names)
        module.bind(
            data_shapes,
            label_shapes,
            for_training,
            inputs_need_grad,
            force_rebind=False,
            shared_module=None,
            grad_req=self._grad_req,
        )
        self.binded = True
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        if arg_params is not None:
            self.set_params(arg_params, aux_params)

    def switch_bucket(self, bucket_key: Hashable, data_shapes: Any, label_shapes: Any = None) -> None:
        """Make ``bucket_key``'s module current, building and binding it (sharing the default's) on first use."""
        self._require("switch_bucket", bound=True)
        module = self._buckets.get(bucket_key)
        if module is None:
            symbol, data_names, label_names = self._call_sym_gen(bucket_key)
            module = self._new_module(symbol, data_names, label_names)
            self._buckets[bucket_key] = module
        if not module.binded:
            if data_shapes is None:
                raise ModuleError(f"switch_bucket: bucket {bucket_key!r} is not bound yet; give its data_shapes")
            module.bind(
                data_shapes,
                label_shapes,
                self._curr_module.for_training,
                self._curr_module.inputs_need_grad,
                force_rebind=False,
                shared_module=self._buckets[self._default_bucket_key],
                grad_req=self._grad_req,
            )
            if self._monitor is not None:
                module.install_monitor(self._monitor)
        self._curr_module = module
        self._curr_bucket_key = bucket_key

    # ------------------------------------------------------------------ optimizer and steps
    def init_optimizer(
        self,
        kvstore: Any = "local",
        optimizer: Any = "sgd",
        optimizer_params: Any = (("learning_rate", 0.01),),
        force_init: bool = False,
    ) -> None:
        """Install the optimizer on the current module; every other bucket borrows it."""
        self._require("init_optimizer", bound=True, params=True)
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params, force_init=force_init)
        for module in self._buckets.values():
            if module is not self._curr_module and module.binded:
                module.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    def prepare(self, data_batch: Any, sparse_row_id_fn: Any = None) -> None:
        """Bind the batch's bucket ahead of its forward (the current bucket stays current)."""
        self._require("prepare", bound=True, params=True)
        original = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data, data_batch.provide_label)
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original, None, None)

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        self._require("forward", bound=True, params=True)
        bucket_key = getattr(data_batch, "bucket_key", None)
        if bucket_key is None:
            bucket_key = self._default_bucket_key
        self.switch_bucket(bucket_key, data_batch.provide_data, data_batch.provide_label)
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads: Any = None) -> None:
        self._require("backward", bound=True, params=True)
        self._curr_module.backward(out_grads=out_grads)

    def update(self) -> None:
        self._require("update", bound=True, params=True, optimizer=True)
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context: bool = True) -> list[Any]:
        self._require("get_outputs", bound=True, params=True)
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list[Any]:
        self._require("get_input_grads", bound=True, params=True)
        if not self.inputs_need_grad:
            raise ModuleError("get_input_grads: bind with inputs_need_grad=True first")
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        self._require("update_metric", bound=True, params=True)
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon: Any) -> None:
        self._require("install_monitor", bound=True)
        self._monitor = mon
        for module in self._buckets.values():
            module.install_monitor(mon)

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self, prefix: str, epoch: int, remove_amp_cast: bool = False) -> None:
        """``prefix-%04d.params``, one ``prefix-<key>-symbol.json`` per bucket, and ``prefix.buckets`` (the keys)."""
        if not self._buckets:
            raise ModuleError("save_checkpoint: an empty BucketingModule (never bound) cannot be saved")
        self.save_params(params_file(prefix, epoch))
        for bucket_key in self._buckets:
            symbol, _, _ = self._call_sym_gen(bucket_key)
            # remove_amp_cast is accepted as mx.model.save_checkpoint accepts it: the symbol is saved as it is
            symbol.save(f"{prefix}-{bucket_key}-symbol.json")
        nd.save(f"{prefix}.buckets", nd.array(list(self._buckets), dtype=np.int32))

    @staticmethod
    def load(
        prefix: str, epoch: int, sym_gen: SymGen | None = None, default_bucket_key: Hashable = None, **kwargs: Any
    ) -> BucketingModule:
        """A BucketingModule from :meth:`save_checkpoint`'s files; ``sym_gen`` gives the data and label names."""
        if sym_gen is None or default_bucket_key is None:
            raise ModuleError("BucketingModule.load: sym_gen and default_bucket_key are required")
        buckets = [int(key) for key in nd.load(f"{prefix}.buckets")[0].asnumpy().astype(np.int32)]
        symbols = {key: sym.load(f"{prefix}-{key}-symbol.json") for key in buckets}
        arg_params, aux_params = load_params(prefix, epoch)
        return BucketingModule.load_dict(symbols, sym_gen, default_bucket_key, arg_params, aux_params, **kwargs)

    @staticmethod
    def load_dict(
        sym_dict: Mapping[Hashable, Any] | None = None,
        sym_gen: SymGen | None = None,
        default_bucket_key: Hashable = None,
        arg_params: Mapping[str, NDArray] | None = None,
        aux_params: Mapping[str, NDArray] | None = None,
        **kwargs: Any,
    ) -> BucketingModule:
        """A BucketingModule from ``{bucket_key: symbol}`` and shared parameters (bound on first ``bind``)."""
        for name, value in (
            ("sym_dict", sym_dict),
            ("sym_gen", sym_gen),
            ("default_bucket_key", default_bucket_key),
            ("arg_params", arg_params),
            ("aux_params", aux_params),
        ):
            if value is None:
                raise ModuleError(f"BucketingModule.load_dict: {name} is required")
        if default_bucket_key not in sym_dict:
            raise ModuleError(
                f"BucketingModule.load_dict: default_bucket_key {default_bucket_key!r} is not among {sorted(sym_dict)}"
            )
        module = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        module._loaded_symbols = dict(sym_dict)
        module._preloaded = (dict(arg_params), dict(aux_params))
        module.params_initialized = True
        return module
