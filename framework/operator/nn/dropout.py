"""Dropout: randomly zero activations in training, scaling the survivors by ``1 / (1 - p)``.

Scaling at training time ("inverted dropout") keeps the expected activation unchanged, so
inference is the identity and needs no rescaling. Dropout is the classic operator that
needs *randomness* and *a saved state*:

* randomness comes from the resource manager: the operator requests
  ``ResourceRequest.RANDOM`` and draws from ``op_ctx.requested[0].generator``, so draws
  are serialised through the generator's engine variable and a seeded program is
  reproducible on every engine;
* the drawn mask is a second, hidden output (``num_visible_outputs = 1``). Backward
  multiplies the head gradient by that saved mask instead of drawing a new one.

The mask is drawn when training (``autograd.record()`` / ``is_train``) or always with
``mode='always'``; otherwise the output is the input and the mask is all ones. ``axes``
shares one draw along the listed axes (e.g. ``axes=(2, 3)`` drops whole feature maps of
NCHW data: "spatial dropout"). ``p = 1`` drops everything (MXNet 1.9.1 produces NaN
there, from ``0 * inf``; MXLab returns zeros).
"""

from __future__ import annotations

from ...resource import ResourceRequest
from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT, elemwise_shape, shape_assign, shape_known, type_assign
from ..kernel import assign
from ..node import Entry, Node, NodeAttrs
from ..params import Param, ParamSet, Shape
from ..registry import register


class DropoutParam(ParamSet):
    p = Param(float, 0.5, "Fraction of the input that gets dropped.", low=0.0, high=1.0)
    mode = Param(
        str, "training", "training: drop only in training; always: also in inference.", choices=("always", "training")
    )
    axes = Param(Shape, Shape(), "Axes along which one random draw is shared.")
    cudnn_off = Param(bool, False, "Do not use cuDNN dropout (no effect in MXLab).", optional=True)


def _dropout_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    done = elemwise_shape(attrs, in_shapes, out_shapes)
    dshape = in_shapes[0]
    if dshape is not None:
        for axis in attrs.parsed.axes:
            if not -len(dshape) <= axis < len(dshape):
                raise InferenceError(
                    f"{attrs.name}: Dropout axis {axis} is out of range for data with {len(dshape)} dimension(s)"
                )
    return done


def _dropout_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    known = next((t for t in list(in_types) + list(out_types) if t is not None), None)
    if known is None:
        return False
    type_assign(in_types, 0, known, attrs.name, "data")
    for i in range(len(out_types)):
        type_assign(out_types, i, known, attrs.name, f"output {i}")
    return True


def _dropout_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    p, xp = attrs.parsed, op_ctx.xp
    x = inputs[0]
    if (op_ctx.is_train or p.mode == "always") and p.p > 0:
        shared = {axis % x.ndim for axis in p.axes}
        draw_shape = tuple(1 if i in shared else n for i, n in enumerate(x.shape))
        keep = op_ctx.requested[0].generator.random(draw_shape) >= p.p
        scale = 0.0 if p.p >= 1 else 1.0 / (1.0 - p.p)
        mask = xp.broadcast_to((keep * scale).astype(x.dtype), x.shape)
        assign(outputs[0], req[0], x * mask)
        assign(outputs[1], req[1], mask)
    else:
        assign(outputs[0], req[0], x)
        assign(outputs[1], req[1], 1)


def _dropout_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    assign(outputs[0], req[0], inputs[0] * inputs[1])


def _dropout_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Backward inputs: head gradient and the saved mask."""
    return [Entry(make_backward_node(node, "_backward_Dropout", [out_grads[0], Entry(node, 1)]), 0)]


def _backward_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape_assign(out_shapes, 0, in_shapes[0], attrs.name, "gradient")
    return shape_known(out_shapes[0])


def _backward_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, in_types[0], attrs.name, "gradient")
    return out_types[0] is not None


(
    register("Dropout")
    .describe("Zeroes a random fraction p of the input in training, scaling the rest by 1 / (1 - p).")
    .set_params(DropoutParam)
    .set_num_inputs(1)
    .set_num_outputs(2)
    .set_num_visible_outputs(1)
    .set_input_names(["data"])
    .set_output_names(["output", "mask"])
    .set_infer_shape(_dropout_shape)
    .set_infer_type(_dropout_type)
    .set_compute(_dropout_forward)
    .set_resource_request(lambda attrs: [ResourceRequest.RANDOM])
    .set_gradient(_dropout_gradient)
)
(
    register("_backward_Dropout")
    .set_params(DropoutParam)
    .set_num_inputs(2)
    .set_infer_shape(_backward_shape)
    .set_infer_type(_backward_type)
    .set_compute(_dropout_backward)
    .set_is_backward()
)
