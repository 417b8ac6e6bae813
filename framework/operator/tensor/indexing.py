"""Indexing operators: ``take``, ``pick``, ``one_hot``, ``gather_nd``, ``scatter_nd``
(MXNet 1.x's ``indexing_op``).

Indices arrive as arrays, usually float32 (MXNet's default dtype), and are truncated to
integers. What happens to an index outside ``[0, n)`` is the ``mode`` parameter:
``clip`` clamps it to the nearest valid index, ``wrap`` takes it modulo ``n`` (so -1 is the
last element), ``raise`` (``take`` only) reports an error.

Gathering is differentiable with respect to the *data*: each gathered element sends its
gradient back to the position it came from, and an element gathered twice receives the
sum (a scatter-add). Indices are not differentiable: they get a zero gradient.
"""

from __future__ import annotations

import math
from typing import Any

from ...base import MXLabError
from ..grad import elemwise_grad_use_in, zero_grad
from ..infer import InferenceError, ShapeT, merge_shapes, shape_assign, shape_known, type_assign
from ..kernel import Req
from ..node import Entry, Node
from ..params import REQUIRED, DType, Param, ParamSet, Shape
from ..registry import register
from .common import (
    forward_node,
    normalize_axis,
    put,
    register_backward,
)


def _data_type(attrs: Any, in_types: list, out_types: list) -> bool:
    """Output 0 has the dtype of input 0 (the data); the index input may have any dtype."""
    type_assign(out_types, 0, in_types[0], attrs.name, "output")
    type_assign(in_types, 0, out_types[0], attrs.name, "data")
    return all(t is not None for t in in_types)


def _as_index(xp: Any, indices: Any, length: int, mode: str, op_name: str) -> Any:
    """Integer indices in ``[0, length)`` following ``mode`` (indices are truncated first)."""
    idx = indices.astype(xp.int64)
    if mode == "clip":
        return xp.clip(idx, 0, length - 1)
    if mode == "wrap":
        return xp.mod(idx, length)
    if bool(((idx < 0) | (idx >= length)).any()):
        raise MXLabError(f"{op_name}: indices out of bound for an axis of length {length} (mode='raise')")
    return idx


def _zero_index_grad(outputs: list, req: list, which: int = 1) -> None:
    """Indices are not differentiable: their gradient is zero."""
    put(outputs[which], req[which], 0)


# ----------------------------------------------------------------------------- take


class TakeParam(ParamSet):
    axis = Param(int, 0, "The axis of the data to take elements from.")
    mode = Param(str, "clip", "What to do with out-of-range indices.", choices=("raise", "wrap", "clip"))


def _take_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    data, indices = in_shapes
    name = attrs.name
    if data is None:
        return False
    if len(data) == 0:
        raise InferenceError(f"{name}: data must have at least one dimension")
    axis = normalize_axis(name, attrs.parsed.axis, len(data))
    out = out_shapes[0]
    if indices is None and out is not None:  # the indices' shape sits in the middle of the output's
        k = len(out) - len(data) + 1
        if k < 0:
            raise InferenceError(f"{name}: output shape {out} is too short for data shape {data}")
        shape_assign(in_shapes, 1, out[axis : axis + k], name, "indices")
        indices = in_shapes[1]
    if indices is None:
        return False
    shape_assign(out_shapes, 0, data[:axis] + tuple(indices) + data[axis + 1 :], name, "output")
    return shape_known(data) and shape_known(indices)


def _take_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, p = op_ctx.xp, attrs.parsed
    data, indices = inputs
    axis = normalize_axis(attrs.name, p.axis, data.ndim)
    idx = _as_index(xp, indices, data.shape[axis], p.mode, attrs.name)
    put(outputs[0], req[0], xp.take(data, idx, axis=axis))


def _take_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # inputs: (out_grad, data, indices); scatter-add the gradient rows back to where they came from
    xp, p = op_ctx.xp, attrs.parsed
    ograd, data, indices = inputs
    if req[0] is not Req.NULL:
        axis = normalize_axis(attrs.name, p.axis, data.ndim)
        length = data.shape[axis]
        idx = _as_index(xp, indices, length, p.mode, attrs.name).reshape(-1)
        pre, post = math.prod(data.shape[:axis]), math.prod(data.shape[axis + 1 :])
        acc = xp.zeros((pre, length, post), dtype=ograd.dtype)
        xp.add.at(acc, (slice(None), idx, slice(None)), ograd.reshape(pre, idx.size, post))
        put(outputs[0], req[0], acc.reshape(data.shape))
    _zero_index_grad(outputs, req)


(
    register("take")
    .describe("Takes elements of ``a`` along ``axis`` at ``indices``: out shape a[:axis] + indices + a[axis+1:].")
    .set_params(TakeParam)
    .set_num_inputs(2)
    .set_input_names(["a", "indices"])
    .set_infer_shape(_take_shape)
    .set_infer_type(_data_type)
    .set_compute(_take_compute)
    .set_gradient(elemwise_grad_use_in("_backward_take"))
)
register_backward("_backward_take", _take_backward, params=TakeParam, num_inputs=3, num_outputs=2)


# ----------------------------------------------------------------------------- pick


class PickParam(ParamSet):
    axis = Param(int, -1, "The axis to pick along (None is not supported, as in MXNet).", optional=True)
    keepdims = Param(bool, False, "Keep the picked axis in the result, with length 1.")
    mode = Param(str, "clip", "What to do with out-of-range indices.", choices=("clip", "wrap"))


def _pick_axis(attrs: Any, ndim: int) -> int:
    if attrs.parsed.axis is None:
        raise InferenceError(f"{attrs.name}: axis=None is not supported by pick; specify an axis")
    return normalize_axis(attrs.name, attrs.parsed.axis, ndim)


def _pick_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    data, index, name = in_shapes[0], in_shapes[1], attrs.name
    if data is None:
        return False
    axis = _pick_axis(attrs, len(data))
    dropped = data[:axis] + data[axis + 1 :] or (1,)
    kept = data[:axis] + (1,) + data[axis + 1 :]
    shape_assign(out_shapes, 0, kept if attrs.parsed.keepdims else dropped, name, "output")
    if index is None:
        shape_assign(in_shapes, 1, dropped, name, "index")
    else:  # like MXNet, accept the index with or without the picked axis
        for candidate in (dropped, kept):
            try:
                in_shapes[1] = merge_shapes(index, candidate)
                break
            except ValueError:
                continue
        else:
            raise InferenceError(
                f"{name}: index shape {index} does not match data shape {data} without axis "
                f"{attrs.parsed.axis} (expected {dropped})"
            )
    return shape_known(data) and shape_known(in_shapes[1])


def _pick_index(attrs: Any, xp: Any, data: Any, index: Any) -> tuple[int, Any]:
    """The picked axis and the integer index with that axis kept (length 1)."""
    axis = _pick_axis(attrs, data.ndim)
    idx = _as_index(xp, index, data.shape[axis], attrs.parsed.mode, attrs.name)
    return axis, idx.reshape(data.shape[:axis] + (1,) + data.shape[axis + 1 :])


def _pick_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp = op_ctx.xp
    axis, idx = _pick_index(attrs, xp, inputs[0], inputs[1])
    put(outputs[0], req[0], xp.take_along_axis(inputs[0], idx, axis=axis).reshape(outputs[0].shape))


def _pick_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # inputs: (out_grad, data, index); each output element came from exactly one position
    xp = op_ctx.xp
    ograd, data, index = inputs
    if req[0] is not Req.NULL:
        axis, idx = _pick_index(attrs, xp, data, index)
        positions = xp.arange(data.shape[axis]).reshape((-1,) + (1,) * (data.ndim - axis - 1))
        put(outputs[0], req[0], xp.where(positions == idx, ograd.reshape(idx.shape), 0))
    _zero_index_grad(outputs, req)


(
    register("pick")
    .describe("Picks one element per position along ``axis``, at the given index.")
    .set_params(PickParam)
    .set_num_inputs(2)
    .set_input_names(["data", "index"])
    .set_infer_shape(_pick_shape)
    .set_infer_type(_data_type)
    .set_compute(_pick_compute)
    .set_gradient(elemwise_grad_use_in("_backward_pick"))
)
register_backward("_backward_pick", _pick_backward, params=PickParam, num_inputs=3, num_outputs=2)


# ----------------------------------------------------------------------------- one_hot


class OneHotParam(ParamSet):
    depth = Param(int, REQUIRED, "Length of the one-hot dimension.", low=1)
    on_value = Param(float, 1.0, "Value at the index.")
    off_value = Param(float, 0.0, "Value everywhere else.")
    dtype = Param(DType, "float32", "The dtype of the output.")


def _one_hot_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    depth, name = attrs.parsed.depth, attrs.name
    if in_shapes[0] is not None:
        shape_assign(out_shapes, 0, tuple(in_shapes[0]) + (depth,), name, "output")
    elif out_shapes[0] is not None:
        if out_shapes[0][-1] not in (0, depth):
            raise InferenceError(f"{name}: output shape {out_shapes[0]} must end with depth={depth}")
        shape_assign(in_shapes, 0, out_shapes[0][:-1], name, "indices")
    return shape_known(in_shapes[0])


def _one_hot_type(attrs: Any, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, attrs.parsed.dtype, attrs.name, "output")
    return in_types[0] is not None


def _one_hot_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, p = op_ctx.xp, attrs.parsed
    hit = inputs[0].astype(xp.int64)[..., None] == xp.arange(p.depth)  # out-of-range indices hit nothing
    put(outputs[0], req[0], xp.where(hit, p.on_value, p.off_value))


(
    register("one_hot")
    .describe("One-hot encoding: out[..., i] = on_value where i == indices[...], off_value elsewhere.")
    .set_params(OneHotParam)
    .set_num_inputs(1)
    .set_input_names(["indices"])
    .set_infer_shape(_one_hot_shape)
    .set_infer_type(_one_hot_type)
    .set_compute(_one_hot_compute)
    .set_gradient(zero_grad)
)


# ----------------------------------------------------------------------------- gather_nd, scatter_nd


def _nd_index_shape(name: str, indices: tuple[int, ...], ndim: int) -> int:
    """The number of leading data axes an (M, Y...) index addresses (M), checked."""
    if len(indices) < 2:
        raise InferenceError(f"{name}: indices must have at least 2 dimensions (M, ...), got shape {indices}")
    m = indices[0]
    if m and m > ndim:
        raise InferenceError(f"{name}: indices address {m} axes but the data has only {ndim}")
    return m


def _gather_nd_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    data, indices = in_shapes
    if data is None or indices is None:
        return False
    m = _nd_index_shape(attrs.name, indices, len(data))
    if m == 0:
        return False
    out = tuple(indices[1:]) + tuple(data[m:])
    shape_assign(out_shapes, 0, out if out else (1,), attrs.name, "output")
    return shape_known(data) and shape_known(indices)


def _gather_nd_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    data, indices = inputs
    key = tuple(indices.astype(op_ctx.xp.int64))  # one index array per addressed axis
    put(outputs[0], req[0], data[key].reshape(outputs[0].shape))


def _gather_nd_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # inputs: (out_grad, data, indices); repeated positions accumulate
    xp = op_ctx.xp
    ograd, data, indices = inputs
    if req[0] is not Req.NULL:
        key = tuple(indices.astype(xp.int64))
        acc = xp.zeros(data.shape, dtype=ograd.dtype)
        xp.add.at(acc, key, ograd.reshape(indices.shape[1:] + data.shape[indices.shape[0] :]))
        put(outputs[0], req[0], acc)
    _zero_index_grad(outputs, req)


(
    register("gather_nd")
    .describe("Gathers slices of data at N-D positions: indices (M, Y...) -> output Y + data.shape[M:].")
    .set_num_inputs(2)
    .set_input_names(["data", "indices"])
    .set_infer_shape(_gather_nd_shape)
    .set_infer_type(_data_type)
    .set_compute(_gather_nd_compute)
    .set_gradient(elemwise_grad_use_in("_backward_gather_nd"))
)
register_backward("_backward_gather_nd", _gather_nd_backward, num_inputs=3, num_outputs=2)


class ScatterNDParam(ParamSet):
    shape = Param(Shape, REQUIRED, "Shape of the output.")


def _scatter_nd_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape, name = tuple(attrs.parsed.shape), attrs.name
    shape_assign(out_shapes, 0, shape, name, "output")
    indices = in_shapes[1]
    if indices is not None:
        m = _nd_index_shape(name, indices, len(shape))
        if m:
            expected = tuple(indices[1:]) + shape[m:]
            shape_assign(in_shapes, 0, expected if expected else (1,), name, "data")
    return shape_known(in_shapes[0]) and shape_known(in_shapes[1])


def _scatter_nd_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp = op_ctx.xp
    data, indices = inputs
    result = xp.zeros(outputs[0].shape, dtype=outputs[0].dtype)
    key = tuple(indices.astype(xp.int64))
    result[key] = data.reshape(result[key].shape)  # duplicates: one of the values wins, as in MXNet
    put(outputs[0], req[0], result)


def _scatter_nd_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    data_grad = forward_node(node, "gather_nd", {}, [out_grads[0], node.inputs[1]])
    return [data_grad, zero_grad(node, out_grads)[1]]


(
    register("scatter_nd")
    .describe("Scatters data into zeros of ``shape`` at N-D positions (the inverse of gather_nd).")
    .set_params(ScatterNDParam)
    .set_num_inputs(2)
    .set_input_names(["data", "indices"])
    .set_infer_shape(_scatter_nd_shape)
    .set_infer_type(_data_type)
    .set_compute(_scatter_nd_compute)
    .set_gradient(_scatter_nd_gradient)
)
