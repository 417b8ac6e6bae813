"""LBSGD: SGD for very large batches, built from several small ones (MXNet 1.x's ``mx.optimizer.LBSGD``).

Training with a batch ``batch_scale`` times larger than fits in memory: the gradients of
``batch_scale`` consecutive updates of a weight are summed, and only then does one SGD step
(with momentum and weight decay, as :class:`~framework.optimizer.sgd.SGD`) use their mean.
A large batch wants a proportionally larger learning rate, but starting there diverges, so
the rate is *warmed up*: multiplied by a factor that grows from 1 to ``batch_scale`` over the
first ``warmup_epochs * updates_per_epoch`` updates (Goyal et al. 2017), along
``warmup_strategy``:

* ``'linear'``: ``1 + (batch_scale - 1) * p``, ``p`` the fraction of the warmup done;
* ``'power2'``: ``1 + (batch_scale - 1) * p**2``;
* ``'sqrt'``: ``1 + (batch_scale - 1) * sqrt(p)``;
* ``'lars'``: no schedule; each step is scaled per layer by ``||w|| / (||g|| + wd * ||w||)``
  (layer-wise adaptive rate scaling, You et al. 2017), clipped to [0.01, 100].

Progress counts this weight's updates, starting at ``begin_epoch * updates_per_epoch``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..ndarray import NDArray
from ..ndarray import op as _op
from .base import OptimizerError, _check_arrays, register
from .sgd import SGD

WARMUP_STRATEGIES = ("linear", "power2", "sqrt", "lars")


def _count(value: Any, what: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise OptimizerError(f"LBSGD: {what} must be an integer >= {low}, got {value!r}")
    return int(value)


@register
class LBSGD(SGD):
    """Large-batch SGD with learning-rate warmup or LARS; see the module docstring."""

    def __init__(
        self,
        momentum: float = 0.0,
        multi_precision: bool = False,
        warmup_strategy: str = "linear",
        warmup_epochs: int = 5,
        batch_scale: int = 1,
        updates_per_epoch: int = 32,
        begin_epoch: int = 0,
        num_epochs: int = 60,
        **kwargs: Any,
    ) -> None:
        super().__init__(momentum=momentum, multi_precision=multi_precision, **kwargs)
        if warmup_strategy not in WARMUP_STRATEGIES:
            raise OptimizerError(f"LBSGD: warmup_strategy must be one of {WARMUP_STRATEGIES}, got {warmup_strategy!r}")
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = _count(warmup_epochs, "warmup_epochs", 0)
        self.batch_scale = _count(batch_scale, "batch_scale", 1)
        self.updates_per_epoch = _count(updates_per_epoch, "updates_per_epoch", 1)
        self.begin_epoch = _count(begin_epoch, "begin_epoch", 0)
        self.num_epochs = _count(num_epochs, "num_epochs", 1)
        #: index -> (sum of the gradients received since the last step, how many).
        self._pending: dict[Any, tuple[NDArray, int]] = {}
        self.aggregate_num = 0  # its rule takes one weight at a time (no fused update)

    def warmup_multiplier(self, update: int) -> float:
        """The learning-rate factor after ``update`` updates (1 at the start, ``batch_scale`` after warmup)."""
        warmup = self.warmup_epochs * self.updates_per_epoch
        if update >= warmup:
            return float(self.batch_scale)
        progress = update / warmup
        shape = {"linear": progress, "power2": progress**2, "sqrt": math.sqrt(progress)}[self.warmup_strategy]
        return 1.0 + (self.batch_scale - 1) * shape

    @staticmethod
    def lars_multiplier(weight: NDArray, grad: NDArray, wd: float) -> float:
        """Layer-wise adaptive rate: ``||w|| / (||g|| + wd * ||w||)``, clipped to [0.01, 100]."""
        w_norm = float(_op.norm(weight).asscalar())
        g_norm = float(_op.norm(grad).asscalar())
        ratio = w_norm / (g_norm + wd * w_norm + 1e-18)
        return min(max(ratio, 0.01), 100.0)

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_arrays("LBSGD", weight, grad)
        self._update_count(index)
        total, count = self._pending.get(index, (None, 0))
        total = grad.copy() if total is None else total + grad
        count += 1
        if count < self.batch_scale:
            self._pending[index] = (total, count)
            return
        self._pending.pop(index, None)
        mean = total / self.batch_scale
        lr, wd = self._get_lr(index), self._get_wd(index)
        if self.warmup_strategy == "lars":
            lr *= self.lars_multiplier(weight, mean * self.rescale_grad, wd)
        else:
            done = self._index_update_count[index] - self.begin_num_update
            lr *= self.warmup_multiplier(self.begin_epoch * self.updates_per_epoch + done)
        kwargs = self._common_kwargs()
        if state is not None:
            _op.sgd_mom_update(weight, mean, state, out=weight, momentum=self.momentum, lr=lr, wd=wd, **kwargs)
        else:
            _op.sgd_update(weight, mean, out=weight, lr=lr, wd=wd, **kwargs)

    def update_multi_precision(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        if not (self.multi_precision and weight.dtype == np.float16):
            self.update(index, weight, grad, state)
            return
        momentum, master = state  # SGD's multi-precision state: (momentum or None, float32 weight)
        self.update(index, master, grad.astype(np.float32), momentum)
        weight[:] = master.astype(np.float16)


__all__ = ["LBSGD", "WARMUP_STRATEGIES"]
