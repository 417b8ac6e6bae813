"""A Gluon Constant: a parameter whose value is fixed at creation and never trained.

It is a :class:`~.parameter.Parameter` with ``grad_req`` pinned to ``'null'`` and an
initializer that copies its value, so it is saved, loaded and moved between contexts like any
other parameter. It lives apart because it overrides the gradient request and the symbol
variable (its value is not written into symbol JSON).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ... import initializer
from ...ndarray.ndarray import NDArray, array
from ...symbol.symbol import Symbol
from ...symbol.variable import var
from .parameter import Parameter


class _ConstantInit(initializer.Initializer):
    """Fills an array with a Constant's value."""

    def __init__(self, value: NDArray) -> None:
        super().__init__()
        self._value = value

    def _init_weight(self, name: str, arr: NDArray) -> None:
        arr[:] = self._value

    def _init_default(self, name: str, arr: NDArray) -> None:
        arr[:] = self._value


class Constant(Parameter):
    """A parameter that never changes (``grad_req='null'``), initialized to ``value``."""

    def __init__(self, name: str, value: Any) -> None:
        if not isinstance(value, NDArray):
            value = array(np.asarray(value))
        self.value = value
        super().__init__(
            name, grad_req="null", shape=value.shape, dtype=value.dtype, init=_ConstantInit(value), differentiable=False
        )

    def __repr__(self) -> str:
        return f"Constant {self.name} (shape={self.shape}, dtype={self.dtype})"

    @property
    def grad_req(self) -> str:
        return "null"

    @grad_req.setter
    def grad_req(self, req: str) -> None:
        if req != "null":
            warnings.warn(
                f'Constant parameter "{self.name}" does not support grad_req other than "null", '
                f'and new value "{req}" is ignored.',
                stacklevel=2,
            )
        self._grad_req = "null"

    def var(self) -> Symbol:
        if self._var is None:  # the value is not stored in symbol JSON: no __init__ attribute
            self._var = var(self.name, shape=self.shape, dtype=self.dtype)
        return self._var
