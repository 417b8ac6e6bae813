"""Loss layers: output operators whose backward pass *is* the loss gradient.

In MXNet 1.x a network ends with an output layer that takes the labels as an input:
its forward pass is the prediction (softmax, identity, sigmoid) and its backward pass
ignores the incoming head gradient and emits the gradient of the matching loss
directly. This is why ``Module.fit`` can call ``backward()`` with no arguments.

======================== ============ =========================================
operator                 forward      backward (before ``grad_scale``/normaliser)
======================== ============ =========================================
SoftmaxOutput (Softmax)  softmax      ``softmax - one_hot(label)``  (cross-entropy)
LinearRegressionOutput   identity     ``out - label``               (squared error)
LogisticRegressionOutput sigmoid      ``out - label``               (log loss)
MAERegressionOutput      identity     ``sign(out - label)``         (absolute error)
MakeLoss                 identity     ``1``                         (any loss you built)
======================== ============ =========================================

``SoftmaxOutput`` options, as in MXNet 1.x:

* ``multi_output``: softmax over axis 1 of ``(N, C, d1, ...)``; labels ``(N, d1*d2...)``
  (the default inferred shape), ``(N, d1, ...)`` or ``(N, 1, d1, ...)``.
* ``preserve_shape``: softmax over the last axis; labels ``data.shape[:-1]``.
* otherwise: softmax over everything but axis 0; labels ``(N,)`` for 2-D data. (For
  data with more axes MXNet infers ``data.shape[:-1]`` for the label but uses only its
  first ``N`` entries; MXLab does the same.)
* a label with the data's shape is a probability distribution: ``grad = out - label``.
* ``use_ignore``/``ignore_label``: rows whose label equals ``ignore_label`` get no gradient.
  Labels outside ``[0, C)`` select no class.
* ``normalization``: ``null`` (multi_output: divide by the spatial size), ``batch``
  (divide by the number of label entries), ``valid`` (divide by the number of labels
  different from ``ignore_label``, at least 1).
* ``smooth_alpha``: label smoothing, the target is ``1 - alpha`` on the label and
  ``alpha / (C - 1)`` elsewhere.
* ``out_grad=True`` multiplies the gradient by the head gradient. (MXNet 1.9.1 on CPU
  multiplies by the output instead, because its backward node is not given the head
  gradient; MXLab follows the documented meaning.)

The regression outputs divide by the number of outputs per sample
(``label.size / label.shape[0]``); a ``(N, 1)`` output takes a ``(N,)`` label.
``MakeLoss`` normalises by the batch size (``batch``) or the number of data elements
above ``valid_thresh`` (``valid``). ``make_loss`` is MXNet's parameterless twin: identity
forward (output named ``loss``), and a gradient of ones built as a ``ones_like`` node.

``softmax_cross_entropy(data, label)`` is the plain loss: the summed cross-entropy of
``softmax(data)`` against integer labels, a ``(1,)`` array, whose gradient does use the
head gradient. Labels never receive a gradient (zeros).
"""

from __future__ import annotations

import math

import numpy as np

from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..kernel import assign
from ..node import Entry, Node, NodeAttrs
from ..params import Param, ParamSet
from ..registry import alias, register
from .activation import compute_dtype
from .softmax import log_softmax_array, softmax_array


def _data_label_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    """Data and output share a dtype; the label takes it too unless given (any type works)."""
    name = attrs.name
    type_assign(out_types, 0, in_types[0], name, "output")
    type_assign(in_types, 0, out_types[0], name, "data")
    if in_types[1] is None:
        in_types[1] = in_types[0]
    return in_types[0] is not None and in_types[1] is not None


def _grad_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT], first: int) -> bool:
    """Backward operators: gradient ``i`` has the shape of backward input ``first + i``."""
    for i in range(len(out_shapes)):
        shape_assign(out_shapes, i, in_shapes[first + i], attrs.name, f"gradient {i}")
    return all(shape_known(s) for s in out_shapes)


def _grad_type(attrs: NodeAttrs, in_types: list, out_types: list, first: int) -> bool:
    for i in range(len(out_types)):
        type_assign(out_types, i, in_types[first + i], attrs.name, f"gradient {i}")
    return all(t is not None for t in out_types)


# ----------------------------------------------------------------------------- SoftmaxOutput
class SoftmaxOutputParam(ParamSet):
    grad_scale = Param(float, 1.0, "Scales the gradient.")
    ignore_label = Param(float, -1.0, "The label value to ignore when use_ignore is set.")
    multi_output = Param(bool, False, "Softmax over axis 1 of (N, C, d1, ...), one label per position.")
    use_ignore = Param(bool, False, "Give no gradient to samples labelled ignore_label.")
    preserve_shape = Param(bool, False, "Softmax over the last axis, keeping the data's shape.")
    normalization = Param(
        str, "null", "How to normalise the gradient: null, batch or valid.", choices=("batch", "null", "valid")
    )
    out_grad = Param(bool, False, "Multiply the gradient by the head gradient.")
    smooth_alpha = Param(float, 0.0, "Label smoothing: move this much probability mass off the label.")


def _softmax_output_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    p, name = attrs.parsed, attrs.name
    shape_assign(out_shapes, 0, in_shapes[0], name, "output")
    shape_assign(in_shapes, 0, out_shapes[0], name, "data")
    dshape, lshape = in_shapes[0], in_shapes[1]
    if dshape is None:
        return False
    if len(dshape) < (2 if p.multi_output else 1):
        raise InferenceError(f"{name}: SoftmaxOutput needs data with at least 2 dimensions, got {dshape}")
    if lshape is not None and tuple(lshape) == tuple(dshape):
        return shape_known(dshape)  # probability labels
    if p.multi_output:
        spatial = dshape[2:]
        candidates = [(dshape[0], math.prod(spatial)), (dshape[0], *spatial), (dshape[0], 1, *spatial)]
        if lshape is None:
            in_shapes[1] = candidates[0]
        elif not any(_fits(lshape, c) for c in candidates):
            raise InferenceError(
                f"{name}: SoftmaxOutput(multi_output) label shape {lshape} does not fit data {dshape}: "
                f"expected {candidates[0]} or {candidates[1]}"
            )
        else:
            shape_assign(in_shapes, 1, next(c for c in candidates if _fits(lshape, c)), name, "label")
    else:
        shape_assign(in_shapes, 1, dshape[:-1], name, "label")
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))


def _fits(shape: tuple[int, ...], candidate: tuple[int, ...]) -> bool:
    return len(shape) == len(candidate) and all(a == b or not a or not b for a, b in zip(shape, candidate, strict=True))


def _softmax_output_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    p, xp, x = attrs.parsed, op_ctx.xp, inputs[0]
    if p.multi_output:
        y = softmax_array(xp, x, 1)
    elif p.preserve_shape:
        y = softmax_array(xp, x, -1)
    else:
        y = softmax_array(xp, x.reshape(x.shape[0], -1), 1).reshape(x.shape)
    assign(outputs[0], req[0], y)


def _class_gradient(xp, p, out, label, class_axis: int):
    """``out - target`` for integer labels (one class axis), with smoothing and ignored labels."""
    classes = out.shape[class_axis]
    index = label.astype(np.int64)
    shape = [1] * out.ndim
    shape[class_axis] = classes
    hit = xp.expand_dims(index, class_axis) == xp.arange(classes).reshape(shape)
    if p.smooth_alpha:
        target = xp.where(hit, 1 - p.smooth_alpha, p.smooth_alpha / (classes - 1))
    else:
        target = hit
    grad = out - target
    ignored = index == int(p.ignore_label)
    if p.use_ignore:
        grad = grad * ~xp.expand_dims(ignored, class_axis)
    return grad, ignored


def _softmax_output_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    p, xp = attrs.parsed, op_ctx.xp
    work = compute_dtype(inputs[1].dtype)
    out, label = inputs[1].astype(work, copy=False), inputs[2]
    if label.shape == out.shape:  # probability labels
        grad = (out - label.astype(work, copy=False)) * p.grad_scale
    elif p.multi_output:
        n, c = out.shape[:2]
        spatial = out.size // (n * c)
        grad, ignored = _class_gradient(xp, p, out.reshape(n, c, spatial), label.reshape(n, spatial), 1)
        if p.normalization == "valid":
            scale = p.grad_scale / max(1, int(ignored.size - ignored.sum()))
        elif p.normalization == "batch":
            scale = p.grad_scale / spatial / n
        else:
            scale = p.grad_scale / spatial
        grad = (grad * scale).reshape(out.shape)
    else:
        if p.preserve_shape:
            rows = out.reshape(-1, out.shape[-1])
            labels = label.reshape(-1)
        else:
            rows = out.reshape(out.shape[0], -1)
            labels = label.reshape(-1)[: out.shape[0]]  # MXNet reads the first N labels
        grad, ignored = _class_gradient(xp, p, rows, labels, 1)
        if p.normalization == "valid":
            scale = p.grad_scale / max(1, int(ignored.size - ignored.sum()))
        elif p.normalization == "batch":
            scale = p.grad_scale / labels.shape[0]
        else:
            scale = p.grad_scale
        grad = (grad * scale).reshape(out.shape)
    if p.out_grad:
        grad = grad * inputs[0]
    assign(outputs[0], req[0], grad)
    assign(outputs[1], req[1], 0)


def _softmax_output_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Backward inputs: head gradient (used only with out_grad), output, label."""
    backward = make_backward_node(node, "_backward_SoftmaxOutput", [out_grads[0], Entry(node, 0), node.inputs[1]])
    return [Entry(backward, 0), Entry(backward, 1)]


(
    register("SoftmaxOutput")
    .describe("Softmax in the forward pass; the cross-entropy gradient against the label in backward.")
    .set_params(SoftmaxOutputParam)
    .set_num_inputs(2)
    .set_input_names(["data", "label"])
    .set_infer_shape(_softmax_output_shape)
    .set_infer_type(_data_label_type)
    .set_compute(_softmax_output_forward)
    .set_gradient(_softmax_output_gradient)
)
alias("Softmax", "SoftmaxOutput")
(
    register("_backward_SoftmaxOutput")
    .set_params(SoftmaxOutputParam)
    .set_num_inputs(3)
    .set_num_outputs(2)
    .set_infer_shape(lambda attrs, i, o: _grad_shape(attrs, i, o, 1))
    .set_infer_type(lambda attrs, i, o: _grad_type(attrs, i, o, 1))
    .set_compute(_softmax_output_backward)
    .set_is_backward()
)


# ----------------------------------------------------------------------------- regression outputs
class RegressionOutputParam(ParamSet):
    grad_scale = Param(float, 1.0, "Scales the gradient.")


def _regression_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name = attrs.name
    shape_assign(out_shapes, 0, in_shapes[0], name, "output")
    shape_assign(in_shapes, 0, out_shapes[0], name, "data")
    dshape, lshape = in_shapes[0], in_shapes[1]
    if dshape is None:
        if lshape is not None:  # a label fixes the data shape (a (N,) label is read as (N,))
            shape_assign(in_shapes, 0, lshape, name, "data")
            shape_assign(out_shapes, 0, lshape, name, "output")
        return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))
    if lshape is None:
        in_shapes[1] = (dshape[0],) if len(dshape) == 2 and dshape[1] == 1 else tuple(dshape)
    elif (
        shape_known(lshape)
        and shape_known(dshape)
        and (len(lshape) == 0 or len(dshape) == 0 or lshape[0] != dshape[0] or math.prod(lshape) != math.prod(dshape))
    ):
        raise InferenceError(
            f"{name}: label shape {lshape} does not fit data shape {dshape}: "
            "expected the same first dimension and the same number of elements"
        )
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))


def _regression_forward(transform):
    def compute(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
        x = inputs[0].astype(compute_dtype(inputs[0].dtype), copy=False)
        assign(outputs[0], req[0], transform(op_ctx.xp, x))

    return compute


def _regression_backward(grad_of):
    def compute(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
        out = inputs[0].astype(compute_dtype(inputs[0].dtype), copy=False)
        label = inputs[1].reshape(out.shape).astype(out.dtype, copy=False)
        per_sample = inputs[1].size // inputs[1].shape[0] if inputs[1].ndim else 1
        assign(outputs[0], req[0], grad_of(op_ctx.xp, out - label) * (attrs.parsed.grad_scale / per_sample))
        assign(outputs[1], req[1], 0)

    return compute


def _regression_gradient(backward_name: str):
    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        """Backward inputs: output and label (the head gradient is not used)."""
        backward = make_backward_node(node, backward_name, [Entry(node, 0), node.inputs[1]])
        return [Entry(backward, 0), Entry(backward, 1)]

    return gradient


_REGRESSIONS = {
    "LinearRegressionOutput": (lambda xp, x: x, lambda xp, d: d, "least squares"),
    "LogisticRegressionOutput": (lambda xp, x: 1 / (1 + xp.exp(-x)), lambda xp, d: d, "logistic"),
    "MAERegressionOutput": (lambda xp, x: x, lambda xp, d: xp.sign(d), "mean absolute error"),
}

for _name, (_forward, _grad_of, _kind) in _REGRESSIONS.items():
    (
        register(_name)
        .describe(f"Output layer for {_kind} regression: the loss gradient against the label in backward.")
        .set_params(RegressionOutputParam)
        .set_num_inputs(2)
        .set_input_names(["data", "label"])
        .set_infer_shape(_regression_shape)
        .set_infer_type(_data_label_type)
        .set_compute(_regression_forward(_forward))
        .set_gradient(_regression_gradient(f"_backward_{_name}"))
        .set_inplace_option(lambda attrs: [(0, 0)])
    )
    (
        register(f"_backward_{_name}")
        .set_params(RegressionOutputParam)
        .set_num_inputs(2)
        .set_num_outputs(2)
        .set_infer_shape(lambda attrs, i, o: _grad_shape(attrs, i, o, 0))
        .set_infer_type(lambda attrs, i, o: _grad_type(attrs, i, o, 0))
        .set_compute(_regression_backward(_grad_of))
        .set_is_backward()
    )


# ----------------------------------------------------------------------------- MakeLoss
class MakeLossParam(ParamSet):
    grad_scale = Param(float, 1.0, "Scales the gradient.")
    valid_thresh = Param(float, 0.0, "Elements above this count as valid (normalization='valid').")
    normalization = Param(
        str, "null", "How to normalise the gradient: null, batch or valid.", choices=("batch", "null", "valid")
    )


def _same_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape_assign(out_shapes, 0, in_shapes[0], attrs.name, "output")
    shape_assign(in_shapes, 0, out_shapes[0], attrs.name, "data")
    return shape_known(in_shapes[0])


def _same_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, in_types[0], attrs.name, "output")
    type_assign(in_types, 0, out_types[0], attrs.name, "data")
    return in_types[0] is not None


def _make_loss_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    assign(outputs[0], req[0], inputs[0])


def _make_loss_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    p, out = attrs.parsed, inputs[0]
    if p.normalization == "batch":
        scale = p.grad_scale / (out.shape[0] if out.ndim else 1)
    elif p.normalization == "valid":
        scale = p.grad_scale / max(1, int((out > p.valid_thresh).sum()))
    else:
        scale = p.grad_scale
    assign(outputs[0], req[0], scale)


(
    register("MakeLoss")
    .describe("Marks its input as a loss: identity forward, a constant gradient (grad_scale) backward.")
    .set_params(MakeLossParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_same_shape)
    .set_infer_type(_same_type)
    .set_compute(_make_loss_forward)
    .set_gradient(lambda node, out_grads: [Entry(make_backward_node(node, "_backward_MakeLoss", [Entry(node, 0)]), 0)])
    .set_inplace_option(lambda attrs: [(0, 0)])
)
(
    register("_backward_MakeLoss")
    .set_params(MakeLossParam)
    .set_num_inputs(1)
    .set_infer_shape(_same_shape)
    .set_infer_type(_same_type)
    .set_compute(_make_loss_backward)
    .set_is_backward()
)


def _ones_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """``make_loss``'s gradient: ones shaped like its output, whatever the head gradient."""
    return [Entry(make_backward_node(node, "ones_like", [Entry(node, 0)]), 0)]


(
    register("make_loss")
    .describe("Marks its input as a loss: identity forward, a gradient of ones backward (no parameters).")
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_output_names(["loss"])
    .set_infer_shape(_same_shape)
    .set_infer_type(_same_type)
    .set_compute(_make_loss_forward)
    .set_gradient(_ones_gradient)
    .set_inplace_option(lambda attrs: [(0, 0)])
)


# ----------------------------------------------------------------------------- softmax_cross_entropy
def _sce_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name = attrs.name
    shape_assign(out_shapes, 0, (1,), name, "output")
    dshape, lshape = in_shapes[0], in_shapes[1]
    if dshape is not None and len(dshape) != 2:
        raise InferenceError(f"{name}: softmax_cross_entropy only accepts 2-D data (batch, classes), got {dshape}")
    if lshape is not None and len(lshape) != 1:
        raise InferenceError(f"{name}: softmax_cross_entropy only accepts a 1-D label (batch,), got {lshape}")
    if dshape is not None:
        shape_assign(in_shapes, 1, dshape[:1], name, "label")
    if in_shapes[1] is not None:
        shape_assign(in_shapes, 0, (in_shapes[1][0], 0), name, "data")
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))


def _picked_log_prob(xp, data, label):
    logp = log_softmax_array(xp, data, 1)
    index = xp.clip(label.astype(np.int64), 0, data.shape[1] - 1)
    return xp.take_along_axis(logp, index[:, None], axis=1)


def _sce_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    loss = -_picked_log_prob(op_ctx.xp, inputs[0], inputs[1]).sum()
    assign(outputs[0], req[0], loss.reshape(1))


def _sce_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    xp = op_ctx.xp
    data, label = inputs[1], inputs[2]
    prob = softmax_array(xp, data, 1)
    index = xp.clip(label.astype(np.int64), 0, data.shape[1] - 1)
    hit = index[:, None] == xp.arange(data.shape[1])[None, :]
    assign(outputs[0], req[0], (prob - hit) * inputs[0].astype(prob.dtype).reshape(()))
    assign(outputs[1], req[1], 0)


def _sce_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Backward inputs: head gradient, data, label."""
    backward = make_backward_node(node, "_backward_softmax_cross_entropy", [out_grads[0], *node.inputs])
    return [Entry(backward, 0), Entry(backward, 1)]


(
    register("softmax_cross_entropy")
    .describe("Summed cross-entropy of softmax(data) (batch, classes) against integer labels (batch,).")
    .set_num_inputs(2)
    .set_input_names(["data", "label"])
    .set_infer_shape(_sce_shape)
    .set_infer_type(_data_label_type)
    .set_compute(_sce_forward)
    .set_gradient(_sce_gradient)
)
(
    register("_backward_softmax_cross_entropy")
    .set_num_inputs(3)
    .set_num_outputs(2)
    .set_infer_shape(lambda attrs, i, o: _grad_shape(attrs, i, o, 1))
    .set_infer_type(lambda attrs, i, o: _grad_type(attrs, i, o, 1))
    .set_compute(_sce_backward)
    .set_is_backward()
)
