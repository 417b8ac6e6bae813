"""Element-wise unary operators: ``exp``, ``relu``, ``floor``, ``_copy``, ``BlockGrad``, ...

Every operator here maps each element of one input to one element of the output, so they
all share the same skeleton (MXNet's ``MXNET_OPERATOR_REGISTER_UNARY``):

* shape and dtype are those of the input (``elemwise_shape`` / ``elemwise_type``, which also
  infer the input from a known output);
* the output may overwrite the input (in-place option ``(0, 0)``), because element ``i`` of
  the output only needs element ``i`` of the input;
* the gradient is ``out_grad * f'(x)``, computed by a separate ``_backward_<name>`` operator.

What that backward operator takes as inputs matters beyond the maths: it is what the
forward pass must keep alive. MXNet picks the cheaper one per operator, and so do we:

* ``exp``, ``sqrt``, ``tan``, ``tanh``, ``sigmoid``, ``relu``, ``cbrt`` express ``f'`` from the
  *output* (``d exp(x) = exp(x)``, ``d tanh = 1 - tanh^2``), so they use
  ``elemwise_grad_use_out`` and the input can be overwritten in place;
* most others need the *input* (``d log(x) = 1/x``): ``elemwise_grad_use_in``;
* ``negative`` and ``_copy`` need neither (their gradient is ``-g`` / ``g``);
* the rounding operators, ``sign``, ``logical_not`` and ``BlockGrad`` have a zero gradient
  (``zero_grad``), which is how ``BlockGrad`` (``stop_gradient``) stops back-propagation.

Rounding follows MXNet exactly: ``round`` rounds halves away from zero, ``rint`` rounds
halves *down* (towards -inf: ``rint(-2.5) = -3``, ``rint(2.5) = 2``), ``fix`` rounds
towards zero. :func:`compute_into` is the write helper the binary and broadcast families
reuse: it computes a ufunc straight into the output when the output is floating point.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..grad import elemwise_grad_use_in, elemwise_grad_use_none, elemwise_grad_use_out, zero_grad
from ..infer import elemwise_shape, elemwise_type
from ..kernel import NULL, Req, assign, assign_ufunc
from ..registry import alias, register

# ---------------------------------------------------------------------------- write helpers


def compute_into(out: Any, req: Req, ufunc: Callable[..., Any], *args: Any) -> None:
    """Write ``ufunc(*args)`` into ``out`` as ``req`` says, without a temporary when possible.

    Floating-point outputs take the ufunc result directly (``out=``). Integer outputs go
    through a cast, which truncates like MXNet's C++ kernels (``int32 / 2`` rounds to zero).
    """
    if out.dtype.kind == "f":
        assign_ufunc(out, req, ufunc, *args)
    elif req is not NULL:
        put(out, req, ufunc(*args))


def put(out: Any, req: Req, value: Any) -> None:
    """:func:`assign`, casting ``value`` to the output dtype first when they differ."""
    if req is NULL:
        return
    if getattr(value, "dtype", out.dtype) != out.dtype:
        value = value.astype(out.dtype)
    assign(out, req, value)


# ---------------------------------------------------------------------------- forward maths
# Forward functions take (xp, x) and return the result; the ufunc ones are applied with out=.


def _sigmoid(xp: Any, x: Any) -> Any:
    # 0.5 * (1 + tanh(x / 2)) equals 1 / (1 + exp(-x)) but never overflows.
    return 0.5 * (xp.tanh(0.5 * x) + 1)


def _round_half_away(xp: Any, x: Any) -> Any:
    """C's ``round``: halves go away from zero (``round(-2.5) = -3``), unlike ``numpy.round``."""
    t = xp.trunc(x)
    return xp.where(xp.abs(x - t) >= 0.5, t + xp.sign(x), t)


def _rint_mxnet(xp: Any, x: Any) -> Any:
    """MXNet's ``rint``: the nearer of floor and ceil, floor on ties (``rint(-2.5) = -3``)."""
    lo, hi = xp.floor(x), xp.ceil(x)
    return xp.where(x - lo <= hi - x, lo, hi)


UFUNC_FORWARD: dict[str, str] = {
    "abs": "absolute",
    "sign": "sign",
    "exp": "exp",
    "log": "log",
    "log2": "log2",
    "log10": "log10",
    "log1p": "log1p",
    "expm1": "expm1",
    "sqrt": "sqrt",
    "cbrt": "cbrt",
    "square": "square",
    "negative": "negative",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "arcsin": "arcsin",
    "arccos": "arccos",
    "arctan": "arctan",
    "sinh": "sinh",
    "cosh": "cosh",
    "tanh": "tanh",
    "arcsinh": "arcsinh",
    "arccosh": "arccosh",
    "arctanh": "arctanh",
    "degrees": "degrees",
    "radians": "radians",
    "floor": "floor",
    "ceil": "ceil",
    "fix": "trunc",
    "trunc": "trunc",
}

EXPR_FORWARD: dict[str, Callable[[Any, Any], Any]] = {
    "reciprocal": lambda xp, x: 1 / x,
    "rsqrt": lambda xp, x: 1 / xp.sqrt(x),
    "rcbrt": lambda xp, x: 1 / xp.cbrt(x),
    "round": _round_half_away,
    "rint": _rint_mxnet,
    "sigmoid": _sigmoid,
    "softsign": lambda xp, x: x / (1 + xp.abs(x)),
    "logical_not": lambda xp, x: x == 0,
}

# ---------------------------------------------------------------------------- backward maths
# (uses, d/dx as a function of (xp, out_grad, v)) where v is the forward input ("in") or
# output ("out"). Operators missing here have a zero gradient, or a special one below.
_LN2, _LN10 = math.log(2.0), math.log(10.0)

BACKWARD: dict[str, tuple[str, Callable[[Any, Any, Any], Any]]] = {
    "abs": ("in", lambda xp, g, x: g * xp.sign(x)),
    "exp": ("out", lambda xp, g, y: g * y),
    "log": ("in", lambda xp, g, x: g / x),
    "log2": ("in", lambda xp, g, x: g / (x * _LN2)),
    "log10": ("in", lambda xp, g, x: g / (x * _LN10)),
    "log1p": ("in", lambda xp, g, x: g / (1 + x)),
    "expm1": ("in", lambda xp, g, x: g * xp.exp(x)),
    "sqrt": ("out", lambda xp, g, y: g * (0.5 / y)),
    "rsqrt": ("in", lambda xp, g, x: g * (-0.5 / (x * xp.sqrt(x)))),
    "cbrt": ("out", lambda xp, g, y: g / (3 * y * y)),
    "rcbrt": ("in", lambda xp, g, x: g * (-1.0 / (3 * x * xp.cbrt(x)))),
    "square": ("in", lambda xp, g, x: g * (2 * x)),
    "reciprocal": ("in", lambda xp, g, x: -g / (x * x)),
    "sin": ("in", lambda xp, g, x: g * xp.cos(x)),
    "cos": ("in", lambda xp, g, x: -g * xp.sin(x)),
    "tan": ("out", lambda xp, g, y: g * (1 + y * y)),
    "arcsin": ("in", lambda xp, g, x: g / xp.sqrt(1 - x * x)),
    "arccos": ("in", lambda xp, g, x: -g / xp.sqrt(1 - x * x)),
    "arctan": ("in", lambda xp, g, x: g / (1 + x * x)),
    "sinh": ("in", lambda xp, g, x: g * xp.cosh(x)),
    "cosh": ("in", lambda xp, g, x: g * xp.sinh(x)),
    "tanh": ("out", lambda xp, g, y: g * (1 - y * y)),
    "arcsinh": ("in", lambda xp, g, x: g / xp.sqrt(x * x + 1)),
    "arccosh": ("in", lambda xp, g, x: g / xp.sqrt(x * x - 1)),
    "arctanh": ("in", lambda xp, g, x: g / (1 - x * x)),
    "degrees": ("in", lambda xp, g, x: g * (180.0 / math.pi)),
    "radians": ("in", lambda xp, g, x: g * (math.pi / 180.0)),
    "sigmoid": ("out", lambda xp, g, y: g * (y * (1 - y))),
    "relu": ("out", lambda xp, g, y: g * (y > 0)),
    "softsign": ("in", lambda xp, g, x: g / xp.square(1 + xp.abs(x))),
}

ZERO_GRADIENT = ("sign", "floor", "ceil", "round", "rint", "fix", "trunc", "logical_not")

DESCRIPTIONS: dict[str, str] = {
    "abs": "Absolute value, element-wise: ``|x|``.",
    "sign": "Sign, element-wise: -1, 0 or 1 (zero gradient).",
    "exp": "Exponential, element-wise: ``e^x``.",
    "log": "Natural logarithm, element-wise.",
    "log2": "Base-2 logarithm, element-wise.",
    "log10": "Base-10 logarithm, element-wise.",
    "log1p": "``log(1 + x)``, accurate for small x.",
    "expm1": "``exp(x) - 1``, accurate for small x.",
    "sqrt": "Square root, element-wise.",
    "rsqrt": "Reciprocal square root, element-wise: ``1 / sqrt(x)``.",
    "cbrt": "Cube root, element-wise.",
    "rcbrt": "Reciprocal cube root, element-wise: ``1 / cbrt(x)``.",
    "square": "Square, element-wise: ``x^2``.",
    "reciprocal": "Reciprocal, element-wise: ``1 / x``.",
    "negative": "Numerical negative, element-wise: ``-x``.",
    "sin": "Sine, element-wise (radians).",
    "cos": "Cosine, element-wise (radians).",
    "tan": "Tangent, element-wise (radians).",
    "arcsin": "Inverse sine, element-wise; input in [-1, 1].",
    "arccos": "Inverse cosine, element-wise; input in [-1, 1].",
    "arctan": "Inverse tangent, element-wise.",
    "sinh": "Hyperbolic sine, element-wise.",
    "cosh": "Hyperbolic cosine, element-wise.",
    "tanh": "Hyperbolic tangent, element-wise.",
    "arcsinh": "Inverse hyperbolic sine, element-wise.",
    "arccosh": "Inverse hyperbolic cosine, element-wise; input >= 1.",
    "arctanh": "Inverse hyperbolic tangent, element-wise; input in (-1, 1).",
    "degrees": "Converts radians to degrees, element-wise.",
    "radians": "Converts degrees to radians, element-wise.",
    "floor": "Largest integer <= x, element-wise (zero gradient).",
    "ceil": "Smallest integer >= x, element-wise (zero gradient).",
    "round": "Nearest integer, halves away from zero: round(-2.5) = -3 (zero gradient).",
    "rint": "Nearest integer, halves towards -inf as MXNet does: rint(2.5) = 2, rint(-2.5) = -3 (zero gradient).",
    "fix": "Rounds towards zero, element-wise: fix(-2.5) = -2 (zero gradient).",
    "trunc": "Truncates towards zero, element-wise (zero gradient).",
    "sigmoid": "Logistic sigmoid, element-wise: ``1 / (1 + exp(-x))``.",
    "relu": "Rectified linear unit, element-wise: ``max(x, 0)``.",
    "softsign": "Softsign, element-wise: ``x / (1 + |x|)``.",
    "logical_not": "Logical not, element-wise: 1 where x == 0, else 0, in the input dtype.",
}


# ---------------------------------------------------------------------------- compute builders
def _ufunc_compute(ufunc_name: str) -> Callable[..., None]:
    def compute(attrs, op_ctx, inputs, req, outputs) -> None:
        compute_into(outputs[0], req[0], getattr(op_ctx.xp, ufunc_name), inputs[0])

    return compute


def _expr_compute(fn: Callable[[Any, Any], Any]) -> Callable[..., None]:
    def compute(attrs, op_ctx, inputs, req, outputs) -> None:
        if req[0] is not NULL:
            put(outputs[0], req[0], fn(op_ctx.xp, inputs[0]))

    return compute


def _backward_compute(fn: Callable[[Any, Any, Any], Any]) -> Callable[..., None]:
    def compute(attrs, op_ctx, inputs, req, outputs) -> None:
        # inputs: (out_grad, forward input or output); compute before writing (in-place safe)
        if req[0] is not NULL:
            put(outputs[0], req[0], fn(op_ctx.xp, inputs[0], inputs[1]))

    return compute


def _copy_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    assign(outputs[0], req[0], inputs[0])


def _inplace(attrs) -> list[tuple[int, int]]:
    return [(0, 0)]


def register_unary(name: str, compute: Callable[..., None], description: str, gradient: Callable[..., Any]) -> None:
    """Register one element-wise unary operator with the shared skeleton."""
    (
        register(name)
        .describe(description)
        .set_num_inputs(1)
        .set_num_outputs(1)
        .set_input_names(["data"])
        .set_infer_shape(elemwise_shape)
        .set_infer_type(elemwise_type)
        .set_compute(compute)
        .set_gradient(gradient)
        .set_inplace_option(_inplace)
    )


def _register_all() -> None:
    grad_helpers = {"in": elemwise_grad_use_in, "out": elemwise_grad_use_out}
    names = list(UFUNC_FORWARD) + list(EXPR_FORWARD) + ["relu"]
    for name in names:
        if name in UFUNC_FORWARD:
            compute = _ufunc_compute(UFUNC_FORWARD[name])
        elif name == "relu":
            compute = _relu_compute
        else:
            compute = _expr_compute(EXPR_FORWARD[name])
        if name in ZERO_GRADIENT:
            gradient = zero_grad
        elif name == "negative":
            gradient = elemwise_grad_use_none("negative")  # d(-x) = -g: negate the gradient
        else:
            uses, fn = BACKWARD[name]
            gradient = grad_helpers[uses](f"_backward_{name}")
            (
                register(f"_backward_{name}")
                .describe(f"Gradient of {name}: out_grad * d{name}/dx, from the forward {uses}put.")
                .set_num_inputs(2)
                .set_num_outputs(1)
                .set_infer_shape(elemwise_shape)
                .set_infer_type(elemwise_type)
                .set_compute(_backward_compute(fn))
                .set_inplace_option(_inplace)
                .set_is_backward()
            )
        register_unary(name, compute, DESCRIPTIONS[name], gradient)


def _relu_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    compute_into(outputs[0], req[0], op_ctx.xp.maximum, inputs[0], 0)


_register_all()

register_unary(
    "_copy",
    _copy_compute,
    "Returns a copy of the input (its gradient is a copy of the output gradient).",
    elemwise_grad_use_none("_copy"),
)
alias("identity", "_copy")

register_unary(
    "BlockGrad",
    _copy_compute,
    "Passes the input through unchanged in the forward pass and stops the gradient: "
    "nothing flows back through it (its inputs receive zeros).",
    zero_grad,
)
alias("stop_gradient", "BlockGrad")
