"""``mx.optimizer.contrib``: optimizers MXNet 1.x keeps outside the main namespace."""

from __future__ import annotations

from typing import Any

from ..ndarray import NDArray, zeros
from ..ndarray import op as _op
from .base import Optimizer, OptimizerError, _check_arrays, _number, register


@register
class GroupAdaGrad(Optimizer):
    """AdaGrad with one accumulated history value per *row* (an embedding's row shares one
    rate): state ``(rows, 1)``, one ``_contrib_group_adagrad_update`` per step::

        g = clip(rescale_grad * grad)
        history += mean(g**2 over each row)
        weight -= lr * g / sqrt(history + eps)

    Weight decay is not supported (``wd`` must be 0), as in MXNet.
    """

    def __init__(self, eps: float = 1e-5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.float_stable_eps = _number(eps, "GroupAdaGrad: eps", low=0.0)

    def create_state(self, index: Any, weight: NDArray) -> NDArray:
        if weight.ndim < 2:
            raise OptimizerError(f"GroupAdaGrad: weights need at least 2 dimensions (rows), got shape {weight.shape}")
        return zeros((weight.shape[0], 1), weight.context, dtype=weight.dtype)

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_arrays("GroupAdaGrad", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        if wd != 0:
            raise OptimizerError(f"GroupAdaGrad: weight decay is not supported, got wd={wd}")
        _op._contrib_group_adagrad_update(
            weight, grad, state, out=weight, lr=lr, epsilon=self.float_stable_eps, **self._common_kwargs()
        )


__all__ = ["GroupAdaGrad"]
