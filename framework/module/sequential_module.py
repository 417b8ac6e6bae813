"""``SequentialModule``: a chain of modules, each one's outputs the next one's data.

``forward`` runs the modules in order, feeding module ``i``'s outputs to module ``i + 1`` as its
data; ``backward`` runs them in reverse, handing module ``i + 1``'s input gradients to module ``i``
as its output gradients (so every module but the first is bound with ``inputs_need_grad``). Labels
go only to the modules added with ``take_labels=True`` (typically the last, the loss), and only
those update the metric. ``auto_wiring=True`` renames the incoming outputs to the module's own data
names, so a module need not call its input ``fc1_output``.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from ..initializer import Uniform
from ..ndarray import NDArray
from .base_module import BaseModule
from .executor_group import ModuleError


class SequentialModule(BaseModule):
    """Modules chained output to input. ``add(module, take_labels=..., auto_wiring=...)`` appends one."""

    META_TAKE_LABELS = "take_labels"
    META_AUTO_WIRING = "auto_wiring"

    def __init__(self, logger: Any = logging) -> None:
        super().__init__(logger=logger)
        self._modules: list[BaseModule] = []
        self._metas: list[dict[str, Any]] = []
        self._label_shapes: list[Any] | None = None
        self._data_shapes: list[Any] | None = None
        self._meta_keys = {self.META_TAKE_LABELS, self.META_AUTO_WIRING}

    def add(self, module: BaseModule, **kwargs: Any) -> SequentialModule:
        """Append ``module``; the chain must be bound and initialised again. Returns self (to chain calls)."""
        unknown = sorted(set(kwargs) - self._meta_keys)
        if unknown:
            raise ModuleError(f"SequentialModule.add: unknown meta {unknown}; known: {sorted(self._meta_keys)}")
        self._modules.append(module)
        self._metas.append(kwargs)
        self.binded = False
        self.params_initialized = False
        self.optimizer_initialized = False
        return self

    def _require_modules(self, what: str) -> None:
        if not self._modules:
            raise ModuleError(f"{what}: the SequentialModule is empty; add modules first")

    @property
    def data_names(self) -> list[str]:
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self) -> list[str]:
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self) -> list[Any]:
        self._require("data_shapes", bound=True)
        return self._modules[0].data_shapes

    @property
    def label_shapes(self) -> list[Any] | None:
        self._require("label_shapes", bound=True)
        return self._label_shapes

    @property
    def output_shapes(self) -> list[Any]:
        self._require("output_shapes", bound=True)
        return self._modules[-1].output_shapes

    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
        """Every module's parameters in one pair of dicts."""
        self._require("get_params", bound=True, params=True)
        arg_params: dict[str, NDArray] = {}
        aux_params: dict[str, NDArray] = {}
        for module in self._modules:
            arg, aux = module.get_params()
            arg_params.update(arg)
            aux_params.update(aux)
        return arg_params, aux_params

    def init_params(
        self,
        initializer: Any = Uniform(0.01),  # noqa: B008 - MXNet's default
        arg_params: Any = None,
        aux_params: Any = None,
        allow_missing: bool = False,
        force_init: bool = False,
        allow_extra: bool = False,
    ) -> None:
        """Initialise every module; two modules may not share a parameter name (one dict holds them all)."""
        if self.params_initialized and not force_init:
            return
        self._require("init_params", bound=True)
        for module in self._modules:
            module.init_params(
                initializer=initializer,
                arg_params=arg_params,
                aux_params=aux_params,
                allow_missing=allow_missing,
                force_init=force_init,
                allow_extra=allow_extra,
            )
        seen: dict[str, dict[str, int]] = {"argument": {}, "auxiliary state": {}}
        for layer, module in enumerate(self._modules):
            for kind, names in zip(seen, module.get_params(), strict=True):
                for name in names:
                    if name in seen[kind]:
                        first = seen[kind][name]
                        raise ModuleError(
                            f"SequentialModule: duplicated {kind} name {name!r} in layer {layer} "
                            f"({type(module).__name__}), already used in layer {first} "
                            f"({type(self._modules[first]).__name__})"
                        )
                    seen[kind][name] = layer
        self.params_initialized = True

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
        """Bind each module on the previous one's output shapes."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise ModuleError("SequentialModule.bind: inputs_need_grad=True needs for_training=True")
        if shared_module is not None:
            raise ModuleError("SequentialModule.bind: shared_module is not supported")
        self._require_modules("bind")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._label_shapes = label_shapes
        layer_data_shapes = data_shapes
        anybody_needs_labels = False
        for layer, (module, meta) in enumerate(zip(self._modules, self._metas, strict=True)):
            takes_labels = bool(meta.get(self.META_TAKE_LABELS, False))
            anybody_needs_labels |= takes_labels
            if meta.get(self.META_AUTO_WIRING, False):
                names = module.data_names
                if len(names) != len(layer_data_shapes):
                    raise ModuleError(
                        f"SequentialModule.bind: layer {layer} takes {len(names)} data inputs {names}, "
                        f"the layer before gives {len(layer_data_shapes)}"
                    )
                layer_data_shapes = [(name, desc[1]) for name, desc in zip(names, layer_data_shapes, strict=True)]
            module.bind(
                data_shapes=layer_data_shapes,
                label_shapes=label_shapes if takes_labels else None,
                for_training=for_training,
                # every module after the first passes gradients back to the module before it
                inputs_need_grad=bool(inputs_need_grad or (for_training and layer > 0)),
                force_rebind=force_rebind,
                shared_module=None,
                grad_req=grad_req,
            )
            layer_data_shapes = module.output_shapes
        if not anybody_needs_labels:
            self._label_shapes = None
        self.binded = True

    def init_optimizer(
        self,
        kvstore: Any = "local",
        optimizer: Any = "sgd",
        optimizer_params: Any = (("learning_rate", 0.01),),
        force_init: bool = False,
    ) -> None:
        self._require("init_optimizer", bound=True, params=True)
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        for module in self._modules:
            module.init_optimizer(
                kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params, force_init=force_init
            )
        self.optimizer_initialized = True

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Run the modules in order; each one's outputs become the next one's ``data``."""
        self._require("forward", bound=True, params=True)
        data_batch = copy.copy(data_batch)  # keeps label, pad, bucket_key...; only data is replaced
        for layer, module in enumerate(self._modules):
            module.forward(data_batch, is_train=is_train)
            if layer + 1 == len(self._modules):
                break
            data_batch.data = module.get_outputs()
            if getattr(data_batch, "provide_data", None) is not None:
                names = [desc[0] for desc in module.output_shapes]
                data_batch.provide_data = [(name, out.shape) for name, out in zip(names, data_batch.data, strict=True)]

    def backward(self, out_grads: Any = None) -> None:
        """Run the modules in reverse; each one's input gradients are the previous one's output gradients."""
        self._require("backward", bound=True, params=True)
        for layer in range(len(self._modules) - 1, -1, -1):
            module = self._modules[layer]
            module.backward(out_grads=out_grads)
            if layer == 0:
                break
            out_grads = module.get_input_grads()

    def update(self) -> None:
        self._require("update", bound=True, params=True, optimizer=True)
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context: bool = True) -> list[Any]:
        self._require("get_outputs", bound=True, params=True)
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list[Any]:
        self._require("get_input_grads", bound=True, params=True)
        if not self.inputs_need_grad:
            raise ModuleError("get_input_grads: bind with inputs_need_grad=True first")
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        """Only the modules that take labels score their outputs."""
        self._require("update_metric", bound=True, params=True)
        for meta, module in zip(self._metas, self._modules, strict=True):
            if meta.get(self.META_TAKE_LABELS, False):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon: Any) -> None:
        self._require("install_monitor", bound=True)
        for module in self._modules:
            module.install_monitor(mon)
