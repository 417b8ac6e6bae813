"""MXNet's hand-written ``mx.sym.contrib`` functions: the AdamW front ends and ``rand_zipfian``.

They build the same graphs as their ``mx.nd.contrib`` twins (framework/ndarray/contrib_updates.py
and contrib_functions.py explain them): ``adamw_update`` accepts ``rescale_grad`` as a number and
turns it into the one-element array the ``_adamw_update`` operator reads; ``rand_zipfian``
samples log-uniform class ids and their expected counts.
"""

from __future__ import annotations

import math
from typing import Any

from ..ndarray.contrib_functions import _check_sampling
from . import random as _random
from .functions import full
from .register import symbol_function
from .symbol import Symbol


def _rescale_symbol(rescale_grad: Any) -> Symbol:
    return rescale_grad if isinstance(rescale_grad, Symbol) else full(shape=(1,), val=float(rescale_grad))


def adamw_update(
    weight: Symbol,
    grad: Symbol,
    mean: Symbol,
    var: Symbol,
    rescale_grad: Any,
    lr: float,
    eta: float,
    beta1: float = 0.9,
    beta2: float = 0.999,
    epsilon: float = 1e-8,
    wd: float = 0,
    clip_gradient: float = -1,
    out: Any = None,
    name: str | None = None,
    **kwargs: Any,
) -> Symbol:
    """AdamW step node (``_adamw_update``); ``rescale_grad`` may be a number or a Symbol."""
    hyper = {"beta1": beta1, "beta2": beta2, "epsilon": epsilon, "wd": wd, "clip_gradient": clip_gradient}
    step = symbol_function("_adamw_update")
    return step(weight, grad, mean, var, _rescale_symbol(rescale_grad), lr=lr, eta=eta, name=name, **hyper, **kwargs)


def mp_adamw_update(
    weight: Symbol,
    grad: Symbol,
    mean: Symbol,
    var: Symbol,
    weight32: Symbol,
    rescale_grad: Any,
    lr: float,
    eta: float,
    beta1: float = 0.9,
    beta2: float = 0.999,
    epsilon: float = 1e-8,
    wd: float = 0,
    clip_gradient: float = -1,
    out: Any = None,
    name: str | None = None,
    **kwargs: Any,
) -> Symbol:
    """Multi-precision AdamW step node (``_mp_adamw_update``)."""
    hyper = {"beta1": beta1, "beta2": beta2, "epsilon": epsilon, "wd": wd, "clip_gradient": clip_gradient}
    step = symbol_function("_mp_adamw_update")
    rescale = _rescale_symbol(rescale_grad)
    return step(weight, grad, mean, var, weight32, rescale, lr=lr, eta=eta, name=name, **hyper, **kwargs)


def rand_zipfian(true_classes: Symbol, num_sampled: int, range_max: int) -> tuple[Symbol, Symbol, Symbol]:
    """``(sampled_classes, expected_count_true, expected_count_sampled)`` as symbols."""
    num_sampled, range_max = _check_sampling(num_sampled, range_max)
    log_range = math.log(range_max + 1)
    draws = _random.uniform(0, log_range, shape=(num_sampled,), dtype="float64")
    sampled = (draws.exp() - 1).astype("int64") % range_max

    def expected_count(classes: Symbol) -> Symbol:
        k = classes.astype("float64")
        return ((k + 2.0) / (k + 1.0)).log() / log_range * num_sampled

    return sampled, expected_count(true_classes), expected_count(sampled)


FUNCTIONS = {"adamw_update": adamw_update, "mp_adamw_update": mp_adamw_update, "rand_zipfian": rand_zipfian}

__all__ = ["FUNCTIONS", "adamw_update", "mp_adamw_update", "rand_zipfian"]
