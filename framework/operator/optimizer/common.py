"""What every update operator of this family shares: the gradient's preprocessing, float32
scalar arithmetic, the per-weight list parameters (``lrs``, ``wds``) and inference.

MXNet declares its optimizer parameters as C ``float``, so scalar expressions such as
``1 - beta1`` or ``beta2 ** t`` are rounded to float32 before they meet the arrays.
:func:`scalar` reproduces that: computing them in Python's float64 drifts from MXNet's
trajectory over many steps (as found for Adam).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..infer import InferenceError, shape_assign, type_assign
from ..kernel import INPLACE, WRITE, Req, assign
from ..node import NodeAttrs
from ..params import OperatorParamError, ParamSet

LR = "Learning rate"
WD = (
    "Weight decay augments the objective function with a regularization term that penalizes large weights. "
    "The penalty scales with the square of the magnitude of each weight."
)
RESCALE = "Rescale gradient to grad = rescale_grad*grad."
CLIP = (
    "Clip gradient to the range of [-clip_gradient, clip_gradient] If clip_gradient <= 0, gradient clipping "
    "is turned off. grad = max(min(grad, clip_gradient), -clip_gradient)."
)


def scalar(value: float) -> np.float32:
    """A parameter as MXNet's kernels see it: a C float."""
    return np.float32(value)


def clip(xp: Any, value: Any, bound: float) -> Any:
    """MXNet's convention: a negative bound switches clipping off."""
    return xp.clip(value, -bound, bound) if bound >= 0 else value


def rescaled(xp: Any, grad: Any, rescale_grad: float, clip_gradient: float) -> Any:
    """``clip(rescale_grad * grad)``, in the gradient's dtype."""
    return clip(xp, grad * grad.dtype.type(rescale_grad), clip_gradient)


def sgd_in_place(
    xp: Any,
    weight: Any,
    grad: Any,
    mom: Any | None,
    out: Any,
    req: Req,
    lr: float,
    wd: float,
    momentum: float,
    rescale_grad: float,
    clip_gradient: float,
) -> None:
    """SGD's rule for one weight in MXNet 1.9.1's arithmetic, written into ``out`` (``mom`` in place).

    The scalars are C floats that combine before they meet the arrays, as in MXNet's kernel:
    without clipping the step is ``grad * (lr * rescale_grad)``, one pass over the gradient;
    with clipping it is ``lr * clip(grad * rescale_grad)``. With momentum (``mom`` holds minus
    the velocity) ``mom = momentum * mom - (lr * wd) * weight - step`` and ``out = weight + mom``;
    without, ``out = (1 - lr * wd) * weight - step``. The results are bit-identical to MXNet's
    ``sgd_update``/``sgd_mom_update`` for float32 (``tests/operator/test_optimizer_updates.py``).
    ``sgd_update``, ``sgd_mom_update``, their ``mp_`` forms and every ``multi_sgd_*`` call this.
    """
    as_dtype = weight.dtype.type  # each combined coefficient meets the arrays in their own dtype
    lr_, wd_, rescale = scalar(lr), scalar(wd), scalar(rescale_grad)
    grad = grad.astype(weight.dtype, copy=False)
    if clip_gradient < 0:
        step = xp.multiply(grad, as_dtype(lr_ * rescale))  # a fresh array
    else:
        step = clip(xp, grad * as_dtype(rescale), clip_gradient)  # a fresh array: scaled in place
        step *= as_dtype(lr_)
    target = out if req in (WRITE, INPLACE) else None
    if mom is None:
        if wd:
            new = xp.multiply(weight, as_dtype(scalar(1) - lr_ * wd_), out=target)
            new -= step
        else:  # the factor is exactly 1: one pass fewer, the same numbers
            new = xp.subtract(weight, step, out=target)
    else:
        mom *= as_dtype(scalar(momentum))
        if wd:
            mom -= xp.multiply(weight, as_dtype(lr_ * wd_))
        mom -= step
        new = xp.add(weight, mom, out=target)
    if target is None:
        assign(out, req, new)


def float_list(op_name: str, name: str, value: Any) -> str:
    """A list of floats (``lrs=(0.1, 0.2)``) in the string form symbol JSON stores, or an error."""
    try:
        items = ast.literal_eval(value) if isinstance(value, str) else value
        if isinstance(items, int | float) and not isinstance(items, bool):
            items = (items,)
        floats = [float(v) for v in items if not isinstance(v, bool)]
        if len(floats) != len(items):
            raise TypeError(value)
    except (TypeError, ValueError, SyntaxError):
        raise OperatorParamError(
            f"{op_name}: parameter '{name}' expects a tuple of numbers such as (0.1, 0.2), got {value!r}"
        ) from None
    return "(" + ", ".join(repr(f) for f in floats) + ("," if len(floats) == 1 else "") + ")"


@functools.lru_cache(maxsize=256)
def parse_float_list(text: str) -> tuple[float, ...]:
    """The numbers of a list parameter stored by :func:`float_list`.

    Cached: the multi-weight kernels read their ``lrs``/``wds`` on every step, and the same
    strings come back step after step (a schedule changes them only now and then).
    """
    return tuple(float(v) for v in ast.literal_eval(text))


class ListParams(ParamSet):
    """A ParamSet whose ``list_fields`` hold tuples of floats (stored as strings), one per weight;
    ``count_field`` names the parameter that says how many weights there are."""

    list_fields: tuple[str, ...] = ()
    count_field = "num_weights"

    @classmethod
    def parse(cls, op_name: str, kwargs: Mapping[str, Any]) -> ParamSet:
        values = dict(kwargs)
        for name in cls.list_fields:
            if name in values and values[name] is not None:
                values[name] = float_list(op_name, name, values[name])
        parsed = super().parse(op_name, values)
        for name in cls.list_fields:
            count, wanted = len(parse_float_list(getattr(parsed, name))), getattr(parsed, cls.count_field)
            if count != wanted:
                raise OperatorParamError(
                    f"{op_name}: parameter '{name}' needs one value per weight ({cls.count_field}={wanted}), "
                    f"got {count}"
                )
        return parsed


def check_float(attrs: NodeAttrs, types: list) -> None:
    """The update arithmetic needs floating-point arrays."""
    for i, t in enumerate(types):
        if t is not None and not t.startswith("float"):
            raise InferenceError(f"{attrs.name}: input {i} must be a floating-point array, got {t}")


def same_shapes(attrs: NodeAttrs, in_shapes: list, out_shapes: list, inputs: list[int], outputs: list[int]) -> bool:
    """The listed inputs and outputs all share one shape, filled in both directions."""
    known = next((s for s in [*(in_shapes[i] for i in inputs), *(out_shapes[o] for o in outputs)] if s), None)
    if known is None:
        return False
    for i in inputs:
        shape_assign(in_shapes, i, known, attrs.name, f"input {i}")
    for o in outputs:
        shape_assign(out_shapes, o, known, attrs.name, f"output {o}")
    return True


def same_types(attrs: NodeAttrs, in_types: list, out_types: list, inputs: list[int], outputs: list[int]) -> bool:
    """The listed inputs and outputs all share one dtype, filled in both directions."""
    known = next((t for t in [*(in_types[i] for i in inputs), *(out_types[o] for o in outputs)] if t), None)
    if known is None:
        return False
    for i in inputs:
        type_assign(in_types, i, known, attrs.name, f"input {i}")
    for o in outputs:
        type_assign(out_types, o, known, attrs.name, f"output {o}")
    return True
