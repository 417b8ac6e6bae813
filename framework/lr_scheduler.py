"""``mx.lr_scheduler``: the learning rate as a function of the number of updates so far.

An optimizer asks its scheduler for a rate before every update, passing ``num_update``:
the largest number of updates applied to any one weight (so a step counts once, however
many weights it touches). A scheduler returns the rate for that point of training:

* :class:`FactorScheduler`: multiply by ``factor`` every ``step`` updates;
* :class:`MultiFactorScheduler`: multiply by ``factor`` at each update count in a list;
* :class:`PolyScheduler`: polynomial decay from ``base_lr`` to ``final_lr`` over ``max_update``;
* :class:`CosineScheduler`: half a cosine wave from ``base_lr`` to ``final_lr``.

Every scheduler can start with a *warm-up* of ``warmup_steps`` updates, rising linearly from
``warmup_begin_lr`` to ``base_lr`` (``warmup_mode='linear'``) or holding ``warmup_begin_lr``
(``'constant'``). Warm-up lets large-batch training start gently.

Like MXNet 1.x, the schedulers are stateful: the step schedulers keep the current rate in
``base_lr`` and advance it with ``while`` loops, so a scheduler asked about a late update
count first (resuming from a checkpoint) catches up at once. Asking about an earlier count
afterwards does not rewind them.
"""

from __future__ import annotations

import logging
import math
import numbers

from .base import MXLabError


class LRSchedulerError(MXLabError, ValueError):
    """A scheduler was configured with values that cannot describe a schedule."""


def _check_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise LRSchedulerError(f"{what} must be an int, got {value!r}")
    return int(value)


class LRScheduler:
    """Base class: holds ``base_lr`` and the warm-up; subclasses implement ``__call__``.

    Args:
        base_lr: the rate after warm-up (the optimizer's ``learning_rate`` overrides it).
        warmup_steps: number of updates spent warming up (>= 0).
        warmup_begin_lr: the rate warm-up starts from (<= ``base_lr``).
        warmup_mode: ``'linear'`` or ``'constant'``.
    """

    def __init__(
        self, base_lr: float = 0.01, warmup_steps: int = 0, warmup_begin_lr: float = 0, warmup_mode: str = "linear"
    ) -> None:
        self.base_lr = base_lr
        self.warmup_steps = _check_int(warmup_steps, f"{type(self).__name__}: warmup_steps")
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        if self.warmup_begin_lr > self.warmup_final_lr:
            raise LRSchedulerError(
                f"{type(self).__name__}: base_lr ({base_lr}) has to be higher than warmup_begin_lr ({warmup_begin_lr})"
            )
        if self.warmup_steps < 0:
            raise LRSchedulerError(f"{type(self).__name__}: warmup_steps has to be >= 0, got {warmup_steps}")
        if warmup_mode not in ("linear", "constant"):
            raise LRSchedulerError(
                f"{type(self).__name__}: warmup_mode must be 'linear' or 'constant', got {warmup_mode!r}"
            )
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update: int) -> float:
        """The rate during warm-up (``num_update < warmup_steps``)."""
        if num_update >= self.warmup_steps:
            raise LRSchedulerError(
                f"{type(self).__name__}: update {num_update} is past the warm-up of {self.warmup_steps} steps"
            )
        if self.warmup_mode == "linear":
            increase = (self.warmup_final_lr - self.warmup_begin_lr) * float(num_update) / float(self.warmup_steps)
            return self.warmup_begin_lr + increase
        return self.warmup_begin_lr

    def __call__(self, num_update: int) -> float:
        """The learning rate for update number ``num_update``."""
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(num_update)")


class FactorScheduler(LRScheduler):
    """``base_lr * factor ** floor((num_update - 1) / step)``, never below ``stop_factor_lr``.

    The rate changes *after* ``step`` updates: updates 1..step use ``base_lr``, the next
    ``step`` use ``base_lr * factor``, and so on.
    """

    def __init__(
        self,
        step: int,
        factor: float = 1,
        stop_factor_lr: float = 1e-8,
        base_lr: float = 0.01,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ) -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise LRSchedulerError(f"FactorScheduler: step must be >= 1 update, got {step}")
        if factor > 1.0:
            raise LRSchedulerError(f"FactorScheduler: factor must be <= 1 to reduce the rate, got {factor}")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while num_update > self.count + self.step:  # `while`: catches up when resuming late
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                logging.info(
                    "Update[%d]: now learning rate arrived at %0.5e, will not change in the future",
                    num_update,
                    self.base_lr,
                )
            else:
                logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` once ``num_update`` passes each entry of ``step``.

    With ``step=[s0, s1]``: ``base_lr`` up to update s0, ``base_lr * factor`` up to s1,
    ``base_lr * factor**2`` afterwards.
    """

    def __init__(
        self,
        step: list[int],
        factor: float = 1,
        base_lr: float = 0.01,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ) -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or not step:
            raise LRSchedulerError(f"MultiFactorScheduler: step must be a non-empty list of ints, got {step!r}")
        for i, value in enumerate(step):
            if i != 0 and value <= step[i - 1]:
                raise LRSchedulerError(f"MultiFactorScheduler: step must be an increasing list, got {step}")
            if value < 1:
                raise LRSchedulerError(f"MultiFactorScheduler: every step must be >= 1 update, got {step}")
        if factor > 1.0:
            raise LRSchedulerError(f"MultiFactorScheduler: factor must be <= 1 to reduce the rate, got {factor}")
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind <= len(self.step) - 1:
            if num_update > self.step[self.cur_step_ind]:
                self.count = self.step[self.cur_step_ind]
                self.cur_step_ind += 1
                self.base_lr *= self.factor
                logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
            else:
                return self.base_lr
        return self.base_lr


class _AnnealingScheduler(LRScheduler):
    """Warm-up, then a decay from ``base_lr`` to ``final_lr`` over the updates up to ``max_update``.

    ``t`` counts updates after warm-up and ``T = max_update - warmup_steps``; a subclass gives the
    decay's shape as :meth:`_remaining`, the fraction of ``base_lr - final_lr`` still left at
    progress ``t / T``. Past ``max_update`` the rate stays where the decay ended.
    """

    def __init__(
        self,
        max_update: int,
        base_lr: float,
        final_lr: float,
        warmup_steps: int,
        warmup_begin_lr: float,
        warmup_mode: str,
    ) -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        max_update = _check_int(max_update, f"{type(self).__name__}: max_update")
        if max_update < 1:
            raise LRSchedulerError(f"{type(self).__name__}: max_update must be >= 1, got {max_update}")
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def _remaining(self, progress: float) -> float:
        raise NotImplementedError(f"{type(self).__name__} must define the decay's shape (_remaining)")

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            progress = float(num_update - self.warmup_steps) / float(self.max_steps)
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * self._remaining(progress)
        return self.base_lr


class PolyScheduler(_AnnealingScheduler):
    """``final_lr + (base_lr - final_lr) * (1 - t / T) ** pwr`` after warm-up, then ``final_lr``."""

    def __init__(
        self,
        max_update: int,
        base_lr: float = 0.01,
        pwr: float = 2,
        final_lr: float = 0,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ) -> None:
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        self.power = pwr

    def _remaining(self, progress: float) -> float:
        return pow(1 - progress, self.power)


class CosineScheduler(_AnnealingScheduler):
    """``final_lr + (base_lr - final_lr) * (1 + cos(pi * t / T)) / 2`` after warm-up, then ``final_lr``."""

    def __init__(
        self,
        max_update: int,
        base_lr: float = 0.01,
        final_lr: float = 0,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ) -> None:
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode)

    def _remaining(self, progress: float) -> float:
        return (1 + math.cos(math.pi * progress)) / 2


__all__ = [
    "CosineScheduler",
    "FactorScheduler",
    "LRScheduler",
    "LRSchedulerError",
    "MultiFactorScheduler",
    "PolyScheduler",
]
