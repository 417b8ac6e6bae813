"""Samplers whose draws are indices: ``_sample_multinomial`` (one category per draw, from each row
of a probability array), ``_shuffle`` (a random permutation of the first axis) and
``_sample_unique_zipfian`` (distinct classes from a log-uniform distribution, the candidate
sampler of sampled softmax).

Like every sampler they request ``ResourceRequest.RANDOM`` and draw from the device's generator
(``op_ctx.requested[0].generator``), so the engine serialises draws per device and
``mx.random.seed`` makes them reproducible (see framework/operator/tensor/random_ops.py).
"""

from __future__ import annotations

import math
from typing import Any

from ...resource import ResourceRequest
from ..grad import make_backward_node
from ..infer import InferenceError, shape_assign, type_assign
from ..kernel import OpContext, Req, assign
from ..node import Entry, Node, NodeAttrs
from ..params import DType, OperatorParamError, Param, ParamSet, Shape
from ..registry import alias, register
from ..tensor.common import put


def _random_request(attrs: NodeAttrs) -> list[ResourceRequest]:
    return [ResourceRequest.RANDOM]


# ====================================================================== _sample_multinomial
class MultinomialParam(ParamSet):
    shape = Param(Shape, Shape(), "Shape to be sampled from each random distribution.")
    get_prob = Param(
        bool, False, "Whether to also return the log probability of sampled result (for REINFORCE-style gradients)."
    )
    dtype = Param(
        DType,
        "int32",
        "DType of the output in case this can't be inferred.",
        choices=("float16", "float32", "float64", "int32", "uint8"),
    )


def _draw_categories(xp: Any, gen: Any, probs: Any, count: int) -> Any:
    """``count`` category indices per row of ``probs`` (m, k), as an (m, count) int64 array.

    Inverse-CDF sampling for all rows at once: row ``i``'s cumulative sums are shifted by ``i``
    so one sorted search over the flattened sums finds every row's category (the first whose
    cumulative probability exceeds the uniform draw; the last one if rounding leaves a gap).
    """
    m, k = probs.shape
    rows = xp.arange(m, dtype="float64")[:, None]
    cdf = xp.cumsum(probs.astype("float64"), axis=1) + rows
    u = gen.random((m, count)) + rows
    flat = xp.searchsorted(cdf.ravel(), u.ravel(), side="right").reshape(m, count)
    return xp.minimum(flat - (rows.astype("int64") * k), k - 1)


def _multinomial(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    xp, p = op_ctx.xp, attrs.parsed
    data = inputs[0]
    k = data.shape[-1]
    probs = data.reshape(-1, k)
    count = math.prod(p.shape)
    picks = _draw_categories(xp, op_ctx.random_generator(attrs.name), probs, count)
    put(outputs[0], req[0], picks.reshape(outputs[0].shape))
    if p.get_prob:
        chosen = xp.take_along_axis(probs, picks, axis=1)
        put(outputs[1], req[1], xp.log(chosen).reshape(outputs[1].shape))


def _multinomial_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    data = in_shapes[0]
    if data is None:
        return False
    if len(data) < 1 or data[-1] == 0:
        raise InferenceError(f"{attrs.name}: data must hold probabilities along its last axis, got shape {data}")
    shape = tuple(data[:-1]) + tuple(attrs.parsed.shape)
    for i in range(len(out_shapes)):
        shape_assign(out_shapes, i, shape, attrs.name, f"output {i}")
    return True


def _multinomial_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, attrs.parsed.dtype, attrs.name, "output")
    if len(out_types) > 1:
        type_assign(out_types, 1, in_types[0], attrs.name, "log probabilities")
        type_assign(in_types, 0, out_types[1], attrs.name, "data")
    if in_types[0] is not None and not in_types[0].startswith("float"):
        raise InferenceError(f"{attrs.name}: data must be floating-point probabilities, got {in_types[0]}")
    return in_types[0] is not None


def _multinomial_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Only the log probabilities (``get_prob=True``) carry a gradient to ``data``: REINFORCE."""
    inputs = [out_grads[-1], node.inputs[0], Entry(node, 0)]
    return [Entry(make_backward_node(node, "_backward_sample_multinomial", inputs), 0)]


def _multinomial_backward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """``d log p[j] / d p[j] = 1 / p[j]`` at each drawn category ``j``, summed over the draws."""
    xp = op_ctx.xp
    out_grad, data, picks = inputs
    k = data.shape[-1]
    probs = data.reshape(-1, k)
    if not attrs.parsed.get_prob:
        put(outputs[0], req[0], xp.zeros_like(data))
        return
    picks = picks.reshape(probs.shape[0], -1).astype("int64")
    weights = out_grad.reshape(picks.shape) / xp.take_along_axis(probs, picks, axis=1)
    one_hot = picks[:, :, None] == xp.arange(k)[None, None, :]
    put(outputs[0], req[0], (one_hot * weights[:, :, None]).sum(axis=1).reshape(data.shape))


def _multinomial_backward_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    shape_assign(out_shapes, 0, in_shapes[1], attrs.name, "data gradient")
    return out_shapes[0] is not None


def _multinomial_backward_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, in_types[1], attrs.name, "data gradient")
    return out_types[0] is not None


(
    register("_sample_multinomial")
    .describe(
        "Concurrent sampling from multiple multinomial distributions: data holds probabilities along its last "
        "axis (k categories); the output, shaped data.shape[:-1] + shape, holds category indices. With "
        "get_prob=True a second output holds the log probability of each draw, whose gradient reaches data."
    )
    .set_params(MultinomialParam)
    .set_num_inputs(1)
    .set_num_outputs(lambda attrs: 2 if attrs.parsed.get_prob else 1)
    .set_input_names(["data"])
    .set_infer_shape(_multinomial_shape)
    .set_infer_type(_multinomial_type)
    .set_compute(_multinomial)
    .set_resource_request(_random_request)
    .set_gradient(_multinomial_gradient)
)
alias("sample_multinomial", "_sample_multinomial")
(
    register("_backward_sample_multinomial")
    .set_params(MultinomialParam)
    .set_num_inputs(3)
    .set_num_outputs(1)
    .set_infer_shape(_multinomial_backward_shape)
    .set_infer_type(_multinomial_backward_type)
    .set_compute(_multinomial_backward)
    .set_is_backward()
)


# ====================================================================== _shuffle
class ShuffleParam(ParamSet):
    pass


def _shuffle(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """A permutation from sorting uniform keys: the same on NumPy and CuPy generators."""
    xp, data = op_ctx.xp, inputs[0]
    if data.ndim == 0 or data.shape[0] < 2:
        assign(outputs[0], req[0], data.copy())
        return
    order = xp.argsort(op_ctx.random_generator(attrs.name).random(data.shape[0]))
    assign(outputs[0], req[0], data[order])  # fancy indexing copies, so in-place output is safe


def _same_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    shape_assign(out_shapes, 0, in_shapes[0], attrs.name, "output")
    shape_assign(in_shapes, 0, out_shapes[0], attrs.name, "data")
    return in_shapes[0] is not None


def _same_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, in_types[0], attrs.name, "output")
    type_assign(in_types, 0, out_types[0], attrs.name, "data")
    return in_types[0] is not None


(
    register("_shuffle")
    .describe("Randomly shuffle the elements along the first axis (each sub-array moves as a whole).")
    .set_params(ShuffleParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_same_shape)
    .set_infer_type(_same_type)
    .set_compute(_shuffle)
    .set_resource_request(_random_request)
    .set_inplace_option(lambda attrs: [(0, 0)])
)
alias("shuffle", "_shuffle")


# ====================================================================== _sample_unique_zipfian
class UniqueZipfianParam(ParamSet):
    range_max = Param(int, description="The number of possible classes.", low=1)
    shape = Param(
        Shape,
        None,
        "2-D shape of the output, where shape[0] is the batch size, and shape[1] is the number of candidates "
        "to sample for each batch.",
    )

    @classmethod
    def parse(cls, op_name: str, kwargs: Any) -> ParamSet:
        parsed = super().parse(op_name, kwargs)
        shape = parsed.shape
        if shape is None or len(shape) != 2 or min(shape) < 0:
            raise OperatorParamError(f"{op_name}: parameter 'shape' must be (batch_size, num_sampled), got {shape}")
        if shape[1] > parsed.range_max:
            raise OperatorParamError(
                f"{op_name}: cannot draw {shape[1]} distinct classes (shape[1]) from range_max={parsed.range_max}"
            )
        return parsed


def _log_uniform(xp: Any, gen: Any, count: int, range_max: int) -> Any:
    """Classes with P(c) = log((c + 2) / (c + 1)) / log(range_max + 1): exp of a uniform log."""
    values = xp.floor(xp.exp(gen.random(count) * math.log(range_max + 1))).astype("int64") - 1
    return xp.clip(values, 0, range_max - 1)


def _unique_zipfian(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """Per batch row: draw in chunks until ``num_sampled`` distinct classes appeared, keep them in
    order of first appearance, and count the draws that took (the ``num_tries`` output)."""
    xp, p = op_ctx.xp, attrs.parsed
    gen = op_ctx.random_generator(attrs.name)
    batch, wanted = p.shape
    samples = xp.zeros((batch, wanted), dtype="int64")
    tries = xp.zeros((batch,), dtype="int64")
    for row in range(batch):  # a small batch; no array library has a batched "first n unique"
        if wanted == 0:
            continue
        drawn = _log_uniform(xp, gen, 2 * wanted, p.range_max)
        while True:
            values, first = xp.unique(drawn, return_index=True)
            if values.shape[0] >= wanted:
                break
            drawn = xp.concatenate([drawn, _log_uniform(xp, gen, 2 * wanted, p.range_max)])
        order = xp.sort(first)[:wanted]
        samples[row] = drawn[order]
        tries[row] = order[-1] + 1
    put(outputs[0], req[0], samples)
    put(outputs[1], req[1], tries)


def _zipfian_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    batch, wanted = attrs.parsed.shape
    shape_assign(out_shapes, 0, (batch, wanted), attrs.name, "samples")
    shape_assign(out_shapes, 1, (batch,), attrs.name, "num_tries")
    return True


def _zipfian_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, "int64", attrs.name, "samples")
    type_assign(out_types, 1, "int64", attrs.name, "num_tries")
    return True


(
    register("_sample_unique_zipfian")
    .describe(
        "Draw random samples from an approximately log-uniform or Zipfian distribution without replacement: "
        "shape (batch_size, num_sampled) distinct classes from [0, range_max) per row, "
        "P(class) = (log(class + 2) - log(class + 1)) / log(range_max + 1); the second output holds each "
        "row's number of draws."
    )
    .set_params(UniqueZipfianParam)
    .set_num_inputs(0)
    .set_num_outputs(2)
    .set_infer_shape(_zipfian_shape)
    .set_infer_type(_zipfian_type)
    .set_compute(_unique_zipfian)
    .set_resource_request(_random_request)
)
