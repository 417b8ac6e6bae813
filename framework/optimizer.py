"""``mx.optimizer``: how a gradient becomes a weight update (MXNet 1.x's optimizer API).

An :class:`Optimizer` holds the *rules* of a step: the learning rate (fixed, or from an
``lr_scheduler``), weight decay ``wd``, ``rescale_grad`` (usually ``1 / batch_size``) and
``clip_gradient``, with per-parameter multipliers (``set_lr_mult`` / ``set_wd_mult``). It
knows nothing about which weights exist. Each weight is identified by an *index* (an int,
or a name), and the optimizer is asked two things about it:

* ``create_state(index, weight)``: the extra arrays this rule keeps per weight (SGD's
  momentum, Adam's mean and variance), created once;
* ``update(index, weight, grad, state)``: apply one step, in place.

An update never computes on the Python side: it calls one registered operator
(``sgd_mom_update``, ``adam_update``, ... in framework/operator/tensor/optimizer_ops.py)
with ``out=weight``. That is a single engine push that reads the gradient and writes the
weight and the state, so it is ordered after the backward pass that produced the gradient
and before the next forward pass, without any waiting here.

An :class:`Updater` (``get_updater(optimizer)``) pairs an optimizer with the states of all
weights. It is the callable ``updater(index, grad, weight)`` that a KVStore or a Module calls
for every weight after every batch; its ``get_states`` / ``set_states`` save and restore the
states (MXNet's ``save_optimizer_states`` / ``load_optimizer_states``) as pickled bytes.

Counting updates: ``num_update`` is the largest number of updates applied to any one weight
(``begin_num_update`` to start from). The scheduler sees it; Adam's bias correction uses the
count of the weight being updated.
"""

from __future__ import annotations

import io
import math
import numbers
import pickle
import warnings
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from .base import MXLabError
from .context import Context
from .ndarray import NDArray, array, zeros
from .ndarray import op as _op


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
        #: MXNet fuses several SGD updates into one ``multi_sgd_update``; MXLab updates one by one.
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
            _op.cast(weight_master_copy, dtype=weight.dtype.name, out=weight)
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


@register
class SGD(Optimizer):
    """Stochastic gradient descent with momentum and weight decay.

    Without momentum (``sgd_update``)::

        weight = weight - lr * (clip(rescale_grad * grad) + wd * weight)

    With momentum (``sgd_mom_update``; the state ``mom`` holds minus the velocity)::

        mom = momentum * mom - lr * (clip(rescale_grad * grad) + wd * weight)
        weight = weight + mom

    Args:
        momentum: the momentum (0 = plain SGD, no state).
        lazy_update: accepted for compatibility (row-sparse updates; MXLab arrays are dense).
        multi_precision: float32 master weights for float16 weights (``mp_sgd_*_update``).
    """

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = _number(momentum, "SGD: momentum", low=0.0)
        self.lazy_update = bool(lazy_update)

    def create_state(self, index: Any, weight: NDArray) -> NDArray | None:
        if self.momentum == 0.0:
            return None
        return zeros(weight.shape, weight.context, dtype=weight.dtype)

    def create_state_multi_precision(self, index: Any, weight: NDArray) -> Any:
        if self.multi_precision and weight.dtype == np.float16:
            weight_master_copy = weight.astype(np.float32)
            return (self.create_state(index, weight_master_copy), weight_master_copy)
        return Optimizer.create_state_multi_precision(self, index, weight)

    def _update_impl(self, index: Any, weight: Any, grad: Any, state: Any, multi_precision: bool) -> None:
        items = _split_lists(index, weight, grad, state)
        for _, w, g, _ in items:
            _check_arrays(type(self).__name__, w, g)
        self._update_count([i for i, *_ in items])
        lrs = self._get_lrs([i for i, *_ in items])
        wds = self._get_wds([i for i, *_ in items])
        kwargs = self._common_kwargs()
        if self.momentum > 0:
            kwargs["momentum"] = self.momentum
        for (_, w, g, s), lr, wd in zip(items, lrs, wds, strict=True):
            if not multi_precision:
                if s is not None:
                    _op.sgd_mom_update(w, g, s, out=w, lazy_update=self.lazy_update, lr=lr, wd=wd, **kwargs)
                else:
                    _op.sgd_update(w, g, out=w, lazy_update=self.lazy_update, lr=lr, wd=wd, **kwargs)
            elif s[0] is not None:
                _op.mp_sgd_mom_update(w, g, s[0], s[1], out=w, lr=lr, wd=wd, **kwargs)
            else:
                _op.mp_sgd_update(w, g, s[1], out=w, lr=lr, wd=wd, **kwargs)

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        first = weight[0] if isinstance(index, list | tuple) else weight
        self._update_impl(index, weight, grad, state, self.multi_precision and first.dtype == np.float16)


@register
class NAG(Optimizer):
    """Nesterov accelerated gradient: SGD that looks one momentum step ahead.

    With momentum (``nag_mom_update``)::

        g = clip(rescale_grad * grad) + wd * weight
        mom = momentum * mom - lr * g
        weight = weight + momentum * mom - lr * g

    Without momentum it is plain SGD (``sgd_update``). ``multi_precision`` as for SGD.
    """

    def __init__(self, momentum: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = _number(momentum, "NAG: momentum", low=0.0)

    create_state = SGD.create_state
    create_state_multi_precision = SGD.create_state_multi_precision

    def _update_impl(self, index: Any, weight: Any, grad: Any, state: Any, multi_precision: bool) -> None:
        _check_arrays("NAG", weight, grad)
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        kwargs = self._common_kwargs()
        if self.momentum > 0:
            kwargs["momentum"] = self.momentum
        if not multi_precision:
            if state is not None:
                _op.nag_mom_update(weight, grad, state, out=weight, lr=lr, wd=wd, **kwargs)
            else:
                _op.sgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)
        elif state[0] is not None:
            _op.mp_nag_mom_update(weight, grad, state[0], state[1], out=weight, lr=lr, wd=wd, **kwargs)
        else:
            _op.mp_sgd_update(weight, grad, state[1], out=weight, lr=lr, wd=wd, **kwargs)

    def update_multi_precision(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        use_mp = self.multi_precision and weight.dtype == np.float16 and isinstance(state, tuple | list)
        self._update_impl(index, weight, grad, state, use_mp)


@register
class Adam(Optimizer):
    """Adam: per-element steps from running averages of the gradient and its square.

    At the weight's ``t``-th update, the bias correction of both averages is folded into
    the rate, then ``adam_update`` runs::

        lr_t = learning_rate * sqrt(1 - beta2**t) / (1 - beta1**t)
        g = clip(rescale_grad * grad + wd * weight)
        mean = beta1 * mean + (1 - beta1) * g
        var = beta2 * var + (1 - beta2) * g**2
        weight = weight - lr_t * mean / (sqrt(var) + epsilon)
    """

    def __init__(
        self,
        learning_rate: float = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
        lazy_update: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = _number(beta1, "Adam: beta1", 0.0, 1.0, open_high=True)
        self.beta2 = _number(beta2, "Adam: beta2", 0.0, 1.0, open_high=True)
        self.epsilon = _number(epsilon, "Adam: epsilon", low=0.0)
        self.lazy_update = bool(lazy_update)

    def create_state(self, index: Any, weight: NDArray) -> tuple[NDArray, NDArray]:
        return (
            zeros(weight.shape, weight.context, dtype=weight.dtype),  # mean
            zeros(weight.shape, weight.context, dtype=weight.dtype),  # variance
        )

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_arrays("Adam", weight, grad)
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        t = self._index_update_count[index]
        lr *= math.sqrt(1.0 - self.beta2**t) / (1.0 - self.beta1**t)
        kwargs = {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon, **self._common_kwargs()}
        mean, var = state
        _op.adam_update(weight, grad, mean, var, out=weight, lazy_update=self.lazy_update, lr=lr, wd=wd, **kwargs)


@register
class AdaGrad(Optimizer):
    """AdaGrad: each element's step shrinks with its accumulated squared gradient.

    ``adagrad_update`` (one push; MXNet 1.x composes the same arithmetic in Python)::

        g = clip(rescale_grad * grad)
        history = history + g**2
        weight = weight - lr * (g / sqrt(history + eps) + wd * weight)

    Args:
        eps: added under the square root, so a zero history does not divide by zero.
    """

    def __init__(self, eps: float = 1e-7, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.float_stable_eps = _number(eps, "AdaGrad: eps", low=0.0)

    def create_state(self, index: Any, weight: NDArray) -> NDArray:
        return zeros(weight.shape, weight.context, dtype=weight.dtype)  # history

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_arrays("AdaGrad", weight, grad)
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        _op.adagrad_update(
            weight, grad, state, out=weight, lr=lr, wd=wd, epsilon=self.float_stable_eps, **self._common_kwargs()
        )


@register
class RMSProp(Optimizer):
    """RMSProp: divide the gradient by a running root mean square of recent gradients.

    ``centered=False`` is Tieleman & Hinton's version (``rmsprop_update``, state ``(n,)``);
    ``centered=True`` is Graves' (``rmspropalex_update``, state ``(n, g, delta)``), which
    divides by a running standard deviation and adds momentum ``gamma2``.

    Args:
        gamma1: decay of the running averages.
        gamma2: momentum of the centred version.
        epsilon: added under the square root.
        centered: which version.
        clip_weights: clip weights to ``[-clip_weights, clip_weights]`` after each step.
    """

    def __init__(
        self,
        learning_rate: float = 0.001,
        gamma1: float = 0.9,
        gamma2: float = 0.9,
        epsilon: float = 1e-8,
        centered: bool = False,
        clip_weights: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = _number(gamma1, "RMSProp: gamma1", 0.0, 1.0, open_high=True)
        self.gamma2 = _number(gamma2, "RMSProp: gamma2", 0.0, 1.0, open_high=True)
        self.centered = bool(centered)
        self.epsilon = _number(epsilon, "RMSProp: epsilon", low=0.0)
        if clip_weights is not None:
            clip_weights = _number(clip_weights, "RMSProp: clip_weights", low=0.0)
        self.clip_weights = clip_weights

    def create_state(self, index: Any, weight: NDArray) -> tuple[NDArray, ...]:
        count = 3 if self.centered else 1  # (n, g, delta) or (n,)
        return tuple(zeros(weight.shape, weight.context, dtype=weight.dtype) for _ in range(count))

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_arrays("RMSProp", weight, grad)
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        kwargs: dict[str, Any] = {"gamma1": self.gamma1, "epsilon": self.epsilon, **self._common_kwargs()}
        if self.centered:
            kwargs["gamma2"] = self.gamma2
        if self.clip_weights:
            kwargs["clip_weights"] = self.clip_weights
        if self.centered:
            n, g, delta = state
            _op.rmspropalex_update(weight, grad, n, g, delta, out=weight, lr=lr, wd=wd, **kwargs)
        else:
            (n,) = state
            _op.rmsprop_update(weight, grad, n, out=weight, lr=lr, wd=wd, **kwargs)


# ---------------------------------------------------------------------- the updater
def _rebuild_ndarray(values: np.ndarray, device_type: str, device_id: int) -> NDArray:
    """Unpickling half of an NDArray inside saved optimizer states."""
    return array(values, ctx=Context(device_type, device_id), dtype=values.dtype)


class _StatePickler(pickle.Pickler):
    """Pickles NDArrays by value (after waiting for their pending writes) with their context."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, NDArray):
            return _rebuild_ndarray, (obj.asnumpy(), obj.context.device_type, obj.context.device_id)
        return NotImplemented


def _dumps(obj: Any) -> bytes:
    buffer = io.BytesIO()
    _StatePickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


class Updater:
    """The callable ``updater(index, grad, weight)``: an optimizer plus every weight's state.

    States are created on first sight of an index. After ``set_states`` they are moved to
    the context of the weight they belong to on its next update.
    """

    def __init__(self, optimizer: Optimizer) -> None:
        if not isinstance(optimizer, Optimizer):
            raise OptimizerError(f"Updater expects an Optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer
        self.states: dict[Any, Any] = {}
        self.states_synced: dict[Any, bool] = {}
        self.aggregate_updates = optimizer.aggregate_num > 0

    def __call__(self, index: Any, grad: Any, weight: Any) -> None:
        """Update ``weight`` (or each weight of a list) from ``grad`` with the optimizer's rule."""
        if isinstance(index, list | tuple):
            indices, grads, weights = list(index), list(grad), list(weight)
            if not len(indices) == len(grads) == len(weights):
                raise OptimizerError(
                    f"Updater: got {len(indices)} indices, {len(grads)} gradients and {len(weights)} weights"
                )
        else:
            indices, grads, weights = [index], [grad], [weight]
        for i, w in enumerate(weights):
            if not isinstance(w, NDArray):
                raise OptimizerError(f"Updater: weight for index {indices[i]!r} must be an NDArray, got {w!r}")
        if weights:
            self.optimizer._set_current_context(weights[0].context.device_id)
        indices = [idx.decode() if isinstance(idx, bytes) else idx for idx in indices]
        for i, idx in enumerate(indices):
            if idx not in self.states:
                self.states[idx] = self.optimizer.create_state_multi_precision(idx, weights[i])
                self.states_synced[idx] = True
            elif not self.states_synced[idx]:
                self.states[idx] = self.sync_state_context(self.states[idx], weights[i].context)
                self.states_synced[idx] = True
        for idx, w, g in zip(indices, weights, grads, strict=True):
            self.optimizer.update_multi_precision(idx, w, g, self.states[idx])

    def sync_state_context(self, state: Any, context: Context) -> Any:
        """``state`` (NDArray, or nested tuples/lists of them) moved to ``context``."""
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, tuple | list):
            synced = [self.sync_state_context(s, context) for s in state]
            return tuple(synced) if isinstance(state, tuple) else synced
        return state

    def set_states(self, states: bytes) -> None:
        """Restore states saved by :meth:`get_states` (and the optimizer, if it was saved)."""
        if not isinstance(states, bytes | bytearray):
            raise OptimizerError(f"Updater.set_states expects the bytes from get_states(), got {type(states).__name__}")
        loaded = pickle.loads(states)
        if isinstance(loaded, tuple) and len(loaded) == 2 and isinstance(loaded[1], Optimizer):
            self.states, self.optimizer = loaded
        elif isinstance(loaded, dict):
            self.states = loaded
        else:
            raise OptimizerError(f"Updater.set_states: not optimizer states (unpickled a {type(loaded).__name__})")
        self.states_synced = dict.fromkeys(self.states, False)

    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """The states (and optionally the optimizer, with its schedule and counts) as bytes."""
        return _dumps((self.states, self.optimizer) if dump_optimizer else self.states)


def get_updater(optimizer: Optimizer) -> Updater:
    """The updater a KVStore or Module calls for every weight after every batch."""
    return Updater(optimizer)


__all__ = [
    "AdaGrad",
    "Adam",
    "NAG",
    "Optimizer",
    "OptimizerError",
    "RMSProp",
    "SGD",
    "Updater",
    "create",
    "get_updater",
    "register",
]
