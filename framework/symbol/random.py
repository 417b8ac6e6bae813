"""``mx.sym.random``: symbolic sampling (``uniform``, ``normal``, ...), as MXNet 1.x's.

The imperative twin is ``mx.nd.random``; the dispatch rule is the same:

* the distribution's parameters are **numbers**: ``_random_<dist>`` draws ``shape``
  samples (a node without inputs, named ``_random_uniform0`` ...);
* they are **symbols**: ``_sample_<dist>`` draws ``shape`` samples per element of the
  parameter symbols (its inputs).

Other ``_random_<name>`` operators (``uniform_like``, ...) are reachable by short name.
"""

from __future__ import annotations

import numbers
from typing import Any

from ..operator import registry
from .register import symbol_function
from .symbol import Symbol, SymbolTypeError

_NOT_GIVEN = object()


def _random_helper(dist: str, params: dict[str, Any], shape: Any, dtype: Any, kwargs: dict[str, Any]) -> Symbol:
    if shape is not _NOT_GIVEN:
        kwargs["shape"] = shape
    if dtype is not _NOT_GIVEN and dtype is not None:
        kwargs["dtype"] = dtype
    values = list(params.values())
    if isinstance(values[0], Symbol):
        if not all(isinstance(v, Symbol) for v in values):
            raise SymbolTypeError(f"mx.sym.random.{dist}: distribution parameters must all be Symbols or all numbers")
        return symbol_function(f"_sample_{dist}")(*values, **kwargs)
    if isinstance(values[0], numbers.Number):
        if not all(isinstance(v, numbers.Number) for v in values):
            raise SymbolTypeError(f"mx.sym.random.{dist}: distribution parameters must all be Symbols or all numbers")
        return symbol_function(f"_random_{dist}")(**params, **kwargs)
    raise SymbolTypeError(
        f"mx.sym.random.{dist}: distribution parameters must be Symbols or numbers, got {type(values[0]).__name__}"
    )


def uniform(low: Any = 0.0, high: Any = 1.0, shape: Any = _NOT_GIVEN, dtype: Any = _NOT_GIVEN, **kwargs: Any) -> Symbol:
    """Samples from the uniform distribution on [low, high)."""
    return _random_helper("uniform", {"low": low, "high": high}, shape, dtype, kwargs)


def normal(loc: Any = 0.0, scale: Any = 1.0, shape: Any = _NOT_GIVEN, dtype: Any = _NOT_GIVEN, **kwargs: Any) -> Symbol:
    """Samples from the normal distribution with mean ``loc`` and standard deviation ``scale``."""
    return _random_helper("normal", {"loc": loc, "scale": scale}, shape, dtype, kwargs)


def poisson(lam: Any = 1.0, shape: Any = _NOT_GIVEN, dtype: Any = _NOT_GIVEN, **kwargs: Any) -> Symbol:
    """Samples from the Poisson distribution with rate ``lam``."""
    return _random_helper("poisson", {"lam": lam}, shape, dtype, kwargs)


def exponential(scale: Any = 1.0, shape: Any = _NOT_GIVEN, dtype: Any = _NOT_GIVEN, **kwargs: Any) -> Symbol:
    """Samples from the exponential distribution with mean ``scale`` (rate ``lam = 1 / scale``)."""
    lam = 1.0 / scale if isinstance(scale, numbers.Number | Symbol) else scale
    return _random_helper("exponential", {"lam": lam}, shape, dtype, kwargs)


def gamma(alpha: Any = 1.0, beta: Any = 1.0, shape: Any = _NOT_GIVEN, dtype: Any = _NOT_GIVEN, **kwargs: Any) -> Symbol:
    """Samples from the gamma distribution with shape ``alpha`` and scale ``beta``."""
    return _random_helper("gamma", {"alpha": alpha, "beta": beta}, shape, dtype, kwargs)


def negative_binomial(
    k: Any = 1, p: Any = 1.0, shape: Any = _NOT_GIVEN, dtype: Any = _NOT_GIVEN, **kwargs: Any
) -> Symbol:
    """Failures before the ``k``-th success, each trial succeeding with probability ``p``."""
    return _random_helper("negative_binomial", {"k": k, "p": p}, shape, dtype, kwargs)


def generalized_negative_binomial(
    mu: Any = 1.0, alpha: Any = 1.0, shape: Any = _NOT_GIVEN, dtype: Any = _NOT_GIVEN, **kwargs: Any
) -> Symbol:
    """Negative binomial samples parameterised by mean ``mu`` and dispersion ``alpha``."""
    return _random_helper("generalized_negative_binomial", {"mu": mu, "alpha": alpha}, shape, dtype, kwargs)


def randint(low: int, high: int, shape: Any = _NOT_GIVEN, dtype: Any = _NOT_GIVEN, **kwargs: Any) -> Symbol:
    """Random integers in [low, high)."""
    if not isinstance(low, numbers.Integral) or not isinstance(high, numbers.Integral):
        raise SymbolTypeError(f"mx.sym.random.randint: low and high must be ints, got {low!r} and {high!r}")
    return _random_helper("randint", {"low": low, "high": high}, shape, dtype, kwargs)


def multinomial(
    data: Symbol, shape: Any = _NOT_GIVEN, get_prob: bool = True, dtype: Any = "int32", **kwargs: Any
) -> Symbol:
    """Category indices drawn from each row of probabilities ``data`` (``_sample_multinomial``).

    As in MXNet, the symbolic form returns the log-probability of each draw as a second output
    by default (``get_prob=True``, for REINFORCE-style losses); ``mx.nd.random.multinomial``
    does not.
    """
    if not isinstance(data, Symbol):
        raise SymbolTypeError(f"mx.sym.random.multinomial: data must be a Symbol, got {data!r}")
    params = {"get_prob": get_prob, "dtype": dtype, **kwargs}
    if shape is not _NOT_GIVEN:
        params["shape"] = shape
    return symbol_function("_sample_multinomial")(data, **params)


def randn(*shape: int, **kwargs: Any) -> Symbol:
    """Normal samples of the given shape: ``randn(2, 3, loc=0, scale=1, dtype=)``, as ``mx.nd.random.randn``."""
    loc = kwargs.pop("loc", 0.0)
    scale = kwargs.pop("scale", 1.0)
    dtype = kwargs.pop("dtype", _NOT_GIVEN)
    return _random_helper("normal", {"loc": loc, "scale": scale}, shape if shape else _NOT_GIVEN, dtype, kwargs)


def shuffle(data: Symbol, **kwargs: Any) -> Symbol:
    """``data`` with its first axis randomly permuted (``_shuffle``)."""
    if not isinstance(data, Symbol):
        raise SymbolTypeError(f"mx.sym.random.shuffle: data must be a Symbol, got {data!r}")
    return symbol_function("_shuffle")(data, **kwargs)


def __getattr__(name: str) -> Any:
    """The remaining ``_random_<name>`` operators (``uniform_like``, ...) by their short name."""
    full = f"_random_{name}"
    if name.startswith("__") or not registry.exists(full):
        raise AttributeError(f"mx.sym.random has no attribute {name!r}")
    function = symbol_function(full)
    globals()[name] = function
    return function


__all__ = [
    "exponential",
    "gamma",
    "generalized_negative_binomial",
    "multinomial",
    "negative_binomial",
    "randn",
    "normal",
    "poisson",
    "randint",
    "shuffle",
    "uniform",
]
