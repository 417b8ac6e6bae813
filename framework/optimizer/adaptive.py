"""Optimizers with per-element step sizes from running gradient statistics: Adam, AdaGrad,
RMSProp, AdaDelta, Adamax, Nadam, FTML, Ftrl and LAMB."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..ndarray import NDArray, zeros
from ..ndarray import op as _op
from .base import Optimizer, _check_arrays, _number, register


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


@register
class AdaDelta(Optimizer):
    """AdaDelta (Zeiler 2012): no learning rate; each step is scaled by the ratio of running
    RMS of past steps to running RMS of gradients (state ``(acc_g, acc_delta)``)::

        g = clip(rescale_grad * grad)
        acc_g = rho * acc_g + (1 - rho) * g**2
        delta = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * g
        acc_delta = rho * acc_delta + (1 - rho) * delta**2
        weight = weight - (delta + wd * weight)
    """

    def __init__(self, rho: float = 0.9, epsilon: float = 1e-5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rho = _number(rho, "AdaDelta: rho", 0.0, 1.0)
        self.epsilon = _number(epsilon, "AdaDelta: epsilon", low=0.0)

    def create_state(self, index: Any, weight: NDArray) -> tuple[NDArray, NDArray]:
        return (zeros(weight.shape, weight.context), zeros(weight.shape, weight.context))  # float32, as MXNet

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_arrays("AdaDelta", weight, grad)
        wd = self._get_wd(index)
        self._update_count(index)
        g = _clipped(self, grad * self.rescale_grad)
        acc_g, acc_delta = state
        acc_g[:] *= self.rho
        acc_g[:] += (1.0 - self.rho) * g * g
        delta = _op.sqrt(acc_delta + self.epsilon) / _op.sqrt(acc_g + self.epsilon) * g
        acc_delta[:] *= self.rho
        acc_delta[:] += (1.0 - self.rho) * delta * delta
        weight[:] -= delta + wd * weight


def _clipped(optimizer: Optimizer, g: NDArray) -> NDArray:
    """``g`` clipped to ``[-clip_gradient, clip_gradient]`` when the optimizer clips."""
    if optimizer.clip_gradient is None:
        return g
    return _op.clip(g, -optimizer.clip_gradient, optimizer.clip_gradient)


@register
class Adamax(Optimizer):
    """Adamax (Kingma & Ba 2015, section 7): Adam with the infinity norm in place of the
    second moment (state ``(m, u)``)::

        g = clip(rescale_grad * grad + wd * weight)
        m = beta1 * m + (1 - beta1) * g
        u = maximum(beta2 * u, |g|)
        weight = weight - lr / (1 - beta1**t) * m / u
    """

    def __init__(self, learning_rate: float = 0.002, beta1: float = 0.9, beta2: float = 0.999, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = _number(beta1, "Adamax: beta1", 0.0, 1.0, open_high=True)
        self.beta2 = _number(beta2, "Adamax: beta2", 0.0, 1.0, open_high=True)

    def create_state(self, index: Any, weight: NDArray) -> tuple[NDArray, NDArray]:
        return (
            zeros(weight.shape, weight.context, dtype=weight.dtype),
            zeros(weight.shape, weight.context, dtype=weight.dtype),
        )

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_arrays("Adamax", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        lr /= 1.0 - self.beta1**t
        g = _clipped(self, grad * self.rescale_grad + wd * weight)
        m, u = state
        m[:] *= self.beta1
        m[:] += (1.0 - self.beta1) * g
        u[:] = _op.broadcast_maximum(self.beta2 * u, _op.abs(g))
        weight[:] -= lr * m / u


@register
class Nadam(Optimizer):
    """Nadam (Dozat 2016): Adam with Nesterov momentum and a warming momentum schedule
    ``mu_t = beta1 * (1 - 0.5 * 0.96**(t * schedule_decay))`` (state ``(m, v)``)::

        g = clip(rescale_grad * grad + wd * weight)
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g**2
        m_bar = (1 - mu_t) * g / (1 - prod(mu_1..mu_t)) + mu_{t+1} * m / (1 - prod(mu_1..mu_{t+1}))
        weight = weight - lr * m_bar / (sqrt(v / (1 - beta2**t)) + epsilon)

    The running product of the schedule is one number for the whole optimizer, as in MXNet.
    """

    def __init__(
        self,
        learning_rate: float = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
        schedule_decay: float = 0.004,
        **kwargs: Any,
    ) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = _number(beta1, "Nadam: beta1", 0.0, 1.0, open_high=True)
        self.beta2 = _number(beta2, "Nadam: beta2", 0.0, 1.0, open_high=True)
        self.epsilon = _number(epsilon, "Nadam: epsilon", low=0.0)
        self.schedule_decay = _number(schedule_decay, "Nadam: schedule_decay", low=0.0)
        self.m_schedule = 1.0

    create_state = Adamax.create_state

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_arrays("Nadam", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        g = _clipped(self, grad * self.rescale_grad + wd * weight)
        momentum_t = self.beta1 * (1.0 - 0.5 * 0.96 ** (t * self.schedule_decay))
        momentum_next = self.beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * self.schedule_decay))
        self.m_schedule *= momentum_t
        m_schedule_next = self.m_schedule * momentum_next
        m, v = state
        m[:] *= self.beta1
        m[:] += (1.0 - self.beta1) * g
        v[:] *= self.beta2
        v[:] += (1.0 - self.beta2) * g * g
        m_bar = (1.0 - momentum_t) * (g / (1.0 - self.m_schedule)) + momentum_next * (m / (1.0 - m_schedule_next))
        weight[:] -= lr * m_bar / (_op.sqrt(v / (1.0 - self.beta2**t)) + self.epsilon)


@register
class FTML(Optimizer):
    """FTML (Zheng & Kwok 2017): Follow the Moving Leader, state ``(d, v, z)``; one
    ``ftml_update`` per step, with the weight's update count ``t``."""

    def __init__(self, beta1: float = 0.6, beta2: float = 0.999, epsilon: float = 1e-8, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.beta1 = _number(beta1, "FTML: beta1", 0.0, 1.0, open_high=True)
        self.beta2 = _number(beta2, "FTML: beta2", 0.0, 1.0, open_high=True)
        self.epsilon = _number(epsilon, "FTML: epsilon", low=0.0)

    def create_state(self, index: Any, weight: NDArray) -> tuple[NDArray, NDArray, NDArray]:
        return tuple(zeros(weight.shape, weight.context, dtype=weight.dtype) for _ in range(3))  # d, v, z

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_arrays("FTML", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        kwargs: dict[str, Any] = {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon}
        kwargs.update(rescale_grad=self.rescale_grad, t=self._index_update_count[index])
        if self.clip_gradient:
            kwargs["clip_grad"] = self.clip_gradient  # this operator's name for it
        d, v, z = state
        _op.ftml_update(weight, grad, d, v, z, out=weight, lr=lr, wd=wd, **kwargs)


@register
class Ftrl(Optimizer):
    """FTRL-Proximal (McMahan et al. 2013), state ``(z, n)``: sparse weights from an L1 term
    ``lamda1``; one ``ftrl_update`` per step.

    Args:
        lamda1: L1 regularisation. beta: per-coordinate rate offset.
    """

    def __init__(self, lamda1: float = 0.01, learning_rate: float = 0.1, beta: float = 1.0, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.lamda1 = _number(lamda1, "Ftrl: lamda1", low=0.0)
        self.beta = _number(beta, "Ftrl: beta", low=0.0)

    def create_state(self, index: Any, weight: NDArray) -> tuple[NDArray, NDArray]:
        return (zeros(weight.shape, weight.context), zeros(weight.shape, weight.context))  # z, n (float32)

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_arrays("Ftrl", weight, grad)
        self._update_count(index)
        wd, lr = self._get_wd(index), self._get_lr(index)
        z, n = state
        _op.ftrl_update(weight, grad, z, n, out=weight, lr=lr, wd=wd, lamda1=self.lamda1, beta=self.beta,
                        **self._common_kwargs())  # fmt: skip


@register
class LAMB(Optimizer):
    """LAMB (You et al. 2019): Adam's direction, scaled per layer by the trust ratio
    ``|w| / |direction|`` (``lamb_update_phase1``, ``norm`` twice, ``lamb_update_phase2``;
    the ``mp_`` forms with ``multi_precision``).

    Args:
        lower_bound, upper_bound: clamp ``|w|`` in the ratio (None = unbounded).
        bias_correction: divide the moments by ``1 - beta**t``.
    """

    def __init__(
        self,
        learning_rate: float = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-6,
        lower_bound: float | None = None,
        upper_bound: float | None = None,
        bias_correction: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = _number(beta1, "LAMB: beta1", 0.0, 1.0, open_high=True)
        self.beta2 = _number(beta2, "LAMB: beta2", 0.0, 1.0, open_high=True)
        self.epsilon = _number(epsilon, "LAMB: epsilon", low=0.0)
        self.lower_bound = None if lower_bound is None else _number(lower_bound, "LAMB: lower_bound", low=0.0)
        self.upper_bound = None if upper_bound is None else _number(upper_bound, "LAMB: upper_bound", low=0.0)
        self.bias_correction = bool(bias_correction)

    create_state = Adamax.create_state

    def _update_impl(self, index: Any, weight: NDArray, grad: NDArray, state: Any, multi_precision: bool) -> None:
        _check_arrays("LAMB", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        kwargs: dict[str, Any] = {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon}
        kwargs.update(bias_correction=self.bias_correction, rescale_grad=self.rescale_grad)
        kwargs["t"] = self._index_update_count[index]
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        bounds = {}
        if self.lower_bound:
            bounds["lower_bound"] = self.lower_bound
        if self.upper_bound:
            bounds["upper_bound"] = self.upper_bound
        if multi_precision:
            weight32, (mean, var) = state
            g = _op.mp_lamb_update_phase1(weight, grad, mean, var, weight32, wd=wd, **kwargs)
            r1, r2 = weight32.norm().reshape((1,)), g.norm().reshape((1,))
            _op.mp_lamb_update_phase2(weight, g, r1, r2, weight32, lr=lr, out=weight, **bounds)
        else:
            mean, var = state
            g = _op.lamb_update_phase1(weight, grad, mean, var, wd=wd, **kwargs)
            r1, r2 = weight.norm().reshape((1,)), g.norm().reshape((1,))
            _op.lamb_update_phase2(weight, g, r1, r2, lr=lr, out=weight, **bounds)

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        self._update_impl(index, weight, grad, state, self.multi_precision and weight.dtype == np.float16)
