"""Variable-length sequences in a padded batch: SequenceMask, SequenceLast, SequenceReverse.

A batch of sequences is stored padded to the longest one, time-major ``(T, N, ...)``
(``axis=0``) or batch-major ``(N, T, ...)`` (``axis=1``); with ``use_sequence_length`` a
second input ``sequence_length`` of shape ``(N,)`` says how many steps of each sequence are
real. Without it every sequence is taken to have all ``T`` steps.

The three operators share one idea: compare a time index ``t`` (an ``arange`` shaped to
broadcast along the time axis) with each sequence's length (shaped to broadcast along the
batch axis). That comparison is a mask (SequenceMask writes ``value`` where ``t >= length``),
the index of the last real step (SequenceLast gathers ``length - 1`` with
``take_along_axis``), or a per-sequence permutation (SequenceReverse gathers
``length - 1 - t`` for ``t < length`` and leaves the padding in place). No loop runs over
the batch. Each gradient routes the head gradient back the same way: masked positions get
zero, SequenceLast scatters into the gathered step, and reversing is its own inverse.
``sequence_length`` never gets a gradient. Lengths are clipped to ``[0, T]`` (SequenceLast:
``[1, T]``), where MXNet would read outside the array.
"""

from __future__ import annotations

from typing import Any

from .grad import make_backward_node
from .infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from .kernel import assign
from .node import Entry, Node, NodeAttrs
from .params import Param, ParamSet
from .registry import register


class SequenceParam(ParamSet):
    use_sequence_length = Param(bool, False, "Take a second input, sequence_length, with each sequence's length.")
    axis = Param(int, 0, "The sequence (time) axis: 0 for (T, N, ...), 1 for (N, T, ...).", low=0, high=1)


class SequenceMaskParam(SequenceParam):
    value = Param(float, 0.0, "The value written at the padded steps.")


class SequenceReverseParam(SequenceParam):
    axis = Param(int, 0, "The sequence (time) axis; only 0 is supported.", low=0, high=0)


def _num_inputs(attrs: NodeAttrs) -> int:
    return 2 if attrs.parsed.use_sequence_length else 1


def _input_names(attrs: NodeAttrs) -> list[str]:
    return ["data", "sequence_length"] if attrs.parsed.use_sequence_length else ["data"]


def _batch_axis(attrs: NodeAttrs) -> int:
    return 1 - attrs.parsed.axis


def _check_rank(attrs: NodeAttrs, shape: ShapeT) -> None:
    if shape is not None and len(shape) < 2:
        raise InferenceError(
            f"{attrs.name}: data must have at least 2 dimensions (time and batch, then features), got shape {shape}"
        )


def _length_shape(attrs: NodeAttrs, in_shapes: list[ShapeT]) -> None:
    """sequence_length is (batch,), and gives the data's batch size back."""
    if not attrs.parsed.use_sequence_length:
        return
    data, batch_axis = in_shapes[0], _batch_axis(attrs)
    if in_shapes[1] is not None and len(in_shapes[1]) != 1:
        raise InferenceError(f"{attrs.name}: sequence_length must be 1-D (batch,), got shape {in_shapes[1]}")
    if data is not None:
        shape_assign(in_shapes, 1, (data[batch_axis],), attrs.name, "sequence_length")
    length = in_shapes[1]
    if length is not None:
        if data is not None:
            known = tuple(length[0] if i == batch_axis else 0 for i in range(len(data)))
            shape_assign(in_shapes, 0, known, attrs.name, "data")


def _same_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """SequenceMask and SequenceReverse: the output has the data's shape."""
    shape_assign(out_shapes, 0, in_shapes[0], attrs.name, "output")
    shape_assign(in_shapes, 0, out_shapes[0], attrs.name, "data")
    _check_rank(attrs, in_shapes[0])
    _length_shape(attrs, in_shapes)
    shape_assign(out_shapes, 0, in_shapes[0], attrs.name, "output")
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))


def _last_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """SequenceLast: the output is the data without its time axis."""
    axis = attrs.parsed.axis
    _check_rank(attrs, in_shapes[0])
    out = out_shapes[0]
    if out is not None:
        shape_assign(in_shapes, 0, (*out[:axis], 0, *out[axis:]), attrs.name, "data")
    _length_shape(attrs, in_shapes)
    data = in_shapes[0]
    if data is not None:
        shape_assign(out_shapes, 0, (*data[:axis], *data[axis + 1 :]), attrs.name, "output")
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))


def _sequence_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    """The output has the data's dtype; sequence_length may have any dtype (the data's if unknown)."""
    type_assign(out_types, 0, in_types[0], attrs.name, "output")
    type_assign(in_types, 0, out_types[0], attrs.name, "data")
    if attrs.parsed.use_sequence_length and in_types[1] is None:
        type_assign(in_types, 1, in_types[0], attrs.name, "sequence_length")
    return all(t is not None for t in list(in_types) + list(out_types))


def _time_and_lengths(attrs: NodeAttrs, xp: Any, inputs: list, data_shape: tuple, low: int) -> tuple[Any, Any]:
    """``t`` and ``length``, both shaped to broadcast against the data: t along the time axis,
    length along the batch axis (so ``t < length`` is the mask of real steps)."""
    axis, steps, ndim = attrs.parsed.axis, data_shape[attrs.parsed.axis], len(data_shape)
    batch_axis = 1 - axis
    t = xp.arange(steps).reshape(tuple(-1 if i == axis else 1 for i in range(ndim)))
    if attrs.parsed.use_sequence_length:
        length = xp.clip(inputs[1].astype("int64"), low, steps)
    else:
        length = xp.full((data_shape[batch_axis],), steps, dtype="int64")
    return t, length.reshape(tuple(-1 if i == batch_axis else 1 for i in range(ndim)))


def _length_grad(req: list, outputs: list) -> None:
    if len(outputs) > 1:
        assign(outputs[1], req[1], 0)  # lengths are not differentiable


# ---------------------------------------------------------------------------- SequenceMask
def _mask_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    data = inputs[0]
    t, length = _time_and_lengths(attrs, op_ctx.xp, inputs, data.shape, 0)
    value = op_ctx.xp.asarray(attrs.parsed.value, dtype=data.dtype)
    assign(outputs[0], req[0], op_ctx.xp.where(t < length, data, value))


def _mask_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    grad = inputs[0]
    t, length = _time_and_lengths(attrs, op_ctx.xp, inputs[1:], grad.shape, 0)
    assign(outputs[0], req[0], grad * (t < length))
    _length_grad(req, outputs)


# ---------------------------------------------------------------------------- SequenceLast
def _last_index(attrs: NodeAttrs, xp: Any, inputs: list, data_shape: tuple) -> Any:
    """The index of each sequence's last step, shaped for take_along_axis on the data."""
    _, length = _time_and_lengths(attrs, xp, inputs, data_shape, 1)
    return xp.broadcast_to(length - 1, tuple(1 if i == attrs.parsed.axis else d for i, d in enumerate(data_shape)))


def _last_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    data, xp = inputs[0], op_ctx.xp
    index = _last_index(attrs, xp, inputs, data.shape)
    picked = xp.take_along_axis(data, index, axis=attrs.parsed.axis)
    assign(outputs[0], req[0], picked.reshape(outputs[0].shape))


def _last_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    grad, data = inputs[0], inputs[1]
    axis = attrs.parsed.axis
    t, length = _time_and_lengths(attrs, op_ctx.xp, inputs[1:], data.shape, 1)
    assign(outputs[0], req[0], op_ctx.xp.expand_dims(grad, axis) * (t == length - 1))
    _length_grad(req, outputs)


# ---------------------------------------------------------------------------- SequenceReverse
def _reverse(attrs: NodeAttrs, xp: Any, values: Any, inputs: list) -> Any:
    """Each sequence's first ``length`` steps in reverse order; padding stays where it is."""
    t, length = _time_and_lengths(attrs, xp, inputs, values.shape, 0)
    source = xp.where(t < length, length - 1 - t, t)
    return xp.take_along_axis(values, xp.broadcast_to(source, values.shape), axis=0)


def _reverse_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    assign(outputs[0], req[0], _reverse(attrs, op_ctx.xp, inputs[0], inputs))


def _reverse_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    assign(outputs[0], req[0], _reverse(attrs, op_ctx.xp, inputs[0], inputs[1:]))
    _length_grad(req, outputs)


# ---------------------------------------------------------------------------- registration
def _gradient(backward_name: str) -> Any:
    """Backward inputs: the output gradient, then the forward inputs (data for shapes, lengths)."""

    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        backward = make_backward_node(node, backward_name, [out_grads[0], *node.inputs])
        return [Entry(backward, i) for i in range(len(node.inputs))]

    return gradient


def _backward_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    for i in range(len(out_shapes)):
        shape_assign(out_shapes, i, in_shapes[i + 1], attrs.name, f"gradient {i}")
    return all(shape_known(s) for s in out_shapes)


def _backward_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    for i in range(len(out_types)):
        type_assign(out_types, i, in_types[i + 1], attrs.name, f"gradient {i}")
    return all(t is not None for t in out_types)


def _register(name: str, params: type[ParamSet], description: str, shape: Any, forward: Any, backward: Any) -> None:
    (
        register(name)
        .describe(description)
        .set_params(params)
        .set_num_inputs(_num_inputs)
        .set_input_names(_input_names)
        .set_infer_shape(shape)
        .set_infer_type(_sequence_type)
        .set_compute(forward)
        .set_gradient(_gradient(f"_backward_{name}"))
    )
    (
        register(f"_backward_{name}")
        .set_params(params)
        .set_num_inputs(lambda attrs: 1 + _num_inputs(attrs))
        .set_num_outputs(_num_inputs)
        .set_infer_shape(_backward_shape)
        .set_infer_type(_backward_type)
        .set_compute(backward)
        .set_is_backward()
    )


_register(
    "SequenceMask",
    SequenceMaskParam,
    "Sets the steps of each sequence beyond its length to value.",
    _same_shape,
    _mask_forward,
    _mask_backward,
)
_register(
    "SequenceLast",
    SequenceParam,
    "Takes the last real step of each sequence (the output has no time axis).",
    _last_shape,
    _last_forward,
    _last_backward,
)
_register(
    "SequenceReverse",
    SequenceReverseParam,
    "Reverses the first length steps of each sequence, leaving the padding in place.",
    _same_shape,
    _reverse_forward,
    _reverse_backward,
)
