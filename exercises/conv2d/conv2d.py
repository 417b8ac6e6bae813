# The exercise stub: fill in every `# TODO(exercise)` gap (generated from the reference solution).
# ruff: noqa: F401, RUF100  (the imports are the ones your code will need)
"""Exercise ``conv2d``: 2-D convolution as one matrix product (im2col), and its gradients.

Registered as ``exercise_conv2d``: inputs ``data`` (N, C, H, W), ``weight`` (F, C, KH, KW)
and, unless ``no_bias``, ``bias`` (F,); output (N, F, OH, OW). Parameters ``kernel``
(KH, KW), ``stride`` (default (1, 1)), ``pad`` (zero padding on both sides, default
(0, 0)), ``num_filter`` F, ``no_bias``. Each output size is

    OH = (H + 2 * pad_h - KH) // stride_h + 1          (and the same for W)

**im2col.** Every output position reads a C x KH x KW window of the padded input. Copy
each window into one column of a matrix ``col`` (N, C*KH*KW, OH*OW); then the
convolution of sample n is a single matrix product::

    out[n] = weight.reshape(F, C*KH*KW) @ col[n]            -> (F, OH*OW), plus bias[f]

**Backward** (inputs ``out_grad, data, weight``) is two more products and a scatter::

    d_weight = sum_n d_out[n] @ col[n].T                    (F, C*KH*KW)
    d_col[n] = weight.reshape(F, -1).T @ d_out[n]           (C*KH*KW, OH*OW)
    d_data   = col2im(d_col)   adds every column back onto the window it came from
    d_bias   = sum of d_out over n and the output positions

col2im is im2col's transpose: where windows overlap (stride < kernel) the contributions
*add up*, and whatever lands on the padding is dropped.

Contract of the gaps:

* ``conv_out_size(size, kernel, stride, pad) -> int``: the formula above.
* ``im2col(xp, x, kernel, stride, pad) -> col`` (N, C*KH*KW, OH*OW), rows ordered
  (c, i, j) like ``weight.reshape(F, -1)``'s columns; loop over the KH*KW kernel
  positions, not over pixels.
* ``col2im(xp, col, x_shape, kernel, stride, pad) -> array`` of ``x_shape``.
* ``conv_infer_shape``: from a 4-D data shape, the weight (F, C, KH, KW), the bias (F,)
  and the output (N, F, OH, OW); raise ``InferenceError`` for data that is not 4-D, a
  weight with other channels, or a kernel larger than the padded input.
* ``conv_forward`` / ``conv_backward``: as above, every output through ``assign``.
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
    Shape,
    assign,
    elemwise_type,
    register_op,
    shape_assign,
)
from framework.operator.grad import make_backward_node
from framework.operator.infer import shape_known
from framework.operator.node import Node, NodeAttrs


class Conv2DParam(ParamSet):
    kernel = Param(Shape, description="Kernel size (KH, KW).")
    stride = Param(Shape, Shape((1, 1)), "Stride (SH, SW).")
    pad = Param(Shape, Shape((0, 0)), "Zero padding (PH, PW) on both sides.")
    num_filter = Param(int, description="Number of filters F.", low=1)
    no_bias = Param(bool, False, "Leave out the bias input.")


def geometry(attrs: NodeAttrs) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
    """(kernel, stride, pad) as pairs; anything else raises InferenceError naming the parameter (given)."""
    p = attrs.parsed
    kernel, stride, pad = tuple(p.kernel), tuple(p.stride), tuple(p.pad)
    for name, value, low in (("kernel", kernel, 1), ("stride", stride, 1), ("pad", pad, 0)):
        if len(value) != 2 or min(value) < low:
            raise InferenceError(f"{attrs.name}: {name} must be two integers >= {low}, got {value}")
    return kernel, stride, pad


def conv_out_size(size: int, kernel: int, stride: int, pad: int) -> int:
    """The output length along one axis."""
    # TODO(exercise): return the output length: padding on both sides, floor division by the stride
    raise NotImplementedError("exercise gap in conv_out_size")


def im2col(xp: Any, x: Any, kernel: tuple, stride: tuple, pad: tuple) -> Any:
    """(N, C, H, W) -> col (N, C*KH*KW, OH*OW): every window of the zero-padded input as a column."""
    # TODO(exercise): pad x, then copy one strided slice per kernel position into col
    raise NotImplementedError("exercise gap in im2col")


def col2im(xp: Any, col: Any, x_shape: tuple, kernel: tuple, stride: tuple, pad: tuple) -> Any:
    """The transpose of im2col: add every column back onto its window; drop the padding."""
    # TODO(exercise): scatter-add one strided slice per kernel position, then crop the padding
    raise NotImplementedError("exercise gap in col2im")


def conv_infer_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    """From data (N, C, H, W): weight (F, C, KH, KW), bias (F,), out (N, F, OH, OW)."""
    # TODO(exercise): check the data, then infer weight, bias and out from it
    raise NotImplementedError("exercise gap in conv_infer_shape")


def conv_forward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list[Any], req: list[Req], outputs: list) -> None:
    """out = weight @ im2col(data) (+ bias), reshaped to (N, F, OH, OW)."""
    # TODO(exercise): im2col, one matrix product with the flattened weight, add the bias, assign
    raise NotImplementedError("exercise gap in conv_forward")


def conv_backward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list[Any], req: list[Req], outputs: list) -> None:
    """inputs = (out_grad, data, weight); outputs = grad data, grad weight[, grad bias]."""
    # TODO(exercise): d_weight = d_out @ col^T, d_data = col2im(weight^T @ d_out), d_bias = sum
    raise NotImplementedError("exercise gap in conv_backward")


# Given: registration. Backward reads the output gradient, the data and the weight.
def num_inputs(attrs: NodeAttrs) -> int:
    return 2 if attrs.parsed.no_bias else 3


def conv_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    backward = make_backward_node(node, "_backward_exercise_conv2d", [out_grads[0], node.inputs[0], node.inputs[1]])
    return [Entry(backward, i) for i in range(len(node.inputs))]


def _backward_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    shape_assign(out_shapes, 0, in_shapes[1], attrs.name, "gradient of data")
    shape_assign(out_shapes, 1, in_shapes[2], attrs.name, "gradient of weight")
    if len(out_shapes) > 2 and in_shapes[2] is not None:
        shape_assign(out_shapes, 2, (in_shapes[2][0],), attrs.name, "gradient of bias")
    return all(shape_known(s) for s in out_shapes)


(
    register_op("exercise_conv2d", override=True)
    .describe("2-D convolution through im2col (the conv2d exercise).")
    .set_params(Conv2DParam)
    .set_num_inputs(num_inputs)
    .set_input_names(lambda attrs: ["data", "weight"] + ([] if attrs.parsed.no_bias else ["bias"]))
    .set_infer_shape(conv_infer_shape)
    .set_infer_type(elemwise_type)
    .set_compute(conv_forward)
    .set_gradient(conv_gradient)
)
(
    register_op("_backward_exercise_conv2d", override=True)
    .set_params(Conv2DParam)
    .set_num_inputs(3)
    .set_num_outputs(num_inputs)
    .set_infer_shape(_backward_shape)
    .set_infer_type(elemwise_type)
    .set_compute(conv_backward)
    .set_is_backward()
)
