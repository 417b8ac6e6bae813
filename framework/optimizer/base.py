"""The optimizer base class: the rules every optimizer shares (rates, decay, multipliers,
update counts), the registry behind ``mx.optimizer.create`` and the argument checks."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..base import MXLabError
from ..ndarray import NDArray
from ..ndarray import op as _op


class OptimizerError(MXLabError, ValueError):
    """An optimizer was created or called with values it cannot work with."""


def _number(value: Any, what: str, low: float | None = None, high: float | None = None, *, open_high: bool = False):
    """``value`` as a float, or an error naming the argument and what was given."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise OptimizerError(f"{what} must be a number, got {value!r}")
    value = float(value)
    if math.isnan(value):
        raise OptimizerError(f"{what} must be a number, got nan")
    if low is not None and value < low:
        raise OptimizerError(f"{what} must be >= {low}, got {value}")
    if high is not None and (value >= high if open_high else value > high):
        raise OptimizerError(f"{what} must be {'<' if open_high else '<='} {high}, got {value}")
    return value


def _check_arrays(name: str, weight: Any, grad: Any) -> None:
    for what, value in (("weight", weight), ("grad", grad)):
        if not isinstance(value, NDArray):
            raise OptimizerError(f"{name}.update: {what} must be an NDArray, got {type(value).__name__}")
    if weight.shape != grad.shape:
        raise OptimizerError(f"{name}.update: grad shape {grad.shape} does not match weight shape {weight.shape}")


class Optimizer:
    """Base class of all optimizers; subclasses implement ``create_state`` and ``update``.

    Args:
        rescale_grad: multiply gradients by this before anything else (``1 / batch_size``).
        param_idx2name: index -> parameter name; names not ending in ``_weight`` or
            ``_gamma`` get no weight decay (``wd_mult`` 0), as in MXNet.
        wd: L2 weight decay coefficient.
        clip_gradient: clip rescaled gradients to ``[-clip_gradient, clip_gradient]``;
            None or 0 = no clipping.
        learning_rate: the rate; overrides the scheduler's ``base_lr``. Default 0.01 when
            there is no scheduler.
        lr_scheduler: a callable ``num_update -> rate`` (see ``mx.lr_scheduler``).
        sym: a Symbol whose ``__lr_mult__`` / ``__wd_mult__`` attributes set the multipliers.
        begin_num_update: the update count to start from (when resuming).
        multi_precision: keep a float32 master copy of float16 weights.
        param_dict: index -> object with ``lr_mult`` / ``wd_mult`` (Gluon parameters).
    """

    #: name (lower case) -> optimizer class, filled by :meth:`register`.
    opt_registry: ClassVar[dict[str, type[Optimizer]]] = {}

    def __init__(
        self,
        rescale_grad: float = 1.0,
        param_idx2name: dict[int, str] | None = None,
        wd: float = 0.0,
        clip_gradient: float | None = None,
        learning_rate: float | None = None,
        lr_scheduler: Any = None,
        sym: Any = None,
        begin_num_update: int = 0,
        multi_precision: bool = False,
        param_dict: dict | None = None,
    ) -> None:
        name = type(self).__name__
        self.rescale_grad = _number(rescale_grad, f"{name}: rescale_grad")
        self.wd = _number(wd, f"{name}: wd")
        if clip_gradient is not None:
            clip_gradient = _number(clip_gradient, f"{name}: clip_gradient", low=0.0)
        self.clip_gradient = clip_gradient
        if lr_scheduler is not None and not callable(lr_scheduler):
            raise OptimizerError(f"{name}: lr_scheduler must be callable (num_update -> rate), got {lr_scheduler!r}")
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        if learning_rate is not None:
            learning_rate = _number(learning_rate, f"{name}: learning_rate", low=0.0)
        self.lr = learning_rate
        if lr_scheduler is not None and learning_rate is not None and lr_scheduler.base_lr != learning_rate:
            # MXNet prints this and overrides the scheduler's starting rate.
            warnings.warn(
                f"{name}: learning rate from ``lr_scheduler`` ({lr_scheduler.base_lr}) has been overwritten by "
                f"``learning_rate`` ({learning_rate}) in optimizer.",
                UserWarning,
                stacklevel=2,
            )
            lr_scheduler.base_lr = learning_rate
        if isinstance(begin_num_update, bool) or not isinstance(begin_num_update, numbers.Integral):
            raise OptimizerError(f"{name}: begin_num_update must be an int, got {begin_num_update!r}")
        self.begin_num_update = int(begin_num_update)
        self.num_update = int(begin_num_update)
        # Update counts per weight index, one table per device (data-parallel copies of a
        # weight are updated once per device, which must count as one step).
        self._all_index_update_counts: dict[int, dict[Any, int]] = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.multi_precision = bool(multi_precision)
        #: How many weights one fused update operation may take (0: one operation per weight);
        #: SGD fuses (``multi_sgd_update``), the other rules update one weight at a time.
        self.aggregate_num = 0
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise OptimizerError(
                f"{name}: param_idx2name should be a dict of param indexes to names, "
                f"got {type(param_idx2name).__name__}"
            )
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.lr_mult: dict[Any, float] = {}
        self.wd_mult: dict[Any, float] = {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    # ------------------------------------------------------------------ registry
    @staticmethod
    def register(klass: type[Optimizer]) -> type[Optimizer]:
        """Class decorator: make ``klass`` creatable by its lower-case name."""
        if not (isinstance(klass, type) and issubclass(klass, Optimizer)):
            raise OptimizerError(f"Optimizer.register expects an Optimizer subclass, got {klass!r}")
        name = klass.__name__.lower()
        previous = Optimizer.opt_registry.get(name)
        if previous is not None and previous is not klass:
            warnings.warn(
                f"WARNING: New optimizer {klass.__module__}.{klass.__name__} is overriding existing optimizer "
                f"{previous.__module__}.{previous.__name__}",
                stacklevel=2,
            )
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name: str, **kwargs: Any) -> Optimizer:
        """An instance of the optimizer registered as ``name`` (case-insensitive)."""
        if not isinstance(name, str):
            raise OptimizerError(f"optimizer name must be a string, got {name!r}")
        klass = Optimizer.opt_registry.get(name.lower())
        if klass is None:
            known = ", ".join(sorted(Optimizer.opt_registry))
            raise OptimizerError(f"Cannot find optimizer {name!r}; registered optimizers: {known}")
        return klass(**kwargs)

    # ------------------------------------------------------------------ learning rate
    @property
    def learning_rate(self) -> float:
        """The current rate: the scheduler's for ``num_update``, else the fixed one."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr: float) -> None:
        """Set a fixed rate; not allowed when a scheduler decides the rate."""
        if self.lr_scheduler is not None:
            raise OptimizerError(
                f"{type(self).__name__}: LRScheduler of the optimizer has already been defined. set_learning_rate "
                "can mutate the value of the learning rate only when the LRScheduler is undefined."
            )
        self.lr = _number(lr, f"{type(self).__name__}.set_learning_rate: lr", low=0.0)

    def set_lr_mult(self, args_lr_mult: dict[Any, float]) -> None:
        """Per-parameter rate multipliers, by name or index (a symbol's ``__lr_mult__`` first)."""
        self.lr_mult = {}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__lr_mult__" in attr[name]:
                    self.lr_mult[name] = float(attr[name]["__lr_mult__"])
        self.lr_mult.update(args_lr_mult)

    def set_lr_scale(self, args_lrscale: dict[Any, float]) -> None:
        """Removed in MXNet 1.x (it raises there too): per-parameter rates are ``set_lr_mult``."""
        raise DeprecationWarning("Optimizer.set_lr_scale was removed in MXNet 1.x; use set_lr_mult(args_lr_mult)")

    def set_wd_mult(self, args_wd_mult: dict[Any, float]) -> None:
        """Per-parameter decay multipliers. Biases and BatchNorm betas get none by default.

        Every name in ``param_idx2name`` that does not end in ``_weight`` or ``_gamma`` gets
        multiplier 0; then a symbol's ``__wd_mult__`` attributes, then ``args_wd_mult``.
        """
        self.wd_mult = {}
        for name in self.idx2name.values():
            if not (name.endswith("_weight") or name.endswith("_gamma")):
                self.wd_mult[name] = 0.0
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__wd_mult__" in attr[name]:
                    self.wd_mult[name] = float(attr[name]["__wd_mult__"])
        self.wd_mult.update(args_wd_mult)

    def _set_current_context(self, device_id: int) -> None:
        """Switch to the update counts of device ``device_id``."""
        if device_id not in self._all_index_update_counts:
            self._all_index_update_counts[device_id] = {}
        self._index_update_count = self._all_index_update_counts[device_id]

    def _update_count(self, index: Any) -> None:
        """Count one more update of ``index`` (or of each index in a list)."""
        for idx in index if isinstance(index, list | tuple) else [index]:
            if idx not in self._index_update_count:
                self._index_update_count[idx] = self.begin_num_update
            self._index_update_count[idx] += 1
            self.num_update = max(self._index_update_count[idx], self.num_update)

    def _get_lrs(self, indices: Sequence[Any]) -> list[float]:
        """Rates for ``indices``: the current rate times each parameter's multiplier."""
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        lrs = [lr for _ in indices]
        for i, index in enumerate(indices):
            if index in self.param_dict:
                lrs[i] *= self.param_dict[index].lr_mult
            elif index in self.lr_mult:
                lrs[i] *= self.lr_mult[index]
            elif index in self.idx2name:
                lrs[i] *= self.lr_mult.get(self.idx2name[index], 1.0)
        return lrs

    def _get_lr(self, index: Any) -> float:
        return self._get_lrs([index])[0]

    def _get_wds(self, indices: Sequence[Any]) -> list[float]:
        """Weight decays for ``indices``: ``wd`` times each parameter's multiplier."""
        wds = [self.wd for _ in indices]
        for i, index in enumerate(indices):
            if index in self.param_dict:
                wds[i] *= self.param_dict[index].wd_mult
            elif index in self.wd_mult:
                wds[i] *= self.wd_mult[index]
            elif index in self.idx2name:
                wds[i] *= self.wd_mult.get(self.idx2name[index], 1.0)
        return wds

    def _get_wd(self, index: Any) -> float:
        return self._get_wds([index])[0]

    def _common_kwargs(self) -> dict[str, float]:
        """``rescale_grad`` always, ``clip_gradient`` only when set (the operators' default is off)."""
        kwargs = {"rescale_grad": self.rescale_grad}
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        return kwargs

    # ------------------------------------------------------------------ states and updates
    def create_state(self, index: Any, weight: NDArray) -> Any:
        """The state this rule keeps for ``weight`` (None, an NDArray or a tuple of them)."""
        return None

    def create_state_multi_precision(self, index: Any, weight: NDArray) -> Any:
        """Like ``create_state``, plus a float32 master copy for float16 weights when asked.

        The base layout is ``(weight32, state)``; SGD and NAG use ``(state, weight32)``, the
        order their fused ``mp_*`` operators take.
        """
        if self.multi_precision and weight.dtype == np.float16:
            weight_master_copy = weight.astype(np.float32)
            return (weight_master_copy, self.create_state(index, weight_master_copy))
        if weight.dtype == np.float16 and not self.multi_precision:
            warnings.warn(
                "Accumulating with float16 in optimizer can lead to poor accuracy or slow convergence. "
                "Consider using multi_precision=True option of the optimizer",
                stacklevel=2,
            )
        return self.create_state(index, weight)

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        """Apply one step to ``weight`` in place, using and updating ``state``."""
        raise NotImplementedError(f"{type(self).__name__} must implement update(index, weight, grad, state)")

    def update_multi_precision(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        """``update``, through the float32 master copy when the weight is float16."""
        if self.multi_precision and weight.dtype == np.float16:
            weight_master_copy, original_state = state
            self.update(index, weight_master_copy, grad.astype(np.float32), original_state)
            _op.cast(weight_master_copy, dtype=np.dtype(weight.dtype).name, out=weight)
        else:
            self.update(index, weight, grad, state)

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["param_dict"]  # Gluon parameters are re-attached by their trainer
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__ = state
        self.param_dict = {}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} lr={self.lr} wd={self.wd} rescale_grad={self.rescale_grad}>"


register = Optimizer.register
create = Optimizer.create_optimizer


def _split_lists(index: Any, weight: Any, grad: Any, state: Any) -> list[tuple]:
    """Accept one weight or lists of them (MXNet's aggregated call), as a list of tuples."""
    if isinstance(index, list | tuple):
        return list(zip(index, weight, grad, state, strict=True))
    return [(index, weight, grad, state)]
