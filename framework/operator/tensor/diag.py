"""``diag``: between a vector and the diagonal of a matrix (NumPy's ``diag``/``diagonal``).

* a 1-D input becomes a square matrix with the vector on diagonal ``k`` (above the main
  diagonal for ``k > 0``, below for ``k < 0``);
* an input of 2 or more dimensions gives its diagonal ``k`` in the plane of ``axis1`` and
  ``axis2``: those two axes are removed and the diagonal becomes the last axis.

Each is the other's gradient: ``_backward_diag`` takes the diagonal of a matrix gradient,
or writes a diagonal gradient into zeros shaped like the input.
"""

from __future__ import annotations

from typing import Any

from ..grad import elemwise_grad_use_in
from ..infer import InferenceError, ShapeT, shape_assign, shape_known
from ..params import Param, ParamSet
from ..registry import register
from .common import normalize_axis, put, register_backward, same_type


class DiagParam(ParamSet):
    k = Param(int, 0, "Which diagonal: 0 the main one, > 0 above it, < 0 below it.")
    axis1 = Param(int, 0, "First axis of the plane to take the diagonal from (inputs of 2+ dimensions).")
    axis2 = Param(int, 1, "Second axis of that plane.")


def _plane(attrs: Any, ndim: int) -> tuple[int, int]:
    p = attrs.parsed
    a1 = normalize_axis(attrs.name, p.axis1, ndim, "axis1")
    a2 = normalize_axis(attrs.name, p.axis2, ndim, "axis2")
    if a1 == a2:
        raise InferenceError(f"{attrs.name}: axis1 and axis2 must differ, both are {a1}")
    return a1, a2


def _diag_length(n1: int, n2: int, k: int) -> int:
    return min(n1, n2 - k) if k >= 0 else min(n1 + k, n2)


def _diag_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape, k = in_shapes[0], attrs.parsed.k
    if shape is None:
        return False
    if len(shape) == 0:
        raise InferenceError(f"{attrs.name}: the input must have at least 1 dimension, got shape ()")
    if len(shape) == 1:
        n = shape[0] + abs(k) if shape[0] else 0
        shape_assign(out_shapes, 0, (n, n), attrs.name, "output")
        return shape_known(shape)
    a1, a2 = _plane(attrs, len(shape))
    length = _diag_length(shape[a1], shape[a2], k) if shape[a1] and shape[a2] else 0
    if shape[a1] and shape[a2] and length <= 0:
        raise InferenceError(f"{attrs.name}: diagonal k={k} lies outside a {shape[a1]}x{shape[a2]} plane")
    rest = tuple(d for i, d in enumerate(shape) if i not in (a1, a2))
    shape_assign(out_shapes, 0, (*rest, length), attrs.name, "output")
    return shape_known(shape)


def _diagonal_indices(xp: Any, length: int, k: int) -> tuple[Any, Any]:
    """Row and column indices of diagonal ``k`` (``length`` elements)."""
    i = xp.arange(length)
    return i + max(-k, 0), i + max(k, 0)


def _diag_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x, k, xp = inputs[0], attrs.parsed.k, op_ctx.xp
    if x.ndim == 1:
        put(outputs[0], req[0], xp.diag(x, k))
    else:
        a1, a2 = _plane(attrs, x.ndim)
        put(outputs[0], req[0], xp.diagonal(x, offset=k, axis1=a1, axis2=a2))


def _diag_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    out_grad, x = inputs
    k, xp = attrs.parsed.k, op_ctx.xp
    if x.ndim == 1:  # forward built a matrix: the gradient is its diagonal
        put(outputs[0], req[0], xp.diagonal(out_grad, offset=k))
        return
    a1, a2 = _plane(attrs, x.ndim)
    # the gradient lives on the diagonal of a zero array with the plane's axes moved last
    moved = xp.zeros(xp.moveaxis(x, (a1, a2), (-2, -1)).shape, dtype=out_grad.dtype)
    rows, cols = _diagonal_indices(xp, out_grad.shape[-1], k)
    moved[..., rows, cols] = out_grad
    put(outputs[0], req[0], xp.moveaxis(moved, (-2, -1), (a1, a2)))


(
    register("diag")
    .describe("The k-th diagonal of the input (2+ dimensions), or a matrix with the input (1-D) on it.")
    .set_params(DiagParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_diag_shape)
    .set_infer_type(same_type)
    .set_compute(_diag_compute)
    .set_gradient(elemwise_grad_use_in("_backward_diag"))
)
register_backward("_backward_diag", _diag_backward, DiagParam)
