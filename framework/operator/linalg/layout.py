"""Moving entries between matrices and vectors: ``extractdiag``, ``makediag``,
``extracttrian``, ``maketrian``.

Each pair is one *index map*: a fixed list of (row, column) positions of an ``n x n``
matrix, in the order MXNet stores them in the vector. Extracting gathers the matrix at those
positions (``a[..., rows, cols]``, one fancy-indexing step for the whole batch); making
scatters the vector into zeros there. So each operator's gradient is the other one.

* diagonal ``offset`` k: positions ``(i + max(-k, 0), i + max(k, 0))``;
* lower triangle (``offset`` < 0, or 0 with ``lower``): the entries with ``row - col >= -k``,
  row by row (``tril_indices``);
* upper triangle (``offset`` > 0, or 0 without ``lower``): ``col - row >= k``, column by
  column: the lower-triangle positions of the transpose, which is how MXNet orders them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..infer import InferenceError, ShapeT, shape_assign
from ..kernel import assign
from ..node import NodeAttrs
from ..params import Param, ParamSet
from .common import all_known, backward_from, check_square, register_backward, register_linalg


class DiagParam(ParamSet):
    offset = Param(int, 0, "Diagonal relative to the main one: > 0 above it, < 0 below it.")


class TrianParam(DiagParam):
    lower = Param(bool, True, "With offset 0: the lower triangle (else the upper one).")


# ----------------------------------------------------------------------------- index maps
def _diag_positions(n: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    steps = np.arange(n - abs(offset))
    return steps + max(-offset, 0), steps + max(offset, 0)


def _trian_positions(n: int, offset: int, lower: bool) -> tuple[np.ndarray, np.ndarray]:
    if offset < 0 or (offset == 0 and lower):
        return np.tril_indices(n, offset)
    rows, cols = np.tril_indices(n, -offset)
    return cols, rows


def _diag_length(attrs: NodeAttrs, n: int) -> int:
    return n - abs(attrs.parsed.offset)


def _trian_length(attrs: NodeAttrs, n: int) -> int:
    m = n - abs(attrs.parsed.offset)
    return m * (m + 1) // 2 if m > 0 else 0


def _diag_size(attrs: NodeAttrs, length: int) -> int:
    return length + abs(attrs.parsed.offset)


def _trian_size(attrs: NodeAttrs, length: int) -> int:
    m = (math.isqrt(8 * length + 1) - 1) // 2
    if m * (m + 1) // 2 != length:
        raise InferenceError(
            f"{attrs.name}: the last axis of A ({length}) is not a triangular number m*(m+1)/2, so it holds no triangle"
        )
    return m + abs(attrs.parsed.offset)


def _positions(attrs: NodeAttrs, n: int) -> tuple[np.ndarray, np.ndarray]:
    p = attrs.parsed
    if hasattr(p, "lower"):
        return _trian_positions(n, p.offset, p.lower)
    return _diag_positions(n, p.offset)


# ----------------------------------------------------------------------------- shapes
def _matrix_vector_shape(
    attrs: NodeAttrs,
    matrix: ShapeT,
    vector: ShapeT,
    length: Callable[[NodeAttrs, int], int],
    size: Callable[[NodeAttrs, int], int],
) -> tuple[ShapeT, ShapeT]:
    """Matrices (.., n, n) and their vectors (.., length(n)), each inferred from the other."""
    name = attrs.name
    check_square(name, matrix)
    if vector is not None and len(vector) < 1:
        raise InferenceError(f"{name}: the vector side needs at least one dimension, got shape {vector}")
    if matrix is not None and matrix[-1]:
        count = length(attrs, matrix[-1])
        if count <= 0:
            raise InferenceError(
                f"{name}: offset {attrs.parsed.offset} leaves nothing of a matrix with dimension {matrix[-1]}"
            )
        vector_from_matrix = (*matrix[:-2], count)
    elif matrix is not None:
        vector_from_matrix = (*matrix[:-2], 0)
    else:
        vector_from_matrix = None
    if vector is not None:
        n = size(attrs, vector[-1]) if vector[-1] else 0
        matrix_from_vector = (*vector[:-1], n, n)
    else:
        matrix_from_vector = None
    return matrix_from_vector, vector_from_matrix


def _extract_shape(length, size):
    def infer(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        from_vec, from_mat = _matrix_vector_shape(attrs, in_shapes[0], out_shapes[0], length, size)
        shape_assign(out_shapes, 0, from_mat, attrs.name, "output")
        shape_assign(in_shapes, 0, from_vec, attrs.name, "A")
        return all_known(in_shapes, out_shapes)

    return infer


def _make_shape(length, size):
    def infer(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        from_vec, from_mat = _matrix_vector_shape(attrs, out_shapes[0], in_shapes[0], length, size)
        shape_assign(out_shapes, 0, from_vec, attrs.name, "output")
        shape_assign(in_shapes, 0, from_mat, attrs.name, "A")
        return all_known(in_shapes, out_shapes)

    return infer


# ----------------------------------------------------------------------------- compute
def _gather(attrs: NodeAttrs, xp: Any, matrices: Any) -> Any:
    rows, cols = _positions(attrs, matrices.shape[-1])
    return matrices[..., xp.asarray(rows), xp.asarray(cols)]


def _scatter(attrs: NodeAttrs, xp: Any, vectors: Any, n: int) -> Any:
    rows, cols = _positions(attrs, n)
    matrices = xp.zeros((*vectors.shape[:-1], n, n), dtype=vectors.dtype)
    matrices[..., xp.asarray(rows), xp.asarray(cols)] = vectors
    return matrices


def _extract(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """Forward of extract*, backward of make*: matrices in, vectors out."""
    assign(outputs[0], req[0], _gather(attrs, op_ctx.xp, inputs[0]))


def _make(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """Forward of make*, backward of extract*: vectors in, matrices out."""
    assign(outputs[0], req[0], _scatter(attrs, op_ctx.xp, inputs[0], outputs[0].shape[-1]))


def _register_pair(kind: str, params: type[ParamSet], length, size, extract_doc: str, make_doc: str) -> None:
    extract_shape, make_shape = _extract_shape(length, size), _make_shape(length, size)
    register_linalg(
        f"extract{kind}",
        params,
        infer_shape=extract_shape,
        compute=_extract,
        gradient=backward_from(f"extract{kind}"),
        description=extract_doc,
    )
    register_backward(
        f"extract{kind}",
        params,
        num_inputs=1,
        num_outputs=1,
        grad_shapes=lambda attrs, s: [_matrix_vector_shape(attrs, None, s[0], length, size)[0]],
        compute=_make,
    )
    register_linalg(
        f"make{kind}",
        params,
        infer_shape=make_shape,
        compute=_make,
        gradient=backward_from(f"make{kind}"),
        description=make_doc,
    )
    register_backward(
        f"make{kind}",
        params,
        num_inputs=1,
        num_outputs=1,
        grad_shapes=lambda attrs, s: [_matrix_vector_shape(attrs, s[0], None, length, size)[1]],
        compute=_extract,
    )


_register_pair(
    "diag",
    DiagParam,
    _diag_length,
    _diag_size,
    "The diagonal (or an off-diagonal, by offset) of each square matrix, as a vector.",
    "Square matrices with the given vectors on the diagonal selected by offset, zero elsewhere.",
)
_register_pair(
    "trian",
    TrianParam,
    _trian_length,
    _trian_size,
    "A triangle of each square matrix (selected by offset and lower), packed into a vector.",
    "Square matrices with a packed triangle (as extracttrian writes it) unpacked, zero elsewhere.",
)
