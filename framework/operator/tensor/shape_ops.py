"""Shape operators that the NDArray front end itself relies on: Reshape, Cast, basic indexing.

``reshape_shape`` implements MXNet's special codes for ``Reshape``'s ``shape``:

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

import numpy as np

from ...base import MXLabError
from ..grad import make_backward_node
from ..infer import InferenceError, elemwise_shape, shape_assign, shape_known, type_assign
from ..kernel import ADD, NULL, assign
from ..node import Entry
from ..params import DType, Param, ParamSet, Shape
from ..registry import alias, register


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


def _reshape_shape(attrs, in_shapes, out_shapes) -> bool:
    if shape_known(in_shapes[0]):
        shape_assign(
            out_shapes, 0, reshape_shape(in_shapes[0], attrs.parsed.shape, attrs.parsed.reverse), attrs.name, "output"
        )
    return shape_known(out_shapes[0])


def _same_type(attrs, in_types, out_types) -> bool:
    type_assign(out_types, 0, in_types[0], attrs.name, "output")
    type_assign(in_types, 0, out_types[0], attrs.name, "input")
    return out_types[0] is not None


def _reshape_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    assign(outputs[0], req[0], inputs[0].reshape(outputs[0].shape))


def _reshape_backward_shape(attrs, in_shapes, out_shapes) -> bool:
    return shape_known(out_shapes[0])


def _reshape_like_input_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    # inputs: (out_grad, forward input); the gradient takes the forward input's shape
    assign(outputs[0], req[0], inputs[0].reshape(inputs[1].shape))


(
    register("Reshape")
    .describe("Reshapes the input to ``shape`` (a copy; ``NDArray.reshape`` is the view).")
    .set_params(ReshapeParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_reshape_shape)
    .set_infer_type(_same_type)
    .set_compute(_reshape_compute)
    .set_inplace_option(lambda attrs: [(0, 0)])
    .set_gradient(
        lambda node, out_grads: [
            Entry(make_backward_node(node, "_backward_Reshape", [out_grads[0], node.inputs[0]]), 0)
        ]
    )
)
alias("reshape", "Reshape")


def _backward_reshape_shape(attrs, in_shapes, out_shapes) -> bool:
    shape_assign(out_shapes, 0, in_shapes[1], attrs.name, "input gradient")
    return shape_known(out_shapes[0])


(
    register("_backward_Reshape")
    .set_params(ReshapeParam)
    .set_num_inputs(2)
    .set_infer_shape(_backward_reshape_shape)
    .set_infer_type(_same_type)
    .set_compute(_reshape_like_input_compute)
    .set_is_backward()
)


class CastParam(ParamSet):
    dtype = Param(DType, "float32", "The output data type.")


def _cast_type(attrs, in_types, out_types) -> bool:
    type_assign(out_types, 0, attrs.parsed.dtype, attrs.name, "output")
    return in_types[0] is not None


def _cast_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    assign(outputs[0], req[0], inputs[0].astype(outputs[0].dtype))


def _cast_backward_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    # inputs: (out_grad, forward input): the gradient goes back in the input's dtype
    assign(outputs[0], req[0], inputs[0].astype(outputs[0].dtype))


def _cast_backward_type(attrs, in_types, out_types) -> bool:
    type_assign(out_types, 0, in_types[1], attrs.name, "input gradient")
    return out_types[0] is not None


(
    register("Cast")
    .describe("Casts the input to ``dtype``.")
    .set_params(CastParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(elemwise_shape)
    .set_infer_type(_cast_type)
    .set_compute(_cast_compute)
    .set_gradient(
        lambda node, out_grads: [Entry(make_backward_node(node, "_backward_Cast", [out_grads[0], node.inputs[0]]), 0)]
    )
)
alias("cast", "Cast")
(
    register("_backward_Cast")
    .set_params(CastParam)
    .set_num_inputs(2)
    .set_infer_shape(_backward_reshape_shape)
    .set_infer_type(_cast_backward_type)
    .set_compute(_cast_backward_compute)
    .set_is_backward()
)


# ---------------------------------------------------------------------------- basic indexing
def encode_index(key: object) -> str:
    """A basic index (ints, slices, Ellipsis, None) as a string parameter."""
    parts = key if isinstance(key, tuple) else (key,)
    encoded = []
    for part in parts:
        if part is Ellipsis:
            encoded.append("e")
        elif part is None:
            encoded.append("n")
        elif isinstance(part, slice):
            fields = ["" if v is None else str(int(v)) for v in (part.start, part.stop, part.step)]
            encoded.append("s" + ":".join(fields))
        else:
            encoded.append(f"i{int(part)}")
    return ",".join(encoded)


def decode_index(text: str) -> tuple:
    """The inverse of :func:`encode_index`."""
    parts: list[object] = []
    for token in filter(None, text.split(",")):
        kind, body = token[0], token[1:]
        if kind == "e":
            parts.append(Ellipsis)
        elif kind == "n":
            parts.append(None)
        elif kind == "s":
            start, stop, step = (int(v) if v else None for v in body.split(":"))
            parts.append(slice(start, stop, step))
        elif kind == "i":
            parts.append(int(body))
        else:
            raise MXLabError(f"_basic_index: malformed key {text!r}")
    return tuple(parts)


class BasicIndexParam(ParamSet):
    key = Param(str, "", "The basic index, encoded (see encode_index).")


def _probe_shape(shape: tuple[int, ...], key: tuple) -> tuple[int, ...]:
    return np.broadcast_to(np.empty((), dtype=np.bool_), shape)[key].shape


def _basic_index_shape(attrs, in_shapes, out_shapes) -> bool:
    if shape_known(in_shapes[0]):
        shape_assign(out_shapes, 0, _probe_shape(in_shapes[0], decode_index(attrs.parsed.key)), attrs.name, "output")
    return out_shapes[0] is not None


def _basic_index_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    assign(outputs[0], req[0], inputs[0][decode_index(attrs.parsed.key)])


def _basic_index_backward_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    # inputs: (out_grad, forward input); scatter the gradient into zeros of the input's shape
    if req[0] is NULL:
        return
    grad = op_ctx.xp.zeros_like(outputs[0]) if req[0] is ADD else outputs[0]
    if req[0] is not ADD:
        grad[...] = 0
    grad[decode_index(attrs.parsed.key)] += inputs[0]
    if req[0] is ADD:
        outputs[0] += grad


(
    register("_basic_index")
    .describe("Basic indexing (ints, slices) recorded by autograd; the gradient scatters back.")
    .set_params(BasicIndexParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_basic_index_shape)
    .set_infer_type(_same_type)
    .set_compute(_basic_index_compute)
    .set_gradient(
        lambda node, out_grads: [
            Entry(make_backward_node(node, "_backward_basic_index", [out_grads[0], node.inputs[0]]), 0)
        ]
    )
)
(
    register("_backward_basic_index")
    .set_params(BasicIndexParam)
    .set_num_inputs(2)
    .set_infer_shape(_backward_reshape_shape)
    .set_infer_type(lambda attrs, i, o: (type_assign(o, 0, i[0], attrs.name, "output"), True)[1])
    .set_compute(_basic_index_backward_compute)
    .set_is_backward()
)
