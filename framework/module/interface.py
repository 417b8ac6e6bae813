"""``ModuleInterface``: a module's life cycle and the steps every module must provide.

A module is a computation machine with a life cycle: *bound* (shapes known, memory
allocated), *parameters initialized*, *optimizer installed*. This class holds that state and
names the intermediate steps a concrete module (``Module``, ``BucketingModule``, ...)
implements:

* ``bind``, ``init_params``, ``init_optimizer``: get ready;
* ``forward(batch)``, ``backward()``, ``update()``: one training step;
* ``get_outputs()``, ``update_metric(metric, labels)``: look at the result.

A step a subclass leaves out raises ``NotImplementedError`` naming it. The loops written once
against these steps (``fit``, ``score``, ``predict``) are in :mod:`.base_module`; keeping the
contract apart lets a reader see at a glance what a new kind of module has to implement.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

from ..ndarray import NDArray
from .executor_group import ModuleError


class ModuleInterface:
    """The module life cycle (``binded``, ``params_initialized``, ...) and the steps subclasses provide."""

    def __init__(self, logger: Any = logging) -> None:
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol: Any = None
        self._total_exec_bytes = 0

    # ------------------------------------------------------------------ steps with a default
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
