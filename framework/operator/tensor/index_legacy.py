"""MXNet's older indexing helpers, kept because old scripts call them: ``batch_take``,
``choose_element_0index`` (an alias of ``pick``), ``fill_element_0index``, ``_onehot_encode``.

Each works row by row on a batch: row ``i`` of the data is paired with ``index[i]``:

* ``batch_take(a, indices)``: ``a[i, indices[i]]`` (indices clipped into range; int32);
* ``fill_element_0index(lhs, mhs, rhs)``: ``lhs`` with ``lhs[i, rhs[i]] = mhs[i]``;
* ``_onehot_encode(lhs, rhs)``: a one-hot matrix shaped like ``rhs`` from the indices ``lhs``.

The selection is vectorised with ``arange(rows)`` as the row index. As in MXNet 1.9.1, none of
them is differentiable (the modern operators are: ``pick``, ``one_hot``, ``scatter_nd``).
"""

from __future__ import annotations

import math
from typing import Any

from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..registry import alias, register
from .common import put

alias("choose_element_0index", "pick")


def _rows(shape: tuple[int, ...]) -> tuple[int, int]:
    """``shape`` seen as a matrix: (rows, last axis)."""
    last = shape[-1]
    return (0 if last == 0 else math.prod(shape) // last), last


# ----------------------------------------------------------------------------- batch_take


def _batch_take_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    a, indices = in_shapes
    shape_assign(out_shapes, 0, indices, attrs.name, "output")
    shape_assign(in_shapes, 1, out_shapes[0], attrs.name, "indices")
    indices = in_shapes[1]
    if a is None or indices is None or not (shape_known(a) and shape_known(indices)):
        return False
    if len(a) == 0 or _rows(a)[0] != math.prod(indices):
        raise InferenceError(
            f"{attrs.name}: indices {indices} must have one element per row of a {a} (a's size without its last axis)"
        )
    return True


def _batch_take_type(attrs: Any, in_types: list, out_types: list) -> bool:
    type_assign(in_types, 1, "int32", attrs.name, "indices")
    type_assign(out_types, 0, in_types[0], attrs.name, "output")
    type_assign(in_types, 0, out_types[0], attrs.name, "a")
    return in_types[0] is not None


def _batch_take_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    a, indices = inputs
    xp = op_ctx.xp
    rows, last = _rows(a.shape)
    cols = xp.clip(indices.reshape(-1).astype("int64"), 0, last - 1)
    picked = a.reshape(rows, last)[xp.arange(rows), cols]
    put(outputs[0], req[0], picked.reshape(outputs[0].shape))


(
    register("batch_take")
    .describe("Row i of ``a`` (seen as rows of its last axis) gives ``a[i, indices[i]]`` (indices clipped).")
    .set_num_inputs(2)
    .set_input_names(["a", "indices"])
    .set_infer_shape(_batch_take_shape)
    .set_infer_type(_batch_take_type)
    .set_compute(_batch_take_compute)
)

# ----------------------------------------------------------------------- fill_element_0index


def _fill_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    lhs, mhs, rhs = in_shapes
    shape_assign(out_shapes, 0, lhs, attrs.name, "output")
    shape_assign(in_shapes, 0, out_shapes[0], attrs.name, "lhs")
    lhs = in_shapes[0]
    if lhs is None or mhs is None or rhs is None:
        return False
    if len(lhs) != 2 or len(mhs) != 1 or len(rhs) != 1 or not (lhs[0] == mhs[0] == rhs[0]):
        raise InferenceError(
            f"{attrs.name}: expects lhs (n, m), mhs (n,) and rhs (n,), got lhs {lhs}, mhs {mhs}, rhs {rhs}"
        )
    return shape_known(lhs)


def _three_same_type(attrs: Any, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, in_types[0], attrs.name, "output")
    for i in range(len(in_types)):
        type_assign(in_types, i, out_types[0], attrs.name, f"input {i}")
    return out_types[0] is not None


def _fill_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    lhs, mhs, rhs = inputs
    xp = op_ctx.xp
    value = lhs.copy()
    value[xp.arange(lhs.shape[0]), rhs.astype("int64")] = mhs
    put(outputs[0], req[0], value)


(
    register("fill_element_0index")
    .describe("lhs with ``lhs[i, rhs[i]] = mhs[i]`` for every row i.")
    .set_num_inputs(3)
    .set_input_names(["lhs", "mhs", "rhs"])
    .set_infer_shape(_fill_shape)
    .set_infer_type(_three_same_type)
    .set_compute(_fill_compute)
    .set_inplace_option(lambda attrs: [(0, 0)])
)

# ----------------------------------------------------------------------------- _onehot_encode


def _onehot_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    index, like = in_shapes
    shape_assign(out_shapes, 0, like, attrs.name, "output")
    shape_assign(in_shapes, 1, out_shapes[0], attrs.name, "rhs")
    like = in_shapes[1]
    if index is None or like is None:
        return False
    if len(index) != 1 or len(like) != 2 or (index[0] and like[0] and index[0] != like[0]):
        raise InferenceError(f"{attrs.name}: expects lhs (n,) and rhs (n, depth), got lhs {index}, rhs {like}")
    return shape_known(index) and shape_known(like)


def _onehot_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    index, like = inputs
    xp = op_ctx.xp
    value = xp.zeros(like.shape, dtype=outputs[0].dtype)
    value[xp.arange(like.shape[0]), index.astype("int64")] = 1
    put(outputs[0], req[0], value)


(
    register("_onehot_encode")
    .describe("One-hot rows from the indices lhs, shaped like rhs (use ``one_hot`` in new code).")
    .set_num_inputs(2)
    .set_input_names(["lhs", "rhs"])
    .set_infer_shape(_onehot_shape)
    .set_infer_type(_three_same_type)
    .set_compute(_onehot_compute)
)
