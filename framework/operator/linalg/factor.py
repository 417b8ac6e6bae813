"""Factorisations and what is built on them: ``potrf``, ``potri``, ``gelqf``, ``syevd``,
``inverse``, ``det``, ``slogdet``, ``sumlogdiag``.

Symmetric inputs are read from their *lower* triangle only, as LAPACK's ``potrf``/``syevd``
do in MXNet: the upper triangle is rebuilt from the lower one before NumPy/CuPy factorise.
The gradients are the matrix-calculus results MXNet uses (all vectorised over the batch):

* ``potrf`` (``A = L L^T``): ``dA = 1/2 L^-T copyLTU(L^T dL) L^-1``, where ``copyLTU`` mirrors
  the lower triangle into the upper one: the symmetric gradient;
* ``gelqf`` (``A = L Q``): ``dA = L^-T (dQ + copyLTU(M) Q)`` with ``M = L^T dL - dQ Q^T``;
* ``syevd`` (``U A = diag(w) U``): ``dA = U^T (diag(dw) + F * (U dU^T)) U``, symmetrised, with
  ``F[i, j] = 1 / (w[j] - w[i])`` off the diagonal: defined only for distinct eigenvalues;
* ``det``/``slogdet`` through the inverse: ``d det = det * A^-T``, ``d logdet = A^-T``. The
  forward pass keeps the LU factors and pivots as hidden outputs (as MXNet does), so the
  backward pass solves with them instead of factorising A again.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import backend
from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT, merge_shapes, shape_assign
from ..kernel import assign
from ..node import Entry, Node, NodeAttrs
from ..params import NoParams
from .common import (
    all_known,
    backward_from,
    check_matrix_rank,
    check_square,
    diag_matrix,
    diagonal,
    merge_batch,
    merge_dims,
    register_backward,
    register_linalg,
    scalar_shape,
    transpose,
    triangle,
)


# ----------------------------------------------------------------------------- shapes
def _square_family_shape(
    attrs: NodeAttrs,
    in_shapes: list[ShapeT],
    out_shapes: list[ShapeT],
    full: tuple[int, ...] = (),
    vectors: tuple[int, ...] = (),
    scalars: tuple[int, ...] = (),
) -> bool:
    """A: (.., n, n); outputs in ``full`` are shaped like A, ``vectors`` (.., n), ``scalars``
    one value per matrix (the batch shape, ``(1,)`` for a single matrix)."""
    name = attrs.name
    a = in_shapes[0]
    for i in full:
        try:
            a = merge_shapes(a, out_shapes[i])
        except ValueError:
            raise InferenceError(f"{name}: output {i} must be shaped like A, got {out_shapes[i]} and A {a}") from None
    for i in vectors:
        v = out_shapes[i]
        if a is None and v is not None:
            a = (*v, v[-1]) if v else None
    check_square(name, a)
    if a is None:
        return False
    batch = merge_batch(name, [a, *(out_shapes[i] for i in vectors)], [2] + [1] * len(vectors), "A and outputs")
    n = merge_dims(name, [a[-1], a[-2], *(out_shapes[i][-1] for i in vectors if out_shapes[i] is not None)], "sizes")
    for i in scalars:
        out = out_shapes[i]
        if out is not None and len(a) > 2:
            batch = merge_batch(name, [batch, out], [0, 0], "A and the per-matrix output")
    shape_assign(in_shapes, 0, (*batch, n, n), name, "A")
    for i in full:
        shape_assign(out_shapes, i, (*batch, n, n), name, f"output {i}")
    for i in vectors:
        shape_assign(out_shapes, i, (*batch, n), name, f"output {i}")
    for i in scalars:
        shape_assign(out_shapes, i, scalar_shape(batch), name, f"output {i}")
    return all_known(in_shapes, out_shapes)


def _same_square_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    return _square_family_shape(attrs, in_shapes, out_shapes, full=(0,))


def _symmetric_from_lower(xp: Any, a: Any) -> Any:
    """The symmetric matrices whose lower triangle is that of ``a`` (the upper one is ignored)."""
    low = triangle(xp, a)
    return low + transpose(xp.tril(low, -1))


def _copy_lower_to_upper(xp: Any, m: Any) -> Any:
    """MXNet's ``copyLTU``: keep the lower triangle and diagonal, mirror it into the upper."""
    return xp.tril(m) + transpose(xp.tril(m, -1))


def _inverse(xp: Any, a: Any) -> Any:
    return xp.linalg.inv(a)


# ============================================================================ potrf
def _potrf_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    xp = op_ctx.xp
    assign(outputs[0], req[0], xp.linalg.cholesky(_symmetric_from_lower(xp, inputs[0])))


def _potrf_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """Inputs (dL, L): dA = 1/2 L^-T copyLTU(L^T dL) L^-1."""
    xp = op_ctx.xp
    d_l, low = inputs[0], inputs[1]
    inv = _inverse(xp, low)
    inner = _copy_lower_to_upper(xp, xp.matmul(transpose(low), d_l))
    assign(outputs[0], req[0], 0.5 * xp.matmul(xp.matmul(transpose(inv), inner), inv))


register_linalg(
    "potrf",
    infer_shape=_same_square_shape,
    compute=_potrf_forward,
    inplace=[(0, 0)],
    gradient=backward_from("potrf", use_outputs=(0,)),
    description="Cholesky factor L (lower triangular, A = L L^T) of each symmetric positive-definite matrix.",
)
register_backward(
    "potrf",
    NoParams,
    num_inputs=2,
    num_outputs=1,
    grad_shapes=lambda attrs, s: [s[1]],
    compute=_potrf_backward,
    inplace=[(0, 0)],
)


# ============================================================================ potri
def _potri_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """out = A^-T A^-1 for lower-triangular A: the inverse of A A^T."""
    xp = op_ctx.xp
    inv = _inverse(xp, triangle(xp, inputs[0]))
    assign(outputs[0], req[0], xp.matmul(transpose(inv), inv))


def _potri_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """Inputs (G, A, out): with B = out, dA = -tril(B (G + G^T) B A)."""
    xp = op_ctx.xp
    g, low, b = inputs[0], triangle(xp, inputs[1]), inputs[2]
    value = xp.matmul(xp.matmul(xp.matmul(b, g + transpose(g)), b), low)
    assign(outputs[0], req[0], -xp.tril(value))


register_linalg(
    "potri",
    infer_shape=_same_square_shape,
    compute=_potri_forward,
    inplace=[(0, 0)],
    gradient=backward_from("potri", use_inputs=(0,), use_outputs=(0,)),
    description="Inverse of A A^T from its lower-triangular Cholesky factor A (out = A^-T A^-1).",
)
register_backward(
    "potri", NoParams, num_inputs=3, num_outputs=1, grad_shapes=lambda attrs, s: [s[1]], compute=_potri_backward
)


# ============================================================================ sumlogdiag
def _scalar_out_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    return _square_family_shape(attrs, in_shapes, out_shapes, scalars=(0,))


def _per_matrix(g: Any, a: Any) -> Any:
    """A per-matrix value (shape ``(1,)`` or the batch) reshaped to broadcast against ``a``."""
    return g.reshape(a.shape[:-2] + (1, 1))


def _sumlogdiag_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    xp = op_ctx.xp
    assign(outputs[0], req[0], xp.log(diagonal(inputs[0])).sum(axis=-1).reshape(outputs[0].shape))


def _sumlogdiag_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """Inputs (G, A): dA is diagonal, G / A[i, i]."""
    xp = op_ctx.xp
    a = inputs[1]
    assign(outputs[0], req[0], diag_matrix(xp, _per_matrix(inputs[0], a)[..., 0] / diagonal(a)))


register_linalg(
    "sumlogdiag",
    infer_shape=_scalar_out_shape,
    compute=_sumlogdiag_forward,
    gradient=backward_from("sumlogdiag", use_inputs=(0,)),
    description="Sum of the logarithms of the diagonal of each square matrix.",
)
register_backward(
    "sumlogdiag",
    NoParams,
    num_inputs=2,
    num_outputs=1,
    grad_shapes=lambda attrs, s: [s[1]],
    compute=_sumlogdiag_backward,
    inplace=[(1, 0)],
)


# ============================================================================ inverse
def _inverse_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    assign(outputs[0], req[0], _inverse(op_ctx.xp, inputs[0]))


def _inverse_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """Inputs (G, B = A^-1): dA = -B^T G B^T."""
    xp = op_ctx.xp
    b_t = transpose(inputs[1])
    assign(outputs[0], req[0], -xp.matmul(xp.matmul(b_t, inputs[0]), b_t))


register_linalg(
    "inverse",
    infer_shape=_same_square_shape,
    compute=_inverse_forward,
    inplace=[(0, 0)],
    gradient=backward_from("inverse", use_outputs=(0,)),
    description="Inverse of each square matrix.",
)
register_backward(
    "inverse",
    NoParams,
    num_inputs=2,
    num_outputs=1,
    grad_shapes=lambda attrs, s: [s[1]],
    compute=_inverse_backward,
    inplace=[(0, 0)],
)


# ============================================================================ det, slogdet
def _lu_factor(op_ctx, a: Any) -> tuple[Any, Any]:
    """LU factors (packed) and 0-based pivots of every matrix: LAPACK ``getrf``."""
    linalg = backend.scipy_linalg(op_ctx.ctx)
    if op_ctx.xp is np:
        return linalg.lu_factor(a, check_finite=False)  # SciPy factorises a whole batch at once
    # cupyx.scipy.linalg factorises one matrix per call
    xp, n = op_ctx.xp, a.shape[-1]
    flat = a.reshape(-1, n, n)
    pairs = [linalg.lu_factor(m, check_finite=False) for m in flat]
    lu = xp.stack([p[0] for p in pairs]).reshape(a.shape)
    piv = xp.stack([p[1] for p in pairs]).reshape(a.shape[:-1])
    return lu, piv


def _lu_inverse_transpose(op_ctx, lu: Any, piv: Any) -> Any:
    """``A^-T`` from A's LU factors (``getrs`` on the identity, transposed system)."""
    linalg, xp = backend.scipy_linalg(op_ctx.ctx), op_ctx.xp
    n = lu.shape[-1]
    eye = xp.eye(n, dtype=lu.dtype)
    if xp is np:
        return linalg.lu_solve((lu, piv), np.broadcast_to(eye, lu.shape), trans=1, check_finite=False)
    flat_lu, flat_piv = lu.reshape(-1, n, n), piv.reshape(-1, n)
    solved = [linalg.lu_solve((m, p), eye, trans=1) for m, p in zip(flat_lu, flat_piv, strict=True)]
    return xp.stack(solved).reshape(lu.shape)


def _lu_sign_and_log(xp: Any, lu: Any, piv: Any) -> tuple[Any, Any]:
    """sign(det) and log|det| per matrix: the pivots' parity times the signs of U's diagonal."""
    diag = diagonal(lu)
    swaps = (piv != xp.arange(piv.shape[-1], dtype=piv.dtype)).sum(axis=-1)
    parity = 1 - 2 * (swaps % 2)
    with np.errstate(divide="ignore"):  # a zero pivot: a singular matrix, log|det| = -inf
        log_abs = xp.log(xp.abs(diag)).sum(axis=-1)
    return parity * xp.sign(diag).prod(axis=-1), log_abs


def _factor_outputs(op_ctx, a: Any, req, outputs, first_hidden: int) -> tuple[Any, Any]:
    lu, piv = _lu_factor(op_ctx, a)
    assign(outputs[first_hidden], req[first_hidden], lu)
    assign(outputs[first_hidden + 1], req[first_hidden + 1], piv)
    return lu, piv


def _det_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    xp = op_ctx.xp
    lu, piv = _factor_outputs(op_ctx, inputs[0], req, outputs, 1)
    sign, log_abs = _lu_sign_and_log(xp, lu, piv)
    assign(outputs[0], req[0], (sign * xp.exp(log_abs)).reshape(outputs[0].shape))


def _det_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """Inputs (G, det, LU, pivot): dA = G det A^-T."""
    g, det, lu, piv = inputs
    scale = _per_matrix(g * det, lu)
    assign(outputs[0], req[0], scale * _lu_inverse_transpose(op_ctx, lu, piv))


def _det_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    return _square_family_shape(attrs, in_shapes, out_shapes, full=(1,), vectors=(2,), scalars=(0,))


register_linalg(
    "det",
    num_outputs=3,
    num_visible_outputs=1,
    int_outputs=(2,),
    infer_shape=_det_shape,
    compute=_det_forward,
    gradient=backward_from("det", use_outputs=(0, 1, 2)),
    description="Determinant of each square matrix (hidden outputs: its LU factors and pivots).",
)
register_backward(
    "det", NoParams, num_inputs=4, num_outputs=1, grad_shapes=lambda attrs, s: [s[2]], compute=_det_backward
)


def _slogdet_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    lu, piv = _factor_outputs(op_ctx, inputs[0], req, outputs, 2)
    sign, log_abs = _lu_sign_and_log(op_ctx.xp, lu, piv)
    assign(outputs[0], req[0], sign.reshape(outputs[0].shape))
    assign(outputs[1], req[1], log_abs.reshape(outputs[1].shape))


def _slogdet_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Only log|det| has a gradient (the sign is piecewise constant): inputs (G, LU, pivot)."""
    backward = make_backward_node(node, "_backward_linalg_slogdet", [out_grads[1], Entry(node, 2), Entry(node, 3)])
    return [Entry(backward, 0)]


def _slogdet_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """Inputs (G, LU, pivot): dA = G A^-T."""
    g, lu, piv = inputs
    assign(outputs[0], req[0], _per_matrix(g, lu) * _lu_inverse_transpose(op_ctx, lu, piv))


def _slogdet_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    return _square_family_shape(attrs, in_shapes, out_shapes, full=(2,), vectors=(3,), scalars=(0, 1))


register_linalg(
    "slogdet",
    num_outputs=4,
    num_visible_outputs=2,
    int_outputs=(3,),
    infer_shape=_slogdet_shape,
    compute=_slogdet_forward,
    gradient=_slogdet_gradient,
    description="Sign and log of the absolute determinant of each square matrix (hidden: LU factors, pivots).",
)
register_backward(
    "slogdet", NoParams, num_inputs=3, num_outputs=1, grad_shapes=lambda attrs, s: [s[1]], compute=_slogdet_backward
)


# ============================================================================ gelqf
def _gelqf_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """A and Q: (.., m, n) with m <= n; L: (.., m, m)."""
    name = attrs.name
    try:
        a = merge_shapes(in_shapes[0], out_shapes[0])
    except ValueError:
        raise InferenceError(f"{name}: Q must be shaped like A, got Q {out_shapes[0]} and A {in_shapes[0]}") from None
    check_matrix_rank(name, a)
    low = out_shapes[1]
    check_square(name, low, "L")
    if a is None:
        return False
    if a[-2] and a[-1] and a[-2] > a[-1]:
        raise InferenceError(f"{name}: A must have at least as many columns as rows (m <= n), got shape {a}")
    batch = merge_batch(name, [a, low], [2, 2], "A and L")
    m = merge_dims(name, [a[-2], *(low[-2:] if low is not None else ())], "row counts of A and L")
    shape_assign(in_shapes, 0, (*batch, m, a[-1]), name, "A")
    shape_assign(out_shapes, 0, (*batch, m, a[-1]), name, "Q")
    shape_assign(out_shapes, 1, (*batch, m, m), name, "L")
    return all_known(in_shapes, out_shapes)


def _gelqf_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """A = L Q is the QR factorisation of A^T, transposed (same Householder signs as LAPACK)."""
    q, r = op_ctx.xp.linalg.qr(transpose(inputs[0]), mode="reduced")
    assign(outputs[0], req[0], transpose(q))
    assign(outputs[1], req[1], transpose(r))


def _gelqf_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """Inputs (dQ, dL, Q, L): dA = L^-T (dQ + copyLTU(L^T dL - dQ Q^T) Q)."""
    xp = op_ctx.xp
    d_q, d_l, q, low = inputs
    m = xp.matmul(transpose(low), d_l) - xp.matmul(d_q, transpose(q))
    rhs = d_q + xp.matmul(_copy_lower_to_upper(xp, m), q)
    assign(outputs[0], req[0], xp.linalg.solve(transpose(low), rhs))


register_linalg(
    "gelqf",
    num_outputs=2,
    infer_shape=_gelqf_shape,
    compute=_gelqf_forward,
    inplace=[(0, 0)],
    gradient=backward_from("gelqf", use_outputs=(0, 1), head=2),
    description="LQ factorisation A = L Q of each matrix with m <= n: outputs Q (orthonormal rows) and L.",
)
register_backward(
    "gelqf",
    NoParams,
    num_inputs=4,
    num_outputs=1,
    grad_shapes=lambda attrs, s: [s[2]],
    compute=_gelqf_backward,
    inplace=[(0, 0)],
)


# ============================================================================ syevd
def _syevd_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    return _square_family_shape(attrs, in_shapes, out_shapes, full=(0,), vectors=(1,))


def _syevd_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """Eigenvectors as rows of U, eigenvalues ascending; each row's largest-magnitude entry is
    made positive (MXNet's sign convention, so results do not depend on the LAPACK build)."""
    xp = op_ctx.xp
    w, v = xp.linalg.eigh(_symmetric_from_lower(xp, inputs[0]))
    u = transpose(v)
    biggest = xp.take_along_axis(u, xp.abs(u).argmax(axis=-1)[..., None], axis=-1)
    u = u * xp.where(biggest < 0, -1, 1).astype(u.dtype)
    assign(outputs[0], req[0], u)
    assign(outputs[1], req[1], w)


def _syevd_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """Inputs (dU, dw, U, w): dA = sym(U^T (diag(dw) + F * (U dU^T)) U), F = 1/(w_j - w_i)."""
    xp = op_ctx.xp
    d_u, d_w, u, w = inputs
    gaps = w[..., None, :] - w[..., :, None]
    n = w.shape[-1]
    off_diag = ~xp.eye(n, dtype=bool)
    f = xp.where(off_diag, 1.0 / xp.where(off_diag, gaps, 1.0), 0.0).astype(u.dtype)
    inner = f * xp.matmul(u, transpose(d_u)) + diag_matrix(xp, d_w)
    full = xp.matmul(xp.matmul(transpose(u), inner), u)
    assign(outputs[0], req[0], 0.5 * (full + transpose(full)))


register_linalg(
    "syevd",
    num_outputs=2,
    infer_shape=_syevd_shape,
    compute=_syevd_forward,
    inplace=[(0, 0)],
    gradient=backward_from("syevd", use_outputs=(0, 1), head=2),
    description="Eigendecomposition U A = diag(L) U of each symmetric matrix: outputs U (rows) and L ascending.",
    with_alias=False,  # MXNet 1.9.1 registers no linalg_syevd
)
register_backward(
    "syevd",
    NoParams,
    num_inputs=4,
    num_outputs=1,
    grad_shapes=lambda attrs, s: [s[2]],
    compute=_syevd_backward,
    inplace=[(0, 0)],
)
