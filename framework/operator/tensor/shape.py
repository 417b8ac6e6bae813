"""Shape changes that keep every element in order: ``Reshape`` (alias ``reshape``),
``Flatten`` (alias ``flatten``), ``expand_dims`` and ``squeeze``.

None of them moves data: the output is the input's elements in the same (row-major) order
with other dimensions, so each gradient is the output gradient reshaped back to the input's
shape (one ``_backward_<name>`` operator each, built by ``_register_reshape_backward``).

:func:`reshape_shape` implements MXNet's special codes for ``Reshape``'s ``shape`` (the
NDArray front end uses it too):

==== =========================================================================
code meaning
==== =========================================================================
 0   copy this dimension of the input
-1   infer this dimension from the others (at most one)
-2   copy all remaining input dimensions
-3   merge two consecutive input dimensions into their product
-4   split one input dimension into the next two values (one of them may be -1)
==== =========================================================================

With ``reverse=True`` the codes are matched from the right (both lists are reversed, the
rule applied, and the result reversed back), as MXNet does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...base import MXLabError
from ..grad import elemwise_grad_use_in
from ..infer import (
    InferenceError,
    ShapeT,
    shape_assign,
    shape_known,
)
from ..kernel import assign
from ..params import REQUIRED, Param, ParamSet, Shape
from ..registry import alias, register
from .common import (
    normalize_axis,
    put,
    register_backward,
    same_type,
)


def reshape_shape(src: Sequence[int], spec: Sequence[int], reverse: bool = False) -> tuple[int, ...]:
    """The output shape of reshaping ``src`` by ``spec`` (with MXNet's special codes)."""
    src, spec = list(src), [int(s) for s in spec]
    if reverse:
        src, spec = src[::-1], spec[::-1]
    out: list[int] = []
    infer_at = -1
    i = j = 0  # i walks spec, j walks src

    def fail(why: str) -> MXLabError:
        return InferenceError(f"Reshape: cannot reshape {tuple(src)} with shape={tuple(spec)}: {why}")

    while i < len(spec):
        code = spec[i]
        if code > 0:
            out.append(code)
            j += 1
        elif code == 0:
            if j >= len(src):
                raise fail("0 copies a dimension the input does not have")
            out.append(src[j])
            j += 1
        elif code == -1:
            if infer_at >= 0:
                raise fail("only one dimension can be -1")
            infer_at = len(out)
            out.append(1)
            j += 1
        elif code == -2:
            out.extend(src[j:])
            j = len(src)
        elif code == -3:
            if j + 1 >= len(src):
                raise fail("-3 needs two input dimensions to merge")
            out.append(src[j] * src[j + 1])
            j += 2
        elif code == -4:
            if i + 2 >= len(spec) or j >= len(src):
                raise fail("-4 must be followed by two values and split an existing dimension")
            whole, first, second = src[j], spec[i + 1], spec[i + 2]
            if first == -1:
                first = whole // second if second else 0
            if second == -1:
                second = whole // first if first else 0
            if first * second != whole:
                raise fail(f"-4 cannot split {whole} into {spec[i + 1]} x {spec[i + 2]}")
            out.extend([first, second])
            i += 2
            j += 1
        else:
            raise fail(f"unknown code {code}")
        i += 1
    total = math.prod(src)
    if infer_at >= 0:
        known = math.prod(out)
        if known == 0 or total % known:
            raise fail("the -1 dimension cannot be inferred")
        out[infer_at] = total // known
    if reverse:
        out = out[::-1]
        src = src[::-1]
    if math.prod(out) != total:
        raise InferenceError(f"Reshape: cannot reshape array of shape {tuple(src)} into {tuple(out)} (size differs)")
    return tuple(out)


class ReshapeParam(ParamSet):
    shape = Param(Shape, Shape(), "The target shape (may use the special codes 0, -1, -2, -3, -4).")
    reverse = Param(bool, False, "Match the special codes from the right.")


def input_from_output(src: ShapeT, out: ShapeT) -> ShapeT:
    """The input shape ``src`` with its one unknown (0) dimension filled from the known output ``out``.

    Reshape keeps the element count, so a single unknown input dimension is the output's size
    divided by the product of the known ones (MXNet's reverse reshape inference). Nothing can be
    said with an unknown rank, an unknown output, or two or more unknown input dimensions.
    """
    if src is None or not shape_known(out) or src.count(0) != 1:
        return src
    known = math.prod(d for d in src if d)
    total = math.prod(out)
    if total % known:
        raise InferenceError(f"Reshape: output {tuple(out)} has {total} elements, not a multiple of input {src}")
    return tuple(total // known if d == 0 else d for d in src)


def _reshape_shape(attrs, in_shapes, out_shapes) -> bool:
    # backwards first: a parameter flattened by reshape(-1) learns its shape from where the flat vector goes
    shape_assign(in_shapes, 0, input_from_output(in_shapes[0], out_shapes[0]), attrs.name, "data")
    if shape_known(in_shapes[0]):  # forwards, which also checks a filled-in input against the output
        shape_assign(
            out_shapes, 0, reshape_shape(in_shapes[0], attrs.parsed.shape, attrs.parsed.reverse), attrs.name, "output"
        )
    return shape_known(in_shapes[0]) and shape_known(out_shapes[0])


def _reshape_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    assign(outputs[0], req[0], inputs[0].reshape(outputs[0].shape))


def _reshape_back(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    """Backward of reshape-like operators: inputs (out_grad, data); the gradient takes data's shape."""
    put(outputs[0], req[0], inputs[0].reshape(inputs[1].shape))


def _register_reshape_backward(name: str, params: type[ParamSet] | None) -> None:
    register_backward(name, _reshape_back, params=params)


(
    register("Reshape")
    .describe("Reshapes the input to ``shape`` (a copy; ``NDArray.reshape`` is the view).")
    .set_params(ReshapeParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_reshape_shape)
    .set_infer_type(same_type)
    .set_compute(_reshape_compute)
    .set_inplace_option(lambda attrs: [(0, 0)])
    .set_gradient(elemwise_grad_use_in("_backward_Reshape"))
)
alias("reshape", "Reshape")
_register_reshape_backward("_backward_Reshape", ReshapeParam)


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
    .set_gradient(elemwise_grad_use_in("_backward_Flatten"))
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
    .set_gradient(elemwise_grad_use_in("_backward_expand_dims"))
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
    .set_gradient(elemwise_grad_use_in("_backward_squeeze"))
)
_register_reshape_backward("_backward_squeeze", SqueezeParam)
