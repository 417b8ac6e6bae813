"""Array-scalar operators: ``_plus_scalar(data, scalar=1.0)``, ``_rminus_scalar``, ``_equal_scalar``, ...

``a + 1``, ``1 - a``, ``a ** 2``, ``2 ** a``, ``a == 1`` and ``a += 1`` call these. They are
the hot path of imperative code, so they compute straight into the output with one ufunc
call (no temporary) and take ``scalar`` as a float parameter. As in MXNet, the scalar is
first cast to the array's dtype: ``int32_array * 1.5`` multiplies by 1. Each operator is one
:class:`ScalarOp` in ``SCALAR_OPS``; :func:`register_scalar_op` registers it with its
``_backward_*`` operator and its CamelCase alias. They are separate from the two-array
operators because they have one input, a parameter and their own gradient table.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..grad import elemwise_grad_use_in, elemwise_grad_use_none, elemwise_grad_use_out, zero_grad
from ..infer import elemwise_shape, elemwise_type
from ..kernel import ADD, NULL, assign
from ..params import Param, ParamSet
from ..registry import alias, register
from .binary_family import inplace_first
from .binary_maths import logical, mod
from .elemwise_unary import compute_into, put


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
    fn = logical(kind)

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
        .set_inplace_option(inplace_first)
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
        .set_inplace_option(inplace_first)
    )
    alias(op.camel_alias, op.name)


for _op in SCALAR_OPS:
    register_scalar_op(_op)
