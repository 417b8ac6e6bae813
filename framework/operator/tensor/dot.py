"""Matrix products: ``dot`` and ``batch_dot`` (MXNet 1.x's ``dot``).

``dot`` follows MXNet's N-D rule: the last axis of ``lhs`` is contracted with the first
axis of ``rhs`` (``transpose_a`` contracts the *first* axis of ``lhs`` instead, and
``transpose_b`` the *last* of ``rhs``): each operand is viewed as a matrix, and one matrix
product does the work. ``batch_dot`` multiplies matching matrices of two batches.

Both gradients are matrix products too: ``d lhs = g . rhs^T`` and ``d rhs = lhs^T . g``
(with the transposes the flags ask for), computed by one backward operator per product.
"""

from __future__ import annotations

import math
from typing import Any

from ..grad import elemwise_grad_use_in
from ..infer import (
    InferenceError,
    ShapeT,
    elemwise_type,
    shape_assign,
    shape_known,
)
from ..kernel import Req
from ..params import Param, ParamSet
from ..registry import register
from .common import merge_or_raise, put, register_backward


class DotParam(ParamSet):
    transpose_a = Param(bool, False, "Transpose lhs before the product (contract its first axis).")
    transpose_b = Param(bool, False, "Transpose rhs before the product (contract its last axis).")
    forward_stype = Param(
        str, None, "Storage type of the output (only dense is implemented).", choices=("default", "row_sparse", "csr")
    )


def _dot_plan(
    op_name: str, lshape: tuple[int, ...], rshape: tuple[int, ...], ta: bool, tb: bool
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, ...]]:
    """Matrix views of lhs and rhs (before transposition) and the output shape.

    ``lhs`` is viewed as (rows, last axis), or with ``ta`` as (first axis, rest) then
    transposed; ``rhs`` as (first axis, rest), or with ``tb`` as (rest, last axis) transposed.
    """
    if len(lshape) == 0 or len(rshape) == 0:
        raise InferenceError(f"{op_name}: inputs must have at least one dimension, got {lshape} X {rshape}")
    if len(lshape) == 1 and len(rshape) == 1:
        if ta or tb:
            raise InferenceError(f"{op_name}: cannot transpose vectors (lhs {lshape}, rhs {rshape})")
        if lshape[0] and rshape[0] and lshape[0] != rshape[0]:
            raise InferenceError(f"{op_name}: shape error: {lshape} X {rshape} (lengths differ)")
        return (1, lshape[0]), (rshape[0], 1), (1,)
    lmat = (lshape[0], math.prod(lshape[1:])) if ta else (math.prod(lshape[:-1]), lshape[-1])
    rmat = (math.prod(rshape[:-1]), rshape[-1]) if tb else (rshape[0], math.prod(rshape[1:]))
    lk, rk = lmat[0 if ta else 1], rmat[1 if tb else 0]
    if lk and rk and lk != rk:
        raise InferenceError(
            f"{op_name}: shape error: {lshape} X {rshape} with transpose_a={ta}, transpose_b={tb}: "
            f"contracted lengths {lk} and {rk} differ"
        )
    out: tuple[int, ...] = ()
    if len(lshape) > 1:
        out += lshape[1:] if ta else lshape[:-1]
    if len(rshape) > 1:
        out += rshape[:-1] if tb else rshape[1:]
    return lmat, rmat, out


def _dot_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    lshape, rshape = in_shapes
    if lshape is None or rshape is None:
        return False
    p = attrs.parsed
    _, _, out = _dot_plan(attrs.name, lshape, rshape, p.transpose_a, p.transpose_b)
    shape_assign(out_shapes, 0, out, attrs.name, "output")
    return shape_known(lshape) and shape_known(rshape)


def _dot_matrices(attrs: Any, lhs: Any, rhs: Any) -> tuple[Any, Any, tuple[int, ...]]:
    p = attrs.parsed
    lmat, rmat, out = _dot_plan(attrs.name, lhs.shape, rhs.shape, p.transpose_a, p.transpose_b)
    a, b = lhs.reshape(lmat), rhs.reshape(rmat)
    return (a.T if p.transpose_a else a), (b.T if p.transpose_b else b), out


def _dot_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    a, b, _ = _dot_matrices(attrs, inputs[0], inputs[1])
    put(outputs[0], req[0], (a @ b).reshape(outputs[0].shape))


def _dot_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # inputs: (out_grad, lhs, rhs); d(A @ B) = dA @ B + A @ dB in the matrix views
    ograd, lhs, rhs = inputs
    p = attrs.parsed
    a, b, _ = _dot_matrices(attrs, lhs, rhs)
    g = ograd.reshape(a.shape[0], b.shape[1])
    if req[0] is not Req.NULL:
        da = g @ b.T
        put(outputs[0], req[0], (da.T if p.transpose_a else da).reshape(lhs.shape))
    if req[1] is not Req.NULL:
        db = a.T @ g
        put(outputs[1], req[1], (db.T if p.transpose_b else db).reshape(rhs.shape))


def _batch_dot_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    lshape, rshape = in_shapes
    if lshape is None or rshape is None:
        return False
    p, name = attrs.parsed, attrs.name
    if len(lshape) < 3 or len(lshape) != len(rshape):
        raise InferenceError(f"{name}: batch_dot needs N-D x N-D inputs with the same N >= 3, got {lshape} X {rshape}")
    batch = merge_or_raise(name, lshape[:-2], rshape[:-2], "the leading batch dimensions")
    m, lk = (lshape[-1], lshape[-2]) if p.transpose_a else (lshape[-2], lshape[-1])
    rk, n = (rshape[-1], rshape[-2]) if p.transpose_b else (rshape[-2], rshape[-1])
    if lk and rk and lk != rk:
        raise InferenceError(
            f"{name}: shape error: {lshape} X {rshape} with transpose_a={p.transpose_a}, "
            f"transpose_b={p.transpose_b}: contracted lengths {lk} and {rk} differ"
        )
    shape_assign(in_shapes, 0, batch + lshape[-2:], name, "lhs")
    shape_assign(in_shapes, 1, batch + rshape[-2:], name, "rhs")
    shape_assign(out_shapes, 0, batch + (m, n), name, "output")
    return shape_known(in_shapes[0]) and shape_known(in_shapes[1])


def _batch_operands(attrs: Any, lhs: Any, rhs: Any) -> tuple[Any, Any]:
    p = attrs.parsed
    return (lhs.swapaxes(-1, -2) if p.transpose_a else lhs), (rhs.swapaxes(-1, -2) if p.transpose_b else rhs)


def _batch_dot_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    a, b = _batch_operands(attrs, inputs[0], inputs[1])
    put(outputs[0], req[0], op_ctx.xp.matmul(a, b))


def _batch_dot_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, p = op_ctx.xp, attrs.parsed
    g = inputs[0]
    a, b = _batch_operands(attrs, inputs[1], inputs[2])
    if req[0] is not Req.NULL:
        da = xp.matmul(g, b.swapaxes(-1, -2))
        put(outputs[0], req[0], da.swapaxes(-1, -2) if p.transpose_a else da)
    if req[1] is not Req.NULL:
        db = xp.matmul(a.swapaxes(-1, -2), g)
        put(outputs[1], req[1], db.swapaxes(-1, -2) if p.transpose_b else db)


for _name, _shape, _compute, _backward, _text in (
    (
        "dot",
        _dot_shape,
        _dot_compute,
        _dot_backward,
        "Dot product: contracts the last axis of lhs with the first axis of rhs (1-D x 1-D gives shape (1,)).",
    ),
    (
        "batch_dot",
        _batch_dot_shape,
        _batch_dot_compute,
        _batch_dot_backward,
        "Batched matrix product: (..., M, K) x (..., K, N) -> (..., M, N).",
    ),
):
    (
        register(_name)
        .describe(_text)
        .set_params(DotParam)
        .set_num_inputs(2)
        .set_input_names(["lhs", "rhs"])
        .set_infer_shape(_shape)
        .set_infer_type(elemwise_type)
        .set_compute(_compute)
        .set_gradient(elemwise_grad_use_in(f"_backward_{_name}"))
    )
    register_backward(f"_backward_{_name}", _backward, params=DotParam, num_inputs=3, num_outputs=2)
