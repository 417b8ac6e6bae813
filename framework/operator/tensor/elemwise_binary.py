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

Tables, one record per entry: each binary operation's maths is a :class:`BinaryMath` in
``BINARY_MATHS``, and :func:`register_binary` turns it into an operator of a
:class:`BinaryFamily` (``SAME_SHAPE`` here, ``BROADCASTING`` in ``broadcast.py``); each
array-scalar operator is a :class:`ScalarOp` in ``SCALAR_OPS``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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


BinaryFn = Callable[[Any, Any, Any], Any]
GradFn = Callable[[Any, Any, Any, Any], Any]
InferFn = Callable[..., bool]


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
        BinaryMath("logical_and", _logical("and"), "1 where both are non-zero else 0, in the input dtype"),
        BinaryMath("logical_or", _logical("or"), "1 where either is non-zero else 0, in the input dtype"),
        BinaryMath("logical_xor", _logical("xor"), "1 where exactly one is non-zero else 0, in the input dtype"),
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


def _inplace_binary(attrs) -> list[tuple[int, int]]:
    return [(0, 0), (1, 0)]


def _inplace_first(attrs) -> list[tuple[int, int]]:
    return [(0, 0)]


# ---------------------------------------------------------------------------- the shared skeleton
@dataclass(frozen=True)
class BinaryFamily:
    """What a family of binary operators (same-shape, broadcast) chooses; the rest is shared.

    ``backward_name(kind, name)`` names the backward operator; ``reduce`` sums a gradient
    back to an input's shape (broadcasting); ``backward_needs_input_shapes`` makes every
    backward take ``lhs`` and ``rhs`` (for their shapes) even when the maths does not.
    """

    description_suffix: str
    infer_shape: InferFn
    backward_infer_shape: InferFn
    backward_description: str
    backward_name: Callable[[str, str], str]
    reduce: Callable[[Any, Any, tuple], Any] | None = None
    backward_needs_input_shapes: bool = False
    backward_inplace: bool = True


def register_binary(family: BinaryFamily, kind: str, name: str, aliases: Sequence[str] = ()) -> None:
    """Register ``name`` computing ``BINARY_MATHS[kind]`` the way ``family`` says, with its
    backward operator (when differentiable) and its aliases."""
    maths = BINARY_MATHS[kind]
    if maths.differentiable:
        backward = family.backward_name(kind, name)
        uses_inputs = maths.grad_needs_inputs or family.backward_needs_input_shapes
        gradient = (elemwise_grad_use_in if uses_inputs else elemwise_grad_use_none)(backward)
        backward_op = (
            register(backward)
            .describe(family.backward_description.format(name=name))
            .set_num_inputs(3 if uses_inputs else 1)
            .set_num_outputs(2)
            .set_infer_shape(family.backward_infer_shape)
            .set_infer_type(elemwise_type)
            .set_compute(binary_backward_compute(kind, reduce=family.reduce))
        )
        if family.backward_inplace:
            backward_op.set_inplace_option(_inplace_first)
        backward_op.set_is_backward()
    else:
        gradient = zero_grad
    (
        register(name)
        .describe(maths.description + family.description_suffix)
        .set_num_inputs(2)
        .set_num_outputs(1)
        .set_input_names(["lhs", "rhs"])
        .set_infer_shape(family.infer_shape)
        .set_infer_type(elemwise_type)
        .set_compute(binary_forward_compute(kind))
        .set_gradient(gradient)
        .set_inplace_option(_inplace_binary)
    )
    for other in aliases:
        alias(other, name)


# ---------------------------------------------------------------------------- same-shape ops
SAME_SHAPE = BinaryFamily(
    description_suffix="; both inputs must have the same shape (use broadcast_* to broadcast).",
    infer_shape=elemwise_shape,
    backward_infer_shape=elemwise_shape,
    backward_description="Gradients of {name} with respect to lhs and rhs.",
    backward_name=lambda kind, name: f"_backward_{kind}",
)

# (kind, registered name, aliases), with MXNet's names
_SAME_SHAPE_NAMES = (
    ("add", "elemwise_add", ("_plus", "_Plus", "_add")),
    ("sub", "elemwise_sub", ("_minus", "_Minus", "_sub")),
    ("mul", "elemwise_mul", ("_mul", "_Mul")),
    ("div", "elemwise_div", ("_div", "_Div")),
    ("mod", "_mod", ("_Mod",)),
    ("power", "_power", ("_Power",)),
    ("maximum", "_maximum", ("_Maximum",)),
    ("minimum", "_minimum", ("_Minimum",)),
    ("hypot", "_hypot", ("_Hypot",)),
    ("equal", "_equal", ("_Equal",)),
    ("not_equal", "_not_equal", ("_Not_Equal",)),
    ("greater", "_greater", ("_Greater",)),
    ("greater_equal", "_greater_equal", ("_Greater_Equal",)),
    ("lesser", "_lesser", ("_Lesser",)),
    ("lesser_equal", "_lesser_equal", ("_Lesser_Equal",)),
    ("logical_and", "_logical_and", ("_Logical_And",)),
    ("logical_or", "_logical_or", ("_Logical_Or",)),
    ("logical_xor", "_logical_xor", ("_Logical_Xor",)),
)

for _kind, _name, _aliases in _SAME_SHAPE_NAMES:
    register_binary(SAME_SHAPE, _kind, _name, _aliases)

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
    # (attrs, dtype, the scalar as a 0-d array of that dtype) of the last NumPy call. NumPy takes
    # a 0-d array of the input's own dtype a third faster than a Python float, with the same
    # result (the float is cast to that dtype either way); a loop calls with the same attrs
    # again and again, so one entry, replaced whole (threads may race), is enough.
    last_scalar: tuple = (None, None, None)

    def compute(attrs, op_ctx, inputs, req, outputs) -> None:
        nonlocal last_scalar
        x, out = inputs[0], outputs[0]
        dtype = out.dtype
        if dtype.kind == "f":
            if req[0] is not NULL and req[0] is not ADD:  # write: what compute_into does, without its two calls
                if op_ctx.xp is np:
                    ufunc = numpy_ufunc
                    memo = last_scalar
                    if memo[0] is attrs and memo[1] is dtype and x.dtype is dtype:
                        s = memo[2]  # a repeat: not even the parameter is read (a descriptor call)
                    elif x.dtype is dtype:
                        s = np.array(attrs.parsed.scalar, dtype)
                        last_scalar = (attrs, dtype, s)
                    else:
                        s = attrs.parsed.scalar
                else:
                    ufunc = getattr(op_ctx.xp, ufunc_name)
                    s = attrs.parsed.scalar
                if reverse:
                    ufunc(s, x, out=out)
                else:
                    ufunc(x, s, out=out)
                return
            s = attrs.parsed.scalar
        else:
            s = _scalar_for(x, attrs.parsed.scalar)
        ufunc = numpy_ufunc if op_ctx.xp is np else getattr(op_ctx.xp, ufunc_name)
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


def _log_scalar(s: float) -> float:
    return math.log(s) if s > 0 else float("nan")


@dataclass(frozen=True)
class ScalarOp:
    """One array-scalar operator (``_plus_scalar``): adding one is one entry of ``SCALAR_OPS``.

    * ``compute``: the forward compute function; ``what``: the maths, for the description;
      ``camel_alias``: MXNet's CamelCase name (``_PlusScalar``);
    * ``derivative``: ``f(xp, out_grad, v, scalar)``, computed by a ``_backward<name>`` operator
      from the forward input (``uses="in"``), output (``"out"``) or nothing (``"none"``);
    * ``gradient_op``: instead, the gradient is this operator applied to the output gradient
      (``_copy`` for ``x + s``, ``negative`` for ``s - x``); neither: a zero gradient.
    """

    name: str
    compute: Callable[..., None]
    what: str
    camel_alias: str
    derivative: ScalarGrad | None = None
    uses: str = "in"
    gradient_op: str | None = None

    def __post_init__(self) -> None:
        if self.uses not in ("in", "out", "none"):
            raise ValueError(f"ScalarOp {self.name!r}: uses must be 'in', 'out' or 'none', got {self.uses!r}")


SCALAR_OPS: tuple[ScalarOp, ...] = (
    ScalarOp("_plus_scalar", _scalar_ufunc_compute("add", False), "x + scalar", "_PlusScalar", gradient_op="_copy"),
    ScalarOp(
        "_minus_scalar", _scalar_ufunc_compute("subtract", False), "x - scalar", "_MinusScalar", gradient_op="_copy"
    ),
    ScalarOp(
        "_rminus_scalar", _scalar_ufunc_compute("subtract", True), "scalar - x", "_RMinusScalar", gradient_op="negative"
    ),
    ScalarOp(
        "_mul_scalar",
        _scalar_ufunc_compute("multiply", False),
        "x * scalar",
        "_MulScalar",
        lambda xp, g, v, s: g * s,
        uses="none",
    ),
    ScalarOp(
        "_div_scalar",
        _scalar_ufunc_compute("divide", False),
        "x / scalar",
        "_DivScalar",
        lambda xp, g, v, s: g / s,
        uses="none",
    ),
    ScalarOp(
        "_rdiv_scalar",
        _scalar_ufunc_compute("divide", True),
        "scalar / x",
        "_RDivScalar",
        lambda xp, g, x, s: g * (-s / (x * x)),
    ),
    ScalarOp("_mod_scalar", _mod_scalar_compute, "x mod scalar", "_ModScalar", lambda xp, g, x, s: g),
    ScalarOp(
        "_rmod_scalar", _rmod_scalar_compute, "scalar mod x", "_RModScalar", lambda xp, g, x, s: -g * xp.floor(s / x)
    ),
    ScalarOp(
        "_power_scalar",
        _scalar_ufunc_compute("power", False),
        "x ** scalar",
        "_PowerScalar",
        lambda xp, g, x, s: g * (s * xp.power(x, s - 1)),
    ),
    ScalarOp(
        "_rpower_scalar",
        _scalar_ufunc_compute("power", True),
        "scalar ** x",
        "_RPowerScalar",
        lambda xp, g, y, s: g * y * _log_scalar(s),
        uses="out",
    ),
    ScalarOp(
        "_maximum_scalar",
        _scalar_ufunc_compute("maximum", False),
        "max(x, scalar) (gradient 1 where x >= scalar)",
        "_MaximumScalar",
        lambda xp, g, x, s: g * (x >= s),
    ),
    ScalarOp(
        "_minimum_scalar",
        _scalar_ufunc_compute("minimum", False),
        "min(x, scalar) (gradient 1 where x <= scalar)",
        "_MinimumScalar",
        lambda xp, g, x, s: g * (x <= s),
    ),
    ScalarOp(
        "_hypot_scalar",
        _scalar_ufunc_compute("hypot", False),
        "sqrt(x^2 + scalar^2)",
        "_HypotScalar",
        lambda xp, g, x, s: g * x / xp.hypot(x, s),
    ),
    ScalarOp("_equal_scalar", _scalar_ufunc_compute("equal", False), "1 where x == scalar else 0", "_EqualScalar"),
    ScalarOp(
        "_not_equal_scalar", _scalar_ufunc_compute("not_equal", False), "1 where x != scalar else 0", "_NotEqualScalar"
    ),
    ScalarOp("_greater_scalar", _scalar_ufunc_compute("greater", False), "1 where x > scalar else 0", "_GreaterScalar"),
    ScalarOp(
        "_greater_equal_scalar",
        _scalar_ufunc_compute("greater_equal", False),
        "1 where x >= scalar else 0",
        "_GreaterEqualScalar",
    ),
    ScalarOp("_lesser_scalar", _scalar_ufunc_compute("less", False), "1 where x < scalar else 0", "_LesserScalar"),
    ScalarOp(
        "_lesser_equal_scalar",
        _scalar_ufunc_compute("less_equal", False),
        "1 where x <= scalar else 0",
        "_LesserEqualScalar",
    ),
    ScalarOp(
        "_logical_and_scalar",
        _logical_scalar_compute("and"),
        "1 where x and scalar are non-zero else 0",
        "_LogicalAndScalar",
    ),
    ScalarOp(
        "_logical_or_scalar",
        _logical_scalar_compute("or"),
        "1 where x or scalar is non-zero else 0",
        "_LogicalOrScalar",
    ),
    ScalarOp(
        "_logical_xor_scalar",
        _logical_scalar_compute("xor"),
        "1 where exactly one of x, scalar is non-zero else 0",
        "_LogicalXorScalar",
    ),
)


def _scalar_backward_compute(fn: ScalarGrad) -> Callable[..., None]:
    def compute(attrs, op_ctx, inputs, req, outputs) -> None:
        if req[0] is not NULL:
            v = inputs[1] if len(inputs) > 1 else None
            put(outputs[0], req[0], fn(op_ctx.xp, inputs[0], v, attrs.parsed.scalar))

    return compute


def _scalar_gradient(op: ScalarOp) -> Callable[..., Any]:
    """The operator's gradient builder; registers its ``_backward<name>`` when it has a derivative."""
    if op.gradient_op is not None:
        return elemwise_grad_use_none(op.gradient_op)
    if op.derivative is None:
        return zero_grad
    backward = f"_backward{op.name}"
    (
        register(backward)
        .describe(f"Gradient of {op.name}.")
        .set_params(ScalarParam)
        .set_num_inputs(1 if op.uses == "none" else 2)
        .set_num_outputs(1)
        .set_infer_shape(elemwise_shape)
        .set_infer_type(elemwise_type)
        .set_compute(_scalar_backward_compute(op.derivative))
        .set_inplace_option(_inplace_first)
        .set_is_backward()
    )
    helper = {"in": elemwise_grad_use_in, "out": elemwise_grad_use_out, "none": elemwise_grad_use_none}[op.uses]
    return helper(backward)


def register_scalar_op(op: ScalarOp) -> None:
    """Register a table entry with the scalar skeleton, its backward operator if any, and its alias."""
    (
        register(op.name)
        .describe(f"Element-wise {op.what}; the scalar is a parameter.")
        .set_params(ScalarParam)
        .set_num_inputs(1)
        .set_num_outputs(1)
        .set_input_names(["data"])
        .set_infer_shape(elemwise_shape)
        .set_infer_type(elemwise_type)
        .set_compute(op.compute)
        .set_gradient(_scalar_gradient(op))
        .set_inplace_option(_inplace_first)
    )
    alias(op.camel_alias, op.name)


for _op in SCALAR_OPS:
    register_scalar_op(_op)
