"""``_contrib_index_copy``: ``old_tensor`` with the rows listed in ``index_vector`` replaced by
the rows of ``new_tensor`` (``out[index[i]] = new[i]``), as PyTorch's ``index_copy_``.

The gradient splits the output gradient by rows: the replaced rows' gradient goes to
``new_tensor`` (gathered with the same index), every other row's to ``old_tensor``; the index
gets zeros. MXNet names the backward ``_contrib_backward_index_copy``.
"""

from __future__ import annotations

from typing import Any

from ..grad import elemwise_grad_use_in
from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..registry import register
from ..tensor.common import put, register_backward


def _index_copy_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    old, index, new = in_shapes
    shape_assign(out_shapes, 0, old, attrs.name, "output")
    shape_assign(in_shapes, 0, out_shapes[0], attrs.name, "old_tensor")
    old = in_shapes[0]
    if old is None or index is None or new is None:
        return False
    if len(index) != 1 or len(new) != len(old) or new[1:] != old[1:] or (index[0] and new[0] and index[0] != new[0]):
        raise InferenceError(
            f"{attrs.name}: expects index_vector (n,) and new_tensor (n, *old_tensor.shape[1:]), "
            f"got old_tensor {old}, index_vector {index}, new_tensor {new}"
        )
    return shape_known(old) and shape_known(index) and shape_known(new)


def _index_copy_type(attrs: Any, in_types: list, out_types: list) -> bool:
    type_assign(in_types, 2, in_types[0], attrs.name, "new_tensor")
    type_assign(in_types, 0, in_types[2], attrs.name, "old_tensor")
    type_assign(out_types, 0, in_types[0], attrs.name, "output")
    type_assign(in_types, 0, out_types[0], attrs.name, "old_tensor")
    return in_types[0] is not None and in_types[1] is not None


def _rows(index: Any) -> Any:
    return index.astype("int64")


def _index_copy_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    old, index, new = inputs
    value = old.copy()
    value[_rows(index)] = new
    put(outputs[0], req[0], value)


def _index_copy_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    out_grad, _old, index, _new = inputs
    rows = _rows(index)
    grad_old = out_grad.copy()
    grad_old[rows] = 0
    put(outputs[0], req[0], grad_old)
    put(outputs[1], req[1], op_ctx.xp.zeros(index.shape, dtype=outputs[1].dtype))
    put(outputs[2], req[2], out_grad[rows])


(
    register("_contrib_index_copy")
    .describe("old_tensor with rows index_vector[i] replaced by new_tensor[i].")
    .set_num_inputs(3)
    .set_input_names(["old_tensor", "index_vector", "new_tensor"])
    .set_infer_shape(_index_copy_shape)
    .set_infer_type(_index_copy_type)
    .set_compute(_index_copy_compute)
    .set_gradient(elemwise_grad_use_in("_contrib_backward_index_copy"))
)
register_backward("_contrib_backward_index_copy", _index_copy_backward, None, num_inputs=4, num_outputs=3)
