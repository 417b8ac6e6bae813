"""Write-into helpers behind NDArray's ``x[key] = value`` and the sparse-update kernels:
``_slice_assign`` (alias ``_crop_assign``), ``_slice_assign_scalar`` (alias
``_crop_assign_scalar``), ``_scatter_set_nd``, ``_set_value``, ``_copyto`` and the
``_scatter_*`` arithmetic.

Each returns its first input with part of it overwritten. MXNet runs them in place (the
output *is* the first input, in-place option ``(0, 0)``); as a graph operator the output is a
new array unless the planner shares the buffer, and the value is the same either way.

* ``_slice_assign(lhs, rhs, begin, end, step)``: ``lhs[begin:end:step] = rhs`` (``slice``'s key);
* ``_slice_assign_scalar(data, scalar, ...)``: the block set to one value;
* ``_scatter_set_nd(lhs, rhs, indices, shape)``: ``lhs[indices] = rhs`` with ``gather_nd``'s
  index layout (row ``k`` of ``indices`` indexes axis ``k``);
* ``_set_value(src)`` fills ``out=`` with a scalar, ``_copyto(data)`` copies into ``out=``;
* ``_scatter_elemwise_div``, ``_scatter_plus_scalar``, ``_scatter_minus_scalar``: on sparse
  arrays MXNet applies them to the stored elements only; every MXLab array is dense, so they
  are plain ``lhs / rhs``, ``x + s`` and ``x - s`` (with those gradients).

The slice and scatter assignments are not differentiable, as in MXNet 1.9.1.
"""

from __future__ import annotations

from typing import Any

from ..grad import elemwise_grad_use_in, elemwise_grad_use_none
from ..infer import InferenceError, ShapeT, elemwise_shape, elemwise_type, shape_assign, shape_known, type_assign
from ..params import REQUIRED, Param, ParamSet, Shape
from ..registry import alias, register
from .common import put
from .elemwise_scalar import ScalarParam
from .slicing import SliceParam, _slice_key, _sliced_shape


def _inplace(attrs: Any) -> list[tuple[int, int]]:
    return [(0, 0)]


def _first_input_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> None:
    shape_assign(out_shapes, 0, in_shapes[0], attrs.name, "output")
    shape_assign(in_shapes, 0, out_shapes[0], attrs.name, "input 0")


# ----------------------------------------------------------------------------- slice assign


def _slice_assign_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    _first_input_shape(attrs, in_shapes, out_shapes)
    lhs = in_shapes[0]
    if lhs is None or not shape_known(lhs):
        return False
    block = _sliced_shape(attrs.name, lhs, _slice_key(attrs, len(lhs)))
    if len(in_shapes) > 1:  # the rhs must fill the block exactly
        rhs = in_shapes[1]
        if rhs is not None and shape_known(rhs) and tuple(rhs) != block:
            raise InferenceError(f"{attrs.name}: rhs shape {rhs} does not match the slice {block} of lhs {lhs}")
        shape_assign(in_shapes, 1, block, attrs.name, "rhs")
    return True


def _slice_assign_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    value = inputs[0].copy()
    value[_slice_key(attrs, value.ndim)] = inputs[1]
    put(outputs[0], req[0], value)


(
    register("_slice_assign")
    .describe("lhs with the block lhs[begin:end:step] replaced by rhs.")
    .set_params(SliceParam)
    .set_num_inputs(2)
    .set_input_names(["lhs", "rhs"])
    .set_infer_shape(_slice_assign_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_slice_assign_compute)
    .set_inplace_option(_inplace)
)
alias("_crop_assign", "_slice_assign")


class SliceAssignScalarParam(SliceParam):
    scalar = Param(float, 0.0, "The value written into the block.")


def _slice_assign_scalar_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    value = inputs[0].copy()
    value[_slice_key(attrs, value.ndim)] = attrs.parsed.scalar
    put(outputs[0], req[0], value)


(
    register("_slice_assign_scalar")
    .describe("data with the block data[begin:end:step] set to scalar.")
    .set_params(SliceAssignScalarParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_slice_assign_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_slice_assign_scalar_compute)
    .set_inplace_option(_inplace)
)
alias("_crop_assign_scalar", "_slice_assign_scalar")

# ----------------------------------------------------------------------------- scatter_set_nd


class ScatterSetNDParam(ParamSet):
    shape = Param(Shape, REQUIRED, "The shape of lhs (and of the output).")


def _scatter_set_nd_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape = tuple(attrs.parsed.shape)
    shape_assign(out_shapes, 0, shape, attrs.name, "output")
    shape_assign(in_shapes, 0, shape, attrs.name, "lhs")
    indices = in_shapes[2]
    if indices is not None and shape_known(indices):
        if len(indices) < 1 or indices[0] > len(shape):
            raise InferenceError(f"{attrs.name}: indices {indices} must have at most {len(shape)} rows (lhs {shape})")
        shape_assign(in_shapes, 1, (*indices[1:], *shape[indices[0] :]), attrs.name, "rhs")
    return all(s is not None and shape_known(s) for s in in_shapes)


def _scatter_set_nd_type(attrs: Any, in_types: list, out_types: list) -> bool:
    type_assign(in_types, 1, in_types[0], attrs.name, "rhs")
    type_assign(in_types, 0, in_types[1], attrs.name, "lhs")
    type_assign(out_types, 0, in_types[0], attrs.name, "output")
    return in_types[0] is not None and in_types[2] is not None


def _scatter_set_nd_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    lhs, rhs, indices = inputs
    value = lhs.copy()
    value[tuple(indices.astype("int64"))] = rhs
    put(outputs[0], req[0], value)


(
    register("_scatter_set_nd")
    .describe("lhs with the elements at indices (gather_nd layout) set to rhs.")
    .set_params(ScatterSetNDParam)
    .set_num_inputs(3)
    .set_input_names(["lhs", "rhs", "indices"])
    .set_infer_shape(_scatter_set_nd_shape)
    .set_infer_type(_scatter_set_nd_type)
    .set_compute(_scatter_set_nd_compute)
    .set_inplace_option(_inplace)
)

# ----------------------------------------------------------------------------- _set_value, _copyto


class SetValueParam(ParamSet):
    src = Param(float, REQUIRED, "The value every element of out= is set to.")


(
    register("_set_value")
    .describe("Fills the output (given with out=) with the scalar src.")
    .set_params(SetValueParam)
    .set_num_inputs(0)
    .set_infer_shape(lambda attrs, in_shapes, out_shapes: shape_known(out_shapes[0]))
    .set_infer_type(lambda attrs, in_types, out_types: out_types[0] is not None)
    .set_compute(
        lambda attrs, op_ctx, inputs, req, outputs: put(outputs[0], req[0], op_ctx.xp.asarray(attrs.parsed.src))
    )
)


def _copyto_type(attrs: Any, in_types: list, out_types: list) -> bool:
    """The output keeps a dtype given with out= (a converting copy), else takes the input's."""
    type_assign(out_types, 0, in_types[0] if out_types[0] is None else out_types[0], attrs.name, "output")
    return in_types[0] is not None


(
    register("_copyto")
    .describe("Copies data into the output (out=), converting to its dtype.")
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(elemwise_shape)
    .set_infer_type(_copyto_type)
    .set_compute(lambda attrs, op_ctx, inputs, req, outputs: put(outputs[0], req[0], inputs[0]))
    .set_gradient(elemwise_grad_use_none("_copy"))
)


# ----------------------------------------------------------------------------- dense _scatter_* maths

(
    register("_scatter_elemwise_div")
    .describe("lhs / rhs (MXNet divides only the stored elements of a sparse lhs; MXLab arrays are dense).")
    .set_num_inputs(2)
    .set_input_names(["lhs", "rhs"])
    .set_infer_shape(elemwise_shape)
    .set_infer_type(elemwise_type)
    .set_compute(lambda attrs, op_ctx, inputs, req, outputs: put(outputs[0], req[0], inputs[0] / inputs[1]))
    .set_gradient(elemwise_grad_use_in("_backward_div"))
)

for _name, _sign in (("_scatter_plus_scalar", 1.0), ("_scatter_minus_scalar", -1.0)):
    (
        register(_name)
        .describe(f"data {'+' if _sign > 0 else '-'} scalar (on dense arrays: every element).")
        .set_params(ScalarParam)
        .set_num_inputs(1)
        .set_input_names(["data"])
        .set_infer_shape(elemwise_shape)
        .set_infer_type(elemwise_type)
        .set_compute(
            lambda attrs, op_ctx, inputs, req, outputs, s=_sign: put(
                outputs[0], req[0], inputs[0] + s * attrs.parsed.scalar
            )
        )
        .set_gradient(lambda node, out_grads: [out_grads[0]])
        .set_inplace_option(_inplace)
    )
