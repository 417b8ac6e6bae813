"""What every linear-algebra operator shares: batches of matrices, dtypes, registration.

A linalg operator reads its input as a *batch of matrices*: the trailing two axes are the
rows and columns of one matrix, every leading axis is a batch axis, and the operator works
on all matrices at once (NumPy's and CuPy's ``linalg`` functions and ``matmul`` broadcast over
leading axes, so no Python loop over the batch is needed). MXNet computes in float32 and
float64 only; other dtypes fail type inference here, with a message naming the dtype.

Each operator is registered as ``_linalg_<name>`` (so ``mx.nd.linalg.<name>``) with the
alias ``linalg_<name>``, and its backward operator as ``_backward_linalg_<name>``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...errors import MXNetError
from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT, merge_shapes, shape_assign, shape_known, type_assign
from ..node import Entry, Node, NodeAttrs
from ..params import NoParams, ParamSet
from ..registry import OpDef, alias, register

FLOAT_TYPES = ("float32", "float64")


# ----------------------------------------------------------------------------- matrices
def transpose(x: Any) -> Any:
    """Each matrix of a batch transposed (the trailing two axes swapped)."""
    return x.swapaxes(-1, -2)


def lower_mask(xp: Any, n: int, dtype: Any, lower: bool = True) -> Any:
    """An ``(n, n)`` 0/1 matrix selecting the lower (or upper) triangle with its diagonal."""
    tri = xp.tri(n, n, 0, dtype=dtype)
    return tri if lower else tri.T


def triangle(xp: Any, a: Any, lower: bool = True) -> Any:
    """Each matrix of ``a`` with the other triangle set to zero (what LAPACK reads)."""
    return a * lower_mask(xp, a.shape[-1], a.dtype, lower)


def diagonal(a: Any) -> Any:
    """The main diagonals of a batch of square matrices, shape ``(..., n)``."""
    return a.diagonal(axis1=-2, axis2=-1)


def diag_matrix(xp: Any, d: Any) -> Any:
    """A batch of diagonal matrices with ``d`` (``(..., n)``) on the diagonal."""
    return d[..., :, None] * xp.eye(d.shape[-1], dtype=d.dtype)


def scalar_shape(batch: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of one value per matrix: the batch shape, ``(1,)`` for a single matrix
    (MXNet 1.x has no 0-d arrays)."""
    return batch if batch else (1,)


# ----------------------------------------------------------------------------- inference
def check_matrix_rank(op_name: str, shape: ShapeT, what: str = "A", min_ndim: int = 2) -> None:
    """Raise unless ``shape`` (if known) has at least ``min_ndim`` axes."""
    if shape is not None and len(shape) < min_ndim:
        raise InferenceError(
            f"{op_name}: input {what} must have at least {min_ndim} dimensions "
            f"(a batch of matrices), got shape {tuple(shape)}"
        )


def check_square(op_name: str, shape: ShapeT, what: str = "A") -> None:
    """Raise unless each matrix of ``shape`` is square (unknown dimensions pass)."""
    check_matrix_rank(op_name, shape, what)
    if shape is not None and shape[-1] and shape[-2] and shape[-1] != shape[-2]:
        raise InferenceError(f"{op_name}: input {what} must be a tensor of square matrices, got shape {tuple(shape)}")


def merge_dims(op_name: str, dims: Sequence[int], what: str) -> int:
    """One dimension size agreed on by several places (0 = unknown), or an InferenceError."""
    known = {d for d in dims if d}
    if len(known) > 1:
        raise InferenceError(f"{op_name}: {what} disagree: sizes {sorted(known)}")
    return known.pop() if known else 0


def merge_batch(op_name: str, shapes: Sequence[ShapeT], keep: Sequence[int], what: str) -> ShapeT:
    """The batch shape shared by ``shapes`` (each cut to its leading axes by ``keep``)."""
    batch: ShapeT = None
    for shape, trailing in zip(shapes, keep, strict=True):
        if shape is None:
            continue
        lead = tuple(shape[: len(shape) - trailing])
        try:
            batch = merge_shapes(batch, lead)
        except ValueError:
            raise InferenceError(
                f"{op_name}: the leading (batch) dimensions of {what} must match, got {batch} and {lead}"
            ) from None
    return batch


def all_known(*lists: Sequence[ShapeT]) -> bool:
    return all(shape_known(s) for shapes in lists for s in shapes)


def float_type(attrs: NodeAttrs, in_types: list, out_types: list, int_outputs: Sequence[int] = ()) -> bool:
    """One float32/float64 dtype for all inputs and outputs (``int_outputs`` are int32)."""
    name = attrs.name
    for i in int_outputs:
        type_assign(out_types, i, "int32", name, f"output {i}")
    float_slots = [("input", i, in_types) for i in range(len(in_types))]
    float_slots += [("output", i, out_types) for i in range(len(out_types)) if i not in int_outputs]
    known = [types[i] for _, i, types in float_slots if types[i] is not None]
    if not known:
        return False
    common = known[0]
    if common not in FLOAT_TYPES:
        raise InferenceError(f"{name}: linalg operators support float32 and float64 only, got {common}")
    for kind, i, types in float_slots:
        type_assign(types, i, common, name, f"{kind} {i}")
    return True


# ----------------------------------------------------------------------------- registration
class LinalgError(MXNetError, np.linalg.LinAlgError):
    """A factorisation or solve that has no answer for these values (a matrix that is not
    positive definite for ``potrf``, a singular one for ``inverse``): MXNet raises MXNetError."""


def _reporting_failures(name: str, compute: Callable[..., None]) -> Callable[..., None]:
    """``compute``, with LAPACK's refusal raised as :class:`LinalgError` naming the operator."""

    @functools.wraps(compute)
    def run(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
        try:
            compute(attrs, op_ctx, inputs, req, outputs)
        except np.linalg.LinAlgError as err:
            raise LinalgError(f"{name}: {err}") from None

    return run


def register_linalg(
    name: str,
    params: type[ParamSet] = NoParams,
    *,
    inputs: Sequence[str] = ("A",),
    num_outputs: int = 1,
    num_visible_outputs: int | None = None,
    infer_shape: Callable[..., bool],
    compute: Callable[..., None],
    gradient: Callable[..., list],
    description: str,
    int_outputs: Sequence[int] = (),
    inplace: Sequence[tuple[int, int]] = (),
    with_alias: bool = True,
) -> OpDef:
    """Register ``_linalg_<name>`` (alias ``linalg_<name>`` unless MXNet has none).

    ``inplace`` lists MXNet's (input, output) pairs whose memory may be shared: the compute
    functions build each result before writing it, so an output may alias that input."""
    op = (
        register(f"_linalg_{name}")
        .describe(description)
        .set_params(params)
        .set_num_inputs(len(inputs))
        .set_num_outputs(num_outputs)
        .set_input_names(list(inputs))
        .set_infer_shape(infer_shape)
        .set_infer_type(lambda attrs, i, o: float_type(attrs, i, o, int_outputs))
        .set_compute(_reporting_failures(f"_linalg_{name}", compute))
        .set_gradient(gradient)
    )
    if num_visible_outputs is not None:
        op.set_num_visible_outputs(num_visible_outputs)
    if inplace:
        op.set_inplace_option(lambda attrs: list(inplace))
    if with_alias:
        alias(f"linalg_{name}", f"_linalg_{name}")
    return op


def register_backward(
    name: str,
    params: type[ParamSet],
    *,
    num_inputs: int,
    num_outputs: int,
    grad_shapes: Callable[[NodeAttrs, list[ShapeT]], list[ShapeT]],
    compute: Callable[..., None],
    inplace: Sequence[tuple[int, int]] = (),
) -> OpDef:
    """Register ``_backward_linalg_<name>``; ``grad_shapes`` gives each input gradient's shape
    from the backward node's input shapes (the gradients are shaped like the forward inputs)."""

    def infer_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        for i, shape in enumerate(grad_shapes(attrs, in_shapes)):
            shape_assign(out_shapes, i, shape, attrs.name, f"gradient {i}")
        return all_known(out_shapes)

    def infer_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
        # the head gradient (input 0) has the forward dtype, whatever hidden int outputs follow
        for i in range(len(out_types)):
            type_assign(out_types, i, in_types[0], attrs.name, f"gradient {i}")
        return all(t is not None for t in out_types)

    op = (
        register(f"_backward_linalg_{name}")
        .set_params(params)
        .set_num_inputs(num_inputs)
        .set_num_outputs(num_outputs)
        .set_infer_shape(infer_shape)
        .set_infer_type(infer_type)
        .set_compute(_reporting_failures(f"_backward_linalg_{name}", compute))
        .set_is_backward()
    )
    if inplace:
        op.set_inplace_option(lambda attrs: list(inplace))
    return op


def backward_from(name: str, use_inputs: Sequence[int] = (), use_outputs: Sequence[int] = (), head: int = 1):
    """A gradient builder: ``_backward_linalg_<name>`` gets the first ``head`` output gradients,
    then the forward inputs ``use_inputs`` and outputs ``use_outputs`` (what backward needs kept)."""

    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        inputs = list(out_grads[:head])
        inputs += [node.inputs[i] for i in use_inputs]
        inputs += [Entry(node, i) for i in use_outputs]
        backward = make_backward_node(node, f"_backward_linalg_{name}", inputs)
        return [Entry(backward, i) for i in range(len(node.inputs))]

    return gradient
