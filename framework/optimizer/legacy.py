"""Optimizer names MXNet 1.9.1 still ships for old scripts: ``ccSGD`` and the ``Test`` rule.

``ccSGD`` was a C++ SGD; MXNet 1.x keeps the name as SGD itself. ``Test`` is the rule MXNet's
own tests use to check the optimizer plumbing (creation by name, states, saving them) with
an update that is easy to predict: ``weight += rescale_grad * grad``, and the state holds a
copy of the new weight.
"""

from __future__ import annotations

from typing import Any

from ..ndarray import NDArray, zeros
from .base import Optimizer, _check_arrays, register
from .sgd import SGD


@register
class ccSGD(SGD):
    """Deprecated: the same as :class:`SGD` (MXNet keeps the name for backward compatibility)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)


@register
class Test(Optimizer):
    """``weight += rescale_grad * grad``; the state is a copy of the updated weight."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)

    def create_state(self, index: Any, weight: NDArray) -> NDArray:
        return zeros(weight.shape, weight.context, dtype=weight.dtype)

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: NDArray) -> None:
        _check_arrays("Test", weight, grad)
        self._update_count(index)
        weight[:] += grad * self.rescale_grad
        state[:] = weight


__all__ = ["Test", "ccSGD"]
