"""``gluon.Trainer``: applies an optimizer to a set of Parameters, through a KVStore when needed.

``trainer.step(batch_size)`` after ``loss.backward()`` does two things:

1. **All-reduce.** A parameter initialized on several contexts (data parallelism) has a
   gradient per context; they are summed through a KVStore (``push`` every replica's
   gradient, ``pull`` the sum back into each), so every replica sees the gradient of the
   whole batch. With one context there is nothing to reduce and no store is created
   (unless a ``dist_*`` store is asked for: then workers reduce across processes).
2. **Update.** Either the store runs the optimizer on the summed gradient and every
   replica pulls the new weight (``update_on_kvstore``, MXNet's default for multi-device
   stores), or each context's updater applies the optimizer to its replica.

The gradient is scaled by ``rescale_grad / batch_size`` (the optimizer's ``rescale_grad``
is set on every step), so a loss summed over the batch gives a mean gradient.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import autograd, config
from .. import kvstore as kvs
from .. import optimizer as opt
from ..base import MXLabError
from ..context import Context
from .parameter import Parameter, ParameterDict


class TrainerError(MXLabError, ValueError):
    """The trainer was given bad parameters or used in an order it does not allow."""


class Trainer:
    """Updates ``params`` with ``optimizer`` (MXNet 1.x's ``gluon.Trainer``)."""

    def __init__(
        self,
        params: ParameterDict | Mapping[str, Parameter] | Sequence[Parameter],
        optimizer: str | opt.Optimizer,
        optimizer_params: dict[str, Any] | None = None,
        kvstore: str | kvs.KVStore | None = "device",
        compression_params: dict[str, Any] | None = None,
        update_on_kvstore: bool | None = None,
    ) -> None:
        if isinstance(params, Mapping):
            params = [params[key] for key in sorted(params.keys())]
        if not isinstance(params, list | tuple):
            raise TrainerError(f"First argument must be a list or dict of Parameters, got {type(params)}.")
        self._params: list[Parameter] = []
        seen: set[int] = set()
        for param in params:
            if not isinstance(param, Parameter):
                raise TrainerError(f"First argument must be a list or dict of Parameters, got list of {type(param)}.")
            if id(param) in seen:
                raise TrainerError(f"Parameter '{param.name}' is duplicated in the list of Parameters given to Trainer")
            seen.add(id(param))
            self._params.append(param)
        self._compression_params = compression_params
        self._check_contexts()  # as MXNet: a parameter never initialized is an error here, not at step()
        self._init_optimizer(optimizer, dict(optimizer_params or {}))
        self._scale = self._optimizer.rescale_grad
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._kv_initialized = False
        self._kvstore: kvs.KVStore | None = None
        self._update_on_kvstore = False
        self._contexts: list[Context] = []
        self._updaters: list[opt.Updater] = []

    def _init_optimizer(self, optimizer: str | opt.Optimizer, optimizer_params: dict[str, Any]) -> None:
        param_dict = dict(enumerate(self._params))
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise TrainerError(
                    "optimizer_params must be None if optimizer is an instance of Optimizer instead of str"
                )
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)

    def _check_contexts(self) -> list[Context]:
        contexts: list[Context] | None = None
        for param in self._params:
            ctx = param.list_ctx()
            if contexts is not None and contexts != ctx:
                raise TrainerError(
                    f"All Parameters must be initialized on the same set of contexts, but Parameter {param.name} "
                    f"is initialized on {ctx} while previous Parameters are initialized on {contexts}."
                )
            contexts = ctx
        return contexts or []

    def _init_kvstore(self) -> None:
        """Choose the store (none for one context), the update mode, and seed it with the weights."""
        self._contexts = self._check_contexts()
        self._updaters = [opt.get_updater(self._optimizer) for _ in self._contexts]
        params = self._kvstore_params
        requested = params["kvstore"]
        update_on_kvstore = config.get("MXLAB_UPDATE_ON_KVSTORE")
        store: kvs.KVStore | None
        if requested is None:
            store = None
        elif isinstance(requested, kvs.KVStore):
            store = requested
        elif isinstance(requested, str):
            if len(self._contexts) == 1 and "dist" not in requested:
                store = None  # one replica: nothing to reduce
            else:
                store = kvs.create(requested)
                if requested == "local":
                    largest = max(int(np.prod(p.shape)) for p in self._params if p.shape)
                    if largest > 1024 * 1024 * 16:
                        update_on_kvstore = False
        else:
            raise TrainerError(f"kvstore must be KVStore, str or None, got {type(requested).__name__}")
        if store is None:
            if params["update_on_kvstore"]:
                raise TrainerError("Cannot set update_on_kvstore=True when there is no kvstore (one context)")
            update_on_kvstore = False
        else:
            if self._compression_params:
                store.set_gradient_compression(self._compression_params)
            if params["update_on_kvstore"] is not None:
                update_on_kvstore = bool(params["update_on_kvstore"])
            for i, param in enumerate(self._params):
                store.init(i, param.list_data()[0])
                store.pull(i, param.list_data(), priority=-i)  # every replica starts from the same weight
            if update_on_kvstore:
                store.set_optimizer(self._optimizer)
        self._kvstore = store
        self._update_on_kvstore = update_on_kvstore
        self._kv_initialized = True

    # ------------------------------------------------------------------ learning rate
    @property
    def learning_rate(self) -> float:
        return self._optimizer.learning_rate

    @property
    def optimizer(self) -> opt.Optimizer:
        return self._optimizer

    def set_learning_rate(self, lr: float) -> None:
        self._optimizer.set_learning_rate(lr)

    # ------------------------------------------------------------------ steps
    def step(self, batch_size: int, ignore_stale_grad: bool = False) -> None:
        """All-reduce the gradients, then update every parameter with gradient scale ``1/batch_size``."""
        self._optimizer.rescale_grad = self._scale / batch_size
        if not self._kv_initialized:
            self._init_kvstore()
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def allreduce_grads(self) -> None:
        """Only sum the gradients across contexts (for gradient clipping between reduce and update)."""
        if not self._kv_initialized:
            self._init_kvstore()
        if self._kvstore is not None and self._update_on_kvstore:
            raise TrainerError(
                "allreduce_grads() when parameters are updated on kvstore is not supported. "
                "Try setting `update_on_kvstore` to False when creating trainer."
            )
        self._allreduce_grads()

    def update(self, batch_size: int, ignore_stale_grad: bool = False) -> None:
        """Only apply the optimizer (after ``allreduce_grads``)."""
        if not self._kv_initialized:
            self._init_kvstore()
        if self._kvstore is not None and self._update_on_kvstore:
            raise TrainerError(
                "update() when parameters are updated on kvstore is not supported. "
                "Try setting `update_on_kvstore` to False when creating trainer."
            )
        self._optimizer.rescale_grad = self._scale / batch_size
        self._update(ignore_stale_grad)

    def _allreduce_grads(self) -> None:
        if self._kvstore is None:
            return
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            self._kvstore.push(i, param.list_grad(), priority=-i)
            if not self._update_on_kvstore:
                self._kvstore.pull(i, param.list_grad(), priority=-i)

    def _update(self, ignore_stale_grad: bool = False) -> None:
        updates: list[list[tuple[int, Any, Any]]] = [[] for _ in self._updaters]
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            fresh = [autograd.take_fresh_grad(g) for g in param.list_grad()]
            if not ignore_stale_grad and not all(fresh):
                stale = [str(c) for c, f in zip(param.list_ctx(), fresh, strict=True) if not f]
                raise TrainerError(
                    f"Gradient of Parameter `{param.name}` on context {', '.join(stale)} has not been updated by "
                    "backward since last `step`. This could mean a bug in your model that made it only use a "
                    "subset of the Parameters (Blocks) for this iteration. If you are intentionally only using a "
                    "subset, call step with ignore_stale_grad=True to suppress this warning and skip updating of "
                    "Parameters with stale gradient"
                )
            if self._kvstore is not None and self._update_on_kvstore:
                if all(fresh) or not ignore_stale_grad:
                    self._kvstore.pull(i, param.list_data(), priority=-i)
                continue
            for upd, weight, grad, is_fresh in zip(updates, param.list_data(), param.list_grad(), fresh, strict=True):
                if is_fresh or not ignore_stale_grad:
                    upd.append((i, grad, weight))
        if self._kvstore is not None and self._update_on_kvstore:
            return
        for updater, upd in zip(self._updaters, updates, strict=True):
            if upd:
                indices, grads, weights = zip(*upd, strict=True)
                updater(list(indices), list(grads), list(weights))

    # ------------------------------------------------------------------ states
    def save_states(self, fname: str) -> None:
        """Write the optimizer and its states (momentum, ...) to ``fname``."""
        if not self._kv_initialized:
            self._init_kvstore()
        if self._kvstore is not None and self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
        else:
            with open(fname, "wb") as f:
                f.write(self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname: str) -> None:
        """Restore what :meth:`save_states` wrote (the optimizer object is replaced by the saved one)."""
        if not self._kv_initialized:
            self._init_kvstore()
        if self._kvstore is not None and self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            updater = getattr(self._kvstore, "_updater", None)
            if isinstance(updater, opt.Updater):
                self._optimizer = updater.optimizer
        else:
            with open(fname, "rb") as f:
                states = f.read()
            for updater in self._updaters:
                updater.set_states(states)
                updater.optimizer = self._updaters[0].optimizer
            self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = dict(enumerate(self._params))
