"""Ordering operators: ``topk``, ``sort``, ``argsort`` (MXNet 1.x's ``ordering_op``).

All three sort along ``axis`` (default -1; None sorts the flattened array). ``topk`` keeps
the first ``k`` of the sorted order (largest first unless ``is_ascend``) and returns, as
``ret_typ`` says, their ``indices`` (default), their ``value``, ``both`` (two outputs), or a
``mask`` of the input's shape with 1 at the selected positions. Indices are returned in
``dtype`` (float32 by default, as in MXNet).

Like MXNet, ``topk`` with ``ret_typ='value'`` and ``sort`` have a second, *hidden* output:
the indices of the sorted values. The backward pass needs them: the gradient of a sorted
value goes back to the position the value came from. Indices, masks and ``argsort`` are
not differentiable (zero gradient).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..grad import zero_grad
from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..kernel import Req
from ..node import Entry, Node
from ..params import DType, Param, ParamSet
from ..registry import register
from .common import backward_entries, grad_types_like_inputs, grads_like_inputs, normalize_axis, put

_INDEX_DTYPES = ("float16", "float32", "float64", "int32", "int64", "uint8")


class TopKParam(ParamSet):
    axis = Param(int, -1, "The axis to sort along; None sorts the flattened array.", optional=True)
    k = Param(int, 1, "How many elements to keep; k < 1 keeps them all.")
    ret_typ = Param(str, "indices", "What to return.", choices=("value", "indices", "mask", "both"))
    is_ascend = Param(bool, False, "Keep the smallest elements instead of the largest.")
    dtype = Param(DType, "float32", "The dtype of the returned indices.", choices=_INDEX_DTYPES)


class SortParam(ParamSet):
    axis = Param(int, -1, "The axis to sort along; None sorts the flattened array.", optional=True)
    is_ascend = Param(bool, True, "Sort in ascending order.")


class ArgSortParam(SortParam):
    dtype = Param(DType, "float32", "The dtype of the returned indices.", choices=_INDEX_DTYPES)


def _plan(attrs: Any, shape: tuple[int, ...]) -> tuple[tuple[int, ...], int, int]:
    """(shape worked on, axis, k): the flattened shape when axis is None; k resolved and checked."""
    p, name = attrs.parsed, attrs.name
    if p.axis is None:
        work, axis = (int(np.prod(shape)),), 0
    else:
        work, axis = tuple(shape), normalize_axis(name, p.axis, len(shape))
    length = work[axis]
    k = getattr(p, "k", 0)
    if k < 1:
        k = length
    elif length and k > length:
        raise InferenceError(f"{name}: k={k} must be at most the length {length} of the sorted axis (shape {shape})")
    return work, axis, k


def _argsort(xp: Any, x: Any, axis: int, ascending: bool) -> Any:
    """Stable argsort along ``axis`` (descending keeps equal elements in their original order)."""
    kwargs = {"kind": "stable"} if xp is np else {}
    if ascending:
        return xp.argsort(x, axis=axis, **kwargs)
    if x.dtype.kind in "fi":
        return xp.argsort(-x, axis=axis, **kwargs)
    return xp.flip(xp.argsort(x, axis=axis, **kwargs), axis=axis)


def _first_k(attrs: Any, xp: Any, data: Any, ascending: bool) -> tuple[Any, Any, int, int]:
    """(data viewed as worked on, the first k indices of the order, axis, k)."""
    work, axis, k = _plan(attrs, data.shape)
    x = data.reshape(work)
    order = _argsort(xp, x, axis, ascending)
    return x, xp.take(order, xp.arange(k), axis=axis), axis, k


def _scatter_along_axis(xp: Any, shape: tuple[int, ...], axis: int, idx: Any, values: Any, dtype: Any) -> Any:
    """Zeros of ``shape`` with ``values`` placed at ``idx`` along ``axis`` (idx unique per row)."""
    k, n = idx.shape[axis], shape[axis]
    rows_idx = xp.moveaxis(idx, axis, -1).reshape(-1, k)
    rows_val = xp.moveaxis(values, axis, -1).reshape(-1, k)
    out = xp.zeros((rows_idx.shape[0], n), dtype=dtype)
    out[xp.arange(rows_idx.shape[0])[:, None], rows_idx] = rows_val
    moved = tuple(d for i, d in enumerate(shape) if i != axis) + (n,)
    return xp.moveaxis(out.reshape(moved), -1, axis)


# ----------------------------------------------------------------------------- topk


def _topk_num_outputs(attrs: Any) -> int:
    return 1 if attrs.parsed.ret_typ in ("indices", "mask") else 2


def _topk_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape = in_shapes[0]
    if shape is None:
        return False
    if attrs.parsed.ret_typ == "mask":
        shape_assign(out_shapes, 0, shape, attrs.name, "output")
        return shape_known(shape)
    work, axis, k = _plan(attrs, shape)
    out = work[:axis] + (k,) + work[axis + 1 :]
    for i in range(len(out_shapes)):
        shape_assign(out_shapes, i, out, attrs.name, f"output {i}")
    return shape_known(shape)


def _topk_type(attrs: Any, in_types: list, out_types: list) -> bool:
    p, name = attrs.parsed, attrs.name
    if p.ret_typ == "indices":
        type_assign(out_types, 0, p.dtype, name, "output")
    else:
        type_assign(out_types, 0, in_types[0], name, "output 0")
        type_assign(in_types, 0, out_types[0], name, "data")
        if len(out_types) > 1:
            type_assign(out_types, 1, p.dtype, name, "output 1 (indices)")
    return in_types[0] is not None


def _topk_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, p = op_ctx.xp, attrs.parsed
    if p.ret_typ == "mask":
        work, axis, k = _plan(attrs, inputs[0].shape)
        order = _argsort(xp, inputs[0].reshape(work), axis, p.is_ascend)
        rank = _argsort(xp, order, axis, True)  # the inverse permutation: each element's place in the order
        put(outputs[0], req[0], (rank < k).reshape(outputs[0].shape))
        return
    x, idx, axis, _ = _first_k(attrs, xp, inputs[0], p.is_ascend)
    if p.ret_typ == "indices":
        put(outputs[0], req[0], idx.reshape(outputs[0].shape))
        return
    put(outputs[0], req[0], xp.take_along_axis(x, idx, axis=axis).reshape(outputs[0].shape))
    put(outputs[1], req[1], idx.reshape(outputs[1].shape))


def _sorted_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # inputs: (gradient of the values, the hidden indices output, data)
    if req[0] is Req.NULL:
        return
    xp = op_ctx.xp
    ograd, indices, data = inputs
    work, axis, k = _plan(attrs, data.shape)
    shape = work[:axis] + (k,) + work[axis + 1 :]
    idx = indices.astype(xp.int64).reshape(shape)
    grad = _scatter_along_axis(xp, work, axis, idx, ograd.reshape(shape), outputs[0].dtype)
    put(outputs[0], req[0], grad.reshape(data.shape))


def _sorted_gradient(backward_name: str, values_only: bool = False):
    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        if values_only and node.attrs.parsed.ret_typ in ("indices", "mask"):
            return zero_grad(node, out_grads)
        return backward_entries(node, backward_name, [out_grads[0], Entry(node, 1), node.inputs[0]])

    return gradient


(
    register("topk")
    .describe("The top k elements along an axis: their indices, values, both, or a mask (``ret_typ``).")
    .set_params(TopKParam)
    .set_num_inputs(1)
    .set_num_outputs(_topk_num_outputs)
    .set_num_visible_outputs(lambda attrs: 2 if attrs.parsed.ret_typ == "both" else 1)
    .set_input_names(["data"])
    .set_infer_shape(_topk_shape)
    .set_infer_type(_topk_type)
    .set_compute(_topk_compute)
    .set_gradient(_sorted_gradient("_backward_topk", values_only=True))
)
(
    register("_backward_topk")
    .set_params(TopKParam)
    .set_num_inputs(3)
    .set_infer_shape(grads_like_inputs(2))
    .set_infer_type(grad_types_like_inputs(2))
    .set_compute(_sorted_backward)
    .set_is_backward()
)


# ----------------------------------------------------------------------------- sort, argsort


def _sort_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape = in_shapes[0]
    if shape is None:
        return False
    work, _, _ = _plan(attrs, shape)
    for i in range(len(out_shapes)):
        shape_assign(out_shapes, i, work, attrs.name, f"output {i}")
    return shape_known(shape)


def _sort_type(attrs: Any, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, in_types[0], attrs.name, "output")
    type_assign(in_types, 0, out_types[0], attrs.name, "data")
    type_assign(out_types, 1, "int64", attrs.name, "output 1 (hidden indices)")
    return in_types[0] is not None


def _sort_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x, idx, axis, _ = _first_k(attrs, op_ctx.xp, inputs[0], attrs.parsed.is_ascend)
    put(outputs[0], req[0], op_ctx.xp.take_along_axis(x, idx, axis=axis))
    put(outputs[1], req[1], idx)


(
    register("sort")
    .describe("Sorts along an axis (ascending by default); the gradient follows each value back.")
    .set_params(SortParam)
    .set_num_inputs(1)
    .set_num_outputs(2)
    .set_num_visible_outputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_sort_shape)
    .set_infer_type(_sort_type)
    .set_compute(_sort_compute)
    .set_gradient(_sorted_gradient("_backward_sort"))
)
(
    register("_backward_sort")
    .set_params(SortParam)
    .set_num_inputs(3)
    .set_infer_shape(grads_like_inputs(2))
    .set_infer_type(grad_types_like_inputs(2))
    .set_compute(_sorted_backward)
    .set_is_backward()
)


def _argsort_type(attrs: Any, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, attrs.parsed.dtype, attrs.name, "output")
    return in_types[0] is not None


def _argsort_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    _, idx, _, _ = _first_k(attrs, op_ctx.xp, inputs[0], attrs.parsed.is_ascend)
    put(outputs[0], req[0], idx)


(
    register("argsort")
    .describe("The indices that sort the array along an axis, in ``dtype`` (float32 by default).")
    .set_params(ArgSortParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_sort_shape)
    .set_infer_type(_argsort_type)
    .set_compute(_argsort_compute)
    .set_gradient(zero_grad)
)
