"""Optimizers that step along the gradient itself (or its sign): SGD, NAG, Signum, LARS, SGLD, DCASGD."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import config
from ..ndarray import NDArray, array, zeros
from ..ndarray import op as _op
from ..ndarray import random as _random
from .base import Optimizer, _check_arrays, _number, _split_lists, register


def _fused_update(items: list, lrs: list[float], wds: list[float], kwargs: dict[str, float]) -> None:
    """One ``multi_sgd_update`` (or ``multi_sgd_mom_update``) over the weights of ``items``.

    One engine operation instead of one per weight; the kernel applies the single-weight
    rule to each weight in turn, so the numbers are those of the per-weight updates.
    """
    arrays = [a for _, w, g, s in items for a in ((w, g) if s is None else (w, g, s))]
    update = _op.multi_sgd_update if "momentum" not in kwargs else _op.multi_sgd_mom_update
    update(*arrays, out=[w for _, w, _, _ in items], lrs=tuple(lrs), wds=tuple(wds), num_weights=len(items), **kwargs)


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
        # At most this many weights per fused operation. MXNet's default is 4 because its kernel
        # takes the arrays in a fixed-size struct; a NumPy loop has no such limit, and fewer
        # operations cost less, so MXLab's default is 64 (docs/differences.md).
        self.aggregate_num = config.get("MXLAB_OPTIMIZER_AGGREGATION_SIZE")

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
        if not multi_precision and self._fusable(items):
            for start in range(0, len(items), self.aggregate_num):
                end = start + self.aggregate_num
                _fused_update(items[start:end], lrs[start:end], wds[start:end], kwargs)
            return
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

    def _fusable(self, items: list) -> bool:
        """Whether these updates may run as one ``multi_sgd[_mom]_update`` (MXNet's aggregation).

        Needs more than one weight, fusion on (``aggregate_num`` > 0), every weight with a
        momentum state exactly when momentum is on, one device, one floating dtype for every
        weight, gradient and state, and distinct weights (the fused operation writes them all
        at once). Anything else takes the per-weight path, which explains its own errors.
        """
        if self.aggregate_num <= 0 or len(items) < 2:
            return False
        first = items[0][1]
        if not (isinstance(first, NDArray) and np.dtype(first.dtype).kind == "f"):
            return False
        context, dtype, stateless = first.context, first.dtype, self.momentum == 0.0
        variables = set()
        for _, w, g, s in items:  # runs every step: the cheap identity test first, equality only when it fails
            if (s is None) != stateless:
                return False
            for a in (w, g) if s is None else (w, g, s):
                if not isinstance(a, NDArray) or a.dtype != dtype:
                    return False
                if a.context is not context and a.context != context:
                    return False
            variables.add(id(w._chunk.var))
        return len(variables) == len(items)

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        if isinstance(index, list | tuple):
            half = [w.dtype == np.float16 for w in weight] if self.multi_precision else []
            if any(half) and not all(half):  # mixed: each weight its own way
                for item in zip(index, weight, grad, state, strict=True):
                    self.update_multi_precision(*item)
                return
            first = weight[0]
        else:
            first = weight
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
class Signum(Optimizer):
    """Signum (Bernstein et al. 2018): step by the *sign* of a momentum average.

    With momentum (``signum_update``; ``mom`` holds minus the average)::

        mom = momentum * mom - (1 - momentum) * (clip(rescale_grad * grad) + wd * weight)
        weight = (1 - lr * wd_lh) * weight + lr * sign(mom)

    Without momentum it is SignSGD (``signsgd_update``): ``weight -= lr * sign(grad)``.

    Args:
        momentum: decay of the average (0 = SignSGD, no state).
        wd_lh: decoupled weight decay, applied to the weight outside the average.
    """

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.9, wd_lh: float = 0.0, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = _number(momentum, "Signum: momentum", 0.0, 1.0, open_high=True)
        self.wd_lh = _number(wd_lh, "Signum: wd_lh", low=0.0)

    def create_state(self, index: Any, weight: NDArray) -> NDArray | None:
        if self.momentum == 0.0:
            return None
        return zeros(weight.shape, weight.context, dtype=weight.dtype)

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_arrays("Signum", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        kwargs = self._common_kwargs()
        if state is None:
            _op.signsgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)
            return
        if self.wd_lh:
            kwargs["wd_lh"] = self.wd_lh
        _op.signum_update(weight, grad, state, out=weight, lr=lr, wd=wd, momentum=self.momentum, **kwargs)


def _is_lars_exempt(name: str) -> bool:
    """Biases and normalisation scales/shifts keep the plain rate (You et al.)."""
    return name.endswith(("gamma", "beta", "bias"))


@register
class LARS(Optimizer):
    """LARS (You et al. 2017): SGD whose rate is scaled per layer by the trust ratio
    ``eta * |w| / (|g| + wd * |w| + eps)`` (1 when either norm is 0).

    One update computes every weight's squared norms (``multi_sum_sq``), the scaled rates
    (``multi_lars``, on the device) and the steps (``preloaded_multi_sgd[_mom]_update``).
    Parameters whose names end in ``gamma``, ``beta`` or ``bias`` keep the plain rate.

    Args:
        momentum: SGD momentum; with ``momentum_correction`` it is scaled by
            ``current_lr / previous_lr`` when a schedule changes the rate.
        eta: the trust coefficient. eps: added to the denominator.
        lazy_update: accepted for compatibility (MXLab arrays are dense).
    """

    def __init__(
        self,
        momentum: float = 0.0,
        lazy_update: bool = True,
        eta: float = 0.001,
        eps: float = 0.0,
        momentum_correction: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.momentum = _number(momentum, "LARS: momentum", low=0.0)
        self.lazy_update = bool(lazy_update)
        self.eta = _number(eta, "LARS: eta", low=0.0)
        self.eps = _number(eps, "LARS: eps", low=0.0)
        self.momentum_correction = bool(momentum_correction)
        self.last_lr: float | None = None
        self.cur_lr: float | None = None

    create_state = SGD.create_state
    create_state_multi_precision = SGD.create_state_multi_precision

    def _get_lrs(self, indices: Sequence[Any]) -> list[float]:
        """As the base class, remembering the previous step's rate for the momentum correction."""
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        self.last_lr = lr if self.cur_lr is None else self.cur_lr
        self.cur_lr = lr
        return super()._get_lrs(indices)

    def _update_impl(self, index: Any, weight: Any, grad: Any, state: Any, multi_precision: bool) -> None:
        items = _split_lists(index, weight, grad, state)
        for _, w, g, _ in items:
            _check_arrays("LARS", w, g)
        indices = [i for i, *_ in items]
        self._update_count(indices)
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        kwargs = self._common_kwargs()
        if self.momentum > 0:
            correct = self.momentum_correction and self.last_lr
            kwargs["momentum"] = self.momentum * (self.cur_lr / self.last_lr) if correct else self.momentum
        names = [self.idx2name.get(i, str(i)) for i in indices]
        order = [k for k in range(len(items)) if not _is_lars_exempt(names[k])]
        scaled = len(order)
        order += [k for k in range(len(items)) if _is_lars_exempt(names[k])]
        ctx = items[0][1].context
        new_lrs = array([lrs[k] for k in order], ctx=ctx, dtype="float32")
        new_wds = array([wds[k] for k in order], ctx=ctx, dtype="float32")
        ws, gs, ss = ([items[k][j] for k in order] for j in (1, 2, 3))
        if scaled:
            w_sq = _op.multi_sum_sq(*ws[:scaled], num_arrays=scaled)
            g_sq = _op.multi_sum_sq(*gs[:scaled], num_arrays=scaled)
            head = _op.multi_lars(
                new_lrs[:scaled],
                w_sq,
                g_sq,
                new_wds[:scaled],
                eta=self.eta,
                eps=self.eps,
                rescale_grad=self.rescale_grad,
            )
            new_lrs = _op.concat(head, new_lrs[scaled:], dim=0) if scaled < len(order) else head
        groups: list[NDArray] = []
        for w, g, s in zip(ws, gs, ss, strict=True):
            states = [] if s is None else ([s] if not multi_precision else [x for x in s if x is not None])
            groups += [w, g, *states]
        mom = "_mom" if self.momentum > 0 else ""
        name = f"preloaded_multi_{'mp_' if multi_precision else ''}sgd{mom}_update"
        getattr(_op, name)(*groups, new_lrs, new_wds, out=ws, num_weights=len(ws), **kwargs)

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        first = weight[0] if isinstance(index, list | tuple) else weight
        self._update_impl(index, weight, grad, state, self.multi_precision and first.dtype == np.float16)


@register
class SGLD(Optimizer):
    """Stochastic Gradient Langevin Dynamics (Welling & Teh 2011): half an SGD step plus
    Gaussian noise of variance ``lr``, so the weights sample from the posterior::

        weight = weight - lr / 2 * (clip(rescale_grad * grad) + wd * weight) + normal(0, sqrt(lr))

    The noise comes from ``mx.nd.random.normal`` (seeded by ``mx.random.seed``).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_arrays("SGLD", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g = grad * self.rescale_grad
        if self.clip_gradient is not None:
            g = _op.clip(g, -self.clip_gradient, self.clip_gradient)
        weight[:] += -lr / 2 * (g + wd * weight)
        weight[:] += _random.normal(0, math.sqrt(lr), shape=weight.shape, dtype=weight.dtype, ctx=weight.context)


@register
class DCASGD(Optimizer):
    """Delay-compensated asynchronous SGD (Zheng et al. 2016): a stale gradient is corrected by
    ``lamda * g * g * (weight - previous_weight)``, a cheap Hessian approximation::

        step = -lr * (g + wd * weight + lamda * g * g * (weight - previous_weight))
        mom = momentum * mom + step   (or mom = step without momentum)
        previous_weight = weight;  weight = weight + mom

    The state is ``(mom or None, previous_weight)``.
    """

    def __init__(self, momentum: float = 0.0, lamda: float = 0.04, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = _number(momentum, "DCASGD: momentum", low=0.0)
        self.lamda = _number(lamda, "DCASGD: lamda", low=0.0)

    def create_state(self, index: Any, weight: NDArray) -> tuple[NDArray | None, NDArray]:
        mom = None if self.momentum == 0.0 else zeros(weight.shape, weight.context, dtype=weight.dtype)
        return (mom, weight.copy())

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_arrays("DCASGD", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g = grad * self.rescale_grad
        if self.clip_gradient is not None:
            g = _op.clip(g, -self.clip_gradient, self.clip_gradient)
        mom, previous_weight = state
        step = -lr * (g + wd * weight + self.lamda * g * g * (weight - previous_weight))
        if mom is not None:
            mom[:] *= self.momentum
            mom[:] += step
        else:
            mom = step
        previous_weight[:] = weight
        weight[:] += mom
