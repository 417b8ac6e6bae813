"""Matrix and shape operators: products, transposes, joins, splits, slices, tiling
(MXNet 1.x's ``matrix_op``, ``dot``, ``concat``, ``slice_channel``).

Most of these move data around without arithmetic, so their gradients move it back:

* ``transpose``/``swapaxes``: the gradient is transposed back (inverse permutation);
* ``Flatten``/``expand_dims``/``squeeze``: the gradient is reshaped back;
* ``Concat``/``stack`` <-> ``split``: each is the other's gradient;
* ``slice``/``slice_axis``: the gradient is scattered into zeros shaped like the input;
* ``tile``/``repeat``: copies of an element add their gradients together.

``dot`` follows MXNet's N-D rule: the last axis of ``lhs`` is contracted with the first
axis of ``rhs`` (``transpose_a`` contracts the *first* axis of ``lhs`` instead, and
``transpose_b`` the *last* of ``rhs``): each operand is viewed as a matrix, and one matrix
product does the work. ``batch_dot`` multiplies matching matrices of two batches.

Shape inference runs both ways where the maths allows it: ``Concat`` can infer one
input's unknown length from the output, ``split`` the input from any output, ``transpose``
the input from the output, and so on.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..infer import InferenceError, ShapeT, elemwise_type, merge_shapes, shape_assign, shape_known
from ..kernel import Req
from ..node import Entry, Node, NodeAttrs
from ..params import REQUIRED, Param, ParamSet, Shape
from ..registry import alias, get, register
from .reduce import (
    backward_entries,
    grad_types_like_inputs,
    grads_like_inputs,
    normalize_axis,
    put,
    same_type,
)

# ----------------------------------------------------------------------------- helpers


def _merge(op_name: str, a: ShapeT, b: ShapeT, what: str) -> ShapeT:
    """Merge two partial shapes, raising an InferenceError that shows both."""
    try:
        return merge_shapes(a, b)
    except ValueError:
        raise InferenceError(f"{op_name}: shape inconsistent for {what}: {a} vs {b}") from None


def _forward_node(node: Node, op_name: str, params: dict[str, Any], inputs: list[Entry]) -> Entry:
    """A node of a *forward* operator (with new parameters) used as a gradient, so the
    gradient is itself differentiable (``transpose``'s gradient is a ``transpose``)."""
    op = get(op_name)
    attrs = NodeAttrs(f"{node.name}_backward", op, op.params.parse(op_name, params))
    grad_node = Node(op, attrs, inputs)
    grad_node.control_deps.append(node)
    return Entry(grad_node, 0)


def _reshape_back(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    """Backward of reshape-like operators: inputs (out_grad, data); the gradient takes data's shape."""
    put(outputs[0], req[0], inputs[0].reshape(inputs[1].shape))


def _register_reshape_backward(name: str, params: type[ParamSet] | None) -> None:
    op = register(name).set_num_inputs(2).set_infer_shape(grads_like_inputs(1))
    if params is not None:
        op.set_params(params)
    op.set_infer_type(grad_types_like_inputs(1)).set_compute(_reshape_back).set_is_backward()


def _reshape_gradient(backward_name: str):
    return lambda node, out_grads: backward_entries(node, backward_name, [out_grads[0], node.inputs[0]])


# ----------------------------------------------------------------------------- dot


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
    batch = _merge(name, lshape[:-2], rshape[:-2], "the leading batch dimensions")
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
        .set_gradient(
            lambda node, out_grads, _b=f"_backward_{_name}": backward_entries(node, _b, [out_grads[0], *node.inputs])
        )
    )
    (
        register(f"_backward_{_name}")
        .set_params(DotParam)
        .set_num_inputs(3)
        .set_num_outputs(2)
        .set_infer_shape(grads_like_inputs(1))
        .set_infer_type(grad_types_like_inputs(1))
        .set_compute(_backward)
        .set_is_backward()
    )


# ----------------------------------------------------------------------------- transpose, swapaxes


class TransposeParam(ParamSet):
    axes = Param(Shape, Shape(), "The permutation of the axes; empty reverses them.")


def _permutation(attrs: Any, ndim: int) -> tuple[int, ...]:
    axes = attrs.parsed.axes
    if len(axes) == 0:
        return tuple(range(ndim - 1, -1, -1))
    if len(axes) != ndim or sorted(axes) != list(range(ndim)):
        raise InferenceError(
            f"{attrs.name}: axes={tuple(axes)} must be a permutation of 0..{ndim - 1} for an input with {ndim} "
            "dimension(s)"
        )
    return tuple(axes)


def _transpose_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    known = in_shapes[0] if in_shapes[0] is not None else out_shapes[0]
    if known is None:
        return False
    perm = _permutation(attrs, len(known))
    if in_shapes[0] is not None:
        shape_assign(out_shapes, 0, tuple(in_shapes[0][a] for a in perm), attrs.name, "output")
    inverse = np.argsort(perm)
    shape_assign(in_shapes, 0, tuple(out_shapes[0][a] for a in inverse), attrs.name, "input")
    return shape_known(in_shapes[0])


def _transpose_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x = inputs[0]
    put(outputs[0], req[0], op_ctx.xp.transpose(x, _permutation(attrs, x.ndim)))


def _transpose_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    axes = node.attrs.parsed.axes
    inverse = tuple(int(i) for i in np.argsort(axes)) if len(axes) else ()
    return [_forward_node(node, "transpose", {"axes": inverse}, [out_grads[0]])]


(
    register("transpose")
    .describe("Permutes the axes (``axes`` empty reverses them); the gradient is the inverse transpose.")
    .set_params(TransposeParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_transpose_shape)
    .set_infer_type(same_type)
    .set_compute(_transpose_compute)
    .set_gradient(_transpose_gradient)
)


class SwapAxisParam(ParamSet):
    dim1 = Param(int, 0, "The first axis to swap.")
    dim2 = Param(int, 0, "The second axis to swap.")


def _swap_dims(attrs: Any, ndim: int) -> tuple[int, int]:
    p = attrs.parsed
    return normalize_axis(attrs.name, p.dim1, ndim, "dim1"), normalize_axis(attrs.name, p.dim2, ndim, "dim2")


def _swap(shape: tuple[int, ...], d1: int, d2: int) -> tuple[int, ...]:
    out = list(shape)
    out[d1], out[d2] = out[d2], out[d1]
    return tuple(out)


def _swapaxes_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    known = in_shapes[0] if in_shapes[0] is not None else out_shapes[0]
    if known is None:
        return False
    d1, d2 = _swap_dims(attrs, len(known))
    if in_shapes[0] is not None:
        shape_assign(out_shapes, 0, _swap(in_shapes[0], d1, d2), attrs.name, "output")
    shape_assign(in_shapes, 0, _swap(out_shapes[0], d1, d2), attrs.name, "input")
    return shape_known(in_shapes[0])


def _swapaxes_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x = inputs[0]
    d1, d2 = _swap_dims(attrs, x.ndim)
    put(outputs[0], req[0], op_ctx.xp.swapaxes(x, d1, d2))


(
    register("SwapAxis")
    .describe("Swaps two axes; swapping them again is the gradient.")
    .set_params(SwapAxisParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_swapaxes_shape)
    .set_infer_type(same_type)
    .set_compute(_swapaxes_compute)
    .set_gradient(
        lambda node, out_grads: [
            _forward_node(node, "SwapAxis", node.attrs.parsed.as_dict(), [out_grads[0]]),
        ]
    )
)
alias("swapaxes", "SwapAxis")


# ----------------------------------------------------------------------------- Flatten, expand_dims, squeeze


def _flatten_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape = in_shapes[0]
    if shape is None:
        return False
    if len(shape) == 0:
        raise InferenceError(f"{attrs.name}: cannot flatten a 0-d array")
    shape_assign(out_shapes, 0, (shape[0], math.prod(shape[1:])), attrs.name, "output")
    return shape_known(shape)


def _reshape_to_output(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    put(outputs[0], req[0], inputs[0].reshape(outputs[0].shape))


(
    register("Flatten")
    .describe("Collapses all axes but the first: (d1, d2, ..., dk) -> (d1, d2*...*dk).")
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_flatten_shape)
    .set_infer_type(same_type)
    .set_compute(_reshape_to_output)
    .set_inplace_option(lambda attrs: [(0, 0)])
    .set_gradient(_reshape_gradient("_backward_Flatten"))
)
alias("flatten", "Flatten")
_register_reshape_backward("_backward_Flatten", None)


class ExpandDimsParam(ParamSet):
    axis = Param(int, REQUIRED, "Where to insert the new axis, in [-ndim-1, ndim].")


def _expand_dims_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    axis, name = attrs.parsed.axis, attrs.name
    if in_shapes[0] is not None:
        ndim = len(in_shapes[0])
        if not -ndim - 1 <= axis <= ndim:
            raise InferenceError(f"{name}: axis must be in the range [{-ndim - 1}, {ndim}] ({axis} provided)")
        pos = axis + ndim + 1 if axis < 0 else axis
        shape_assign(out_shapes, 0, in_shapes[0][:pos] + (1,) + in_shapes[0][pos:], name, "output")
    if out_shapes[0] is not None:
        out = out_shapes[0]
        pos = axis + len(out) if axis < 0 else axis
        if not 0 <= pos < len(out) or out[pos] not in (0, 1):
            raise InferenceError(f"{name}: output shape {out} has no length-1 axis at axis={axis}")
        shape_assign(in_shapes, 0, out[:pos] + out[pos + 1 :], name, "input")
    return shape_known(in_shapes[0])


(
    register("expand_dims")
    .describe("Inserts a new axis of length 1 at ``axis``.")
    .set_params(ExpandDimsParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_expand_dims_shape)
    .set_infer_type(same_type)
    .set_compute(_reshape_to_output)
    .set_inplace_option(lambda attrs: [(0, 0)])
    .set_gradient(_reshape_gradient("_backward_expand_dims"))
)
_register_reshape_backward("_backward_expand_dims", ExpandDimsParam)


class SqueezeParam(ParamSet):
    axis = Param(Shape, None, "The length-1 axes to remove; None removes every length-1 axis.")


def _squeeze_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape, name, axis = in_shapes[0], attrs.name, attrs.parsed.axis
    if shape is None:
        return False
    if axis is None:
        if 0 in shape:  # an unknown length might be 1: cannot tell what remains
            return False
        drop = [i for i, d in enumerate(shape) if d == 1]
    else:
        drop = [normalize_axis(name, a, len(shape)) for a in axis]
        if len(set(drop)) != len(drop):
            raise InferenceError(f"{name}: duplicate axes in axis={tuple(axis)}")
        for a in drop:
            if shape[a] not in (0, 1):
                raise InferenceError(
                    f"{name}: cannot squeeze axis {a} of shape {shape}: its length is {shape[a]}, not 1"
                )
    out = tuple(d for i, d in enumerate(shape) if i not in drop)
    shape_assign(out_shapes, 0, out if out else (1,), name, "output")
    return shape_known(shape)


(
    register("squeeze")
    .describe("Removes length-1 axes (all of them, or those in ``axis``); a fully squeezed array has shape (1,).")
    .set_params(SqueezeParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_squeeze_shape)
    .set_infer_type(same_type)
    .set_compute(_reshape_to_output)
    .set_inplace_option(lambda attrs: [(0, 0)])
    .set_gradient(_reshape_gradient("_backward_squeeze"))
)
_register_reshape_backward("_backward_squeeze", SqueezeParam)


# ----------------------------------------------------------------------------- Concat, stack, split


class ConcatParam(ParamSet):
    num_args = Param(int, REQUIRED, "Number of inputs to concatenate.", low=1)
    dim = Param(int, 1, "The axis to concatenate along.")


def _arg_names(attrs: Any) -> list[str]:
    return [f"arg{i}" for i in range(attrs.parsed.num_args)]


def _concat_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name = attrs.name
    known = [s for s in [*in_shapes, out_shapes[0]] if s is not None]
    if not known:
        return False
    ndim = len(known[0])
    if any(len(s) != ndim for s in known):
        raise InferenceError(
            f"{name}: all inputs must have the same number of dimensions, got inputs {in_shapes} "
            f"and output {out_shapes[0]}"
        )
    dim = normalize_axis(name, attrs.parsed.dim, ndim, "dim")

    def blank(shape: tuple[int, ...]) -> tuple[int, ...]:
        return shape[:dim] + (0,) + shape[dim + 1 :]

    common: ShapeT = None
    for i, shape in enumerate([*in_shapes, out_shapes[0]]):
        if shape is not None:
            what = f"input {i}" if i < len(in_shapes) else "the output"
            try:
                common = merge_shapes(common, blank(shape))
            except ValueError:
                raise InferenceError(
                    f"{name}: incompatible shapes: {what} has shape {shape} but the others imply {common} "
                    f"(all dimensions except dim={attrs.parsed.dim} must match); inputs {in_shapes}"
                ) from None
    sizes = [s[dim] if s is not None else 0 for s in in_shapes]
    total = out_shapes[0][dim] if out_shapes[0] is not None else 0
    unknown = [i for i, n in enumerate(sizes) if n == 0]
    if not unknown:
        total_in = sum(sizes)
        if total and total != total_in:
            raise InferenceError(
                f"{name}: the output length {total} along dim={attrs.parsed.dim} is not the sum of the input "
                f"lengths {sizes}"
            )
        total = total_in
    elif len(unknown) == 1 and total:  # infer the one missing length from the output
        missing = total - sum(sizes)
        if missing <= 0:
            raise InferenceError(f"{name}: output length {total} is too short for the input lengths {sizes}")
        sizes[unknown[0]] = missing
    for i in range(len(in_shapes)):
        shape_assign(in_shapes, i, common[:dim] + (sizes[i],) + common[dim + 1 :], name, f"input {i}")
    shape_assign(out_shapes, 0, common[:dim] + (total,) + common[dim + 1 :], name, "output")
    return all(shape_known(s) for s in in_shapes) and shape_known(out_shapes[0])


def _concat_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    dim = normalize_axis(attrs.name, attrs.parsed.dim, inputs[0].ndim, "dim")
    put(outputs[0], req[0], op_ctx.xp.concatenate(inputs, axis=dim))


def _concat_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # inputs: (out_grad, *forward inputs): the forward inputs only give the split points
    ograd = inputs[0]
    dim = normalize_axis(attrs.name, attrs.parsed.dim, ograd.ndim, "dim")
    points = np.cumsum([x.shape[dim] for x in inputs[1:-1]]).tolist()
    for i, piece in enumerate(op_ctx.xp.split(ograd, points, axis=dim)):
        put(outputs[i], req[i], piece)


(
    register("Concat")
    .describe("Joins arrays along an existing axis ``dim``; the other dimensions must match.")
    .set_params(ConcatParam)
    .set_num_inputs(lambda attrs: attrs.parsed.num_args)
    .set_input_names(_arg_names)
    .set_key_var_num_args("num_args")
    .set_infer_shape(_concat_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_concat_compute)
    .set_gradient(lambda node, out_grads: backward_entries(node, "_backward_Concat", [out_grads[0], *node.inputs]))
)
alias("concat", "Concat")
(
    register("_backward_Concat")
    .set_params(ConcatParam)
    .set_num_inputs(lambda attrs: attrs.parsed.num_args + 1)
    .set_num_outputs(lambda attrs: attrs.parsed.num_args)
    .set_infer_shape(grads_like_inputs(1))
    .set_infer_type(grad_types_like_inputs(1))
    .set_compute(_concat_backward)
    .set_is_backward()
)


class StackParam(ParamSet):
    axis = Param(int, 0, "Where the new axis goes in the result, in [-ndim-1, ndim].")
    num_args = Param(int, REQUIRED, "Number of inputs to stack.", low=1)


def _stack_axis(attrs: Any, out_ndim: int) -> int:
    axis = attrs.parsed.axis
    if not -out_ndim <= axis < out_ndim:
        raise InferenceError(
            f"{attrs.name}: axis {axis} is out of range for stacking {out_ndim - 1}-d inputs "
            f"(allowed [{-out_ndim}, {out_ndim - 1}])"
        )
    return axis + out_ndim if axis < 0 else axis


def _stack_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name, n = attrs.name, attrs.parsed.num_args
    common: ShapeT = None
    for i, shape in enumerate(in_shapes):
        common = _merge(name, common, shape, f"input {i} (stack needs equal shapes)")
    out = out_shapes[0]
    if out is not None:
        axis = _stack_axis(attrs, len(out))
        if out[axis] not in (0, n):
            raise InferenceError(f"{name}: output {out} must have length {n} along axis {attrs.parsed.axis}")
        common = _merge(name, common, out[:axis] + out[axis + 1 :], "the output")
    if common is None:
        return False
    axis = _stack_axis(attrs, len(common) + 1)
    for i in range(n):
        shape_assign(in_shapes, i, common, name, f"input {i}")
    shape_assign(out_shapes, 0, common[:axis] + (n,) + common[axis:], name, "output")
    return shape_known(common)


def _stack_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    axis = _stack_axis(attrs, inputs[0].ndim + 1)
    put(outputs[0], req[0], op_ctx.xp.stack(inputs, axis=axis))


def _stack_backward_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    g = in_shapes[0]
    if g is None:
        return False
    axis = _stack_axis(attrs, len(g))
    for i in range(len(out_shapes)):
        shape_assign(out_shapes, i, g[:axis] + g[axis + 1 :], attrs.name, f"gradient of input {i}")
    return shape_known(g)


def _stack_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    ograd = inputs[0]
    axis = _stack_axis(attrs, ograd.ndim)
    for i in range(len(outputs)):
        put(outputs[i], req[i], op_ctx.xp.take(ograd, i, axis=axis))


def _same_type_all(attrs: Any, in_types: list, out_types: list) -> bool:
    """Every input and output has the same dtype (the backward of stack and split)."""
    return elemwise_type(attrs, in_types, out_types)


(
    register("stack")
    .describe("Joins arrays of equal shape along a new axis.")
    .set_params(StackParam)
    .set_num_inputs(lambda attrs: attrs.parsed.num_args)
    .set_input_names(_arg_names)
    .set_key_var_num_args("num_args")
    .set_infer_shape(_stack_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_stack_compute)
    .set_gradient(lambda node, out_grads: backward_entries(node, "_backward_stack", [out_grads[0]]))
)
(
    register("_backward_stack")
    .set_params(StackParam)
    .set_num_inputs(1)
    .set_num_outputs(lambda attrs: attrs.parsed.num_args)
    .set_infer_shape(_stack_backward_shape)
    .set_infer_type(_same_type_all)
    .set_compute(_stack_backward)
    .set_is_backward()
)


class SliceChannelParam(ParamSet):
    num_outputs = Param(int, REQUIRED, "Number of equal pieces to split into.", low=1)
    axis = Param(int, 1, "The axis to split along.")
    squeeze_axis = Param(bool, False, "Remove the split axis from the outputs (its length must equal num_outputs).")


def _split_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    p, name = attrs.parsed, attrs.name
    n = p.num_outputs
    piece: ShapeT = None  # one output's shape
    for i, shape in enumerate(out_shapes):
        piece = _merge(name, piece, shape, f"output {i} (all outputs have one shape)")
    data = in_shapes[0]
    if data is None and piece is None:
        return False
    ndim = len(data) if data is not None else len(piece) + (1 if p.squeeze_axis else 0)
    axis = normalize_axis(name, p.axis, ndim)
    if data is not None:
        length = data[axis]
        if length and p.squeeze_axis and length != n:
            raise InferenceError(
                f"{name}: with squeeze_axis=True the length of the split axis must equal num_outputs: "
                f"input shape {data}, axis={p.axis}, num_outputs={n}"
            )
        if length and length % n:
            raise InferenceError(
                f"{name}: cannot split input shape {data} into {n} equal pieces along axis={p.axis} "
                f"(length {length} is not divisible by {n})"
            )
        part = data[:axis] + ((length // n,) if not p.squeeze_axis else ()) + data[axis + 1 :]
        piece = _merge(name, piece, part, "the outputs")
    if p.squeeze_axis:
        whole = piece[:axis] + (n,) + piece[axis:]
    else:
        whole = piece[:axis] + (piece[axis] * n,) + piece[axis + 1 :]
    shape_assign(in_shapes, 0, whole, name, "input")
    for i in range(n):
        shape_assign(out_shapes, i, piece, name, f"output {i}")
    return shape_known(in_shapes[0])


def _split_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    p, x = attrs.parsed, inputs[0]
    axis = normalize_axis(attrs.name, p.axis, x.ndim)
    for i, piece in enumerate(op_ctx.xp.split(x, p.num_outputs, axis=axis)):
        put(outputs[i], req[i], piece.reshape(outputs[i].shape))


def _split_backward_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    return _split_shape(attrs, out_shapes, in_shapes)


def _split_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, p = op_ctx.xp, attrs.parsed
    axis = normalize_axis(attrs.name, p.axis, outputs[0].ndim)
    whole = xp.stack(inputs, axis=axis) if p.squeeze_axis else xp.concatenate(inputs, axis=axis)
    put(outputs[0], req[0], whole)


(
    register("SliceChannel")
    .describe("Splits an array into ``num_outputs`` equal pieces along ``axis``.")
    .set_params(SliceChannelParam)
    .set_num_inputs(1)
    .set_num_outputs(lambda attrs: attrs.parsed.num_outputs)
    .set_input_names(["data"])
    .set_infer_shape(_split_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_split_compute)
    .set_gradient(lambda node, out_grads: backward_entries(node, "_backward_SliceChannel", list(out_grads)))
)
alias("split", "SliceChannel")
(
    register("_backward_SliceChannel")
    .set_params(SliceChannelParam)
    .set_num_inputs(lambda attrs: attrs.parsed.num_outputs)
    .set_num_outputs(1)
    .set_infer_shape(_split_backward_shape)
    .set_infer_type(_same_type_all)
    .set_compute(_split_backward)
    .set_is_backward()
)


# ----------------------------------------------------------------------------- slice, slice_axis


class OptionalIntTuple(Param):
    """A parameter holding a tuple of ints or None (``slice``'s begin/end/step).

    MXNet's symbol JSON writes these as ``"(None, 2)"``; :class:`Shape` only takes ints.
    """

    def __init__(self, default: Any = REQUIRED, description: str = "", optional: bool = False) -> None:
        super().__init__(tuple, default, description, optional=optional)

    def type_name(self) -> str:
        text = "tuple of (int or None)"
        return f"{text}, required" if self.default is REQUIRED else f"{text}, optional, default={self.default!r}"

    def _expected(self) -> str:
        return "a tuple of integers or None such as (0, None, 2)"

    def _convert(self, value: Any) -> tuple[int | None, ...]:
        if isinstance(value, str):
            value = ast.literal_eval(value.strip()) if value.strip() else ()
        if isinstance(value, int | np.integer) and not isinstance(value, bool):
            return (int(value),)
        items = tuple(value)
        for v in items:
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | np.integer)):
                raise TypeError(value)
        return tuple(None if v is None else int(v) for v in items)

    def format(self, value: Any) -> str:
        if value is None:
            return "None"
        parts = ["None" if v is None else str(v) for v in value]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


class SliceParam(ParamSet):
    begin = OptionalIntTuple(REQUIRED, "Start of the slice on each leading axis (None: from the start).")
    end = OptionalIntTuple(REQUIRED, "End of the slice on each leading axis, exclusive (None: to the end).")
    step = OptionalIntTuple((), "Step on each leading axis (empty or None: 1).", optional=True)


def _slice_key(attrs: Any, ndim: int) -> tuple[slice, ...]:
    p, name = attrs.parsed, attrs.name
    begin, end, step = p.begin, p.end, p.step or ()
    if len(begin) != len(end):
        raise InferenceError(f"{name}: begin and end must have the same length, got begin={begin}, end={end}")
    if len(step) not in (0, len(begin)):
        raise InferenceError(f"{name}: step must be empty or as long as begin, got step={step}, begin={begin}")
    if len(begin) > ndim:
        raise InferenceError(f"{name}: slicing {len(begin)} axes exceeds the data dimensions ({ndim})")
    key = []
    for i in range(len(begin)):
        s = step[i] if step and step[i] is not None else 1
        if s == 0:
            raise InferenceError(f"{name}: step[{i}] cannot be 0")
        key.append(slice(begin[i], end[i], s))
    return tuple(key)


def _sliced_shape(name: str, shape: tuple[int, ...], key: Sequence[slice]) -> tuple[int, ...]:
    out = list(shape)
    for i, k in enumerate(key):
        if shape[i] == 0:
            continue  # unknown length: unknown result
        out[i] = len(range(*k.indices(shape[i])))
        if out[i] == 0:
            raise InferenceError(
                f"{name}: slice [{k.start}:{k.stop}:{k.step}] of axis {i} (length {shape[i]}) is empty; "
                "MXLab does not support zero-size arrays"
            )
    return tuple(out)


def _slice_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape = in_shapes[0]
    if shape is None:
        return False
    key = _slice_key(attrs, len(shape))
    shape_assign(out_shapes, 0, _sliced_shape(attrs.name, shape, key), attrs.name, "output")
    return shape_known(shape)


def _slice_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x = inputs[0]
    put(outputs[0], req[0], x[_slice_key(attrs, x.ndim)])


def _scatter_slice(outputs: list, req: list, key: tuple, ograd: Any) -> None:
    """Gradient of a slice: ``ograd`` goes into ``key`` of the output, zeros elsewhere."""
    if req[0] is Req.NULL:
        return
    out = outputs[0]
    if req[0] is not Req.ADD:
        out[...] = 0
    out[key] += ograd.astype(out.dtype, copy=False)


def _slice_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # inputs: (out_grad, data)
    _scatter_slice(outputs, req, _slice_key(attrs, inputs[1].ndim), inputs[0])


(
    register("slice")
    .describe("Slices ``[begin:end:step]`` on the leading axes (None entries: Python's defaults).")
    .set_params(SliceParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_slice_shape)
    .set_infer_type(same_type)
    .set_compute(_slice_compute)
    .set_gradient(lambda node, out_grads: backward_entries(node, "_backward_slice", [out_grads[0], node.inputs[0]]))
)
alias("crop", "slice")
(
    register("_backward_slice")
    .set_params(SliceParam)
    .set_num_inputs(2)
    .set_infer_shape(grads_like_inputs(1))
    .set_infer_type(grad_types_like_inputs(1))
    .set_compute(_slice_backward)
    .set_is_backward()
)


class SliceAxisParam(ParamSet):
    axis = Param(int, REQUIRED, "The axis to slice.")
    begin = Param(int, REQUIRED, "Start index (negative counts from the end).")
    end = Param(int, REQUIRED, "End index, exclusive (negative counts from the end; None: the end).", optional=True)


def _slice_axis_key(attrs: Any, shape: tuple[int, ...]) -> tuple[int, slice]:
    p, name = attrs.parsed, attrs.name
    axis = normalize_axis(name, p.axis, len(shape))
    length = shape[axis]
    begin, end = p.begin, p.end
    if length == 0:  # unknown length: cannot resolve negative positions
        return axis, slice(begin, end)
    if begin < 0:
        begin += length
    end = length if end is None else (end + length if end < 0 else end)
    if not 0 <= begin < length:
        raise InferenceError(f"{name}: invalid begin={p.begin} for axis {p.axis} of length {length}")
    if not 0 < end <= length:
        raise InferenceError(f"{name}: invalid end={p.end} for axis {p.axis} of length {length}")
    if begin >= end:
        raise InferenceError(f"{name}: invalid begin, end: begin={p.begin} must come before end={p.end}")
    return axis, slice(begin, end)


def _slice_axis_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape = in_shapes[0]
    if shape is None:
        return False
    axis, key = _slice_axis_key(attrs, shape)
    out = list(shape)
    out[axis] = key.stop - key.start if shape[axis] else 0
    shape_assign(out_shapes, 0, tuple(out), attrs.name, "output")
    return shape_known(shape)


def _slice_axis_full_key(attrs: Any, shape: tuple[int, ...]) -> tuple[slice, ...]:
    axis, key = _slice_axis_key(attrs, shape)
    return (slice(None),) * axis + (key,)


def _slice_axis_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x = inputs[0]
    put(outputs[0], req[0], x[_slice_axis_full_key(attrs, x.shape)])


def _slice_axis_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    _scatter_slice(outputs, req, _slice_axis_full_key(attrs, inputs[1].shape), inputs[0])


(
    register("slice_axis")
    .describe("Slices ``[begin:end]`` along one axis.")
    .set_params(SliceAxisParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_slice_axis_shape)
    .set_infer_type(same_type)
    .set_compute(_slice_axis_compute)
    .set_gradient(
        lambda node, out_grads: backward_entries(node, "_backward_slice_axis", [out_grads[0], node.inputs[0]])
    )
)
(
    register("_backward_slice_axis")
    .set_params(SliceAxisParam)
    .set_num_inputs(2)
    .set_infer_shape(grads_like_inputs(1))
    .set_infer_type(grad_types_like_inputs(1))
    .set_compute(_slice_axis_backward)
    .set_is_backward()
)


# ----------------------------------------------------------------------------- tile, repeat


class TileParam(ParamSet):
    reps = Param(Shape, REQUIRED, "Repetitions per axis (aligned from the right, like numpy.tile).")


def _tile_plan(attrs: Any, ndim: int) -> tuple[int, tuple[int, ...]]:
    """(number of leading 1s to give the input, reps padded to the output rank)."""
    reps = tuple(attrs.parsed.reps)
    if any(r <= 0 for r in reps):
        raise InferenceError(f"{attrs.name}: reps={reps} must be positive (zero-size arrays are not supported)")
    rank = max(ndim, len(reps))
    return rank - ndim, (1,) * (rank - len(reps)) + reps


def _tile_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape, out, name = in_shapes[0], out_shapes[0], attrs.name
    if shape is not None:
        pad, reps = _tile_plan(attrs, len(shape))
        full = (1,) * pad + shape
        shape_assign(out_shapes, 0, tuple(d * r for d, r in zip(full, reps, strict=True)), name, "output")
    elif out is not None and len(out) > len(attrs.parsed.reps):  # the input rank is the output rank here
        _, reps = _tile_plan(attrs, len(out))
        if any(o % r for o, r in zip(out, reps, strict=True)):
            raise InferenceError(f"{name}: output shape {out} is not a multiple of reps={attrs.parsed.reps}")
        shape_assign(in_shapes, 0, tuple(o // r for o, r in zip(out, reps, strict=True)), name, "input")
    return shape_known(in_shapes[0])


def _tile_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x = inputs[0]
    _, reps = _tile_plan(attrs, x.ndim)
    put(outputs[0], req[0], op_ctx.xp.tile(x, reps))


def _tile_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # inputs: (out_grad, data): view the gradient as (r0, d0, r1, d1, ...) and sum the copies
    ograd, x = inputs
    pad, reps = _tile_plan(attrs, x.ndim)
    full = (1,) * pad + x.shape
    interleaved = [n for pair in zip(reps, full, strict=True) for n in pair]
    summed = ograd.reshape(interleaved).sum(axis=tuple(range(0, 2 * len(full), 2)))
    put(outputs[0], req[0], summed.reshape(x.shape))


(
    register("tile")
    .describe("Repeats the whole array ``reps`` times per axis (numpy.tile).")
    .set_params(TileParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_tile_shape)
    .set_infer_type(same_type)
    .set_compute(_tile_compute)
    .set_gradient(lambda node, out_grads: backward_entries(node, "_backward_tile", [out_grads[0], node.inputs[0]]))
)
(
    register("_backward_tile")
    .set_params(TileParam)
    .set_num_inputs(2)
    .set_infer_shape(grads_like_inputs(1))
    .set_infer_type(grad_types_like_inputs(1))
    .set_compute(_tile_backward)
    .set_is_backward()
)


class RepeatParam(ParamSet):
    repeats = Param(int, REQUIRED, "How many times each element is repeated.", low=1)
    axis = Param(int, None, "The axis to repeat along; None repeats the flattened array.")


def _repeat_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape, p, name = in_shapes[0], attrs.parsed, attrs.name
    if shape is None:
        return False
    if p.axis is None:
        out: tuple[int, ...] = (math.prod(shape) * p.repeats,)
    else:
        axis = normalize_axis(name, p.axis, len(shape))
        out = shape[:axis] + (shape[axis] * p.repeats,) + shape[axis + 1 :]
    shape_assign(out_shapes, 0, out, name, "output")
    return shape_known(shape)


def _repeat_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x, p = inputs[0], attrs.parsed
    axis = None if p.axis is None else normalize_axis(attrs.name, p.axis, x.ndim)
    put(outputs[0], req[0], op_ctx.xp.repeat(x, p.repeats, axis=axis))


def _repeat_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # each element's copies sit next to each other: (..., d, repeats, ...) and sum the copies
    ograd, x = inputs
    p = attrs.parsed
    if p.axis is None:
        summed = ograd.reshape(-1, p.repeats).sum(axis=1)
    else:
        axis = normalize_axis(attrs.name, p.axis, x.ndim)
        summed = ograd.reshape(x.shape[: axis + 1] + (p.repeats,) + x.shape[axis + 1 :]).sum(axis=axis + 1)
    put(outputs[0], req[0], summed.reshape(x.shape))


(
    register("repeat")
    .describe("Repeats each element ``repeats`` times along ``axis`` (numpy.repeat).")
    .set_params(RepeatParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_repeat_shape)
    .set_infer_type(same_type)
    .set_compute(_repeat_compute)
    .set_gradient(lambda node, out_grads: backward_entries(node, "_backward_repeat", [out_grads[0], node.inputs[0]]))
)
(
    register("_backward_repeat")
    .set_params(RepeatParam)
    .set_num_inputs(2)
    .set_infer_shape(grads_like_inputs(1))
    .set_infer_type(grad_types_like_inputs(1))
    .set_compute(_repeat_backward)
    .set_is_backward()
)
