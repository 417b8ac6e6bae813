"""SVMOutput: an output layer whose backward pass is the gradient of a multi-class hinge loss.

Like the layers in ``loss_output.py`` its forward pass is the identity on the scores
``data`` ``(N, C)``, and its backward pass ignores the head gradient and emits the gradient
of the loss against integer ``label`` ``(N,)``, scaled by ``regularization_coefficient``
(``c``). With margin ``m``, for the true class ``y`` and every other class ``j``:

=========================== ================================= ====================================
objective                   d/d score[y]                       d/d score[j]
=========================== ================================= ====================================
L2-SVM (default)            ``-2 c (m - s_y)`` if ``s_y < m``  ``2 c (m + s_j)`` if ``s_j > -m``
L1-SVM (``use_linear``)     ``-c`` if ``s_y < m``              ``c`` if ``s_j > -m``
=========================== ================================= ====================================

(a one-vs-rest hinge: the true class is pushed above ``m``, every other class below
``-m``). The comparison against the one-hot labels is one broadcast, so no loop runs over
the batch. The label gets a zero gradient.
"""

from __future__ import annotations

from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT, elemwise_type, shape_assign, shape_known, type_assign
from ..kernel import assign
from ..node import Entry, Node, NodeAttrs
from ..params import Param, ParamSet
from ..registry import register


class SVMOutputParam(ParamSet):
    margin = Param(float, 1.0, "The margin the scores must clear.")
    regularization_coefficient = Param(float, 1.0, "Scale of the loss gradient.")
    use_linear = Param(bool, False, "Use the L1-SVM (linear hinge) objective instead of L2-SVM (squared hinge).")


def _svm_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """data (N, C) = output; label (N,)."""
    name = attrs.name
    shape_assign(out_shapes, 0, in_shapes[0], name, "output")
    shape_assign(in_shapes, 0, out_shapes[0], name, "data")
    data = in_shapes[0]
    if data is not None and len(data) != 2:
        raise InferenceError(f"{name}: data must be 2-D (batch, classes), got shape {data}")
    if in_shapes[1] is not None and len(in_shapes[1]) != 1:
        raise InferenceError(f"{name}: label must be 1-D (batch,), got shape {in_shapes[1]}")
    if data is not None:
        shape_assign(in_shapes, 1, (data[0],), name, "label")
    if in_shapes[1] is not None:
        shape_assign(in_shapes, 0, (in_shapes[1][0], 0), name, "data")
        shape_assign(out_shapes, 0, in_shapes[0], name, "output")
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))


def _svm_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    assign(outputs[0], req[0], inputs[0])


def _svm_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """Inputs: the forward output (the scores) and the label."""
    p, xp = attrs.parsed, op_ctx.xp
    scores, label = inputs
    is_true = label.astype("int64")[:, None] == xp.arange(scores.shape[1])[None, :]
    c, m = p.regularization_coefficient, p.margin
    if p.use_linear:
        grad = xp.where(is_true, -c * (scores < m), c * (scores > -m))
    else:
        grad = xp.where(is_true, -2 * c * xp.maximum(m - scores, 0), 2 * c * xp.maximum(m + scores, 0))
    assign(outputs[0], req[0], grad)
    assign(outputs[1], req[1], 0)  # labels are not differentiable


def _svm_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Backward inputs: the output and the label (the head gradient is not used)."""
    backward = make_backward_node(node, "_backward_SVMOutput", [Entry(node, 0), node.inputs[1]])
    return [Entry(backward, 0), Entry(backward, 1)]


def _backward_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    for i in range(2):
        shape_assign(out_shapes, i, in_shapes[i], attrs.name, f"gradient {i}")
    return all(shape_known(s) for s in out_shapes)


def _backward_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    for i in range(2):
        type_assign(out_types, i, in_types[i], attrs.name, f"gradient {i}")
    return all(t is not None for t in out_types)


(
    register("SVMOutput")
    .describe("Identity on the scores; the backward pass is the gradient of a multi-class hinge (SVM) loss.")
    .set_params(SVMOutputParam)
    .set_num_inputs(2)
    .set_input_names(["data", "label"])
    .set_infer_shape(_svm_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_svm_forward)
    .set_gradient(_svm_gradient)
    .set_inplace_option(lambda attrs: [(0, 0)])
)
(
    register("_backward_SVMOutput")
    .set_params(SVMOutputParam)
    .set_num_inputs(2)
    .set_num_outputs(2)
    .set_infer_shape(_backward_shape)
    .set_infer_type(_backward_type)
    .set_compute(_svm_backward)
    .set_is_backward()
)
