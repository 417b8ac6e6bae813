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


def adamw_update(
    weight: NDArray, grad: NDArray, mean: NDArray, var: NDArray, rescale_grad: Any, lr: float, eta: float, **kwargs: Any
) -> NDArray:
    """AdamW step (``_adamw_update``); ``rescale_grad`` may be a number."""
    return op._adamw_update(weight, grad, mean, var, _rescale_array(rescale_grad, weight), lr=lr, eta=eta, **kwargs)


def mp_adamw_update(
    weight: NDArray,
    grad: NDArray,
    mean: NDArray,
    var: NDArray,
    weight32: NDArray,
    rescale_grad: Any,
    lr: float,
    eta: float,
    **kwargs: Any,
) -> NDArray:
    """Multi-precision AdamW step (``_mp_adamw_update``); ``rescale_grad`` may be a number."""
    rescale = _rescale_array(rescale_grad, weight)
    return op._mp_adamw_update(weight, grad, mean, var, weight32, rescale, lr=lr, eta=eta, **kwargs)


def multi_adamw_update(
    weights: list, grads: list, mean: list, var: list, rescale_grad: Any, lrs: Any, wds: Any, etas: Any, **kwargs: Any
) -> Any:
    """AdamW on many weights in one operation (``_multi_adamw_update``)."""
    size = kwargs.pop("size", 0) or len(weights)
    arrays = _interleave(weights, grads, mean, var)
    rescale = _rescale_array(rescale_grad, weights[0])
    return op._multi_adamw_update(*arrays, rescale, num_weights=size, lrs=lrs, wds=wds, etas=etas, **kwargs)


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
    **kwargs: Any,
) -> Any:
    """Multi-precision AdamW on many weights in one operation (``_multi_mp_adamw_update``)."""
    size = kwargs.pop("size", 0) or len(weights)
    arrays = _interleave(weights, grads, mean, var, weights32)
    rescale = _rescale_array(rescale_grad, weights[0])
    return op._multi_mp_adamw_update(*arrays, rescale, num_weights=size, lrs=lrs, wds=wds, etas=etas, **kwargs)


def multi_lamb_update(
    weights: list, grads: list, mean: list, var: list, step_count: Any, lrs: Any, wds: Any, **kwargs: Any
) -> Any:
    """LAMB on many weights in one operation (``_multi_lamb_update``)."""
    count = kwargs.pop("num_tensors", 0) or len(weights)
    arrays = _interleave(weights, grads, mean, var)
    return op._multi_lamb_update(
        *arrays, num_tensors=count, step_count=step_count, learning_rates=lrs, wds=wds, **kwargs
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
    **kwargs: Any,
) -> Any:
    """Multi-precision LAMB on many weights in one operation (``_multi_mp_lamb_update``)."""
    count = kwargs.pop("num_tensors", 0) or len(weights)
    arrays = _interleave(weights, grads, mean, var, weights32)
    return op._multi_mp_lamb_update(
        *arrays, num_tensors=count, step_count=step_count, learning_rates=lrs, wds=wds, **kwargs
    )


WRAPPERS = {
    "adamw_update": adamw_update,
    "mp_adamw_update": mp_adamw_update,
    "multi_adamw_update": multi_adamw_update,
    "multi_mp_adamw_update": multi_mp_adamw_update,
    "multi_lamb_update": multi_lamb_update,
    "multi_mp_lamb_update": multi_mp_lamb_update,
}
