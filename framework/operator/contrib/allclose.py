"""``_contrib_allclose``: whether two arrays are equal within tolerances, as one uint8 scalar.

``|a - b| <= atol + rtol * |b|`` must hold for every element (NumPy's ``allclose`` rule;
NaNs compare equal when ``equal_nan``). The answer is a 0-d ``uint8`` array (1 or 0), as in
MXNet 1.9.1, and it stays on the device: a training loop can test it without waiting.
Not differentiable.
"""

from __future__ import annotations

from typing import Any

from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..params import Param, ParamSet
from ..registry import register
from ..tensor.common import put


class AllcloseParam(ParamSet):
    rtol = Param(float, 1e-5, "Relative tolerance.", low=0)
    atol = Param(float, 1e-8, "Absolute tolerance.", low=0)
    equal_nan = Param(bool, True, "Whether NaNs in the same places compare equal.")


def _allclose_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    a, b = in_shapes
    if a is not None and b is not None and shape_known(a) and shape_known(b) and a != b:
        raise InferenceError(f"{attrs.name}: a and b must have the same shape, got {a} and {b}")
    shape_assign(out_shapes, 0, (), attrs.name, "output")
    return shape_known(a) and shape_known(b)


def _allclose_type(attrs: Any, in_types: list, out_types: list) -> bool:
    type_assign(in_types, 1, in_types[0], attrs.name, "b")
    type_assign(in_types, 0, in_types[1], attrs.name, "a")
    type_assign(out_types, 0, "uint8", attrs.name, "output")
    return in_types[0] is not None


def _allclose_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    p = attrs.parsed
    close = op_ctx.xp.allclose(inputs[0], inputs[1], rtol=p.rtol, atol=p.atol, equal_nan=p.equal_nan)
    put(outputs[0], req[0], op_ctx.xp.asarray(close, dtype="uint8"))


(
    register("_contrib_allclose")
    .describe("1 (uint8, 0-d) when |a - b| <= atol + rtol * |b| everywhere, else 0.")
    .set_params(AllcloseParam)
    .set_num_inputs(2)
    .set_input_names(["a", "b"])
    .set_infer_shape(_allclose_shape)
    .set_infer_type(_allclose_type)
    .set_compute(_allclose_compute)
)
