"""Creation operators that fill a pattern: ``_eye`` (``mx.nd.eye``), ``_linspace``
(``mx.nd.linspace``) and ``_zeros_without_dtype``.

Like ``_zeros`` and ``_arange`` (``init_ops.py``) they take no input: the output's shape
comes from the parameters, its context from ``ctx``. ``_eye`` puts ones on diagonal ``k`` of
an ``N x M`` matrix; ``_linspace`` gives ``num`` evenly spaced values from ``start`` to ``stop``
(included when ``endpoint``), computed in float64 and then cast, so an integer dtype
truncates as MXNet does (``linspace(0, 5, 4, dtype=int32) = [0, 1, 3, 5]``).
``_zeros_without_dtype`` is ``_zeros`` whose dtype may come from type inference (the
gradient graphs use it): ``dtype=-1`` means "whatever the consumer needs, else float32".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..infer import shape_assign, type_assign
from ..kernel import assign
from ..params import REQUIRED, DType, Param, ParamSet, Shape
from ..registry import register
from .init_ops import _init_shape, _init_type


class EyeParam(ParamSet):
    N = Param(int, REQUIRED, "Number of rows.", low=0)
    M = Param(int, 0, "Number of columns (0: N).", low=0)
    k = Param(int, 0, "Diagonal: 0 the main one, > 0 above it, < 0 below it.")
    ctx = Param(str, "", "Context of the output (set by the front end).")
    dtype = Param(DType, "float32", "Data type of the output.")


def _eye_shape(attrs: Any, in_shapes: list, out_shapes: list) -> bool:
    p = attrs.parsed
    shape_assign(out_shapes, 0, (p.N, p.M or p.N), attrs.name, "output")
    return True


def _eye_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    p = attrs.parsed
    out = outputs[0]
    assign(out, req[0], op_ctx.xp.eye(out.shape[0], out.shape[1], k=p.k, dtype=out.dtype))


(
    register("_eye")
    .describe("An N x M matrix with ones on diagonal k and zeros elsewhere.")
    .set_params(EyeParam)
    .set_num_inputs(0)
    .set_infer_shape(_eye_shape)
    .set_infer_type(_init_type)
    .set_compute(_eye_compute)
)


class LinspaceParam(ParamSet):
    start = Param(float, REQUIRED, "First value.")
    stop = Param(float, REQUIRED, "Last value (included when endpoint).")
    num = Param(int, REQUIRED, "How many values.", low=0)
    endpoint = Param(bool, True, "Include stop as the last value.")
    ctx = Param(str, "", "Context of the output (set by the front end).")
    dtype = Param(DType, "float32", "Data type of the output.")


def _linspace_shape(attrs: Any, in_shapes: list, out_shapes: list) -> bool:
    shape_assign(out_shapes, 0, (attrs.parsed.num,), attrs.name, "output")
    return True


def _linspace_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    p = attrs.parsed
    values = op_ctx.xp.linspace(p.start, p.stop, p.num, endpoint=p.endpoint, dtype=np.float64)
    assign(outputs[0], req[0], values.astype(outputs[0].dtype))


(
    register("_linspace")
    .describe("num evenly spaced values from start to stop (stop included when endpoint).")
    .set_params(LinspaceParam)
    .set_num_inputs(0)
    .set_infer_shape(_linspace_shape)
    .set_infer_type(_init_type)
    .set_compute(_linspace_compute)
)

#: MXNet's type flags, the form ``_zeros_without_dtype`` takes its dtype in (-1: unknown).
TYPE_FLAGS = {0: "float32", 1: "float64", 2: "float16", 3: "uint8", 4: "int32", 5: "int8", 6: "int64", 7: "bool"}


class ZerosWithoutDtypeParam(ParamSet):
    shape = Param(Shape, Shape(), "The shape of the output.")
    ctx = Param(str, "", "Context of the output (set by the front end).")
    dtype = Param(int, -1, "MXNet type flag of the output (0 float32, 1 float64, ...); -1: inferred.", low=-1, high=7)


def _zeros_without_dtype_type(attrs: Any, in_types: list, out_types: list) -> bool:
    flag = attrs.parsed.dtype
    if flag >= 0:
        type_assign(out_types, 0, TYPE_FLAGS[flag], attrs.name, "output")
    elif out_types[0] is None:
        out_types[0] = "float32"
    return True


(
    register("_zeros_without_dtype")
    .describe("Zeros whose dtype can be left to type inference (dtype=-1).")
    .set_params(ZerosWithoutDtypeParam)
    .set_num_inputs(0)
    .set_infer_shape(_init_shape)
    .set_infer_type(_zeros_without_dtype_type)
    .set_compute(lambda attrs, op_ctx, inputs, req, outputs: assign(outputs[0], req[0], 0))
)
