"""``mx.nd.random``: MXNet's sampling front end (``uniform``, ``normal``, ``randint``, ...).

Each function picks one of two operators from framework/operator/tensor/random_ops.py,
exactly as MXNet 1.x's ``python/mxnet/ndarray/random.py`` does:

* the distribution's parameters are **numbers**: ``_random_<dist>`` draws ``shape`` samples
  (``shape`` defaults to ``(1,)`` when no ``out=`` array gives it);
* they are **NDArrays**: ``_sample_<dist>`` draws ``shape`` samples *per element* of the
  parameter arrays (output shape ``params.shape + shape``).

Either way the draw is one engine operation that writes the device's random resource, so
``mx.random.seed(n)`` (re-exported here as :func:`seed`) makes the numbers reproducible on
every engine type. Other ``_random_*`` operators (``uniform_like``, ``normal_like``, ...) are
reachable here by their short name too, as in MXNet.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ..base import MXLabError
from ..context import Context, current_context
from ..operator import registry
from ..random import seed
from . import op
from .ndarray import NDArray


class _NullType:
    """MXNet's ``_Null``: "argument not given", distinct from None."""

    _instance: _NullType | None = None

    def __new__(cls) -> _NullType:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "_Null"

    def __bool__(self) -> bool:
        return False


_Null = _NullType()


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real | np.number) and not isinstance(value, bool | np.bool_)


def _random_helper(
    dist: str,
    params: list[Any],
    shape: Any,
    dtype: Any,
    ctx: Context | None,
    out: NDArray | None,
    kwargs: dict[str, Any],
    param_names: tuple[str, ...],
    has_sampler: bool = True,
) -> NDArray:
    """Dispatch to ``_random_<dist>`` (number parameters) or ``_sample_<dist>`` (NDArray ones)."""
    api = f"mx.nd.random.{dist}"
    if dtype is not None and dtype is not _Null:
        kwargs["dtype"] = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if shape is not _Null:
        kwargs["shape"] = shape
    if isinstance(params[0], NDArray):
        if not has_sampler:
            raise MXLabError(f"{api}: the distribution parameters must be numbers, got an NDArray")
        for value in params[1:]:
            if not isinstance(value, NDArray):
                raise MXLabError(
                    f"{api}: distribution parameters must all have the same type, got NDArray and "
                    f"{type(value).__name__}"
                )
        if ctx is not None:
            raise MXLabError(f"{api}: ctx= is not used with NDArray parameters (the output follows their context)")
        return getattr(op, f"_sample_{dist}")(*params, out=out, **kwargs)
    if _is_number(params[0]):
        for value in params[1:]:
            if not _is_number(value):
                raise MXLabError(
                    f"{api}: distribution parameters must all have the same type, got a number and "
                    f"{type(value).__name__}"
                )
        if ctx is None:
            ctx = out.context if isinstance(out, NDArray) else current_context()
        if shape is _Null and out is None:
            kwargs["shape"] = (1,)
        named = dict(zip(param_names, params, strict=True))
        return getattr(op, f"_random_{dist}")(ctx=ctx, out=out, **named, **kwargs)
    raise MXLabError(
        f"{api}: distribution parameters must be either NDArrays or numbers, got {type(params[0]).__name__}"
    )


def uniform(
    low: Any = 0.0,
    high: Any = 1.0,
    shape: Any = _Null,
    dtype: Any = None,
    ctx: Context | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Samples from the uniform distribution on [low, high) (``high >= low``)."""
    return _random_helper("uniform", [low, high], shape, dtype, ctx, out, kwargs, ("low", "high"))


def normal(
    loc: Any = 0.0,
    scale: Any = 1.0,
    shape: Any = _Null,
    dtype: Any = None,
    ctx: Context | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Samples from the normal distribution with mean ``loc`` and standard deviation ``scale`` (> 0)."""
    return _random_helper("normal", [loc, scale], shape, dtype, ctx, out, kwargs, ("loc", "scale"))


def randn(*shape: int, **kwargs: Any) -> NDArray:
    """Standard-normal samples of the given shape: ``randn(2, 3, loc=0, scale=1, dtype=, ctx=)``."""
    loc = kwargs.pop("loc", 0.0)
    scale = kwargs.pop("scale", 1.0)
    dtype = kwargs.pop("dtype", None)
    ctx = kwargs.pop("ctx", None)
    out = kwargs.pop("out", None)
    return _random_helper("normal", [loc, scale], shape if shape else _Null, dtype, ctx, out, kwargs, ("loc", "scale"))


def poisson(
    lam: Any = 1.0,
    shape: Any = _Null,
    dtype: Any = None,
    ctx: Context | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Samples from the Poisson distribution with rate ``lam`` (>= 0), as floats."""
    return _random_helper("poisson", [lam], shape, dtype, ctx, out, kwargs, ("lam",))


def exponential(
    scale: Any = 1.0,
    shape: Any = _Null,
    dtype: Any = None,
    ctx: Context | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Samples from the exponential distribution with mean ``scale`` (the operator takes ``lam = 1 / scale``)."""
    if _is_number(scale):
        if scale <= 0:
            raise MXLabError(f"mx.nd.random.exponential: scale must be positive, got {scale}")
        lam: Any = 1.0 / scale
    elif isinstance(scale, NDArray):
        lam = 1.0 / scale
    else:
        lam = scale  # let the helper report the type
    return _random_helper("exponential", [lam], shape, dtype, ctx, out, kwargs, ("lam",))


def gamma(
    alpha: Any = 1.0,
    beta: Any = 1.0,
    shape: Any = _Null,
    dtype: Any = None,
    ctx: Context | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Samples from the gamma distribution with shape ``alpha`` and scale ``beta`` (mean alpha * beta)."""
    return _random_helper("gamma", [alpha, beta], shape, dtype, ctx, out, kwargs, ("alpha", "beta"))


def negative_binomial(
    k: Any = 1,
    p: Any = 1.0,
    shape: Any = _Null,
    dtype: Any = None,
    ctx: Context | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Failures before the ``k``-th success, each trial succeeding with probability ``p``."""
    return _random_helper("negative_binomial", [k, p], shape, dtype, ctx, out, kwargs, ("k", "p"))


def generalized_negative_binomial(
    mu: Any = 1.0,
    alpha: Any = 1.0,
    shape: Any = _Null,
    dtype: Any = None,
    ctx: Context | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Negative binomial samples parameterised by mean ``mu`` and dispersion ``alpha``."""
    return _random_helper("generalized_negative_binomial", [mu, alpha], shape, dtype, ctx, out, kwargs, ("mu", "alpha"))


def randint(
    low: int,
    high: int,
    shape: Any = _Null,
    dtype: Any = None,
    ctx: Context | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Random integers in [low, high) (``high > low``); dtype int32 (default) or int64."""
    for name, value in (("low", low), ("high", high)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise MXLabError(f"mx.nd.random.randint: {name} must be an int, got {value!r}")
    return _random_helper(
        "randint", [int(low), int(high)], shape, dtype, ctx, out, kwargs, ("low", "high"), has_sampler=False
    )


def multinomial(
    data: NDArray, shape: Any = _Null, get_prob: bool = False, out: Any = None, dtype: Any = "int32", **kwargs: Any
) -> Any:
    """Category indices drawn from each row of probabilities ``data`` (last axis: the categories).

    The result has shape ``data.shape[:-1] + shape``; with ``get_prob=True`` a second array
    holds each draw's log probability, whose gradient reaches ``data`` (REINFORCE).
    """
    if not isinstance(data, NDArray):
        raise MXLabError(f"mx.nd.random.multinomial: data must be an NDArray of probabilities, got {data!r}")
    params = {"get_prob": get_prob, "dtype": dtype, **kwargs}
    if shape is not _Null:
        params["shape"] = shape
    return op._sample_multinomial(data, out=out, **params)


def shuffle(data: NDArray, **kwargs: Any) -> NDArray:
    """``data`` with its first axis randomly permuted (each sub-array moves as a whole)."""
    if not isinstance(data, NDArray):
        raise MXLabError(f"mx.nd.random.shuffle: data must be an NDArray, got {data!r}")
    return op._shuffle(data, **kwargs)


#: The samplers MXNet's ``mx.random`` also offers (framework/__init__ attaches them there).
SAMPLERS = (
    "uniform",
    "normal",
    "randn",
    "randint",
    "exponential",
    "gamma",
    "poisson",
    "negative_binomial",
    "generalized_negative_binomial",
    "multinomial",
    "shuffle",
)


def __getattr__(name: str) -> Any:
    """The remaining ``_random_<name>`` operators (``uniform_like``, ...) by their short name."""
    full = f"_random_{name}"
    if name.startswith("__") or not registry.exists(full):
        raise AttributeError(f"mx.nd.random has no attribute {name!r}")
    function = getattr(op, full)
    globals()[name] = function
    return function


def __dir__() -> list[str]:
    ops = [n[len("_random_") :] for n in registry.list_operators() if n.startswith("_random_")]
    return sorted(set(globals()) | set(ops))


__all__ = [
    "exponential",
    "gamma",
    "generalized_negative_binomial",
    "multinomial",
    "negative_binomial",
    "normal",
    "poisson",
    "randint",
    "randn",
    "seed",
    "shuffle",
    "uniform",
]
