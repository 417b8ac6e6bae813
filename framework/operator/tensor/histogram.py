"""``_histogram`` (MXNet's ``histogram``) and the contrib float checks ``isnan``, ``isinf``, ``isfinite``.

Both families inspect values rather than transform them, and neither has a gradient: a count
or a yes/no answer does not change when an input moves a little.
"""

from __future__ import annotations

import numpy as np

from ..grad import zero_grad
from ..infer import InferenceError, elemwise_shape, elemwise_type, shape_assign, type_assign
from ..kernel import assign
from ..params import FloatTuple, Param, ParamSet
from ..registry import register


class HistogramParam(ParamSet):
    bin_cnt = Param(int, None, "Number of equal-width bins (None when the bin edges are given as an input).", low=1)
    range = Param(FloatTuple, None, "(low, high) of the bins; None means the data's min and max.")


def _histogram_num_inputs(attrs) -> int:
    # Equal-width bins take the data only; explicit edges come as a second input.
    return 1 if attrs.parsed.bin_cnt is not None else 2


def _histogram_shape(attrs, in_shapes, out_shapes) -> bool:
    p = attrs.parsed
    if p.range is not None and (len(p.range) != 2 or p.range[0] > p.range[1]):
        raise InferenceError(f"{attrs.name}: range must be (low, high) with low <= high, got {tuple(p.range)}")
    if p.bin_cnt is not None:
        bins = p.bin_cnt
    else:
        edges = in_shapes[1]
        if edges is None:
            return False
        if len(edges) != 1 or edges[0] < 2:
            raise InferenceError(f"{attrs.name}: bin edges must be a 1-D array of at least 2 values, got shape {edges}")
        bins = edges[0] - 1
    shape_assign(out_shapes, 0, (bins,), attrs.name, "counts")
    shape_assign(out_shapes, 1, (bins + 1,), attrs.name, "bin edges")
    return True


def _histogram_type(attrs, in_types, out_types) -> bool:
    type_assign(out_types, 0, "int64", attrs.name, "counts")
    type_assign(out_types, 1, in_types[0] or "float32", attrs.name, "bin edges")
    return in_types[0] is not None


def _histogram_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    p, xp = attrs.parsed, op_ctx.xp
    data = inputs[0].ravel()
    if p.bin_cnt is not None:
        if p.range is not None:
            low, high = p.range
        elif data.size:
            low, high = float(data.min()), float(data.max())
        else:
            low, high = 0.0, 1.0
        counts, edges = xp.histogram(data, bins=p.bin_cnt, range=(low, high))
    else:
        counts, edges = xp.histogram(data, bins=inputs[1])
    assign(outputs[0], req[0], counts.astype(np.int64))
    assign(outputs[1], req[1], edges.astype(outputs[1].dtype))


(
    register("_histogram")
    .describe("Counts of the data's values in bins: (counts, bin edges), as NumPy's ``histogram``.")
    .set_params(HistogramParam)
    .set_num_inputs(_histogram_num_inputs)
    .set_num_outputs(2)
    .set_input_names(lambda attrs: ["data"] if attrs.parsed.bin_cnt is not None else ["data", "bins"])
    .set_infer_shape(_histogram_shape)
    .set_infer_type(_histogram_type)
    .set_compute(_histogram_compute)
    .set_gradient(zero_grad)
)


def _float_check(test: str):
    def compute(attrs, op_ctx, inputs, req, outputs) -> None:
        assign(outputs[0], req[0], getattr(op_ctx.xp, test)(inputs[0]).astype(outputs[0].dtype))

    return compute


for _test in ("isnan", "isinf", "isfinite"):
    (
        register(f"_contrib_{_test}")
        .describe(f"1 where NumPy's ``{_test}`` holds for the element, else 0 (same shape and dtype as the input).")
        .set_num_inputs(1)
        .set_input_names(["data"])
        .set_infer_shape(elemwise_shape)
        .set_infer_type(elemwise_type)
        .set_compute(_float_check(_test))
        .set_gradient(zero_grad)
    )
