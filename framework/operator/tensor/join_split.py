"""Joining and splitting along an axis: ``Concat`` (alias ``concat``), ``stack`` and
``SliceChannel`` (alias ``split``).

``Concat`` glues its inputs end to end along an existing axis, ``stack`` along a new one,
and ``split`` cuts one input into equal parts; each is the other's gradient (the gradient of
a join splits the output gradient, the gradient of a split joins the output gradients).
Shape inference runs both ways where the maths allows it: ``Concat`` infers one input's
unknown length from the output, ``split`` the input from any output.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..grad import elemwise_grad_use_in
from ..infer import (
    InferenceError,
    ShapeT,
    elemwise_type,
    merge_shapes,
    shape_assign,
    shape_known,
)
from ..params import REQUIRED, Param, ParamSet
from ..registry import alias, register
from .common import (
    backward_entries,
    merge_or_raise,
    normalize_axis,
    put,
    register_backward,
)


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
    .set_gradient(elemwise_grad_use_in("_backward_Concat"))
)
alias("concat", "Concat")
register_backward(
    "_backward_Concat",
    _concat_backward,
    params=ConcatParam,
    num_inputs=lambda attrs: attrs.parsed.num_args + 1,
    num_outputs=lambda attrs: attrs.parsed.num_args,
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
        common = merge_or_raise(name, common, shape, f"input {i} (stack needs equal shapes)")
    out = out_shapes[0]
    if out is not None:
        axis = _stack_axis(attrs, len(out))
        if out[axis] not in (0, n):
            raise InferenceError(f"{name}: output {out} must have length {n} along axis {attrs.parsed.axis}")
        common = merge_or_raise(name, common, out[:axis] + out[axis + 1 :], "the output")
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
        piece = merge_or_raise(name, piece, shape, f"output {i} (all outputs have one shape)")
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
        piece = merge_or_raise(name, piece, part, "the outputs")
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
