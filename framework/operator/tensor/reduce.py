"""Reduction operators: ``sum``, ``mean``, ``prod``, ``max``, ``min``, ``nansum``, ``nanprod``,
``norm``, ``argmax``, ``argmin`` (MXNet 1.x's ``broadcast_reduce_op``).

A reduction collapses some axes of its input. MXNet describes *which* axes with three
parameters shared by the whole family:

* ``axis``: an int or a tuple of ints (negative values count from the end); None or ``()``
  means every axis;
* ``exclude``: reduce over every axis *except* those in ``axis``;
* ``keepdims``: keep the reduced axes with length 1 (so the result broadcasts against
  the input), instead of dropping them.

Reducing every axis without ``keepdims`` gives shape ``(1,)``: MXNet 1.x has no 0-d arrays.

Gradients all follow one pattern: reshape the output gradient to the ``keepdims`` shape
(putting the reduced axes back with length 1), broadcast it to the input shape, and
multiply by the local derivative: 1 for ``sum``, ``1/n`` for ``mean``, ``x == max`` for
``max``/``min`` (MXNet's choice: *every* element equal to the maximum gets the gradient),
the product of the *other* elements for ``prod``, ``x / ||x||`` for the 2-norm.
``argmax``/``argmin`` are not differentiable: their input gets a zero gradient.

The axis rules (:func:`reduce_axes`, :func:`reduced_shape`) are this family's own; the helpers
every family shares (``put``, ``normalize_axis``, ...) live in ``common.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..grad import zero_grad
from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..kernel import Req
from ..node import Entry, Node
from ..params import Param, ParamSet, Shape
from ..registry import alias, register
from .common import (
    backward_entries,
    normalize_axis,
    put,
    register_backward,
    same_type,
)


def reduce_axes(
    op_name: str, shape: Sequence[int], axis: Sequence[int] | None, exclude: bool = False
) -> tuple[int, ...]:
    """The sorted, non-negative axes a reduction collapses (MXNet's axis/exclude rules)."""
    ndim = len(shape)
    if axis is None or len(axis) == 0:
        return tuple(range(ndim))
    axes = []
    for a in axis:
        if not -ndim <= a < ndim:
            raise InferenceError(
                f"{op_name}: reduction axis {a} exceeds the input dimensions {tuple(shape)} (axis={tuple(axis)})"
            )
        axes.append(a + ndim if a < 0 else a)
    if len(set(axes)) != len(axes):
        raise InferenceError(f"{op_name}: reduction axes have duplicates: axis={tuple(axis)}")
    if exclude:
        axes = [a for a in range(ndim) if a not in axes]
    return tuple(sorted(axes))


def reduced_shape(shape: Sequence[int], axes: Sequence[int], keepdims: bool) -> tuple[int, ...]:
    """The output shape of reducing ``axes`` of ``shape`` (``(1,)`` when nothing is left)."""
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    kept = tuple(d for i, d in enumerate(shape) if i not in axes)
    return kept if kept else (1,)


def keepdims_shape(shape: Sequence[int], axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _accumulator(xp: Any, dtype: Any) -> Any:
    """The dtype to accumulate in: float16 sums/products run in float32, as MXNet does."""
    return xp.float32 if np.dtype(dtype) == np.float16 else None


# ----------------------------------------------------------------------------- sum, mean, ...


class ReduceAxesParam(ParamSet):
    axis = Param(
        Shape,
        None,
        "The axis or axes to reduce (negative counts from the end). None or () reduces every axis.",
    )
    keepdims = Param(bool, False, "Keep the reduced axes in the result, with length 1.")
    exclude = Param(bool, False, "Reduce over every axis except those in `axis`.")


def _reduce_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape = in_shapes[0]
    if shape is None:
        return False
    p = attrs.parsed
    axes = reduce_axes(attrs.name, shape, p.axis, getattr(p, "exclude", False))
    shape_assign(out_shapes, 0, reduced_shape(shape, axes, p.keepdims), attrs.name, "output")
    return shape_known(shape) and shape_known(out_shapes[0])


def _make_reduce(fn_name: str) -> Callable[..., None]:
    """Forward compute calling ``xp.<fn_name>`` over the reduced axes."""

    def compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
        xp, x, p = op_ctx.xp, inputs[0], attrs.parsed
        axes = reduce_axes(attrs.name, x.shape, p.axis, getattr(p, "exclude", False))
        fn = getattr(xp, fn_name)
        if fn_name in ("max", "min"):
            value = fn(x, axis=axes)
        else:
            value = fn(x, axis=axes, dtype=_accumulator(xp, x.dtype))
        put(outputs[0], req[0], xp.asarray(value).reshape(outputs[0].shape))

    return compute


def _prod_of_others(xp: Any, x: Any, axes: tuple[int, ...]) -> Any:
    """For each element, the product of the other elements of its reduction group.

    Computed with exclusive prefix and suffix products (no division), so zeros in the input
    give the right gradient instead of 0/0.
    """
    kept = [i for i in range(x.ndim) if i not in axes]
    moved = xp.transpose(x, kept + list(axes))
    rows = moved.reshape(-1, math.prod(x.shape[a] for a in axes))
    ones = xp.ones((rows.shape[0], 1), dtype=rows.dtype)
    before = xp.concatenate([ones, xp.cumprod(rows, axis=1)[:, :-1]], axis=1)
    after = xp.concatenate([xp.cumprod(rows[:, ::-1], axis=1)[:, -2::-1], ones], axis=1)
    others = (before * after).reshape(moved.shape)
    return xp.transpose(others, [int(i) for i in np.argsort(kept + list(axes))])


def _reduce_backward(kind: str) -> Callable[..., None]:
    """Backward compute: inputs (out_grad, data[, out]); output the gradient of data."""

    def compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
        if req[0] is Req.NULL:
            return
        xp, p = op_ctx.xp, attrs.parsed
        ograd, x = inputs[0], inputs[1]
        axes = reduce_axes(attrs.name, x.shape, p.axis, getattr(p, "exclude", False))
        kd = keepdims_shape(x.shape, axes)
        work = xp.float32 if x.dtype == np.float16 else x.dtype
        g = ograd.reshape(kd).astype(work)
        if kind == "sum":
            grad = xp.broadcast_to(g, x.shape)
        elif kind == "mean":
            grad = xp.broadcast_to(g / max(1, math.prod(x.shape[a] for a in axes)), x.shape)
        elif kind == "nansum":
            grad = g * ~xp.isnan(x)
        elif kind == "prod":
            grad = g * _prod_of_others(xp, x.astype(work), axes)
        elif kind == "nanprod":
            nan = xp.isnan(x)
            grad = g * _prod_of_others(xp, xp.where(nan, 1, x).astype(work), axes) * ~nan
        else:  # max / min: every element equal to the extreme gets the gradient
            grad = g * (x == inputs[2].reshape(kd))
        put(outputs[0], req[0], grad)

    return compute


_REDUCERS = (
    # name, xp function, backward kind, needs the forward output, aliases
    ("sum", "sum", "sum", False, ("sum_axis",)),
    ("mean", "mean", "mean", False, ()),
    ("prod", "prod", "prod", False, ()),
    ("nansum", "nansum", "nansum", False, ()),
    ("nanprod", "nanprod", "nanprod", False, ()),
    ("max", "max", "max", True, ("max_axis",)),
    ("min", "min", "min", True, ("min_axis",)),
)


def _reduce_gradient(backward_name: str, use_out: bool) -> Callable[..., list[Entry]]:
    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        inputs = [out_grads[0], node.inputs[0]] + ([Entry(node, 0)] if use_out else [])
        return backward_entries(node, backward_name, inputs)

    return gradient


for _name, _fn, _kind, _use_out, _aliases in _REDUCERS:
    (
        register(_name)
        .describe(
            f"Computes the {_name} of array elements over the given axes "
            "(``axis``, ``keepdims``, ``exclude`` as in MXNet)."
        )
        .set_params(ReduceAxesParam)
        .set_num_inputs(1)
        .set_input_names(["data"])
        .set_infer_shape(_reduce_shape)
        .set_infer_type(same_type)
        .set_compute(_make_reduce(_fn))
        .set_gradient(_reduce_gradient(f"_backward_{_name}", _use_out))
    )
    for _alias in _aliases:
        alias(_alias, _name)
    register_backward(
        f"_backward_{_name}", _reduce_backward(_kind), params=ReduceAxesParam, num_inputs=3 if _use_out else 2
    )


# ----------------------------------------------------------------------------- norm


class NormParam(ParamSet):
    ord = Param(int, 2, "Order of the norm: 1 (sum of absolute values) or 2 (Euclidean).")
    axis = Param(Shape, None, "The axis or axes to compute the norm over; None means all of them.")
    out_dtype = Param(
        str,
        None,
        "The dtype of the output (default: the input's).",
        choices=("float16", "float32", "float64", "int32", "int64", "int8"),
    )
    keepdims = Param(bool, False, "Keep the reduced axes in the result, with length 1.")


def _check_ord(attrs: Any) -> None:
    if attrs.parsed.ord not in (1, 2):
        raise InferenceError(f"{attrs.name}: norm only supports ord=1 and ord=2, got ord={attrs.parsed.ord}")


def _norm_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    _check_ord(attrs)
    return _reduce_shape(attrs, in_shapes, out_shapes)


def _norm_type(attrs: Any, in_types: list, out_types: list) -> bool:
    out_dtype = attrs.parsed.out_dtype
    if out_dtype is None:
        return same_type(attrs, in_types, out_types)
    type_assign(out_types, 0, out_dtype, attrs.name, "output")
    return in_types[0] is not None


def _norm_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    _check_ord(attrs)
    xp, x, p = op_ctx.xp, inputs[0], attrs.parsed
    axes = reduce_axes(attrs.name, x.shape, p.axis)
    work = x.astype(xp.float32) if x.dtype == np.float16 else x
    if p.ord == 1:
        value = xp.sum(xp.abs(work), axis=axes)
    else:
        value = xp.sqrt(xp.sum(work * work, axis=axes))
    put(outputs[0], req[0], xp.asarray(value).reshape(outputs[0].shape))


def _norm_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # inputs: (out_grad, data, out)
    if req[0] is Req.NULL:
        return
    xp, p = op_ctx.xp, attrs.parsed
    ograd, x, out = inputs
    axes = reduce_axes(attrs.name, x.shape, p.axis)
    kd = keepdims_shape(x.shape, axes)
    work = xp.float32 if x.dtype == np.float16 else x.dtype
    g = ograd.reshape(kd).astype(work)
    if p.ord == 1:
        grad = g * xp.sign(x).astype(work)
    else:
        norm = out.reshape(kd).astype(work)
        safe = xp.where(norm == 0, 1, norm)
        grad = xp.where(norm == 0, 0, g * x.astype(work) / safe)
    put(outputs[0], req[0], grad)


(
    register("norm")
    .describe("The L1 or L2 norm of the elements over the given axes (all of them by default).")
    .set_params(NormParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_norm_shape)
    .set_infer_type(_norm_type)
    .set_compute(_norm_compute)
    .set_gradient(
        lambda node, out_grads: backward_entries(node, "_backward_norm", [out_grads[0], node.inputs[0], Entry(node, 0)])
    )
)
register_backward("_backward_norm", _norm_backward, params=NormParam, num_inputs=3)


# ----------------------------------------------------------------------------- argmax, argmin


class ReduceAxisParam(ParamSet):
    axis = Param(int, None, "The axis to reduce; None flattens the input first.")
    keepdims = Param(bool, False, "Keep the reduced axis in the result, with length 1.")


def _arg_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape = in_shapes[0]
    if shape is None:
        return False
    p = attrs.parsed
    if p.axis is None:
        out = tuple(1 for _ in shape) if p.keepdims else (1,)
    else:
        axis = normalize_axis(attrs.name, p.axis, len(shape))
        out = reduced_shape(shape, (axis,), p.keepdims)
    shape_assign(out_shapes, 0, out, attrs.name, "output")
    return shape_known(shape)


def _make_arg(fn_name: str) -> Callable[..., None]:
    def compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
        xp, x, p = op_ctx.xp, inputs[0], attrs.parsed
        fn = getattr(xp, fn_name)
        value = fn(x.reshape(-1)) if p.axis is None else fn(x, axis=normalize_axis(attrs.name, p.axis, x.ndim))
        # MXNet returns the index in the input's dtype (float32 for float32 data)
        put(outputs[0], req[0], xp.asarray(value).reshape(outputs[0].shape))

    return compute


for _name in ("argmax", "argmin"):
    (
        register(_name)
        .describe(
            f"Indices of the {'maximum' if _name == 'argmax' else 'minimum'} values along an axis, "
            "in the input's dtype (MXNet returns float indices for float data)."
        )
        .set_params(ReduceAxisParam)
        .set_num_inputs(1)
        .set_input_names(["data"])
        .set_infer_shape(_arg_shape)
        .set_infer_type(same_type)
        .set_compute(_make_arg(_name))
        .set_gradient(zero_grad)
    )


def _argmax_channel_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    put(outputs[0], req[0], op_ctx.xp.argmax(inputs[0], axis=-1).reshape(outputs[0].shape))


def _argmax_channel_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape = in_shapes[0]
    if shape is None:
        return False
    if len(shape) < 1:
        raise InferenceError(f"{attrs.name}: needs an input with at least one dimension, got {shape}")
    shape_assign(out_shapes, 0, shape[:-1] if len(shape) > 1 else (1,), attrs.name, "output")
    return shape_known(shape)


(
    register("argmax_channel")
    .describe("Indices of the maximum values along the last axis (``argmax(axis=-1)``).")
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_argmax_channel_shape)
    .set_infer_type(same_type)
    .set_compute(_argmax_channel_compute)
    .set_gradient(zero_grad)
)
