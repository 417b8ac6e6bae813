"""Initializers that draw weights at random, scaled by a given bound or by the weight's shape:
:class:`Uniform`, :class:`Normal`, :class:`Orthogonal`, :class:`Xavier`, :class:`MSRAPrelu`.

They draw through ``mx.nd.random`` (one engine operation writing the array, or a draw read
back for the SVD of :class:`Orthogonal`), so ``mx.random.seed(n)`` makes them reproducible.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ..ndarray import NDArray
from ..ndarray import random as _random
from .base import Initializer, InitializerError, register


def _positive(value: Any, what: str, allow_zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        raise InitializerError(f"{what} must be a number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise InitializerError(f"{what} must be {'>=' if allow_zero else '>'} 0, got {value}")
    return float(value)


@register
class Uniform(Initializer):
    """Weights drawn uniformly from ``[-scale, scale]``."""

    def __init__(self, scale: float = 0.07) -> None:
        super().__init__(scale=scale)
        self.scale = _positive(scale, "Uniform: scale")

    def _init_weight(self, _: str, arr: NDArray) -> None:
        _random.uniform(-self.scale, self.scale, arr.shape, out=arr)


@register
class Normal(Initializer):
    """Weights drawn from a normal distribution with mean 0 and standard deviation ``sigma``."""

    def __init__(self, sigma: float = 0.01) -> None:
        super().__init__(sigma=sigma)
        self.sigma = _positive(sigma, "Normal: sigma", allow_zero=False)

    def _init_weight(self, _: str, arr: NDArray) -> None:
        _random.normal(0, self.sigma, arr.shape, out=arr)


@register
class Orthogonal(Initializer):
    """An orthogonal matrix (rows or columns), times ``scale`` (Saxe et al., 2013).

    The matrix comes from the SVD of a random ``(shape[0], prod(shape[1:]))`` draw, uniform
    or normal (``rand_type``).
    """

    def __init__(self, scale: float = 1.414, rand_type: str = "uniform") -> None:
        super().__init__(scale=scale, rand_type=rand_type)
        if rand_type not in ("uniform", "normal"):
            raise InitializerError(f"Orthogonal: rand_type must be 'uniform' or 'normal', got {rand_type!r}")
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, _: str, arr: NDArray) -> None:
        nout = arr.shape[0]
        nin = int(np.prod(arr.shape[1:]))
        if self.rand_type == "uniform":
            tmp = _random.uniform(-1.0, 1.0, shape=(nout, nin)).asnumpy()
        else:
            tmp = _random.normal(0.0, 1.0, shape=(nout, nin)).asnumpy()
        u, _, v = np.linalg.svd(tmp, full_matrices=False)
        res = u if u.shape == tmp.shape else v
        arr[:] = self.scale * res.reshape(arr.shape)


_XAVIER_RND = ("uniform", "gaussian")
_XAVIER_FACTOR = ("avg", "in", "out")


@register
class Xavier(Initializer):
    """Glorot & Bengio's initialisation: keep the scale of activations and gradients per layer.

    ``fan_in = shape[1] * prod(shape[2:])`` and ``fan_out = shape[0] * prod(shape[2:])``;
    ``factor`` is their mean (``"avg"``), ``fan_in`` (``"in"``) or ``fan_out`` (``"out"``);
    ``scale = sqrt(magnitude / factor)``. Weights are uniform in ``[-scale, scale]``
    (``rnd_type="uniform"``) or normal with standard deviation ``scale`` (``"gaussian"``).
    """

    def __init__(self, rnd_type: str = "uniform", factor_type: str = "avg", magnitude: float = 3) -> None:
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        if rnd_type not in _XAVIER_RND:
            raise InitializerError(f"Xavier: rnd_type must be one of {list(_XAVIER_RND)}, got {rnd_type!r}")
        if factor_type not in _XAVIER_FACTOR:
            raise InitializerError(f"Xavier: factor_type must be one of {list(_XAVIER_FACTOR)}, got {factor_type!r}")
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = _positive(magnitude, "Xavier: magnitude")

    def scale_for(self, shape: tuple[int, ...], name: str = "weight") -> float:
        """The bound (uniform) or standard deviation (gaussian) used for a weight of ``shape``."""
        if len(shape) < 2:
            raise InitializerError(
                f"Xavier initializer cannot be applied to vector {name}. It requires at least 2D (got shape {shape})."
            )
        hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        return math.sqrt(self.magnitude / factor)

    def _init_weight(self, name: str, arr: NDArray) -> None:
        scale = self.scale_for(arr.shape, name)
        if self.rnd_type == "uniform":
            _random.uniform(-scale, scale, arr.shape, out=arr)
        else:
            _random.normal(0, scale, arr.shape, out=arr)


@register
class MSRAPrelu(Xavier):
    """He et al.'s initialisation for (P)ReLU networks: Xavier, gaussian, ``magnitude = 2 / (1 + slope**2)``."""

    def __init__(self, factor_type: str = "avg", slope: float = 0.25) -> None:
        magnitude = 2.0 / (1 + slope**2)
        super().__init__("gaussian", factor_type, magnitude)
        self._kwargs = {"factor_type": factor_type, "slope": slope}
