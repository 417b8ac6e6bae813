"""The maths of each element-wise binary operation, and the compute functions built from it.

One :class:`BinaryMath` per operation (``add``, ``mod``, ``greater``, ...) in ``BINARY_MATHS``
says how to compute ``lhs <op> rhs`` and its two partial derivatives. The same record serves
every operator family that computes that operation: the same-shape ``elemwise_add``
(:mod:`.elemwise_binary`), ``broadcast_add`` (:mod:`.broadcast`) and the gradient pass's
``_grad_add``. It lives apart so that those families share the maths instead of repeating it;
:mod:`.binary_family` turns an entry into registered operators.

``mod`` follows Python's sign rule (the result has the divisor's sign) and ``x mod 0`` is 0,
as in MXNet. Comparisons and logical operations return 1/0 in the input dtype and have no
derivative (a zero gradient). Gradients at ties: ``maximum`` sends the gradient to the left
operand when ``lhs >= rhs``, ``minimum`` when ``lhs <= rhs``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..kernel import NULL
from .elemwise_unary import compute_into, put


def mod(xp: Any, a: Any, b: Any) -> Any:
    """MXNet's ``mod``: Python's sign convention, and 0 where the divisor is 0 (not NaN)."""
    zero = b == 0
    return xp.where(zero, 0, xp.mod(a, xp.where(zero, 1, b)))


def logical(kind: str) -> Callable[[Any, Any, Any], Any]:
    """``f(xp, a, b)`` for ``logical_<kind>``: 1/0 by whether the operands are non-zero."""

    def fn(xp: Any, a: Any, b: Any) -> Any:
        return getattr(xp, f"logical_{kind}")(a != 0, b != 0)

    return fn


BinaryFn = Callable[[Any, Any, Any], Any]
GradFn = Callable[[Any, Any, Any, Any], Any]


@dataclass(frozen=True)
class BinaryMath:
    """The maths of one binary operation, shared by its same-shape and broadcast operators.

    * ``forward``: the name of an ``xp`` ufunc (computed straight into the output) or
      ``f(xp, lhs, rhs)``;
    * ``lhs_grad``/``rhs_grad``: ``f(xp, out_grad, lhs, rhs)``, already multiplied by
      ``out_grad``; without them (comparisons, logical) the gradient is zero;
    * ``grad_needs_inputs``: False when the gradient needs neither input (``add``, ``sub``),
      so a same-shape operator's backward takes only the output gradient.
    """

    kind: str
    forward: str | BinaryFn
    description: str
    lhs_grad: GradFn | None = None
    rhs_grad: GradFn | None = None
    grad_needs_inputs: bool = True

    def __post_init__(self) -> None:
        if (self.lhs_grad is None) != (self.rhs_grad is None):
            raise ValueError(f"BinaryMath {self.kind!r}: give both lhs_grad and rhs_grad, or neither")

    @property
    def differentiable(self) -> bool:
        return self.lhs_grad is not None


#: One record per binary operation, keyed by its kind (``"add"`` for elemwise_add,
#: broadcast_add and _grad_add).
BINARY_MATHS: dict[str, BinaryMath] = {
    entry.kind: entry
    for entry in (
        BinaryMath(
            "add",
            "add",
            "Adds arguments element-wise",
            lhs_grad=lambda xp, g, a, b: g,
            rhs_grad=lambda xp, g, a, b: g,
            grad_needs_inputs=False,
        ),
        BinaryMath(
            "sub",
            "subtract",
            "Subtracts arguments element-wise",
            lhs_grad=lambda xp, g, a, b: g,
            rhs_grad=lambda xp, g, a, b: -g,
            grad_needs_inputs=False,
        ),
        BinaryMath(
            "mul",
            "multiply",
            "Multiplies arguments element-wise",
            lhs_grad=lambda xp, g, a, b: g * b,
            rhs_grad=lambda xp, g, a, b: g * a,
        ),
        BinaryMath(
            "div",
            "divide",
            "Divides arguments element-wise",
            lhs_grad=lambda xp, g, a, b: g / b,
            rhs_grad=lambda xp, g, a, b: -g * a / (b * b),
        ),
        BinaryMath(
            "mod",
            mod,
            "Element-wise modulo (result takes the divisor's sign; x mod 0 = 0)",
            lhs_grad=lambda xp, g, a, b: g,
            rhs_grad=lambda xp, g, a, b: -g * xp.floor(a / b),
        ),
        BinaryMath(
            "power",
            "power",
            "First array raised to the powers of the second, element-wise",
            lhs_grad=lambda xp, g, a, b: g * b * xp.power(a, b - 1),
            rhs_grad=lambda xp, g, a, b: g * xp.power(a, b) * xp.log(a),
        ),
        BinaryMath(
            "maximum",
            "maximum",
            "Element-wise maximum (the gradient goes to lhs on ties)",
            lhs_grad=lambda xp, g, a, b: g * (a >= b),
            rhs_grad=lambda xp, g, a, b: g * (a < b),
        ),
        BinaryMath(
            "minimum",
            "minimum",
            "Element-wise minimum (the gradient goes to lhs on ties)",
            lhs_grad=lambda xp, g, a, b: g * (a <= b),
            rhs_grad=lambda xp, g, a, b: g * (a > b),
        ),
        BinaryMath(
            "hypot",
            "hypot",
            "Hypotenuse sqrt(lhs^2 + rhs^2), element-wise",
            lhs_grad=lambda xp, g, a, b: g * a / xp.hypot(a, b),
            rhs_grad=lambda xp, g, a, b: g * b / xp.hypot(a, b),
        ),
        BinaryMath("equal", "equal", "1 where lhs == rhs else 0, in the input dtype"),
        BinaryMath("not_equal", "not_equal", "1 where lhs != rhs else 0, in the input dtype"),
        BinaryMath("greater", "greater", "1 where lhs > rhs else 0, in the input dtype"),
        BinaryMath("greater_equal", "greater_equal", "1 where lhs >= rhs else 0, in the input dtype"),
        BinaryMath("lesser", "less", "1 where lhs < rhs else 0, in the input dtype"),
        BinaryMath("lesser_equal", "less_equal", "1 where lhs <= rhs else 0, in the input dtype"),
        BinaryMath("logical_and", logical("and"), "1 where both are non-zero else 0, in the input dtype"),
        BinaryMath("logical_or", logical("or"), "1 where either is non-zero else 0, in the input dtype"),
        BinaryMath("logical_xor", logical("xor"), "1 where exactly one is non-zero else 0, in the input dtype"),
    )
}


def binary_forward_compute(kind: str) -> Callable[..., None]:
    """The compute function of ``lhs <kind> rhs`` (numpy broadcasting does the rest)."""
    forward = BINARY_MATHS[kind].forward
    if isinstance(forward, str):
        ufunc_name = forward

        def compute(attrs, op_ctx, inputs, req, outputs) -> None:
            compute_into(outputs[0], req[0], getattr(op_ctx.xp, ufunc_name), inputs[0], inputs[1])

    else:
        fn = forward

        def compute(attrs, op_ctx, inputs, req, outputs) -> None:
            if req[0] is not NULL:
                put(outputs[0], req[0], fn(op_ctx.xp, inputs[0], inputs[1]))

    return compute


def binary_backward_compute(kind: str, reduce: Callable[[Any, Any, tuple], Any] | None = None) -> Callable[..., None]:
    """Compute of ``_backward_<kind>``: inputs (out_grad[, lhs, rhs]), outputs (dlhs, drhs).

    ``reduce(xp, grad, shape)`` sums a broadcast gradient back to an input's shape (the
    broadcast family passes one); both values are computed before either output is written,
    so an output may share memory with ``out_grad``.
    """
    lgrad, rgrad = BINARY_MATHS[kind].lhs_grad, BINARY_MATHS[kind].rhs_grad

    def compute(attrs, op_ctx, inputs, req, outputs) -> None:
        xp, g = op_ctx.xp, inputs[0]
        a, b = (inputs[1], inputs[2]) if len(inputs) == 3 else (None, None)
        left = lgrad(xp, g, a, b) if req[0] is not NULL else None
        right = rgrad(xp, g, a, b) if req[1] is not NULL else None
        if reduce is not None:
            left = None if left is None else reduce(xp, left, outputs[0].shape)
            right = None if right is None else reduce(xp, right, outputs[1].shape)
        put(outputs[0], req[0], left)
        put(outputs[1], req[1], right)

    return compute
