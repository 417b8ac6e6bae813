"""``_histogram`` (``mx.nd.histogram``): counts of values per bin, and the bin edges.

Two ways to give the bins, as in NumPy's ``histogram``: ``bin_cnt`` equal bins over ``range``
(both parameters, or neither), or an input array ``bins`` of increasing edges (then the
operator has two inputs). Each bin is half-open ``[left, right)`` except the last, which also
counts its right edge; values outside all bins are not counted. The outputs are the counts
(``int64``) and the edges (the data's dtype). Not differentiable.
"""

from __future__ import annotations

import ast
from typing import Any

from ..infer import InferenceError, ShapeT, shape_assign, type_assign
from ..params import Param, ParamSet
from ..registry import register
from .common import put


class FloatPair(Param):
    """A parameter holding two floats ``(low, high)`` or None (``range``)."""

    def __init__(self, description: str) -> None:
        super().__init__(tuple, None, description, optional=True)

    def type_name(self) -> str:
        return "tuple of <float>, optional, default=None"

    def _expected(self) -> str:
        return "two numbers (low, high) with low < high"

    def _convert(self, value: Any) -> tuple[float, float]:
        if isinstance(value, str):
            value = ast.literal_eval(value.strip())
        low, high = (float(v) for v in value)
        if not low < high:
            raise ValueError(value)
        return low, high

    def format(self, value: Any) -> str:
        return "None" if value is None else f"({value[0]!r}, {value[1]!r})"


class HistogramParam(ParamSet):
    bin_cnt = Param(int, None, "Number of equal bins over range (None: the bins come from the bins input).", low=1)
    range = FloatPair("(low, high) covered by the bin_cnt bins; given together with bin_cnt.")


def _uses_count(attrs: Any) -> bool:
    p = attrs.parsed
    if (p.bin_cnt is None) != (p.range is None):
        raise InferenceError(f"{attrs.name}: give bin_cnt and range together, or neither (then a bins input)")
    return p.bin_cnt is not None


def _histogram_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    if _uses_count(attrs):
        count = attrs.parsed.bin_cnt
    else:
        bins = in_shapes[1]
        if bins is None:
            return False
        if len(bins) != 1 or bins[0] == 1:
            raise InferenceError(f"{attrs.name}: bins must be a 1-D array of at least 2 edges, got shape {bins}")
        count = bins[0] - 1 if bins[0] else 0
    shape_assign(out_shapes, 0, (count,), attrs.name, "counts")
    shape_assign(out_shapes, 1, (count + 1,) if count else None, attrs.name, "edges")
    return in_shapes[0] is not None


def _histogram_type(attrs: Any, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, "int64", attrs.name, "counts")
    type_assign(out_types, 1, in_types[0], attrs.name, "edges")
    return in_types[0] is not None


def _histogram_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, p = op_ctx.xp, attrs.parsed
    data = inputs[0].reshape(-1)
    if _uses_count(attrs):
        counts, edges = xp.histogram(data, bins=p.bin_cnt, range=p.range)
    else:
        counts, edges = xp.histogram(data, bins=inputs[1])
    put(outputs[0], req[0], counts)
    put(outputs[1], req[1], edges)


(
    register("_histogram")
    .describe("Counts of the data's values in bin_cnt equal bins over range, or between the edges in bins.")
    .set_params(HistogramParam)
    .set_num_inputs(lambda attrs: 1 if _uses_count(attrs) else 2)
    .set_num_outputs(2)
    .set_input_names(lambda attrs: ["data"] if _uses_count(attrs) else ["data", "bins"])
    .set_infer_shape(_histogram_shape)
    .set_infer_type(_histogram_type)
    .set_compute(_histogram_compute)
)
