"""Type conversion: ``Cast`` (alias ``cast``).

The output holds the input's values in ``dtype``; the gradient flows back converted to the
input's dtype (``_backward_Cast``), so a float16 branch of a float32 network still trains.
"""

from __future__ import annotations

from ..grad import elemwise_grad_use_in
from ..infer import (
    elemwise_shape,
    type_assign,
)
from ..kernel import assign
from ..params import DType, Param, ParamSet
from ..registry import alias, register
from .common import (
    grads_like_inputs,
)


class CastParam(ParamSet):
    dtype = Param(DType, "float32", "The output data type.")


def _cast_type(attrs, in_types, out_types) -> bool:
    type_assign(out_types, 0, attrs.parsed.dtype, attrs.name, "output")
    return in_types[0] is not None


def _cast_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    assign(outputs[0], req[0], inputs[0].astype(outputs[0].dtype))


def _cast_backward_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    # inputs: (out_grad, forward input): the gradient goes back in the input's dtype
    assign(outputs[0], req[0], inputs[0].astype(outputs[0].dtype))


def _cast_backward_type(attrs, in_types, out_types) -> bool:
    type_assign(out_types, 0, in_types[1], attrs.name, "input gradient")
    return out_types[0] is not None


(
    register("Cast")
    .describe("Casts the input to ``dtype``.")
    .set_params(CastParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(elemwise_shape)
    .set_infer_type(_cast_type)
    .set_compute(_cast_compute)
    .set_gradient(elemwise_grad_use_in("_backward_Cast"))
)
alias("cast", "Cast")
(
    register("_backward_Cast")
    .set_params(CastParam)
    .set_num_inputs(2)
    .set_infer_shape(grads_like_inputs(1))
    .set_infer_type(_cast_backward_type)
    .set_compute(_cast_backward_compute)
    .set_is_backward()
)
