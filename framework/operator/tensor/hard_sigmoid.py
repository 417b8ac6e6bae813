"""``hard_sigmoid``: the piecewise-linear sigmoid ``clip(alpha * x + beta, 0, 1)``.

Cheaper than ``sigmoid`` and exact on its middle segment. The gradient is ``alpha`` where
the line is strictly inside (0, 1) and 0 where it is clipped, so the backward operator
``_backward_hard_sigmoid`` needs the forward input (``elemwise_grad_use_in``).
"""

from __future__ import annotations

from typing import Any

from ..grad import elemwise_grad_use_in
from ..infer import elemwise_shape, elemwise_type
from ..params import Param, ParamSet
from ..registry import register
from .common import put


class HardSigmoidParam(ParamSet):
    alpha = Param(float, 0.2, "Slope of the line.")
    beta = Param(float, 0.5, "Value of the line at x = 0.")


def _line(attrs: Any, x: Any) -> Any:
    p = attrs.parsed
    return p.alpha * x + p.beta


def _hard_sigmoid_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    put(outputs[0], req[0], op_ctx.xp.clip(_line(attrs, inputs[0]), 0, 1))


def _hard_sigmoid_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    out_grad, x = inputs
    line = _line(attrs, x)
    inside = (line > 0) & (line < 1)
    put(outputs[0], req[0], out_grad * (inside * attrs.parsed.alpha))


def _inplace(attrs: Any) -> list[tuple[int, int]]:
    return [(0, 0)]


(
    register("hard_sigmoid")
    .describe("Piecewise-linear sigmoid: ``max(0, min(1, alpha * x + beta))``, element-wise.")
    .set_params(HardSigmoidParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(elemwise_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_hard_sigmoid_compute)
    .set_gradient(elemwise_grad_use_in("_backward_hard_sigmoid"))
    .set_inplace_option(_inplace)
)

(
    register("_backward_hard_sigmoid")
    .set_params(HardSigmoidParam)
    .set_num_inputs(2)
    .set_infer_shape(elemwise_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_hard_sigmoid_backward)
    .set_inplace_option(_inplace)
    .set_is_backward()
)
