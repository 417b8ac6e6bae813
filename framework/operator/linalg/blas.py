"""The BLAS-3 operators: ``gemm``, ``gemm2``, ``trmm``, ``trsm``, ``syrk``.

Each is one batched matrix product (``xp.matmul``) or triangular solve, and so is each
gradient. Two ideas recur:

* ``op(X)`` is ``X`` or its transpose (``transpose_a``/``transpose_b``/``transpose``); the
  gradient with respect to ``op(X)`` is computed first and transposed back when needed;
* a triangular operand is read through a mask (``lower`` picks the triangle), so the other
  triangle never influences the result and its gradient is zero, as with LAPACK.

``gemm``/``gemm2`` take the matrix rows from any axis (``axis``; the columns are always the
last axis): the row axis is swapped next to the last one, the product computed, and the
result swapped back.
"""

from __future__ import annotations

from typing import Any

from ..infer import InferenceError, ShapeT, shape_assign
from ..kernel import NULL, WRITE, assign
from ..node import NodeAttrs
from ..params import Param, ParamSet
from .common import (
    all_known,
    backward_from,
    check_matrix_rank,
    merge_batch,
    merge_dims,
    register_backward,
    register_linalg,
    transpose,
    triangle,
)


def _op(x: Any, flag: bool) -> Any:
    return transpose(x) if flag else x


# ============================================================================ gemm, gemm2
class Gemm2Param(ParamSet):
    transpose_a = Param(bool, False, "Multiply with the transpose of the first input (A).")
    transpose_b = Param(bool, False, "Multiply with the transpose of the second input (B).")
    alpha = Param(float, 1.0, "Scalar factor of A*B.")
    axis = Param(int, -2, "Axis of the matrix rows (the columns are the last axis).")


class GemmParam(Gemm2Param):
    beta = Param(float, 1.0, "Scalar factor of C.")


def _row_axis(attrs: NodeAttrs, ndim: int) -> int:
    """``axis`` normalised; it may be any axis but the last (which holds the columns)."""
    axis = attrs.parsed.axis
    normal = axis + ndim if axis < 0 else axis
    if not 0 <= normal < ndim - 1:
        raise InferenceError(
            f"{attrs.name}: parameter 'axis'={axis} is not a valid row axis for inputs with {ndim} dimensions "
            f"(allowed: {-ndim} to {-2} or 0 to {ndim - 2}; the last axis holds the columns)"
        )
    return normal


def _swap(shape: ShapeT, axis: int) -> ShapeT:
    """Exchange the row axis and the second-to-last axis (its own inverse)."""
    if shape is None:
        return None
    dims = list(shape)
    dims[axis], dims[-2] = dims[-2], dims[axis]
    return tuple(dims)


def _rows_cols(shape: ShapeT, transposed: bool) -> tuple[int, int]:
    rows_cols = tuple(shape[-2:]) if shape is not None else (0, 0)
    return rows_cols[::-1] if transposed else rows_cols


def _gemm_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """A: (.., m, k), B: (.., k, n), C and output: (.., m, n) in the rows-next-to-last view."""
    p, name = attrs.parsed, attrs.name
    names = ["A", "B", "C"][: len(in_shapes)]
    ranks = {len(s) for s in [*in_shapes, *out_shapes] if s is not None}
    if not ranks:
        return False
    if len(ranks) > 1:
        shown = ", ".join(f"{n} {s}" for n, s in zip([*names, "output"], [*in_shapes, *out_shapes], strict=True))
        raise InferenceError(f"{name}: inputs and output must have the same number of dimensions, got {shown}")
    ndim = ranks.pop()
    for what, shape in zip([*names, "output"], [*in_shapes, *out_shapes], strict=True):
        check_matrix_rank(name, shape, what)
    axis = _row_axis(attrs, ndim)
    a, b = _swap(in_shapes[0], axis), _swap(in_shapes[1], axis)
    mn = [_swap(s, axis) for s in [*in_shapes[2:], out_shapes[0]]]  # C (gemm only) and the output
    batch = merge_batch(name, [a, b, *mn], [2] * (2 + len(mn)), "A, B and the output")
    # (rows, columns) of op(A) and op(B): a transpose reverses the pair; 0 = unknown
    a_mk = _rows_cols(a, p.transpose_a)
    b_kn = _rows_cols(b, p.transpose_b)
    m = merge_dims(name, [a_mk[0], *(s[-2] for s in mn if s is not None)], f"row counts of op(A) and output {a}")
    k = merge_dims(name, [a_mk[1], b_kn[0]], f"inner dimensions of op(A) and op(B) (A {a}, B {b})")
    n = merge_dims(name, [b_kn[1], *(s[-1] for s in mn if s is not None)], f"column counts of op(B) and output {b}")
    batch = batch if batch is not None else (0,) * (ndim - 2)
    new_a = (*batch, k, m) if p.transpose_a else (*batch, m, k)
    new_b = (*batch, n, k) if p.transpose_b else (*batch, k, n)
    shape_assign(in_shapes, 0, _swap(new_a, axis), name, "A")
    shape_assign(in_shapes, 1, _swap(new_b, axis), name, "B")
    if len(in_shapes) == 3:
        shape_assign(in_shapes, 2, _swap((*batch, m, n), axis), name, "C")
    shape_assign(out_shapes, 0, _swap((*batch, m, n), axis), name, "output")
    return all_known(in_shapes, out_shapes)


def _rows_next_to_last(x: Any, axis: int) -> Any:
    return x if axis == x.ndim - 2 else x.swapaxes(axis, -2)


def _matmul_into(xp: Any, x: Any, y: Any, out: Any, req: Any, scale: float = 1.0, addend: Any = None) -> None:
    """``out (req)= scale * x y (+ addend)``; BLAS writes straight into ``out`` when it can."""
    if req is NULL:
        return
    if req is WRITE and addend is None and out.flags.c_contiguous and out.shape == (*x.shape[:-1], y.shape[-1]):
        xp.matmul(x, y, out=out)  # the common case: no temporary at all
        if scale != 1.0:
            out *= scale
        return
    value = xp.matmul(x, y)
    if scale != 1.0:
        value *= scale
    if addend is not None:
        value += addend
    assign(out, req, value)


def _product(attrs: NodeAttrs, xp: Any, a: Any, b: Any, out: Any, req: Any, addend: Any = None) -> None:
    """``out = alpha * op(a) op(b) (+ addend)`` in the rows-next-to-last view of every array."""
    p = attrs.parsed
    axis = _row_axis(attrs, a.ndim)
    op_a = _op(_rows_next_to_last(a, axis), p.transpose_a)
    op_b = _op(_rows_next_to_last(b, axis), p.transpose_b)
    _matmul_into(xp, op_a, op_b, _rows_next_to_last(out, axis), req, p.alpha, addend)


def _gemm_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    if req[0] is NULL:
        return
    c = inputs[2]
    axis = _row_axis(attrs, c.ndim)
    scaled_c = _rows_next_to_last(c, axis) * attrs.parsed.beta
    _product(attrs, op_ctx.xp, inputs[0], inputs[1], outputs[0], req[0], addend=scaled_c)


def _gemm2_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    if req[0] is not NULL:
        _product(attrs, op_ctx.xp, inputs[0], inputs[1], outputs[0], req[0])


def _product_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """Inputs (head gradient, A, B); writes dA and dB (and dC = beta * head for gemm)."""
    p, xp = attrs.parsed, op_ctx.xp
    grad, a, b = inputs[0], inputs[1], inputs[2]
    axis = _row_axis(attrs, a.ndim)
    g = _rows_next_to_last(grad, axis)
    op_a = _op(_rows_next_to_last(a, axis), p.transpose_a)
    op_b = _op(_rows_next_to_last(b, axis), p.transpose_b)
    # d op(A) = alpha * G op(B)^T and d op(B) = alpha * op(A)^T G, written in each input's layout
    d_a = _op(_rows_next_to_last(outputs[0], axis), p.transpose_a)
    d_b = _op(_rows_next_to_last(outputs[1], axis), p.transpose_b)
    _matmul_into(xp, g, transpose(op_b), d_a, req[0], p.alpha)
    _matmul_into(xp, transpose(op_a), g, d_b, req[1], p.alpha)
    if len(outputs) == 3 and req[2] is not NULL:
        assign(outputs[2], req[2], grad * p.beta)


register_linalg(
    "gemm",
    GemmParam,
    inputs=("A", "B", "C"),
    infer_shape=_gemm_shape,
    compute=_gemm_forward,
    inplace=[(2, 0)],  # C's memory becomes the output
    gradient=backward_from("gemm", use_inputs=(0, 1)),
    description="out = alpha * op(A) * op(B) + beta * C for each matrix of a batch (BLAS gemm).",
)
register_backward(
    "gemm",
    GemmParam,
    num_inputs=3,
    num_outputs=3,
    grad_shapes=lambda attrs, s: [s[1], s[2], s[0]],
    compute=_product_backward,
    inplace=[(2, 1)],  # dB may take B's memory: dA, which reads B, is written first
)
register_linalg(
    "gemm2",
    Gemm2Param,
    inputs=("A", "B"),
    infer_shape=_gemm_shape,
    compute=_gemm2_forward,
    gradient=backward_from("gemm2", use_inputs=(0, 1)),
    description="out = alpha * op(A) * op(B) for each matrix of a batch (gemm without C).",
)
register_backward(
    "gemm2",
    Gemm2Param,
    num_inputs=3,
    num_outputs=2,
    grad_shapes=lambda attrs, s: [s[1], s[2]],
    compute=_product_backward,
    inplace=[(2, 1)],
)


# ============================================================================ trmm, trsm
class TriangularParam(ParamSet):
    transpose = Param(bool, False, "Use the transpose of the triangular matrix.")
    rightside = Param(bool, False, "Put the triangular matrix on the right of B.")
    lower = Param(bool, True, "Whether A is lower triangular (else upper).")
    alpha = Param(float, 1.0, "Scalar factor of the result.")


def _triangular_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """A: (.., s, s) with s = m (left) or n (rightside); B and output: (.., m, n)."""
    name = attrs.name
    a, b, out = in_shapes[0], in_shapes[1], out_shapes[0]
    for what, shape in (("A", a), ("B", b), ("output", out)):
        check_matrix_rank(name, shape, what)
    ranks = {len(s) for s in (a, b, out) if s is not None}
    if len(ranks) > 1:
        raise InferenceError(f"{name}: A {a}, B {b} and output {out} must have the same number of dimensions")
    if not ranks:
        return False
    ndim = ranks.pop()
    batch = merge_batch(name, [a, b, out], [2, 2, 2], "A, B and the output")
    batch = batch if batch is not None else (0,) * (ndim - 2)
    side = -1 if attrs.parsed.rightside else -2
    rows_cols = [s[-2:] for s in (b, out) if s is not None]
    m = merge_dims(name, [rc[0] for rc in rows_cols], "row counts of B and output")
    n = merge_dims(name, [rc[1] for rc in rows_cols], "column counts of B and output")
    s = merge_dims(name, [*(a[-2:] if a is not None else ()), (m, n)[side]], f"sizes of A {a} and B {b}")
    shape_assign(in_shapes, 0, (*batch, s, s), name, "A")
    matched = (*batch, *((m, s) if attrs.parsed.rightside else (s, n)))
    shape_assign(in_shapes, 1, matched, name, "B")
    shape_assign(out_shapes, 0, matched, name, "output")
    return all_known(in_shapes, out_shapes)


def _trmm_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    p, xp = attrs.parsed, op_ctx.xp
    tri = _op(triangle(xp, inputs[0], p.lower), p.transpose)
    b = inputs[1]
    value = xp.matmul(b, tri) if p.rightside else xp.matmul(tri, b)
    assign(outputs[0], req[0], value * p.alpha if p.alpha != 1.0 else value)


def _trmm_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """Inputs (head gradient, A, B): d op(T) and dB are products; dA keeps A's triangle."""
    p, xp = attrs.parsed, op_ctx.xp
    g, b = inputs[0] * p.alpha, inputs[2]
    tri = _op(triangle(xp, inputs[1], p.lower), p.transpose)
    if p.rightside:  # out = alpha * B M
        d_m, d_b = xp.matmul(transpose(b), g), xp.matmul(g, transpose(tri))
    else:  # out = alpha * M B
        d_m, d_b = xp.matmul(g, transpose(b)), xp.matmul(transpose(tri), g)
    assign(outputs[0], req[0], triangle(xp, _op(d_m, p.transpose), p.lower))
    assign(outputs[1], req[1], d_b)


def _solve(xp: Any, m: Any, b: Any, rightside: bool) -> Any:
    """``M^-1 B`` (left) or ``B M^-1`` (right) for batches, by LU solves (``xp.linalg.solve``)."""
    if rightside:
        return transpose(xp.linalg.solve(transpose(m), transpose(b)))
    return xp.linalg.solve(m, b)


def _trsm_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    p, xp = attrs.parsed, op_ctx.xp
    tri = _op(triangle(xp, inputs[0], p.lower), p.transpose)
    value = _solve(xp, tri, inputs[1], p.rightside)
    assign(outputs[0], req[0], value * p.alpha if p.alpha != 1.0 else value)


def _trsm_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """Inputs (head gradient, A, output X). With Y = M^-T G (left) or G M^-T (right):
    dB = alpha * Y and d op(T) = -Y X^T (left) or -X^T Y (right)."""
    p, xp = attrs.parsed, op_ctx.xp
    g, x = inputs[0], inputs[2]
    tri = _op(triangle(xp, inputs[1], p.lower), p.transpose)
    y = _solve(xp, transpose(tri), g, p.rightside)
    d_m = -(xp.matmul(transpose(x), y) if p.rightside else xp.matmul(y, transpose(x)))
    assign(outputs[0], req[0], triangle(xp, _op(d_m, p.transpose), p.lower))
    assign(outputs[1], req[1], y * p.alpha)


register_linalg(
    "trmm",
    TriangularParam,
    inputs=("A", "B"),
    infer_shape=_triangular_shape,
    compute=_trmm_forward,
    inplace=[(1, 0)],
    gradient=backward_from("trmm", use_inputs=(0, 1)),
    description="out = alpha * op(A) * B (or B * op(A) with rightside) for triangular A.",
)
register_backward(
    "trmm",
    TriangularParam,
    num_inputs=3,
    num_outputs=2,
    grad_shapes=lambda attrs, s: [s[1], s[2]],
    compute=_trmm_backward,
    inplace=[(0, 1)],
)
register_linalg(
    "trsm",
    TriangularParam,
    inputs=("A", "B"),
    infer_shape=_triangular_shape,
    compute=_trsm_forward,
    inplace=[(1, 0)],
    gradient=backward_from("trsm", use_inputs=(0,), use_outputs=(0,)),
    description="Solves op(A) * X = alpha * B (or X * op(A) = alpha * B with rightside) for triangular A.",
)
register_backward(
    "trsm",
    TriangularParam,
    num_inputs=3,
    num_outputs=2,
    grad_shapes=lambda attrs, s: [s[1], s[2]],
    compute=_trsm_backward,
    inplace=[(0, 1), (1, 0)],
)


# ============================================================================ syrk
class SyrkParam(ParamSet):
    transpose = Param(bool, False, "Compute alpha * A^T * A instead of alpha * A * A^T.")
    alpha = Param(float, 1.0, "Scalar factor of the result.")


def _syrk_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """A: (.., m, k); output (.., m, m), or (.., k, k) with transpose."""
    name, a, out = attrs.name, in_shapes[0], out_shapes[0]
    check_matrix_rank(name, a)
    check_matrix_rank(name, out, "output")
    if a is None and out is None:
        return False
    if a is not None and out is not None and len(a) != len(out):
        raise InferenceError(f"{name}: A {a} and output {out} must have the same number of dimensions")
    batch = merge_batch(name, [a, out], [2, 2], "A and the output")
    kept = -1 if attrs.parsed.transpose else -2
    size = merge_dims(name, [a[kept] if a is not None else 0, *(out[-2:] if out is not None else ())], "sizes")
    other = (a[-1] if kept == -2 else a[-2]) if a is not None else 0
    shape_assign(in_shapes, 0, (*batch, *((other, size) if attrs.parsed.transpose else (size, other))), name, "A")
    shape_assign(out_shapes, 0, (*batch, size, size), name, "output")
    return all_known(in_shapes, out_shapes)


def _syrk_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    p, xp, a = attrs.parsed, op_ctx.xp, inputs[0]
    value = xp.matmul(transpose(a), a) if p.transpose else xp.matmul(a, transpose(a))
    assign(outputs[0], req[0], value * p.alpha if p.alpha != 1.0 else value)


def _syrk_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """dA = alpha (G + G^T) A, or alpha A (G + G^T) with transpose."""
    p, xp = attrs.parsed, op_ctx.xp
    g, a = inputs[0], inputs[1]
    sym = (g + transpose(g)) * p.alpha
    assign(outputs[0], req[0], xp.matmul(a, sym) if p.transpose else xp.matmul(sym, a))


register_linalg(
    "syrk",
    SyrkParam,
    infer_shape=_syrk_shape,
    compute=_syrk_forward,
    gradient=backward_from("syrk", use_inputs=(0,)),
    description="out = alpha * A * A^T (or alpha * A^T * A with transpose) for each matrix of a batch.",
)
register_backward(
    "syrk", SyrkParam, num_inputs=2, num_outputs=1, grad_shapes=lambda attrs, s: [s[1]], compute=_syrk_backward
)
