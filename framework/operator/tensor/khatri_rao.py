"""``khatri_rao``: the column-wise Kronecker product of matrices with the same number of columns.

For inputs ``A_1 (n_1, k), ..., A_m (n_m, k)`` column ``j`` of the output is the Kronecker
product of the inputs' columns ``j``, so the output is ``(n_1 * ... * n_m, k)`` (it appears in
tensor decompositions: the CP factor matrices). Computed by broadcasting two matrices at a
time into ``(rows_a, rows_b, k)`` and merging the row axes. Not differentiable in MXNet 1.9.1.
"""

from __future__ import annotations

import math
from typing import Any

from ..infer import InferenceError, ShapeT, elemwise_type, shape_assign, shape_known
from ..params import REQUIRED, Param, ParamSet
from ..registry import register
from .common import put


class KhatriRaoParam(ParamSet):
    num_args = Param(int, REQUIRED, "Number of input matrices.", low=1)


def _khatri_rao_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    if any(s is None for s in in_shapes):
        return False
    if any(len(s) != 2 for s in in_shapes):
        raise InferenceError(f"{attrs.name}: every input must be a matrix, got shapes {in_shapes}")
    columns = {s[1] for s in in_shapes if s[1]}
    if len(columns) > 1:
        raise InferenceError(f"{attrs.name}: the inputs must have the same number of columns, got {in_shapes}")
    rows = math.prod(s[0] for s in in_shapes)
    shape_assign(out_shapes, 0, (rows, columns.pop() if columns else 0), attrs.name, "output")
    return all(shape_known(s) for s in in_shapes)


def _khatri_rao_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    product = inputs[0]
    for matrix in inputs[1:]:
        product = (product[:, None, :] * matrix[None, :, :]).reshape(-1, matrix.shape[1])
    put(outputs[0], req[0], product)


(
    register("khatri_rao")
    .describe("Column-wise Kronecker product of matrices with the same number of columns.")
    .set_params(KhatriRaoParam)
    .set_num_inputs(lambda attrs: attrs.parsed.num_args)
    .set_input_names(lambda attrs: [f"arg{i}" for i in range(attrs.parsed.num_args)])
    .set_key_var_num_args("num_args")
    .set_infer_shape(_khatri_rao_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_khatri_rao_compute)
)
