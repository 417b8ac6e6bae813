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

Higher-order gradients (``autograd.grad(..., create_graph=True)``) need ``_backward_<name>``
to be differentiable itself. For ``g * f'(v)`` that is ``h * f'(v)`` for ``g`` (the same
backward operator on the head gradient ``h``) and ``h * g * d f'/dv`` for ``v``, which each
entry's ``second_order`` writes with differentiable operators. The operators that have one are
MXNet 1.9.1's (``sin`` to ``arctanh``, the logarithms, ``exp``, ``expm1``, the roots and their
reciprocals, ``square``, ``reciprocal``, ``abs``, ``sigmoid``, ``relu``, ``radians``); the others
(``softsign``, ``degrees``, ...) say that their backward has no gradient, as MXNet does.

Rounding follows MXNet exactly: ``round`` rounds halves away from zero, ``rint`` rounds
halves *down* (towards -inf: ``rint(-2.5) = -3``, ``rint(2.5) = 2``), ``fix`` rounds
towards zero. :func:`compute_into` is the write helper the binary and broadcast families
reuse: it computes a ufunc straight into the output when the output is floating point.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..grad import (
    FormulaBuilder,
    GradFn,
    elemwise_grad_use_in,
    elemwise_grad_use_none,
    elemwise_grad_use_out,
    make_backward_node,
    zero_grad,
)
from ..infer import elemwise_shape, elemwise_type
from ..kernel import NULL, Req, assign, assign_ufunc
from ..node import Entry, Node
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


def _relu(xp: Any, x: Any) -> Any:
    return xp.maximum(x, 0)


def _identity(xp: Any, x: Any) -> Any:
    return x


def flat(f: FormulaBuilder, hg: Entry, v: Entry) -> Entry:
    """A ``second_order`` for a derivative that does not change with ``v`` (``abs``, ``relu``,
    ``radians``, ``clip``: a sign, a mask or a constant): zero."""
    return f.zeros_like(v)


# ---------------------------------------------------------------------------- the table
_LN2, _LN10 = math.log(2.0), math.log(10.0)
ForwardFn = Callable[[Any, Any], Any]
DerivativeFn = Callable[[Any, Any, Any], Any]
#: ``second_order(f, hg, v)``: the gradient of ``g * f'(v)`` for ``v``, given ``hg = h * g``.
SecondOrderFn = Callable[[FormulaBuilder, Entry, Entry], Entry]


@dataclass(frozen=True)
class UnaryOp:
    """One element-wise unary operator: adding an operator to the family is one of these.

    * ``forward``: the name of an ``xp`` ufunc (computed straight into the output), or
      ``f(xp, x)`` returning the result;
    * ``derivative``: ``f(xp, out_grad, v)`` returning ``out_grad * f'(x)``, where ``v`` is the
      forward input (``uses="in"``) or output (``uses="out"``): that choice is what the
      forward pass keeps alive for backward. It gets its own ``_backward_<name>`` operator;
    * ``gradient_op``: instead of a derivative, the gradient is this operator applied to the
      output gradient alone (``negative``: ``d(-x) = -g``);
    * neither: a zero gradient (rounding, ``sign``, ``BlockGrad``);
    * ``second_order``: with a derivative, ``h * g * d f'/dv`` as graph nodes (``f`` builds them),
      which makes ``_backward_<name>`` differentiable (see the module notes).
    """

    name: str
    forward: str | ForwardFn
    description: str
    derivative: DerivativeFn | None = None
    uses: str = "in"
    gradient_op: str | None = None
    aliases: tuple[str, ...] = ()
    second_order: SecondOrderFn | None = None

    def __post_init__(self) -> None:
        if self.uses not in ("in", "out"):
            raise ValueError(f"UnaryOp {self.name!r}: uses must be 'in' or 'out', got {self.uses!r}")
        if self.derivative is not None and self.gradient_op is not None:
            raise ValueError(f"UnaryOp {self.name!r}: give a derivative or a gradient_op, not both")
        if self.second_order is not None and self.derivative is None:
            raise ValueError(f"UnaryOp {self.name!r}: a second_order needs a derivative")


UNARY_OPS: tuple[UnaryOp, ...] = (
    UnaryOp(
        "abs",
        "absolute",
        "Absolute value, element-wise: ``|x|``.",
        lambda xp, g, x: g * xp.sign(x),
        second_order=flat,
    ),
    UnaryOp("sign", "sign", "Sign, element-wise: -1, 0 or 1 (zero gradient)."),
    UnaryOp(
        "exp",
        "exp",
        "Exponential, element-wise: ``e^x``.",
        lambda xp, g, y: g * y,
        uses="out",
        second_order=lambda f, hg, y: hg,
    ),
    UnaryOp(
        "log",
        "log",
        "Natural logarithm, element-wise.",
        lambda xp, g, x: g / x,
        second_order=lambda f, hg, x: f.neg(f.div(hg, f.op("square", x))),
    ),
    UnaryOp(
        "log2",
        "log2",
        "Base-2 logarithm, element-wise.",
        lambda xp, g, x: g / (x * _LN2),
        second_order=lambda f, hg, x: f.scale(f.div(hg, f.op("square", x)), -1 / _LN2),
    ),
    UnaryOp(
        "log10",
        "log10",
        "Base-10 logarithm, element-wise.",
        lambda xp, g, x: g / (x * _LN10),
        second_order=lambda f, hg, x: f.scale(f.div(hg, f.op("square", x)), -1 / _LN10),
    ),
    UnaryOp(
        "log1p",
        "log1p",
        "``log(1 + x)``, accurate for small x.",
        lambda xp, g, x: g / (1 + x),
        second_order=lambda f, hg, x: f.neg(f.div(hg, f.op("square", f.plus(x, 1.0)))),
    ),
    UnaryOp(
        "expm1",
        "expm1",
        "``exp(x) - 1``, accurate for small x.",
        lambda xp, g, x: g * xp.exp(x),
        second_order=lambda f, hg, x: f.mul(hg, f.op("exp", x)),
    ),
    UnaryOp(
        "sqrt",
        "sqrt",
        "Square root, element-wise.",
        lambda xp, g, y: g * (0.5 / y),
        uses="out",
        second_order=lambda f, hg, y: f.scale(f.div(hg, f.op("square", y)), -0.5),
    ),
    UnaryOp(
        "cbrt",
        "cbrt",
        "Cube root, element-wise.",
        lambda xp, g, y: g / (3 * y * y),
        uses="out",
        second_order=lambda f, hg, y: f.scale(f.div(hg, f.mul(y, f.op("square", y))), -2 / 3),
    ),
    UnaryOp(
        "square",
        "square",
        "Square, element-wise: ``x^2``.",
        lambda xp, g, x: g * (2 * x),
        second_order=lambda f, hg, x: f.scale(hg, 2.0),
    ),
    UnaryOp("negative", "negative", "Numerical negative, element-wise: ``-x``.", gradient_op="negative"),
    UnaryOp(
        "sin",
        "sin",
        "Sine, element-wise (radians).",
        lambda xp, g, x: g * xp.cos(x),
        second_order=lambda f, hg, x: f.neg(f.mul(hg, f.op("sin", x))),
    ),
    UnaryOp(
        "cos",
        "cos",
        "Cosine, element-wise (radians).",
        lambda xp, g, x: -g * xp.sin(x),
        second_order=lambda f, hg, x: f.neg(f.mul(hg, f.op("cos", x))),
    ),
    UnaryOp(
        "tan",
        "tan",
        "Tangent, element-wise (radians).",
        lambda xp, g, y: g * (1 + y * y),
        uses="out",
        second_order=lambda f, hg, y: f.scale(f.mul(hg, y), 2.0),
    ),
    UnaryOp(
        "arcsin",
        "arcsin",
        "Inverse sine, element-wise; input in [-1, 1].",
        lambda xp, g, x: g / xp.sqrt(1 - x * x),
        second_order=lambda f, hg, x: f.div(f.mul(hg, x), f.power(f.minus_from(1.0, f.op("square", x)), 1.5)),
    ),
    UnaryOp(
        "arccos",
        "arccos",
        "Inverse cosine, element-wise; input in [-1, 1].",
        lambda xp, g, x: -g / xp.sqrt(1 - x * x),
        second_order=lambda f, hg, x: f.neg(f.div(f.mul(hg, x), f.power(f.minus_from(1.0, f.op("square", x)), 1.5))),
    ),
    UnaryOp(
        "arctan",
        "arctan",
        "Inverse tangent, element-wise.",
        lambda xp, g, x: g / (1 + x * x),
        second_order=lambda f, hg, x: f.scale(
            f.div(f.mul(hg, x), f.op("square", f.plus(f.op("square", x), 1.0))), -2.0
        ),
    ),
    UnaryOp(
        "sinh",
        "sinh",
        "Hyperbolic sine, element-wise.",
        lambda xp, g, x: g * xp.cosh(x),
        second_order=lambda f, hg, x: f.mul(hg, f.op("sinh", x)),
    ),
    UnaryOp(
        "cosh",
        "cosh",
        "Hyperbolic cosine, element-wise.",
        lambda xp, g, x: g * xp.sinh(x),
        second_order=lambda f, hg, x: f.mul(hg, f.op("cosh", x)),
    ),
    UnaryOp(
        "tanh",
        "tanh",
        "Hyperbolic tangent, element-wise.",
        lambda xp, g, y: g * (1 - y * y),
        uses="out",
        second_order=lambda f, hg, y: f.scale(f.mul(hg, y), -2.0),
    ),
    UnaryOp(
        "arcsinh",
        "arcsinh",
        "Inverse hyperbolic sine, element-wise.",
        lambda xp, g, x: g / xp.sqrt(x * x + 1),
        second_order=lambda f, hg, x: f.neg(f.div(f.mul(hg, x), f.power(f.plus(f.op("square", x), 1.0), 1.5))),
    ),
    UnaryOp(
        "arccosh",
        "arccosh",
        "Inverse hyperbolic cosine, element-wise; input >= 1.",
        lambda xp, g, x: g / xp.sqrt(x * x - 1),
        second_order=lambda f, hg, x: f.neg(f.div(f.mul(hg, x), f.power(f.plus(f.op("square", x), -1.0), 1.5))),
    ),
    UnaryOp(
        "arctanh",
        "arctanh",
        "Inverse hyperbolic tangent, element-wise; input in (-1, 1).",
        lambda xp, g, x: g / (1 - x * x),
        second_order=lambda f, hg, x: f.scale(
            f.div(f.mul(hg, x), f.op("square", f.minus_from(1.0, f.op("square", x)))), 2.0
        ),
    ),
    UnaryOp("degrees", "degrees", "Converts radians to degrees, element-wise.", lambda xp, g, x: g * (180.0 / math.pi)),
    UnaryOp(
        "radians",
        "radians",
        "Converts degrees to radians, element-wise.",
        lambda xp, g, x: g * (math.pi / 180.0),
        second_order=flat,
    ),
    UnaryOp("floor", "floor", "Largest integer <= x, element-wise (zero gradient)."),
    UnaryOp("ceil", "ceil", "Smallest integer >= x, element-wise (zero gradient)."),
    UnaryOp("fix", "trunc", "Rounds towards zero, element-wise: fix(-2.5) = -2 (zero gradient)."),
    UnaryOp("trunc", "trunc", "Truncates towards zero, element-wise (zero gradient)."),
    UnaryOp(
        "reciprocal",
        lambda xp, x: 1 / x,
        "Reciprocal, element-wise: ``1 / x``.",
        lambda xp, g, x: -g / (x * x),
        second_order=lambda f, hg, x: f.scale(f.div(hg, f.mul(x, f.op("square", x))), 2.0),
    ),
    UnaryOp(
        "rsqrt",
        lambda xp, x: 1 / xp.sqrt(x),
        "Reciprocal square root, element-wise: ``1 / sqrt(x)``.",
        lambda xp, g, x: g * (-0.5 / (x * xp.sqrt(x))),
        second_order=lambda f, hg, x: f.scale(f.mul(hg, f.power(x, -2.5)), 0.75),
    ),
    UnaryOp(
        "rcbrt",
        lambda xp, x: 1 / xp.cbrt(x),
        "Reciprocal cube root, element-wise: ``1 / cbrt(x)``.",
        lambda xp, g, x: g * (-1.0 / (3 * x * xp.cbrt(x))),
        # x^(-7/3) as 1 / (x^2 cbrt(x)): a fractional power of a negative number is nan
        second_order=lambda f, hg, x: f.scale(f.div(hg, f.mul(f.op("square", x), f.op("cbrt", x))), 4 / 9),
    ),
    UnaryOp("round", _round_half_away, "Nearest integer, halves away from zero: round(-2.5) = -3 (zero gradient)."),
    UnaryOp(
        "rint",
        _rint_mxnet,
        "Nearest integer, halves towards -inf as MXNet does: rint(2.5) = 2, rint(-2.5) = -3 (zero gradient).",
    ),
    UnaryOp(
        "sigmoid",
        _sigmoid,
        "Logistic sigmoid, element-wise: ``1 / (1 + exp(-x))``.",
        lambda xp, g, y: g * (y * (1 - y)),
        uses="out",
        second_order=lambda f, hg, y: f.mul(hg, f.minus_from(1.0, f.scale(y, 2.0))),
    ),
    UnaryOp(
        "softsign",
        lambda xp, x: x / (1 + xp.abs(x)),
        "Softsign, element-wise: ``x / (1 + |x|)``.",
        lambda xp, g, x: g / xp.square(1 + xp.abs(x)),
    ),
    UnaryOp(
        "logical_not", lambda xp, x: x == 0, "Logical not, element-wise: 1 where x == 0, else 0, in the input dtype."
    ),
    UnaryOp(
        "relu",
        _relu,
        "Rectified linear unit, element-wise: ``max(x, 0)``.",
        lambda xp, g, y: g * (y > 0),
        uses="out",
        second_order=flat,
    ),
    UnaryOp(
        "_copy",
        _identity,
        "Returns a copy of the input (its gradient is a copy of the output gradient).",
        gradient_op="_copy",
        aliases=("identity",),
    ),
    UnaryOp(
        "BlockGrad",
        _identity,
        "Passes the input through unchanged in the forward pass and stops the gradient: "
        "nothing flows back through it (its inputs receive zeros).",
        aliases=("stop_gradient",),
    ),
)


# ---------------------------------------------------------------------------- registration
def _forward_compute(forward: str | ForwardFn) -> Callable[..., None]:
    if isinstance(forward, str):

        def compute(attrs, op_ctx, inputs, req, outputs) -> None:
            compute_into(outputs[0], req[0], getattr(op_ctx.xp, forward), inputs[0])

    else:

        def compute(attrs, op_ctx, inputs, req, outputs) -> None:
            if req[0] is not NULL:
                put(outputs[0], req[0], forward(op_ctx.xp, inputs[0]))

    return compute


def _backward_compute(fn: DerivativeFn) -> Callable[..., None]:
    def compute(attrs, op_ctx, inputs, req, outputs) -> None:
        # inputs: (out_grad, forward input or output); compute before writing (in-place safe)
        if req[0] is not NULL:
            put(outputs[0], req[0], fn(op_ctx.xp, inputs[0], inputs[1]))

    return compute


def _inplace(attrs) -> list[tuple[int, int]]:
    return [(0, 0)]


def backward_gradient(backward_name: str, second_order: SecondOrderFn) -> GradFn:
    """The gradient of ``_backward_<name>(g, v) = g * f'(v)`` given the head gradient ``h``:
    ``h * f'(v)`` for ``g`` (the same backward operator, on ``h``), ``h * g * d f'/dv`` for ``v``."""

    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        (head,) = out_grads
        out_grad, v = node.inputs
        f = FormulaBuilder(node.name)
        for_out_grad = Entry(make_backward_node(node, backward_name, [head, v], suffix="_grad"), 0)
        return [for_out_grad, second_order(f, f.mul(head, out_grad), v)]

    return gradient


def _gradient_of(op: UnaryOp) -> Callable[..., Any]:
    """The operator's gradient builder; registers its ``_backward_<name>`` when it has a derivative."""
    if op.gradient_op is not None:
        return elemwise_grad_use_none(op.gradient_op)
    if op.derivative is None:
        return zero_grad
    backward_name = f"_backward_{op.name}"
    backward = (
        register(backward_name)
        .describe(f"Gradient of {op.name}: out_grad * d{op.name}/dx, from the forward {op.uses}put.")
        .set_num_inputs(2)
        .set_num_outputs(1)
        .set_infer_shape(elemwise_shape)
        .set_infer_type(elemwise_type)
        .set_compute(_backward_compute(op.derivative))
        .set_inplace_option(_inplace)
        .set_is_backward()
    )
    if op.second_order is not None:
        backward.set_gradient(backward_gradient(backward_name, op.second_order))
    builder = elemwise_grad_use_out if op.uses == "out" else elemwise_grad_use_in
    return builder(backward_name)


def register_unary_op(op: UnaryOp) -> None:
    """Register a table entry with the family's skeleton, its backward operator if any, and its aliases."""
    (
        register(op.name)
        .describe(op.description)
        .set_num_inputs(1)
        .set_num_outputs(1)
        .set_input_names(["data"])
        .set_infer_shape(elemwise_shape)
        .set_infer_type(elemwise_type)
        .set_compute(_forward_compute(op.forward))
        .set_gradient(_gradient_of(op))
        .set_inplace_option(_inplace)
    )
    for other_name in op.aliases:
        alias(other_name, op.name)


for _op in UNARY_OPS:
    register_unary_op(_op)
