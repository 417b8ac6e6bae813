"""``_contrib_isnan``, ``_contrib_isinf``, ``_contrib_isfinite`` (``mx.nd.contrib.isnan``...):
element-wise tests of floating-point values, 1 where the test holds and 0 elsewhere, in the
input's shape and dtype. The answer is a step function of the input: its gradient is zero.
"""

from __future__ import annotations

from typing import Any

from ..grad import zero_grad
from ..infer import elemwise_shape, elemwise_type
from ..kernel import assign
from ..registry import register


def _float_check(test: str) -> Any:
    def compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
        assign(outputs[0], req[0], getattr(op_ctx.xp, test)(inputs[0]).astype(outputs[0].dtype))

    return compute


for _test in ("isnan", "isinf", "isfinite"):
    (
        register(f"_contrib_{_test}")
        .describe(f"1 where NumPy's ``{_test}`` holds for the element, else 0 (same shape and dtype as the input).")
        .set_num_inputs(1)
        .set_input_names(["data"])
        .set_infer_shape(elemwise_shape)
        .set_infer_type(elemwise_type)
        .set_compute(_float_check(_test))
        .set_gradient(zero_grad)
    )
