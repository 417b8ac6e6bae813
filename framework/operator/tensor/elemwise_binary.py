"""Element-wise binary operators: same-shape pairs, array-scalar pairs, and ``ElementWiseSum``.

MXNet 1.x has three spellings of ``a + b``, and this family holds two of them:

* **same-shape** ``elemwise_add(lhs, rhs)`` (alias ``_plus``/``_Plus``/``_add``, the names
  ``Symbol.__add__`` produces), ``elemwise_sub``/``mul``/``div``, ``_maximum``, ``_minimum``,
  ``_power``, ``_mod``, ``_hypot``, the comparisons ``_equal`` ... ``_lesser_equal`` and the
  logical ``_logical_and``/``or``/``xor``. Both inputs and the output have one shape and one
  dtype (``elemwise_shape`` infers any of them from the others); broadcasting is the job of
  the ``broadcast_*`` family (``broadcast.py``), which ``NDArray.__add__`` uses.
* **array-scalar** ``_plus_scalar(data, scalar=1.0)``, ``_rminus_scalar`` (``scalar - x``),
  ... which ``a + 1``, ``1 - a``, ``a ** 2``, ``2 ** a``, ``a == 1`` and ``a += 1`` call. They are
  the hot path of imperative code, so they compute straight into the output with one ufunc
  call (no temporary) and take ``scalar`` as a float parameter. As in MXNet, the scalar is
  first cast to the array's dtype: ``int32_array * 1.5`` multiplies by 1.
* ``ElementWiseSum`` (``add_n``) adds any number of arrays (``num_args``); the gradient pass
  uses it to sum the contributions to an array that feeds several operators.

Comparisons return 1/0 in the *input* dtype (``a == 1`` on float32 is float32) and have a
zero gradient. ``mod`` follows Python's sign rule (the result has the divisor's sign) and
``x mod 0`` is 0, as in MXNet. Gradients at ties: ``maximum`` sends the gradient to the left
operand when ``lhs >= rhs``, ``minimum`` when ``lhs <= rhs``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..grad import elemwise_grad_use_in, elemwise_grad_use_none, elemwise_grad_use_out, zero_grad
from ..infer import elemwise_shape, elemwise_type
from ..kernel import ADD, NULL, assign, assign_ufunc
from ..node import Entry, Node
from ..params import REQUIRED, Param, ParamSet
from ..registry import alias, register
from .elemwise_unary import compute_into, put

# ---------------------------------------------------------------------------- shared maths


def mod(xp: Any, a: Any, b: Any) -> Any:
    """MXNet's ``mod``: Python's sign convention, and 0 where the divisor is 0 (not NaN)."""
    zero = b == 0
    return xp.where(zero, 0, xp.mod(a, xp.where(zero, 1, b)))


def _logical(kind: str) -> Callable[[Any, Any, Any], Any]:
    def fn(xp: Any, a: Any, b: Any) -> Any:
        return getattr(xp, f"logical_{kind}")(a != 0, b != 0)

    return fn


#: Forward maths of the binary operators: a ufunc name (applied with ``out=``) or a
#: function ``(xp, lhs, rhs) -> value``. Shared with the broadcast family.
BINARY_FORWARD: dict[str, str | Callable[[Any, Any, Any], Any]] = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "div": "divide",
    "mod": mod,
    "power": "power",
    "maximum": "maximum",
    "minimum": "minimum",
    "hypot": "hypot",
    "equal": "equal",
    "not_equal": "not_equal",
    "greater": "greater",
    "greater_equal": "greater_equal",
    "lesser": "less",
    "lesser_equal": "less_equal",
    "logical_and": _logical("and"),
    "logical_or": _logical("or"),
    "logical_xor": _logical("xor"),
}

GradFn = Callable[[Any, Any, Any, Any], Any]

#: (d/dlhs, d/drhs) as functions of (xp, out_grad, lhs, rhs), already multiplied by out_grad.
#: Operators missing here (comparisons, logical) have a zero gradient.
BINARY_BACKWARD: dict[str, tuple[GradFn, GradFn]] = {
    "add": (lambda xp, g, a, b: g, lambda xp, g, a, b: g),
    "sub": (lambda xp, g, a, b: g, lambda xp, g, a, b: -g),
    "mul": (lambda xp, g, a, b: g * b, lambda xp, g, a, b: g * a),
    "div": (lambda xp, g, a, b: g / b, lambda xp, g, a, b: -g * a / (b * b)),
    "mod": (lambda xp, g, a, b: g, lambda xp, g, a, b: -g * xp.floor(a / b)),
    "power": (
        lambda xp, g, a, b: g * b * xp.power(a, b - 1),
        lambda xp, g, a, b: g * xp.power(a, b) * xp.log(a),
    ),
    "maximum": (lambda xp, g, a, b: g * (a >= b), lambda xp, g, a, b: g * (a < b)),
    "minimum": (lambda xp, g, a, b: g * (a <= b), lambda xp, g, a, b: g * (a > b)),
    "hypot": (
        lambda xp, g, a, b: g * a / xp.hypot(a, b),
        lambda xp, g, a, b: g * b / xp.hypot(a, b),
    ),
}

#: Operators whose gradient needs neither input (only the output gradient).
GRAD_USES_NONE = ("add", "sub")

BINARY_DESCRIPTIONS: dict[str, str] = {
    "add": "Adds arguments element-wise",
    "sub": "Subtracts arguments element-wise",
    "mul": "Multiplies arguments element-wise",
    "div": "Divides arguments element-wise",
    "mod": "Element-wise modulo (result takes the divisor's sign; x mod 0 = 0)",
    "power": "First array raised to the powers of the second, element-wise",
    "maximum": "Element-wise maximum (the gradient goes to lhs on ties)",
    "minimum": "Element-wise minimum (the gradient goes to lhs on ties)",
    "hypot": "Hypotenuse sqrt(lhs^2 + rhs^2), element-wise",
    "equal": "1 where lhs == rhs else 0, in the input dtype",
    "not_equal": "1 where lhs != rhs else 0, in the input dtype",
    "greater": "1 where lhs > rhs else 0, in the input dtype",
    "greater_equal": "1 where lhs >= rhs else 0, in the input dtype",
    "lesser": "1 where lhs < rhs else 0, in the input dtype",
    "lesser_equal": "1 where lhs <= rhs else 0, in the input dtype",
    "logical_and": "1 where both are non-zero else 0, in the input dtype",
    "logical_or": "1 where either is non-zero else 0, in the input dtype",
    "logical_xor": "1 where exactly one is non-zero else 0, in the input dtype",
}


def binary_forward_compute(kind: str) -> Callable[..., None]:
    """The compute function of ``lhs <kind> rhs`` (numpy broadcasting does the rest)."""
    forward = BINARY_FORWARD[kind]
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
    lgrad, rgrad = BINARY_BACKWARD[kind]

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


def _inplace_binary(attrs) -> list[tuple[int, int]]:
    return [(0, 0), (1, 0)]


def _inplace_first(attrs) -> list[tuple[int, int]]:
    return [(0, 0)]


# ---------------------------------------------------------------------------- same-shape ops
# (kind, registered name, aliases), with MXNet's names
_SAME_SHAPE = [
    ("add", "elemwise_add", ["_plus", "_Plus", "_add"]),
    ("sub", "elemwise_sub", ["_minus", "_Minus", "_sub"]),
    ("mul", "elemwise_mul", ["_mul", "_Mul"]),
    ("div", "elemwise_div", ["_div", "_Div"]),
    ("mod", "_mod", ["_Mod"]),
    ("power", "_power", ["_Power"]),
    ("maximum", "_maximum", ["_Maximum"]),
    ("minimum", "_minimum", ["_Minimum"]),
    ("hypot", "_hypot", ["_Hypot"]),
    ("equal", "_equal", ["_Equal"]),
    ("not_equal", "_not_equal", ["_Not_Equal"]),
    ("greater", "_greater", ["_Greater"]),
    ("greater_equal", "_greater_equal", ["_Greater_Equal"]),
    ("lesser", "_lesser", ["_Lesser"]),
    ("lesser_equal", "_lesser_equal", ["_Lesser_Equal"]),
    ("logical_and", "_logical_and", ["_Logical_And"]),
    ("logical_or", "_logical_or", ["_Logical_Or"]),
    ("logical_xor", "_logical_xor", ["_Logical_Xor"]),
]


def _register_same_shape(kind: str, name: str, aliases: list[str]) -> None:
    if kind in BINARY_BACKWARD:
        backward = f"_backward_{kind}"
        helper = elemwise_grad_use_none if kind in GRAD_USES_NONE else elemwise_grad_use_in
        gradient = helper(backward)
        (
            register(backward)
            .describe(f"Gradients of {name} with respect to lhs and rhs.")
            .set_num_inputs(1 if kind in GRAD_USES_NONE else 3)
            .set_num_outputs(2)
            .set_infer_shape(elemwise_shape)
            .set_infer_type(elemwise_type)
            .set_compute(binary_backward_compute(kind))
            .set_inplace_option(_inplace_first)
            .set_is_backward()
        )
    else:
        gradient = zero_grad
    (
        register(name)
        .describe(BINARY_DESCRIPTIONS[kind] + "; both inputs must have the same shape (use broadcast_* to broadcast).")
        .set_num_inputs(2)
        .set_num_outputs(1)
        .set_input_names(["lhs", "rhs"])
        .set_infer_shape(elemwise_shape)
        .set_infer_type(elemwise_type)
        .set_compute(binary_forward_compute(kind))
        .set_gradient(gradient)
        .set_inplace_option(_inplace_binary)
    )
    for other in aliases:
        alias(other, name)


for _kind, _name, _aliases in _SAME_SHAPE:
    _register_same_shape(_kind, _name, _aliases)

# The executor's gradient accumulation operator (MXNet keeps it apart from elemwise_add).
(
    register("_grad_add")
    .describe("Adds two gradients element-wise (used to accumulate gradient contributions).")
    .set_num_inputs(2)
    .set_input_names(["lhs", "rhs"])
    .set_infer_shape(elemwise_shape)
    .set_infer_type(elemwise_type)
    .set_compute(binary_forward_compute("add"))
    .set_gradient(elemwise_grad_use_none("_backward_add"))
    .set_inplace_option(_inplace_binary)
)


# ---------------------------------------------------------------------------- ElementWiseSum
class ElementWiseSumParam(ParamSet):
    num_args = Param(int, REQUIRED, "Number of input arrays to sum.", low=1)


def _sum_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    """Sum into the output directly; go through a temporary only if the output aliases a later input."""
    out, r = outputs[0], req[0]
    if r is NULL:
        return
    xp = op_ctx.xp
    first, rest = inputs[0], inputs[1:]
    if r is ADD or any(x is out or xp.may_share_memory(x, out) for x in rest):
        total = first.copy()
        for x in rest:
            total += x
        assign(out, r, total)
        return
    if not rest:
        assign(out, r, first)
        return
    assign_ufunc(out, r, xp.add, first, rest[0])
    for x in rest[1:]:
        out += x


def _sum_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Every summand receives the output gradient unchanged (MXNet's CloneGradient)."""
    return [out_grads[0]] * len(node.inputs)


(
    register("add_n")  # MXNet's canonical name; ElementWiseSum is its alias
    .describe("Adds all input arguments element-wise: add_n(a1, ..., an) = a1 + ... + an; all shapes equal.")
    .set_params(ElementWiseSumParam)
    .set_num_inputs(lambda attrs: attrs.parsed.num_args)
    .set_num_outputs(1)
    .set_input_names(lambda attrs: [f"arg{i}" for i in range(attrs.parsed.num_args)])
    .set_key_var_num_args("num_args")
    .set_infer_shape(elemwise_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_sum_compute)
    .set_gradient(_sum_gradient)
    .set_inplace_option(_inplace_first)
)
alias("ElementWiseSum", "add_n")
alias("_ElementWiseSum", "add_n")


# ---------------------------------------------------------------------------- scalar ops
class ScalarParam(ParamSet):
    scalar = Param(float, 1.0, "The scalar operand.")
    is_int = Param(bool, True, "Whether the scalar was a Python int (kept for MXNet 1.9 compatibility).")


def _scalar_for(x: Any, scalar: float) -> Any:
    """The scalar in the array's dtype family: truncated for integer arrays, as MXNet does."""
    return scalar if x.dtype.kind == "f" else x.dtype.type(scalar)


def _scalar_ufunc_compute(ufunc_name: str, reverse: bool) -> Callable[..., None]:
    """``x <op> scalar`` (or ``scalar <op> x``) with one ufunc call straight into the output.

    This is the hot path of imperative code (``a += 1``), so the NumPy ufunc is looked up
    once here rather than per call.
    """
    numpy_ufunc = getattr(np, ufunc_name)

    def compute(attrs, op_ctx, inputs, req, outputs) -> None:
        x, out = inputs[0], outputs[0]
        ufunc = numpy_ufunc if op_ctx.xp is np else getattr(op_ctx.xp, ufunc_name)
        s = attrs.parsed.scalar
        if out.dtype.kind != "f":
            s = _scalar_for(x, s)
        if reverse:
            compute_into(out, req[0], ufunc, s, x)
        else:
            compute_into(out, req[0], ufunc, x, s)

    return compute


def _mod_scalar_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    x, out, s = inputs[0], outputs[0], attrs.parsed.scalar
    if s == 0:
        assign(out, req[0], 0)  # x mod 0 = 0 in MXNet
    else:
        compute_into(out, req[0], op_ctx.xp.mod, x, _scalar_for(x, s))


def _rmod_scalar_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    x = inputs[0]
    if req[0] is not NULL:
        put(outputs[0], req[0], mod(op_ctx.xp, _scalar_for(x, attrs.parsed.scalar), x))


def _logical_scalar_compute(kind: str) -> Callable[..., None]:
    fn = _logical(kind)

    def compute(attrs, op_ctx, inputs, req, outputs) -> None:
        x = inputs[0]
        if req[0] is not NULL:
            put(outputs[0], req[0], fn(op_ctx.xp, x, _scalar_for(x, attrs.parsed.scalar)))

    return compute


ScalarGrad = Callable[[Any, Any, Any, float], Any]

# name: (forward compute, description, MXNet's CamelCase alias, gradient spec)
# gradient spec: None = zero gradient; ("copy",) / ("negative",) = reuse that operator on the
# output gradient; (uses, fn) = a _backward_<name> operator computing fn(xp, g, v, scalar)
# from the forward input ("in"), output ("out") or nothing ("none").
_SCALAR_OPS: dict[str, tuple[Callable[..., None], str, str, tuple | None]] = {
    "_plus_scalar": (_scalar_ufunc_compute("add", False), "x + scalar", "_PlusScalar", ("copy",)),
    "_minus_scalar": (_scalar_ufunc_compute("subtract", False), "x - scalar", "_MinusScalar", ("copy",)),
    "_rminus_scalar": (_scalar_ufunc_compute("subtract", True), "scalar - x", "_RMinusScalar", ("negative",)),
    "_mul_scalar": (
        _scalar_ufunc_compute("multiply", False),
        "x * scalar",
        "_MulScalar",
        ("none", lambda xp, g, v, s: g * s),
    ),
    "_div_scalar": (
        _scalar_ufunc_compute("divide", False),
        "x / scalar",
        "_DivScalar",
        ("none", lambda xp, g, v, s: g / s),
    ),
    "_rdiv_scalar": (
        _scalar_ufunc_compute("divide", True),
        "scalar / x",
        "_RDivScalar",
        ("in", lambda xp, g, x, s: g * (-s / (x * x))),
    ),
    "_mod_scalar": (_mod_scalar_compute, "x mod scalar", "_ModScalar", ("in", lambda xp, g, x, s: g)),
    "_rmod_scalar": (
        _rmod_scalar_compute,
        "scalar mod x",
        "_RModScalar",
        ("in", lambda xp, g, x, s: -g * xp.floor(s / x)),
    ),
    "_power_scalar": (
        _scalar_ufunc_compute("power", False),
        "x ** scalar",
        "_PowerScalar",
        ("in", lambda xp, g, x, s: g * (s * xp.power(x, s - 1))),
    ),
    "_rpower_scalar": (
        _scalar_ufunc_compute("power", True),
        "scalar ** x",
        "_RPowerScalar",
        ("out", lambda xp, g, y, s: g * y * _log_scalar(s)),
    ),
    "_maximum_scalar": (
        _scalar_ufunc_compute("maximum", False),
        "max(x, scalar) (gradient 1 where x >= scalar)",
        "_MaximumScalar",
        ("in", lambda xp, g, x, s: g * (x >= s)),
    ),
    "_minimum_scalar": (
        _scalar_ufunc_compute("minimum", False),
        "min(x, scalar) (gradient 1 where x <= scalar)",
        "_MinimumScalar",
        ("in", lambda xp, g, x, s: g * (x <= s)),
    ),
    "_hypot_scalar": (
        _scalar_ufunc_compute("hypot", False),
        "sqrt(x^2 + scalar^2)",
        "_HypotScalar",
        ("in", lambda xp, g, x, s: g * x / xp.hypot(x, s)),
    ),
    "_equal_scalar": (_scalar_ufunc_compute("equal", False), "1 where x == scalar else 0", "_EqualScalar", None),
    "_not_equal_scalar": (
        _scalar_ufunc_compute("not_equal", False),
        "1 where x != scalar else 0",
        "_NotEqualScalar",
        None,
    ),
    "_greater_scalar": (_scalar_ufunc_compute("greater", False), "1 where x > scalar else 0", "_GreaterScalar", None),
    "_greater_equal_scalar": (
        _scalar_ufunc_compute("greater_equal", False),
        "1 where x >= scalar else 0",
        "_GreaterEqualScalar",
        None,
    ),
    "_lesser_scalar": (_scalar_ufunc_compute("less", False), "1 where x < scalar else 0", "_LesserScalar", None),
    "_lesser_equal_scalar": (
        _scalar_ufunc_compute("less_equal", False),
        "1 where x <= scalar else 0",
        "_LesserEqualScalar",
        None,
    ),
    "_logical_and_scalar": (
        _logical_scalar_compute("and"),
        "1 where x and scalar are non-zero else 0",
        "_LogicalAndScalar",
        None,
    ),
    "_logical_or_scalar": (
        _logical_scalar_compute("or"),
        "1 where x or scalar is non-zero else 0",
        "_LogicalOrScalar",
        None,
    ),
    "_logical_xor_scalar": (
        _logical_scalar_compute("xor"),
        "1 where exactly one of x, scalar is non-zero else 0",
        "_LogicalXorScalar",
        None,
    ),
}


def _log_scalar(s: float) -> float:
    return math.log(s) if s > 0 else float("nan")


def _scalar_backward_compute(fn: ScalarGrad) -> Callable[..., None]:
    def compute(attrs, op_ctx, inputs, req, outputs) -> None:
        if req[0] is not NULL:
            v = inputs[1] if len(inputs) > 1 else None
            put(outputs[0], req[0], fn(op_ctx.xp, inputs[0], v, attrs.parsed.scalar))

    return compute


def _register_scalar(name: str, compute: Callable[..., None], what: str, camel: str, spec: tuple | None) -> None:
    if spec is None:
        gradient = zero_grad
    elif spec[0] == "copy":
        gradient = elemwise_grad_use_none("_copy")
    elif spec[0] == "negative":
        gradient = elemwise_grad_use_none("negative")
    else:
        uses, fn = spec
        backward = f"_backward{name}"
        helper = {"in": elemwise_grad_use_in, "out": elemwise_grad_use_out, "none": elemwise_grad_use_none}[uses]
        gradient = helper(backward)
        (
            register(backward)
            .describe(f"Gradient of {name}.")
            .set_params(ScalarParam)
            .set_num_inputs(1 if uses == "none" else 2)
            .set_num_outputs(1)
            .set_infer_shape(elemwise_shape)
            .set_infer_type(elemwise_type)
            .set_compute(_scalar_backward_compute(fn))
            .set_inplace_option(_inplace_first)
            .set_is_backward()
        )
    (
        register(name)
        .describe(f"Element-wise {what}; the scalar is a parameter.")
        .set_params(ScalarParam)
        .set_num_inputs(1)
        .set_num_outputs(1)
        .set_input_names(["data"])
        .set_infer_shape(elemwise_shape)
        .set_infer_type(elemwise_type)
        .set_compute(compute)
        .set_gradient(gradient)
        .set_inplace_option(_inplace_first)
    )
    alias(camel, name)


for _name, (_compute, _what, _camel, _spec) in _SCALAR_OPS.items():
    _register_scalar(_name, _compute, _what, _camel, _spec)
