"""Initializers whose weights are given, not drawn: :class:`Zero`, :class:`One`, :class:`Constant`."""

from __future__ import annotations

import json
import numbers
from typing import Any

import numpy as np

from ..ndarray import NDArray
from .base import Initializer, InitializerError, alias, register


@register
@alias("zeros")
class Zero(Initializer):
    """Weights = 0."""

    def __init__(self) -> None:
        super().__init__()

    def _init_weight(self, _: str, arr: NDArray) -> None:
        arr[:] = 0


@register
@alias("ones")
class One(Initializer):
    """Weights = 1."""

    def __init__(self) -> None:
        super().__init__()

    def _init_weight(self, _: str, arr: NDArray) -> None:
        arr[:] = 1


@register
class Constant(Initializer):
    """Weights = ``value``: a number, or an array (NDArray, NumPy array, list) of the weight's shape."""

    def __init__(self, value: Any) -> None:
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, name: str, arr: NDArray) -> None:
        value = self.value
        if not isinstance(value, numbers.Number):
            shape = tuple(value.shape) if hasattr(value, "shape") else np.shape(value)
            if shape != arr.shape:
                raise InitializerError(
                    f"Constant: value of shape {shape} cannot initialise {name!r} of shape {arr.shape}"
                )
        arr[:] = value

    def dumps(self) -> str:
        value = self._kwargs["value"]
        if not np.isscalar(value):
            value = value.asnumpy().tolist() if isinstance(value, NDArray) else np.asarray(value).tolist()
        return json.dumps([type(self).__name__.lower(), {**self._kwargs, "value": value}])
