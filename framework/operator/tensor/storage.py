"""``cast_storage``: MXNet's conversion between dense and sparse storage, dense only here.

MXNet stores an array densely (``stype='default'``) or in a sparse format (``'csr'``,
``'row_sparse'``). MXLab keeps every array dense (see docs/differences.md), so
``cast_storage(x, stype='default')`` is a copy, and asking for a sparse type fails with an
error that says so rather than silently returning a dense array.
"""

from __future__ import annotations

from typing import Any

from ..grad import elemwise_grad_use_none
from ..infer import elemwise_shape, elemwise_type
from ..params import REQUIRED, OperatorParamError, Param, ParamSet
from ..registry import register
from .common import put

_SPARSE = ("csr", "row_sparse")


class StorageTypeParam(Param):
    """``stype``: MXNet's three storage names are understood; only ``'default'`` is accepted."""

    def __init__(self, description: str) -> None:
        super().__init__(str, REQUIRED, description, choices=("csr", "default", "row_sparse"))

    def parse(self, op_name: str, value: Any) -> Any:
        parsed = super().parse(op_name, value)
        if parsed in _SPARSE:
            raise OperatorParamError(
                f"{op_name}: parameter 'stype' is {parsed!r}, but sparse storage (csr, row_sparse) is not part of "
                "MXLab: every array is dense, so only stype='default' is accepted"
            )
        return parsed


class CastStorageParam(ParamSet):
    stype = StorageTypeParam("The storage type of the output: 'default' (dense).")


(
    register("cast_storage")
    .describe("Converts the storage type; MXLab arrays are dense, so only stype='default' (a copy) works.")
    .set_params(CastStorageParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(elemwise_shape)
    .set_infer_type(elemwise_type)
    .set_compute(lambda attrs, op_ctx, inputs, req, outputs: put(outputs[0], req[0], inputs[0]))
    .set_gradient(elemwise_grad_use_none("_copy"))
)
