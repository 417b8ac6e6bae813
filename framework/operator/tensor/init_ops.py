"""Array creation operators: ``_zeros``, ``_ones``, ``_full``, ``_arange``,
``zeros_like``, ``ones_like``.

Creation is an operator like any other, so it is scheduled by the engine and can appear in
symbols (``mx.sym.zeros``). The creation operators take ``ctx`` and ``dtype`` parameters
instead of inputs.
"""

from __future__ import annotations

import math

import numpy as np

from ...shape_mode import is_np_shape
from ..grad import zero_grad
from ..infer import InferenceError, elemwise_shape, elemwise_type, shape_assign, shape_known, type_assign
from ..kernel import assign
from ..params import DType, Param, ParamSet, Shape
from ..registry import register


class InitParam(ParamSet):
    shape = Param(Shape, Shape(), "The shape of the output.")
    ctx = Param(str, "", "Context of the output (set by the front end).")
    dtype = Param(DType, "float32", "Data type of the output.")


class FullParam(InitParam):
    value = Param(float, 0.0, "The value to fill with.")


class ArangeParam(ParamSet):
    start = Param(float, 0.0, "Start of the interval (inclusive).")
    stop = Param(float, None, "End of the interval (exclusive); None means [0, start).")
    step = Param(float, 1.0, "Spacing between values.")
    repeat = Param(int, 1, "Times each value is repeated.", low=1)
    infer_range = Param(bool, False, "Infer stop from the output shape (not supported by MXLab: must be False).")
    ctx = Param(str, "", "Context of the output (set by the front end).")
    dtype = Param(DType, "float32", "Data type of the output.")


def _init_shape(attrs, in_shapes, out_shapes) -> bool:
    shape = attrs.parsed.shape
    if any(d < 0 for d in shape):
        raise InferenceError(f"{attrs.name}: shape dimensions must be >= 0, got {tuple(shape)}")
    if not is_np_shape() and (not shape or 0 in shape):
        # MXNet 1.x's legacy shape semantics: () means "ndim unknown" and a 0 "this dimension
        # unknown". In a symbol the rest of the graph may fill them in (an RNN cell's begin
        # state, zeros((0, H)), gets its batch size from the data); ``mx.nd.zeros`` refuses
        # such a shape up front (legacy_creation_error), since nothing can fill it there.
        if shape:
            shape_assign(out_shapes, 0, shape, attrs.name, "output")
        return shape_known(out_shapes[0])
    shape_assign(out_shapes, 0, shape, attrs.name, "output")
    return True


def legacy_creation_error(shape: tuple[int, ...], what: str) -> InferenceError | None:
    """The error ``mx.nd.zeros``/``ones`` give for a shape legacy semantics call unknown, else None."""
    if is_np_shape() or (shape and 0 not in shape):
        return None
    return InferenceError(
        f"{what}: cannot create an array of shape {tuple(shape)}: under MXNet 1.x's legacy shape "
        "semantics () and 0 dimensions mean unknown; use mx.util.use_np_shape() / set_np_shape(True) "
        "for zero-size and 0-d arrays"
    )


def _init_type(attrs, in_types, out_types) -> bool:
    type_assign(out_types, 0, attrs.parsed.dtype, attrs.name, "output")
    return True


def _fill_with(value_of):
    def compute(attrs, op_ctx, inputs, req, outputs) -> None:
        assign(outputs[0], req[0], value_of(attrs))

    return compute


for _name, _param, _value in (
    ("_zeros", InitParam, lambda attrs: 0),
    ("_ones", InitParam, lambda attrs: 1),
    ("_full", FullParam, lambda attrs: attrs.parsed.value),
):
    (
        register(_name)
        .describe(f"Creates an array filled with {_name.strip('_')}.")
        .set_params(_param)
        .set_num_inputs(0)
        .set_infer_shape(_init_shape)
        .set_infer_type(_init_type)
        .set_compute(_fill_with(_value))
    )


def arange_length(p) -> int:
    if p.infer_range:
        raise InferenceError("_arange: infer_range=True is not supported by MXLab; give stop explicitly")
    start, stop = (0.0, p.start) if p.stop is None else (p.start, p.stop)
    if p.step == 0:
        raise ValueError("_arange: step must not be 0")
    return max(0, math.ceil((stop - start) / p.step)) * p.repeat


def _arange_shape(attrs, in_shapes, out_shapes) -> bool:
    shape_assign(out_shapes, 0, (arange_length(attrs.parsed),), attrs.name, "output")
    return True


def _arange_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    p, xp = attrs.parsed, op_ctx.xp
    start = 0.0 if p.stop is None else p.start
    count = arange_length(p) // p.repeat
    values = start + p.step * xp.arange(count, dtype=np.float64)
    if p.repeat > 1:
        values = xp.repeat(values, p.repeat)
    assign(outputs[0], req[0], values.astype(outputs[0].dtype))


(
    register("_arange")
    .describe("Evenly spaced values in [start, stop) (MXNet's ``arange``).")
    .set_params(ArangeParam)
    .set_num_inputs(0)
    .set_infer_shape(_arange_shape)
    .set_infer_type(_init_type)
    .set_compute(_arange_compute)
)


for _name, _value in (("zeros_like", 0), ("ones_like", 1)):
    (
        register(_name)
        .describe(f"An array of {'zeros' if _value == 0 else 'ones'} shaped like the input.")
        .set_num_inputs(1)
        .set_input_names(["data"])
        .set_infer_shape(elemwise_shape)
        .set_infer_type(elemwise_type)
        .set_compute(lambda attrs, op_ctx, inputs, req, outputs, v=_value: assign(outputs[0], req[0], v))
        .set_gradient(zero_grad)
    )
