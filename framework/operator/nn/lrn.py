"""LRN: local response normalisation across channels (AlexNet's "brightness normalisation").

For NCHW data each activation is divided by a power of the energy of its neighbouring
channels at the same pixel::

    norm[n, c, h, w] = knorm + alpha / nsize * sum_{|c' - c| <= (nsize - 1) // 2} x[n, c', h, w]^2
    out = x * norm^(-beta)

The window sum over channels is computed for all pixels at once by summing ``nsize``
shifted slices of the zero-padded squares (a loop over window offsets, not over
pixels). ``norm`` is kept as a hidden second output (``tmp_norm``) for backward::

    dx_j = g_j norm_j^-beta - 2 alpha beta / nsize * x_j * sum_{i near j} g_i x_i norm_i^(-beta - 1)

(the window is symmetric, so "i whose window contains j" is "i near j").
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT, elemwise_shape, elemwise_type, shape_assign, shape_known, type_assign
from ..kernel import assign
from ..node import Entry, Node, NodeAttrs
from ..params import Param, ParamSet
from ..registry import register
from .activation import compute_dtype


class LRNParam(ParamSet):
    alpha = Param(float, 1e-4, "Scale of the sum of squares.")
    beta = Param(float, 0.75, "Exponent of the normaliser.")
    knorm = Param(float, 2.0, "Constant added to the normaliser.")
    nsize = Param(int, description="Number of neighbouring channels in the window (odd).", low=1)


def channel_window_sum(xp: ModuleType, values: Any, nsize: int) -> Any:
    """Sum over the channel window of each channel (axis 1), zero outside the channel range."""
    half = (nsize - 1) // 2
    channels = values.shape[1]
    pad = [(0, 0)] * values.ndim
    pad[1] = (half, half)
    padded = xp.pad(values, pad)
    total = padded[:, 0:channels].copy()
    for offset in range(1, 2 * half + 1):  # one shifted slice per window offset
        total += padded[:, offset : offset + channels]
    return total


def _lrn_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    done = elemwise_shape(attrs, in_shapes, out_shapes)
    dshape = in_shapes[0]
    if dshape is not None and len(dshape) != 4:
        raise InferenceError(f"{attrs.name}: LRN needs 4-D data (batch, channel, height, width), got {dshape}")
    return done


def _lrn_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    p, xp = attrs.parsed, op_ctx.xp
    x = inputs[0].astype(compute_dtype(inputs[0].dtype), copy=False)
    norm = p.knorm + (p.alpha / p.nsize) * channel_window_sum(xp, x * x, p.nsize)
    assign(outputs[0], req[0], x * norm ** (-p.beta))
    assign(outputs[1], req[1], norm)


def _lrn_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    p, xp = attrs.parsed, op_ctx.xp
    work = compute_dtype(inputs[1].dtype)
    grad, x, norm = (a.astype(work, copy=False) for a in inputs)
    scaled = norm ** (-p.beta)
    through_norm = channel_window_sum(xp, grad * x * scaled / norm, p.nsize)
    assign(outputs[0], req[0], grad * scaled - (2 * p.alpha * p.beta / p.nsize) * x * through_norm)


def _lrn_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Backward inputs: head gradient, data, and the saved normaliser."""
    return [Entry(make_backward_node(node, "_backward_LRN", [out_grads[0], node.inputs[0], Entry(node, 1)]), 0)]


(
    register("LRN")
    .describe("Local response normalisation across channels of NCHW data.")
    .set_params(LRNParam)
    .set_num_inputs(1)
    .set_num_outputs(2)
    .set_num_visible_outputs(1)
    .set_input_names(["data"])
    .set_output_names(["output", "tmp_norm"])
    .set_infer_shape(_lrn_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_lrn_forward)
    .set_gradient(_lrn_gradient)
)
(
    register("_backward_LRN")
    .set_params(LRNParam)
    .set_num_inputs(3)
    .set_infer_shape(lambda attrs, i, o: (shape_assign(o, 0, i[1], attrs.name, "gradient"), shape_known(o[0]))[1])
    .set_infer_type(lambda attrs, i, o: (type_assign(o, 0, i[1], attrs.name, "gradient"), o[0] is not None)[1])
    .set_compute(_lrn_backward)
    .set_is_backward()
)
