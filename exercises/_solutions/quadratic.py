"""Exercise ``quadratic``: the operator of MXNet's operator guide, f(x) = a*x^2 + b*x + c, through the registry.

Registered as ``exercise_quadratic`` (the framework's own is ``_contrib_quadratic``), with
its backward ``_backward_exercise_quadratic``. The registration block at the bottom is
given; fill in the four functions it uses.

Contract (docs/writing-operators.md, "The contract"):

* ``quadratic_infer_shape(attrs, in_shapes, out_shapes) -> bool``: one input, one output,
  same shape. Fill whichever side is unknown *from the other* (mutual inference: MXNet's operator guide
  calls SHAPE_ASSIGN_CHECK both ways), merge partially known shapes (0 = unknown
  dimension), raise ``InferenceError`` when both are known and differ. Return True when
  the shape is completely known.
* ``quadratic_infer_type(attrs, in_types, out_types) -> bool``: the same for dtypes.
* ``quadratic_forward(attrs, op_ctx, inputs, req, outputs)``: ``outputs[0] = a*x^2 + b*x
  + c`` with ``x = inputs[0]`` and ``a, b, c = attrs.parsed.a, .b, .c``, written *through*
  ``assign(outputs[0], req[0], value)`` so that ``req`` write overwrites, add accumulates
  and null leaves the output alone. The output may be the input's memory (in-place).
* ``quadratic_backward(attrs, op_ctx, inputs, req, outputs)``: ``inputs`` are
  ``(out_grad, x)``; ``outputs[0]`` (the gradient of x) is ``out_grad * (2*a*x + b)``,
  again through ``assign``.
"""

from __future__ import annotations

from typing import Any

from framework.operator import (
    OpContext,
    Param,
    ParamSet,
    Req,
    assign,
    elemwise_grad_use_in,
    register_op,
    shape_assign,
    type_assign,
)
from framework.operator.infer import shape_known
from framework.operator.node import NodeAttrs


class QuadraticParam(ParamSet):
    """The three coefficients, all defaulting to 0 (MXNet's operator guide's QuadraticParam)."""

    a = Param(float, 0.0, "Coefficient of the quadratic term.")
    b = Param(float, 0.0, "Coefficient of the linear term.")
    c = Param(float, 0.0, "Constant term.")


def quadratic_infer_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    """Input and output share one shape, inferred from whichever side knows it (both ways)."""
    # BEGIN SOLUTION infer the output shape from the input AND the input shape from the output
    shape_assign(out_shapes, 0, in_shapes[0], attrs.name, "output")
    shape_assign(in_shapes, 0, out_shapes[0], attrs.name, "input")
    return shape_known(out_shapes[0])
    # END SOLUTION


def quadratic_infer_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    """Input and output share one dtype, inferred from whichever side knows it (both ways)."""
    # BEGIN SOLUTION infer the output dtype from the input AND the input dtype from the output
    type_assign(out_types, 0, in_types[0], attrs.name, "output")
    type_assign(in_types, 0, out_types[0], attrs.name, "input")
    return out_types[0] is not None
    # END SOLUTION


def quadratic_forward(
    attrs: NodeAttrs, op_ctx: OpContext, inputs: list[Any], req: list[Req], outputs: list[Any]
) -> None:
    """outputs[0] = a*x^2 + b*x + c, written through assign (req write / add / null)."""
    # BEGIN SOLUTION compute a*x^2 + b*x + c and write it through assign
    p, x = attrs.parsed, inputs[0]
    value = x * (p.a * x + p.b) + p.c  # computed before assigning: outputs[0] may be x itself
    assign(outputs[0], req[0], value)
    # END SOLUTION


def quadratic_backward(
    attrs: NodeAttrs, op_ctx: OpContext, inputs: list[Any], req: list[Req], outputs: list[Any]
) -> None:
    """inputs = (out_grad, x); outputs[0] = out_grad * (2*a*x + b), through assign."""
    # BEGIN SOLUTION compute out_grad * (2*a*x + b) and write it through assign
    out_grad, x = inputs
    p = attrs.parsed
    assign(outputs[0], req[0], out_grad * (2 * p.a * x + p.b))
    # END SOLUTION


def _backward_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    """The gradient of x has x's shape (backward input 1)."""
    shape_assign(out_shapes, 0, in_shapes[1], attrs.name, "gradient")
    return shape_known(out_shapes[0])


def _backward_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, in_types[1], attrs.name, "gradient")
    return out_types[0] is not None


# Registration (given): MXNet's operator guide's NNVM_REGISTER_OP, in MXLab's chained form.
(
    register_op("exercise_quadratic", override=True)
    .describe("f(x) = a*x^2 + b*x + c, element-wise (the quadratic exercise).")
    .set_params(QuadraticParam)
    .set_num_inputs(1)
    .set_num_outputs(1)
    .set_input_names(["data"])
    .set_infer_shape(quadratic_infer_shape)
    .set_infer_type(quadratic_infer_type)
    .set_compute(quadratic_forward)
    .set_gradient(elemwise_grad_use_in("_backward_exercise_quadratic"))
    .set_inplace_option(lambda attrs: [(0, 0)])
)
(
    register_op("_backward_exercise_quadratic", override=True)
    .set_params(QuadraticParam)
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_input_names(["out_grad", "data"])
    .set_infer_shape(_backward_shape)
    .set_infer_type(_backward_type)
    .set_compute(quadratic_backward)
    .set_is_backward()
)
