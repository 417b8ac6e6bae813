"""``_contrib_count_sketch``: project feature vectors to ``out_dim`` buckets with random signs.

Each input feature ``i`` has a bucket ``h[i]`` in ``[0, out_dim)`` and a sign ``s[i]`` (+1 or -1);
``out[n, h[i]] += s[i] * data[n, i]``. That is a product with a sparse ``(in_dim, out_dim)``
matrix ``P`` (``P[i, h[i]] = s[i]``), which is how it is computed here: ``out = data @ P``,
so the gradient is ``grad @ P^T`` (``_backward__contrib_count_sketch``; ``h`` and ``s`` get
zeros). Compact bilinear pooling uses it. MXNet runs it on GPU only and processes
``processing_batch_size`` rows at a time, which does not change the result.
"""

from __future__ import annotations

from typing import Any

from ...base import MXLabError
from ..grad import elemwise_grad_use_in
from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..params import REQUIRED, Param, ParamSet
from ..registry import register
from ..tensor.common import put, register_backward


class CountSketchParam(ParamSet):
    out_dim = Param(int, REQUIRED, "Number of buckets (output features).", low=1)
    processing_batch_size = Param(int, 32, "Rows per GPU batch in MXNet (no effect on the result).", low=1)


def _sketch_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    data = in_shapes[0]
    if data is None:
        return False
    if len(data) < 2:
        raise InferenceError(f"{attrs.name}: data must be (..., in_dim) with a batch axis, got {data}")
    for i, what in ((1, "h"), (2, "s")):
        shape_assign(in_shapes, i, (1, data[-1]), attrs.name, what)
    shape_assign(out_shapes, 0, (*data[:-1], attrs.parsed.out_dim), attrs.name, "output")
    return all(shape_known(x) for x in in_shapes)


def _sketch_type(attrs: Any, in_types: list, out_types: list) -> bool:
    for i in range(3):
        type_assign(in_types, i, in_types[0], attrs.name, f"input {i}")
    type_assign(out_types, 0, in_types[0], attrs.name, "output")
    return in_types[0] is not None


def _projection(xp: Any, h: Any, s: Any, out_dim: int, dtype: Any) -> Any:
    """The ``(in_dim, out_dim)`` matrix with ``s[i]`` at ``(i, h[i])``."""
    h, s = h.reshape(-1), s.reshape(-1)
    buckets = h.astype("int64")
    if int(buckets.min()) < 0 or int(buckets.max()) >= out_dim:
        raise MXLabError(f"_contrib_count_sketch: h must hold buckets in [0, {out_dim}), got values outside it")
    matrix = xp.zeros((h.shape[0], out_dim), dtype=dtype)
    matrix[xp.arange(h.shape[0]), buckets] = s
    return matrix


def _sketch_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    data, h, s = inputs
    matrix = _projection(op_ctx.xp, h, s, attrs.parsed.out_dim, data.dtype)
    put(outputs[0], req[0], data @ matrix)


def _sketch_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    out_grad, data, h, s = inputs
    xp = op_ctx.xp
    matrix = _projection(xp, h, s, attrs.parsed.out_dim, data.dtype)
    put(outputs[0], req[0], out_grad @ matrix.T)
    put(outputs[1], req[1], xp.zeros(h.shape, dtype=outputs[1].dtype))
    put(outputs[2], req[2], xp.zeros(s.shape, dtype=outputs[2].dtype))


(
    register("_contrib_count_sketch")
    .describe("Count sketch: out[..., h[i]] += s[i] * data[..., i].")
    .set_params(CountSketchParam)
    .set_num_inputs(3)
    .set_input_names(["data", "h", "s"])
    .set_infer_shape(_sketch_shape)
    .set_infer_type(_sketch_type)
    .set_compute(_sketch_compute)
    .set_gradient(elemwise_grad_use_in("_backward__contrib_count_sketch"))
)
register_backward("_backward__contrib_count_sketch", _sketch_backward, CountSketchParam, num_inputs=4, num_outputs=3)
