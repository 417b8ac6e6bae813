# The exercise stub: fill in every `# TODO(exercise)` gap (generated from the reference solution).
# ruff: noqa: F401, RUF100  (the imports are the ones your code will need)
"""Exercise ``softmax_ce``: softmax forward, cross-entropy gradient backward (MXNet's SoftmaxOutput).

Registered as ``exercise_softmax_ce``. Like MXNet's ``SoftmaxOutput`` it is an *output
layer*: forward is the prediction, and backward ignores any head gradient and emits the
gradient of the cross-entropy loss against the label directly::

    forward:   out[i, :] = softmax(data[i, :]) = exp(data[i] - max) / sum(exp(data[i] - max))
    loss:      L = grad_scale / n * sum_i -log(out[i, label[i]])     n = N for normalization='batch', else 1
    backward:  d L / d data[i, j] = grad_scale / n * (out[i, j] - (j == label[i]))
               the label gets no gradient: 0

Inputs ``data`` (N, C) and ``label`` (N,) holding class indices as floats (MXNet's
convention); output (N, C). The backward node receives ``(out, label)`` (given in
``softmax_ce_gradient``): softmax's output is all backward needs, not the data.

Contract:

* ``softmax_ce_infer_shape(attrs, in_shapes, out_shapes) -> bool``: data is 2-D (raise
  ``InferenceError`` otherwise); output has the data's shape and vice versa (mutual); the
  label is ``(N,)``; a label of another shape raises ``InferenceError``.
* ``softmax_ce_forward(attrs, op_ctx, inputs, req, outputs)``: ``outputs[0]`` = row-wise
  softmax, computed stably (subtract each row's maximum first, so large logits do not
  overflow to inf/nan), through ``assign``.
* ``softmax_ce_backward(attrs, op_ctx, inputs, req, outputs)``: ``inputs = (out, label)``;
  ``outputs[0]`` = the data gradient above, ``outputs[1]`` = 0 (the label's), both
  through ``assign``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

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


class SoftmaxCEParam(ParamSet):
    grad_scale = Param(float, 1.0, "Scales the gradient.")
    normalization = Param(str, "null", "null: the summed loss; batch: divided by N.", choices=("batch", "null"))


def softmax_ce_infer_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    """data (N, C) <-> out (N, C); label (N,). Raise InferenceError for bad ranks or labels."""
    # TODO(exercise): infer out from data and data from out, the label from data, and validate
    raise NotImplementedError("exercise gap in softmax_ce_infer_shape")


def softmax_ce_forward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list[Any], req: list[Req], outputs: list) -> None:
    """outputs[0] = softmax of each row of inputs[0] (stable: subtract the row maximum)."""
    # TODO(exercise): compute a numerically stable row-wise softmax and assign it
    raise NotImplementedError("exercise gap in softmax_ce_forward")


def softmax_ce_backward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list[Any], req: list[Req], outputs: list) -> None:
    """inputs = (out, label): grad of data = scale * (out - onehot(label)); grad of label = 0."""
    # TODO(exercise): compute (out - onehot(label)) * scale for data, zeros for the label
    raise NotImplementedError("exercise gap in softmax_ce_backward")


# Given: backward reads the output and the label (not the data, not a head gradient).
def softmax_ce_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    backward = make_backward_node(node, "_backward_exercise_softmax_ce", [Entry(node, 0), node.inputs[1]])
    return [Entry(backward, 0), Entry(backward, 1)]


def _backward_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    shape_assign(out_shapes, 0, in_shapes[0], attrs.name, "gradient of data")
    shape_assign(out_shapes, 1, in_shapes[1], attrs.name, "gradient of label")
    return shape_known(out_shapes[0]) and shape_known(out_shapes[1])


(
    register_op("exercise_softmax_ce", override=True)
    .describe("Softmax forward; the cross-entropy gradient against the label backward (the softmax_ce exercise).")
    .set_params(SoftmaxCEParam)
    .set_num_inputs(2)
    .set_input_names(["data", "label"])
    .set_infer_shape(softmax_ce_infer_shape)
    .set_infer_type(elemwise_type)
    .set_compute(softmax_ce_forward)
    .set_gradient(softmax_ce_gradient)
)
(
    register_op("_backward_exercise_softmax_ce", override=True)
    .set_params(SoftmaxCEParam)
    .set_num_inputs(2)
    .set_num_outputs(2)
    .set_infer_shape(_backward_shape)
    .set_infer_type(elemwise_type)
    .set_compute(softmax_ce_backward)
    .set_is_backward()
)
