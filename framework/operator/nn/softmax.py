"""Softmax family: ``softmax``, ``log_softmax``, ``softmin`` and ``SoftmaxActivation``.

``softmax(x)_i = exp(x_i / T) / sum_j exp(x_j / T)`` along one axis (``T``: the optional
``temperature``). It is computed stably by subtracting the maximum first, which leaves
the result unchanged and keeps ``exp`` from overflowing. ``log_softmax`` returns
``x_i / T - logsumexp(x / T)`` directly (more accurate than ``log(softmax)``) and
``softmin`` is the softmax of ``-x``.

The gradients use only the output ``y`` (plus the output gradient ``g``):

* softmax: ``dx = y * (g - sum(g * y)) / T``
* log_softmax: ``dx = (g - exp(y) * sum(g)) / T``

``softmax`` with ``use_length=True`` takes a second input ``length`` (the data shape
without ``axis``) and only normalises over the first ``length`` entries along ``axis``;
the rest of the output is 0. ``dtype`` chooses the output type (for example float32
output for float16 data). Half-precision inputs are computed in float32.

``SoftmaxActivation`` is the older layer: ``mode='instance'`` applies the softmax over
the last axis, ``mode='channel'`` over axis 1 of data with at least 3 dimensions.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT, elemwise_shape, elemwise_type, shape_assign, shape_known, type_assign
from ..kernel import assign
from ..node import Entry, Node, NodeAttrs
from ..params import DType, Param, ParamSet
from ..registry import register
from .activation import compute_dtype


def softmax_array(xp: ModuleType, x: Any, axis: int, temperature: float = 1.0) -> Any:
    """Numerically stable softmax of ``x`` along ``axis`` (in ``x``'s dtype, widened for float16)."""
    z = x.astype(compute_dtype(x.dtype), copy=False)
    if temperature != 1.0:
        z = z / temperature
    z = z - z.max(axis=axis, keepdims=True)
    e = xp.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax_array(xp: ModuleType, x: Any, axis: int, temperature: float = 1.0) -> Any:
    """Numerically stable log-softmax of ``x`` along ``axis``."""
    z = x.astype(compute_dtype(x.dtype), copy=False)
    if temperature != 1.0:
        z = z / temperature
    z = z - z.max(axis=axis, keepdims=True)
    return z - xp.log(xp.exp(z).sum(axis=axis, keepdims=True))


# ----------------------------------------------------------------------------- softmax / log_softmax / softmin
class SoftmaxParam(ParamSet):
    axis = Param(int, -1, "The axis along which to compute the softmax.")
    temperature = Param(float, None, "Temperature T: the input is divided by T first (None means 1).")
    dtype = Param(DType, None, "Output data type (None: the input's type).", choices=("float16", "float32", "float64"))
    use_length = Param(bool, False, "Whether to take a second input, the valid length along axis.")


def _check_axis(attrs: NodeAttrs, ndim: int) -> int:
    axis = attrs.parsed.axis
    if not -ndim <= axis < ndim:
        op_name = attrs.op.name if attrs.op is not None else "softmax"
        raise InferenceError(f"{attrs.name}: {op_name} axis {axis} is out of range for data with {ndim} dimension(s)")
    return axis % ndim


def _softmax_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name = attrs.name
    shape_assign(out_shapes, 0, in_shapes[0], name, "output")
    shape_assign(in_shapes, 0, out_shapes[0], name, "data")
    dshape = in_shapes[0]
    if dshape is None:
        return False
    if len(dshape) == 0:
        raise InferenceError(f"{name}: softmax needs data with at least one dimension, got shape ()")
    axis = _check_axis(attrs, len(dshape))
    if len(in_shapes) > 1:  # use_length: length has the data shape without axis
        shape_assign(in_shapes, 1, dshape[:axis] + dshape[axis + 1 :], name, "length")
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))


def _softmax_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    name, dtype = attrs.name, attrs.parsed.dtype
    if dtype is not None:
        type_assign(out_types, 0, dtype, name, "output")
    else:
        type_assign(out_types, 0, in_types[0], name, "output")
        type_assign(in_types, 0, out_types[0], name, "data")
    if len(in_types) > 1 and in_types[1] is None:
        in_types[1] = "int32"
    return in_types[0] is not None and out_types[0] is not None


def _length_mask(xp, shape: tuple[int, ...], axis: int, length):
    """True where the position along ``axis`` is below ``length`` (broadcast over the other axes)."""
    positions = xp.arange(shape[axis]).reshape([-1 if i == axis else 1 for i in range(len(shape))])
    return positions < xp.expand_dims(length.astype(np.int64), axis)


def _softmax_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    p, xp = attrs.parsed, op_ctx.xp
    x = inputs[0]
    axis = _check_axis(attrs, x.ndim)
    temperature = 1.0 if p.temperature is None else p.temperature
    kind = attrs.op.name
    if kind == "softmin":
        x = -x.astype(compute_dtype(x.dtype), copy=False)
    if kind == "log_softmax":
        y = log_softmax_array(xp, x, axis, temperature)
    elif len(inputs) > 1:
        mask = _length_mask(xp, x.shape, axis, inputs[1])
        z = x.astype(compute_dtype(x.dtype), copy=False) / temperature
        z = z - xp.where(mask, z, -xp.inf).max(axis=axis, keepdims=True)
        e = xp.where(mask, xp.exp(xp.where(mask, z, 0)), 0)
        total = e.sum(axis=axis, keepdims=True)
        y = e / xp.where(total == 0, 1, total)
    else:
        y = softmax_array(xp, x, axis, temperature)
    assign(outputs[0], req[0], y)


def _softmax_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Backward inputs: output gradient, output, then the forward inputs (for dtypes/shapes)."""
    backward = make_backward_node(node, f"_backward_{node.op.name}", [out_grads[0], Entry(node, 0), *node.inputs])
    return [Entry(backward, i) for i in range(len(node.inputs))]


def _softmax_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    p, xp = attrs.parsed, op_ctx.xp
    work = compute_dtype(inputs[1].dtype)
    grad, y = inputs[0].astype(work, copy=False), inputs[1].astype(work, copy=False)
    axis = _check_axis(attrs, y.ndim)
    temperature = 1.0 if p.temperature is None else p.temperature
    kind = attrs.op.name[len("_backward_") :]
    if kind == "log_softmax":
        dx = grad - xp.exp(y) * grad.sum(axis=axis, keepdims=True)
    else:
        dx = y * (grad - (grad * y).sum(axis=axis, keepdims=True))
    if kind == "softmin":
        dx = -dx
    if temperature != 1.0:
        dx = dx / temperature
    assign(outputs[0], req[0], dx)
    if len(outputs) > 1:
        assign(outputs[1], req[1], 0)  # the length is an index: no gradient


def _backward_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    for i in range(len(out_shapes)):
        shape_assign(out_shapes, i, in_shapes[2 + i], attrs.name, f"gradient {i}")
    return all(shape_known(s) for s in out_shapes)


def _backward_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    for i in range(len(out_types)):
        type_assign(out_types, i, in_types[2 + i], attrs.name, f"gradient {i}")
    return all(t is not None for t in out_types)


_DESCRIPTIONS = {
    "softmax": "Softmax along an axis: exp(x / T) normalised to sum to 1.",
    "log_softmax": "Log of the softmax along an axis, computed stably.",
    "softmin": "Softmin along an axis: the softmax of -x.",
}

for _name, _description in _DESCRIPTIONS.items():
    _with_length = _name == "softmax"
    (
        register(_name)
        .describe(_description)
        .set_params(SoftmaxParam)
        .set_num_inputs(lambda attrs, w=_with_length: 2 if w and attrs.parsed.use_length else 1)
        .set_input_names(
            lambda attrs, w=_with_length: ["data", "length"] if w and attrs.parsed.use_length else ["data"]
        )
        .set_infer_shape(_softmax_shape)
        .set_infer_type(_softmax_type)
        .set_compute(_softmax_forward)
        .set_gradient(_softmax_gradient)
    )
    (
        register(f"_backward_{_name}")
        .set_params(SoftmaxParam)
        .set_num_inputs(lambda attrs, w=_with_length: 4 if w and attrs.parsed.use_length else 3)
        .set_num_outputs(lambda attrs, w=_with_length: 2 if w and attrs.parsed.use_length else 1)
        .set_infer_shape(_backward_shape)
        .set_infer_type(_backward_type)
        .set_compute(_softmax_backward)
        .set_is_backward()
    )


# ----------------------------------------------------------------------------- SoftmaxActivation
class SoftmaxActivationParam(ParamSet):
    mode = Param(
        str,
        "instance",
        "instance: softmax over the last axis; channel: softmax over axis 1.",
        choices=("channel", "instance"),
    )


def _softmax_activation_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    done = elemwise_shape(attrs, in_shapes, out_shapes)
    dshape = in_shapes[0]
    if attrs.parsed.mode == "channel" and dshape is not None and len(dshape) < 3:
        raise InferenceError(
            f"{attrs.name}: SoftmaxActivation(mode='channel') needs data with at least 3 dimensions, got {dshape}"
        )
    if dshape is not None and len(dshape) == 0:
        raise InferenceError(f"{attrs.name}: SoftmaxActivation needs data with at least one dimension, got ()")
    return done


def _softmax_activation_axis(attrs: NodeAttrs) -> int:
    return 1 if attrs.parsed.mode == "channel" else -1


def _softmax_activation_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    assign(outputs[0], req[0], softmax_array(op_ctx.xp, inputs[0], _softmax_activation_axis(attrs)))


def _softmax_activation_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    work = compute_dtype(inputs[1].dtype)
    grad, y = inputs[0].astype(work, copy=False), inputs[1].astype(work, copy=False)
    axis = _softmax_activation_axis(attrs)
    assign(outputs[0], req[0], y * (grad - (grad * y).sum(axis=axis, keepdims=True)))


(
    register("SoftmaxActivation")
    .describe("Softmax over the last axis (mode='instance') or over channels, axis 1 (mode='channel').")
    .set_params(SoftmaxActivationParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_softmax_activation_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_softmax_activation_forward)
    .set_gradient(
        lambda node, out_grads: [
            Entry(make_backward_node(node, "_backward_SoftmaxActivation", [out_grads[0], Entry(node, 0)]), 0)
        ]
    )
)
(
    register("_backward_SoftmaxActivation")
    .set_params(SoftmaxActivationParam)
    .set_num_inputs(2)
    .set_infer_shape(elemwise_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_softmax_activation_backward)
    .set_is_backward()
)
