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
    # BEGIN SOLUTION return the output length: padding on both sides, floor division by the stride
    return (size + 2 * pad - kernel) // stride + 1
    # END SOLUTION


def im2col(xp: Any, x: Any, kernel: tuple, stride: tuple, pad: tuple) -> Any:
    """(N, C, H, W) -> col (N, C*KH*KW, OH*OW): every window of the zero-padded input as a column."""
    # BEGIN SOLUTION pad x, then copy one strided slice per kernel position into col
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, pad
    oh, ow = conv_out_size(h, kh, sh, ph), conv_out_size(w, kw, sw, pw)
    padded = xp.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    col = xp.empty((n, c, kh, kw, oh, ow), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            col[:, :, i, j] = padded[:, :, i : i + sh * oh : sh, j : j + sw * ow : sw]
    return col.reshape(n, c * kh * kw, oh * ow)
    # END SOLUTION


def col2im(xp: Any, col: Any, x_shape: tuple, kernel: tuple, stride: tuple, pad: tuple) -> Any:
    """The transpose of im2col: add every column back onto its window; drop the padding."""
    # BEGIN SOLUTION scatter-add one strided slice per kernel position, then crop the padding
    n, c, h, w = x_shape
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, pad
    oh, ow = conv_out_size(h, kh, sh, ph), conv_out_size(w, kw, sw, pw)
    padded = xp.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=col.dtype)
    windows = col.reshape(n, c, kh, kw, oh, ow)
    for i in range(kh):
        for j in range(kw):
            padded[:, :, i : i + sh * oh : sh, j : j + sw * ow : sw] += windows[:, :, i, j]
    return padded[:, :, ph : ph + h, pw : pw + w]
    # END SOLUTION


def conv_infer_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    """From data (N, C, H, W): weight (F, C, KH, KW), bias (F,), out (N, F, OH, OW)."""
    # BEGIN SOLUTION check the data, then infer weight, bias and out from it
    name, p = attrs.name, attrs.parsed
    (kh, kw), (sh, sw), (ph, pw) = geometry(attrs)
    data = in_shapes[0]
    if data is None:
        return False
    if len(data) != 4:
        raise InferenceError(f"{name}: data must be 4-D (N, C, H, W), got {data}")
    n, c, h, w = data
    shape_assign(in_shapes, 1, (p.num_filter, c, kh, kw), name, "weight")
    if not p.no_bias:
        shape_assign(in_shapes, 2, (p.num_filter,), name, "bias")
    if h and w:
        if h + 2 * ph < kh or w + 2 * pw < kw:
            raise InferenceError(
                f"{name}: kernel {(kh, kw)} is larger than the padded input {(h + 2 * ph, w + 2 * pw)}"
            )
        out = (n, p.num_filter, conv_out_size(h, kh, sh, ph), conv_out_size(w, kw, sw, pw))
        shape_assign(out_shapes, 0, out, name, "output")
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))
    # END SOLUTION


def conv_forward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list[Any], req: list[Req], outputs: list) -> None:
    """out = weight @ im2col(data) (+ bias), reshaped to (N, F, OH, OW)."""
    # BEGIN SOLUTION im2col, one matrix product with the flattened weight, add the bias, assign
    xp, p = op_ctx.xp, attrs.parsed
    kernel, stride, pad = geometry(attrs)
    data, weight = inputs[0], inputs[1]
    col = im2col(xp, data, kernel, stride, pad)
    out = xp.matmul(weight.reshape(weight.shape[0], -1), col)  # (F, K) @ (N, K, L) -> (N, F, L)
    if not p.no_bias:
        out = out + inputs[2].reshape(1, -1, 1)
    assign(outputs[0], req[0], out.reshape(outputs[0].shape))
    # END SOLUTION


def conv_backward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list[Any], req: list[Req], outputs: list) -> None:
    """inputs = (out_grad, data, weight); outputs = grad data, grad weight[, grad bias]."""
    # BEGIN SOLUTION d_weight = d_out @ col^T, d_data = col2im(weight^T @ d_out), d_bias = sum
    xp, p = op_ctx.xp, attrs.parsed
    kernel, stride, pad = geometry(attrs)
    out_grad, data, weight = inputs
    n, f = out_grad.shape[:2]
    d_out = out_grad.reshape(n, f, -1)
    col = im2col(xp, data, kernel, stride, pad)
    w2 = weight.reshape(f, -1)
    d_col = xp.matmul(w2.T, d_out)  # (K, F) @ (N, F, L) -> (N, K, L)
    assign(outputs[0], req[0], col2im(xp, d_col, data.shape, kernel, stride, pad))
    d_weight = xp.einsum("nfl,nkl->fk", d_out, col)
    assign(outputs[1], req[1], d_weight.reshape(weight.shape))
    if not p.no_bias:
        assign(outputs[2], req[2], d_out.sum(axis=(0, 2)))
    # END SOLUTION


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
