# The exercise stub: fill in every `# TODO(exercise)` gap (generated from the reference solution).
# ruff: noqa: F401, RUF100  (the imports are the ones your code will need)
"""Exercise ``max_pool``: 2-D max pooling forward, and backward routing to the winners.

Registered as ``exercise_max_pool``: input ``data`` (N, C, H, W), output (N, C, OH, OW)
with ``OH = (H + 2 * pad_h - KH) // stride_h + 1`` (MXNet's 'valid' convention).
Parameters ``kernel`` (KH, KW), ``stride`` (default (1, 1), as MXNet), ``pad`` (default
(0, 0)). Each output is the maximum of its window of the padded input; the padding never
wins (it counts as minus infinity: with all-negative inputs, a zero pad would be wrong).

Backward (inputs ``out_grad, data, out``) gives each output's gradient to the position
in its window that produced the maximum: the *first* one in row-major order when
several are equal (MXNet's rule), nothing to the others. Windows overlap when
``stride < kernel``: a position that wins several windows receives the *sum* of their
gradients.

Contract of the gaps:

* ``pool_infer_shape(attrs, in_shapes, out_shapes) -> bool``: 4-D data to the output
  shape; ``InferenceError`` for data that is not 4-D or a kernel larger than the padded
  input.
* ``pool_forward(attrs, op_ctx, inputs, req, outputs)``: the window maxima, through ``assign``.
* ``pool_backward(attrs, op_ctx, inputs, req, outputs)``: the routed gradient of data,
  through ``assign``. Loop over the KH*KW kernel positions, never over pixels.
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
    Shape,
    assign,
    elemwise_type,
    register_op,
    shape_assign,
)
from framework.operator.grad import make_backward_node
from framework.operator.infer import shape_known
from framework.operator.node import Node, NodeAttrs


class MaxPoolParam(ParamSet):
    kernel = Param(Shape, description="Window size (KH, KW).")
    stride = Param(Shape, Shape((1, 1)), "Stride (SH, SW); MXNet's default is 1.")
    pad = Param(Shape, Shape((0, 0)), "Padding (PH, PW) on both sides; it never wins a max.")


def geometry(attrs: NodeAttrs) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
    """(kernel, stride, pad) as pairs; anything but two positive sizes is an error (given)."""
    p = attrs.parsed
    kernel, stride, pad = tuple(p.kernel), tuple(p.stride), tuple(p.pad)
    for name, value, low in (("kernel", kernel, 1), ("stride", stride, 1), ("pad", pad, 0)):
        if len(value) != 2 or min(value) < low:
            raise InferenceError(f"{attrs.name}: {name} must be two integers >= {low}, got {value}")
    return kernel, stride, pad


def out_size(size: int, kernel: int, stride: int, pad: int) -> int:
    """The output length along one axis (given: the same formula as convolution)."""
    return (size + 2 * pad - kernel) // stride + 1


def pool_infer_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    """(N, C, H, W) -> (N, C, OH, OW); errors for non-4-D data and oversized kernels."""
    # TODO(exercise): validate the data shape and infer the output shape from it
    raise NotImplementedError("exercise gap in pool_infer_shape")


def pool_forward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list[Any], req: list[Req], outputs: list) -> None:
    """outputs[0] = the maximum of every window of the (-inf padded) input."""
    # TODO(exercise): pad with -inf, take the running maximum over the kernel positions, assign
    raise NotImplementedError("exercise gap in pool_forward")


def pool_backward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list[Any], req: list[Req], outputs: list) -> None:
    """inputs = (out_grad, data, out): each out_grad goes to the first maximum of its window."""
    # TODO(exercise): route each gradient to the first position equal to the max; sum overlaps
    raise NotImplementedError("exercise gap in pool_backward")


# Given: backward reads the output gradient, the data and the output.
def pool_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    backward = make_backward_node(node, "_backward_exercise_max_pool", [out_grads[0], node.inputs[0], Entry(node, 0)])
    return [Entry(backward, 0)]


def _backward_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    shape_assign(out_shapes, 0, in_shapes[1], attrs.name, "gradient of data")
    return shape_known(out_shapes[0])


(
    register_op("exercise_max_pool", override=True)
    .describe("2-D max pooling (the max_pool exercise).")
    .set_params(MaxPoolParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(pool_infer_shape)
    .set_infer_type(elemwise_type)
    .set_compute(pool_forward)
    .set_gradient(pool_gradient)
)
(
    register_op("_backward_exercise_max_pool", override=True)
    .set_params(MaxPoolParam)
    .set_num_inputs(3)
    .set_num_outputs(1)
    .set_infer_shape(_backward_shape)
    .set_infer_type(elemwise_type)
    .set_compute(pool_backward)
    .set_is_backward()
)
