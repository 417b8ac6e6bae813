# The exercise stub: fill in every `# TODO(exercise)` gap (generated from the reference solution).
# ruff: noqa: F401, RUF100  (the imports are the ones your code will need)
"""Exercise ``leaky_relu``: the leaky ReLU and PReLU, whose slope ``gamma`` is learned.

Registered as ``exercise_leaky_relu`` (a two-mode cut of MXNet's ``LeakyReLU``)::

    act_type='leaky':  out = x if x > 0 else slope * x           inputs (data,)
    act_type='prelu':  out = x if x > 0 else gamma[c] * x        inputs (data, gamma)

For ``prelu``, ``gamma`` has one value per channel, shape ``(C,)`` with ``C =
data.shape[1]``, broadcast along axis 1 of data (N, C, ...). It is a learned parameter, so
it gets a gradient too::

    grad data = out_grad * (1 if x > 0 else slope_or_gamma)
    grad gamma[c] = sum over every position with channel c of out_grad * (0 if x > 0 else x)

(``x > 0`` strictly: at x = 0 the negative side's slope applies, as in MXNet.)

Contract:

* ``leaky_infer_shape(attrs, in_shapes, out_shapes) -> bool``: out and data share a shape
  (both ways). For prelu, infer gamma as ``(data.shape[1],)``; data with fewer than 2
  dimensions, or a given gamma of another shape, raises ``InferenceError``.
* ``leaky_forward(attrs, op_ctx, inputs, req, outputs)``: the formula above, through ``assign``.
* ``leaky_backward(attrs, op_ctx, inputs, req, outputs)``: ``inputs = (out_grad, data)`` or
  ``(out_grad, data, gamma)``; outputs are the gradient of data and, for prelu, of gamma,
  each through ``assign`` with its own ``req``.
"""

from __future__ import annotations

from typing import Any

from framework.operator import (
    Entry,
    InferenceError,
    OpContext,
    Param,
    ParamSet,
    Req,
    assign,
    elemwise_type,
    register_op,
    shape_assign,
)
from framework.operator.grad import make_backward_node
from framework.operator.infer import shape_known
from framework.operator.node import Node, NodeAttrs


class LeakyParam(ParamSet):
    act_type = Param(str, "leaky", "leaky (fixed slope) or prelu (learned gamma).", choices=("leaky", "prelu"))
    slope = Param(float, 0.25, "Slope of the negative part for act_type='leaky'.")


def channel_shape(ndim: int) -> tuple[int, ...]:
    """How gamma (C,) is reshaped to broadcast along axis 1 of an ndim-D array: (1, C, 1, ...)."""
    return tuple(-1 if axis == 1 else 1 for axis in range(ndim))


def leaky_infer_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    """out <-> data (both ways); for prelu, gamma = (data.shape[1],), checked."""
    # TODO(exercise): infer out and data from each other; for prelu infer and validate gamma
    raise NotImplementedError("exercise gap in leaky_infer_shape")


def leaky_forward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list[Any], req: list[Req], outputs: list) -> None:
    """out = x where x > 0, else slope * x (leaky) or gamma[channel] * x (prelu)."""
    # TODO(exercise): compute the leaky / prelu output and assign it
    raise NotImplementedError("exercise gap in leaky_forward")


def leaky_backward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list[Any], req: list[Req], outputs: list) -> None:
    """grad data = out_grad * local slope; for prelu also grad gamma, summed per channel."""
    # TODO(exercise): compute the data gradient and, for prelu, the gamma gradient
    raise NotImplementedError("exercise gap in leaky_backward")


# Given: the number of inputs depends on act_type; backward reads out_grad, data (and gamma).
def num_inputs(attrs: NodeAttrs) -> int:
    return 2 if attrs.parsed.act_type == "prelu" else 1


def leaky_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    backward = make_backward_node(node, "_backward_exercise_leaky_relu", [out_grads[0], *node.inputs])
    return [Entry(backward, i) for i in range(len(node.inputs))]


def _backward_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    for i in range(len(out_shapes)):  # gradient i has the shape of forward input i (backward input 1 + i)
        shape_assign(out_shapes, i, in_shapes[1 + i], attrs.name, f"gradient {i}")
    return all(shape_known(s) for s in out_shapes)


(
    register_op("exercise_leaky_relu", override=True)
    .describe("Leaky ReLU with a fixed slope, or PReLU with a learned per-channel gamma (the leaky_relu exercise).")
    .set_params(LeakyParam)
    .set_num_inputs(num_inputs)
    .set_input_names(lambda attrs: ["data", "gamma"] if attrs.parsed.act_type == "prelu" else ["data"])
    .set_infer_shape(leaky_infer_shape)
    .set_infer_type(elemwise_type)
    .set_compute(leaky_forward)
    .set_gradient(leaky_gradient)
)
(
    register_op("_backward_exercise_leaky_relu", override=True)
    .set_params(LeakyParam)
    .set_num_inputs(lambda attrs: 1 + num_inputs(attrs))
    .set_num_outputs(num_inputs)
    .set_infer_shape(_backward_shape)
    .set_infer_type(elemwise_type)
    .set_compute(leaky_backward)
    .set_is_backward()
)
