"""``_contrib_boolean_mask``: the slices of ``data`` along ``axis`` where ``index`` is non-zero.

``boolean_mask(data, index, axis=0)`` keeps ``data``'s slice ``i`` along ``axis`` when
``index[i] != 0`` (NumPy's ``data[index != 0]`` for axis 0). It is the one operator here whose
output shape depends on the *values* of an input: how many rows survive is only known once
``index`` is computed. The registry says so with ``set_shape_from_values``: shape inference
leaves the output unknown (a bound graph refuses the operator, naming it, as MXNet's graph
executor does), while the imperative call waits for ``index`` and counts its non-zeros before
allocating the output.

The gradient scatters the output gradient back to the kept slices (zeros elsewhere); ``index``
gets a zero gradient. MXNet names the backward ``_backward_contrib_boolean_mask``.
"""

from __future__ import annotations

from typing import Any

from ..grad import elemwise_grad_use_in
from ..infer import InferenceError, ShapeT, shape_assign, type_assign
from ..params import Param, ParamSet
from ..registry import register
from ..tensor.common import normalize_axis, put, register_backward


class BooleanMaskParam(ParamSet):
    axis = Param(int, 0, "The axis of data that index selects along.")


def _mask_axis(attrs: Any, ndim: int) -> int:
    return normalize_axis(attrs.name, attrs.parsed.axis, ndim)


def _check_index(attrs: Any, data: tuple, index: tuple) -> None:
    axis = _mask_axis(attrs, len(data))
    if len(index) != 1 or (index[0] and data[axis] and index[0] != data[axis]):
        raise InferenceError(
            f"{attrs.name}: index must be 1-D with one entry per slice of data along axis {axis}, "
            f"got data {data} and index {index}"
        )


def _boolean_mask_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """The index's shape from the data; the output's is unknown until the index has values."""
    data = in_shapes[0]
    if data is not None:
        if len(data) == 0:
            raise InferenceError(f"{attrs.name}: data must have at least one dimension, got shape ()")
        axis = _mask_axis(attrs, len(data))
        shape_assign(in_shapes, 1, (data[axis],), attrs.name, "index")
        _check_index(attrs, data, in_shapes[1])
    return False  # the output's shape depends on the index values


def _boolean_mask_type(attrs: Any, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, in_types[0], attrs.name, "output")
    type_assign(in_types, 0, out_types[0], attrs.name, "data")
    return in_types[0] is not None and in_types[1] is not None


def _kept(xp: Any, index: Any) -> Any:
    """Positions of the non-zero entries of the 1-D index."""
    return xp.flatnonzero(index)


def _boolean_mask_values_shape(attrs: Any, inputs: list) -> list[tuple]:
    data, index = inputs
    if data.ndim == 0:
        raise InferenceError(f"{attrs.name}: data must have at least one dimension, got shape ()")
    _check_index(attrs, data.shape, index.shape)
    axis = _mask_axis(attrs, data.ndim)
    count = int((index != 0).sum())
    return [(*data.shape[:axis], count, *data.shape[axis + 1 :])]


def _boolean_mask_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    data, index = inputs
    axis = _mask_axis(attrs, data.ndim)
    put(outputs[0], req[0], op_ctx.xp.take(data, _kept(op_ctx.xp, index), axis=axis))


def _boolean_mask_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    out_grad, data, index = inputs
    xp = op_ctx.xp
    axis = _mask_axis(attrs, data.ndim)
    grad = xp.zeros(data.shape, dtype=out_grad.dtype)
    xp.moveaxis(grad, axis, 0)[_kept(xp, index)] = xp.moveaxis(out_grad, axis, 0)
    put(outputs[0], req[0], grad)
    put(outputs[1], req[1], xp.zeros(index.shape, dtype=outputs[1].dtype))


(
    register("_contrib_boolean_mask")
    .describe("The slices of data along axis where index is non-zero (the output's length depends on index's values).")
    .set_params(BooleanMaskParam)
    .set_num_inputs(2)
    .set_input_names(["data", "index"])
    .set_infer_shape(_boolean_mask_shape)
    .set_infer_type(_boolean_mask_type)
    .set_shape_from_values(_boolean_mask_values_shape)
    .set_compute(_boolean_mask_compute)
    .set_gradient(elemwise_grad_use_in("_backward_contrib_boolean_mask"))
)
register_backward(
    "_backward_contrib_boolean_mask", _boolean_mask_backward, BooleanMaskParam, num_inputs=3, num_outputs=2
)
