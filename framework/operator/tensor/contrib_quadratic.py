"""``_contrib_quadratic``: the operator of seed 004 ("A Beginner's Guide to Implementing Operators").

``f(x) = a*x^2 + b*x + c``, element-wise, with ``a``, ``b``, ``c`` parameters defaulting to 0.
It is the worked example of the registration API (``docs/writing-operators.md`` shows the
same code): a parameter struct, mutual shape/type inference (``elemwise_shape`` fills the
input from the output as well as the other way round), one compute function serving NumPy
and CuPy, a gradient that keeps the *input* alive for backward (``elemwise_grad_use_in``:
``d/dx = 2*a*x + b`` needs ``x``), an in-place hint, and a separately registered backward
operator. The ``_contrib_`` prefix makes it ``mx.nd.contrib.quadratic``.

Example::

    >>> x = mx.nd.array([[1, 2], [3, 4]])
    >>> mx.nd.contrib.quadratic(x, a=1, b=2, c=3).asnumpy()
    array([[ 6., 11.],
           [18., 27.]], dtype=float32)
"""

from __future__ import annotations

from typing import Any

from ..grad import elemwise_grad_use_in
from ..infer import elemwise_shape, elemwise_type
from ..kernel import OpContext, Req, assign
from ..node import NodeAttrs
from ..params import Param, ParamSet
from ..registry import register


class QuadraticParam(ParamSet):
    """MXNet's ``QuadraticParam``: the three coefficients, all defaulting to 0."""

    a = Param(float, 0.0, "Coefficient of the quadratic term in the quadratic function.")
    b = Param(float, 0.0, "Coefficient of the linear term in the quadratic function.")
    c = Param(float, 0.0, "Constant term in the quadratic function.")


def quadratic_forward(
    attrs: NodeAttrs, op_ctx: OpContext, inputs: list[Any], req: list[Req], outputs: list[Any]
) -> None:
    """out = a*x^2 + b*x + c, computed as x*(a*x + b) + c (Horner: one multiply fewer)."""
    p, x = attrs.parsed, inputs[0]
    # The value is computed before assigning: with the in-place hint, outputs[0] may be x.
    assign(outputs[0], req[0], x * (p.a * x + p.b) + p.c)


def quadratic_backward(
    attrs: NodeAttrs, op_ctx: OpContext, inputs: list[Any], req: list[Req], outputs: list[Any]
) -> None:
    """in_grad = out_grad * (2*a*x + b); inputs are (out_grad, x) as elemwise_grad_use_in passes them."""
    out_grad, x = inputs
    p = attrs.parsed
    assign(outputs[0], req[0], out_grad * (2 * p.a * x + p.b))


(
    register("_contrib_quadratic")  # -> mx.nd.contrib.quadratic
    .describe(
        """This operator implements the quadratic function

    f(x) = a*x^2 + b*x + c

where x is an input tensor and all operations in the function are element-wise.

Example::

    x = [[1, 2], [3, 4]]
    y = quadratic(data=x, a=1, b=2, c=3)
    y = [[6, 11], [18, 27]]
"""
    )
    .set_params(QuadraticParam)
    .set_num_inputs(1)
    .set_num_outputs(1)
    .set_input_names(["data"])
    .set_infer_shape(elemwise_shape)
    .set_infer_type(elemwise_type)
    .set_compute(quadratic_forward)
    .set_gradient(elemwise_grad_use_in("_backward_contrib_quadratic"))
    .set_inplace_option(lambda attrs: [(0, 0)])
)

(
    register("_backward_contrib_quadratic")
    .set_params(QuadraticParam)
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_input_names(["out_grad", "data"])
    .set_infer_shape(elemwise_shape)
    .set_infer_type(elemwise_type)
    .set_compute(quadratic_backward)
    .set_is_backward()
)
