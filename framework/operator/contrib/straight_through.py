"""Operators whose gradient is deliberately *not* their derivative: ``_contrib_sign_ste``,
``_contrib_round_ste`` and ``_contrib_gradientmultiplier``.

``sign`` and ``round`` are flat almost everywhere, so their true gradient is zero and nothing
upstream would learn. The straight-through estimator (STE) used to train quantised networks
passes the output gradient through unchanged, as if the operator were the identity.
``gradientmultiplier`` goes the other way: the forward pass is the identity and the backward
pass scales the gradient by ``scalar`` (a negative scalar gives the gradient-reversal layer of
domain adaptation). MXNet names its backward ``_contrib_backward_gradientmultiplier``.
"""

from __future__ import annotations

from typing import Any

from ..grad import elemwise_grad_use_none
from ..infer import elemwise_shape, elemwise_type
from ..params import Param, ParamSet
from ..registry import register
from ..tensor.common import put
from ..tensor.elemwise_unary import _round_half_away


def _inplace(attrs: Any) -> list[tuple[int, int]]:
    return [(0, 0)]


def _identity_gradient(node: Any, out_grads: list) -> list:
    return [out_grads[0]]


for _name, _forward, _text in (
    ("_contrib_sign_ste", lambda xp, x: xp.sign(x), "sign(x); the gradient passes through unchanged."),
    ("_contrib_round_ste", _round_half_away, "round(x), halves away from 0; the gradient passes through."),
):
    (
        register(_name)
        .describe(_text)
        .set_num_inputs(1)
        .set_input_names(["data"])
        .set_infer_shape(elemwise_shape)
        .set_infer_type(elemwise_type)
        .set_compute(
            lambda attrs, op_ctx, inputs, req, outputs, f=_forward: put(outputs[0], req[0], f(op_ctx.xp, inputs[0]))
        )
        .set_gradient(_identity_gradient)
        .set_inplace_option(_inplace)
    )


class GradientMultiplierParam(ParamSet):
    scalar = Param(float, 1.0, "The factor applied to the gradient.")
    is_int = Param(bool, True, "Whether scalar was given as an integer (kept for MXNet's scalar-op signature).")


(
    register("_contrib_gradientmultiplier")
    .describe("The identity forward; the backward multiplies the gradient by ``scalar``.")
    .set_params(GradientMultiplierParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(elemwise_shape)
    .set_infer_type(elemwise_type)
    .set_compute(lambda attrs, op_ctx, inputs, req, outputs: put(outputs[0], req[0], inputs[0]))
    .set_gradient(elemwise_grad_use_none("_contrib_backward_gradientmultiplier"))
    .set_inplace_option(_inplace)
)
(
    register("_contrib_backward_gradientmultiplier")
    .set_params(GradientMultiplierParam)
    .set_num_inputs(1)
    .set_infer_shape(elemwise_shape)
    .set_infer_type(elemwise_type)
    .set_compute(lambda attrs, op_ctx, inputs, req, outputs: put(outputs[0], req[0], inputs[0] * attrs.parsed.scalar))
    .set_inplace_option(_inplace)
    .set_is_backward()
)
