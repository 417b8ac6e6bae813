"""``reverse`` (alias ``flip``): the elements in reverse order along some axes.

No arithmetic, so the output has the input's shape and dtype, and the gradient is the output
gradient reversed along the same axes (``_backward_reverse``, which needs nothing else).
"""

from __future__ import annotations

from typing import Any

from ..grad import elemwise_grad_use_none
from ..infer import InferenceError, elemwise_shape, elemwise_type
from ..params import REQUIRED, Param, ParamSet, Shape
from ..registry import alias, register
from .common import normalize_axis, put


class ReverseParam(ParamSet):
    axis = Param(Shape, REQUIRED, "The axes to reverse (negative counts from the end).")


def _axes(attrs: Any, ndim: int) -> tuple[int, ...]:
    axes = tuple(normalize_axis(attrs.name, a, ndim) for a in attrs.parsed.axis)
    if len(set(axes)) != len(axes):
        raise InferenceError(f"{attrs.name}: axis={tuple(attrs.parsed.axis)} names an axis twice")
    return axes


def _reverse_shape(attrs: Any, in_shapes: list, out_shapes: list) -> bool:
    known = in_shapes[0] if in_shapes[0] is not None else out_shapes[0]
    if known is not None:
        _axes(attrs, len(known))
    return elemwise_shape(attrs, in_shapes, out_shapes)


def _reverse_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x = inputs[0]
    put(outputs[0], req[0], op_ctx.xp.flip(x, axis=_axes(attrs, x.ndim)))


(
    register("reverse")
    .describe("Reverses the order of elements along the given axes.")
    .set_params(ReverseParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_reverse_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_reverse_compute)
    .set_gradient(elemwise_grad_use_none("_backward_reverse"))
)
alias("flip", "reverse")

(
    register("_backward_reverse")
    .set_params(ReverseParam)
    .set_num_inputs(1)
    .set_infer_shape(_reverse_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_reverse_compute)
    .set_is_backward()
)
