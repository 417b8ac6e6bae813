"""MXNet's hand-written ``mx.nd.contrib`` front ends of the AdamW and LAMB update operators.

``_adamw_update`` takes ``rescale_grad`` as a one-element *array* (so a loss scaler can change it
on the device without a new operator), and the ``_multi_*`` operators take every weight's arrays
as one flat positional list. MXNet's Python wrappers hide both: ``rescale_grad`` may be a number,
and the multi-weight forms take lists ``weights, grads, mean, var``. These are those wrappers;
``mx.nd.contrib`` (framework/ndarray/__init__.py) installs them.
"""

from __future__ import annotations

import numbers
from typing import Any

from ..base import MXLabError
from . import op
from .creation import full
from .ndarray import NDArray


def _rescale_array(rescale_grad: Any, like: NDArray) -> NDArray:
    """``rescale_grad`` as the ``(1,)`` float32 array the operators take."""
    if isinstance(rescale_grad, NDArray):
        return rescale_grad
    if isinstance(rescale_grad, bool) or not isinstance(rescale_grad, numbers.Real):
        raise MXLabError(f"rescale_grad must be a number or a one-element NDArray, got {rescale_grad!r}")
    return full((1,), float(rescale_grad), ctx=like.context, dtype="float32")


def _interleave(*lists: Any) -> list[NDArray]:
    """``[w0, g0, m0, v0, w1, g1, ...]`` from ``[w0, w1], [g0, g1], ...`` (equal lengths)."""
    lengths = {len(items) for items in lists}
    if len(lengths) != 1:
        raise MXLabError(f"weights, gradients and states must be lists of one length, got lengths {sorted(lengths)}")
    return [a for group in zip(*lists, strict=True) for a in group]


# ``name`` is a symbol's node name: MXNet's imperative functions accept it and ignore it, as these do.
def adamw_update(
    weight: NDArray,
    grad: NDArray,
    mean: NDArray,
    var: NDArray,
    rescale_grad: Any,
    lr: float,
    eta: float,
    beta1: float = 0.9,
    beta2: float = 0.999,
    epsilon: float = 1e-8,
    wd: float = 0,
    clip_gradient: float = -1,
    out: NDArray | None = None,
    name: str | None = None,
    **kwargs: Any,
) -> NDArray:
    """AdamW step (``_adamw_update``); ``rescale_grad`` may be a number."""
    hyper = {"beta1": beta1, "beta2": beta2, "epsilon": epsilon, "wd": wd, "clip_gradient": clip_gradient}
    rescale = _rescale_array(rescale_grad, weight)
    return op._adamw_update(weight, grad, mean, var, rescale, lr=lr, eta=eta, out=out, **hyper, **kwargs)


def mp_adamw_update(
    weight: NDArray,
    grad: NDArray,
    mean: NDArray,
    var: NDArray,
    weight32: NDArray,
    rescale_grad: Any,
    lr: float,
    eta: float,
    beta1: float = 0.9,
    beta2: float = 0.999,
    epsilon: float = 1e-8,
    wd: float = 0,
    clip_gradient: float = -1,
    out: NDArray | None = None,
    name: str | None = None,
    **kwargs: Any,
) -> NDArray:
    """Multi-precision AdamW step (``_mp_adamw_update``); ``rescale_grad`` may be a number."""
    hyper = {"beta1": beta1, "beta2": beta2, "epsilon": epsilon, "wd": wd, "clip_gradient": clip_gradient}
    rescale = _rescale_array(rescale_grad, weight)
    return op._mp_adamw_update(weight, grad, mean, var, weight32, rescale, lr=lr, eta=eta, out=out, **hyper, **kwargs)


def multi_adamw_update(
    weights: list,
    grads: list,
    mean: list,
    var: list,
    rescale_grad: Any,
    lrs: Any,
    wds: Any,
    etas: Any,
    out: Any = None,
    name: str | None = None,
    size: int = 0,
    **kwargs: Any,
) -> Any:
    """AdamW on many weights in one operation (``_multi_adamw_update``); ``size`` 0 means all of them."""
    arrays = _interleave(weights, grads, mean, var)
    rescale = _rescale_array(rescale_grad, weights[0])
    count = size or len(weights)
    return op._multi_adamw_update(*arrays, rescale, num_weights=count, lrs=lrs, wds=wds, etas=etas, out=out, **kwargs)


def multi_mp_adamw_update(
    weights: list,
    grads: list,
    mean: list,
    var: list,
    weights32: list,
    rescale_grad: Any,
    lrs: Any,
    wds: Any,
    etas: Any,
    out: Any = None,
    name: str | None = None,
    size: int = 0,
    **kwargs: Any,
) -> Any:
    """Multi-precision AdamW on many weights in one operation (``_multi_mp_adamw_update``)."""
    arrays = _interleave(weights, grads, mean, var, weights32)
    rescale = _rescale_array(rescale_grad, weights[0])
    count = size or len(weights)
    return op._multi_mp_adamw_update(
        *arrays, rescale, num_weights=count, lrs=lrs, wds=wds, etas=etas, out=out, **kwargs
    )


def multi_lamb_update(
    weights: list,
    grads: list,
    mean: list,
    var: list,
    step_count: Any,
    lrs: Any,
    wds: Any,
    out: Any = None,
    num_tensors: int = 0,
    **kwargs: Any,
) -> Any:
    """LAMB on many weights in one operation (``_multi_lamb_update``); ``num_tensors`` 0 means all."""
    arrays = _interleave(weights, grads, mean, var)
    count = num_tensors or len(weights)
    return op._multi_lamb_update(
        *arrays, num_tensors=count, step_count=step_count, learning_rates=lrs, wds=wds, out=out, **kwargs
    )


def multi_mp_lamb_update(
    weights: list,
    grads: list,
    mean: list,
    var: list,
    weights32: list,
    step_count: Any,
    lrs: Any,
    wds: Any,
    out: Any = None,
    num_tensors: int = 0,
    **kwargs: Any,
) -> Any:
    """Multi-precision LAMB on many weights in one operation (``_multi_mp_lamb_update``)."""
    arrays = _interleave(weights, grads, mean, var, weights32)
    count = num_tensors or len(weights)
    return op._multi_mp_lamb_update(
        *arrays, num_tensors=count, step_count=step_count, learning_rates=lrs, wds=wds, out=out, **kwargs
    )


WRAPPERS = {
    "adamw_update": adamw_update,
    "mp_adamw_update": mp_adamw_update,
    "multi_adamw_update": multi_adamw_update,
    "multi_mp_adamw_update": multi_mp_adamw_update,
    "multi_lamb_update": multi_lamb_update,
    "multi_mp_lamb_update": multi_mp_lamb_update,
}
