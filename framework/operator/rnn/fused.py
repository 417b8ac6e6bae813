"""``RNN``: a whole stack of recurrent layers as one operator (MXNet's fused RNN, cuDNN's shape).

Inputs (layout TNC): ``data`` (T, N, C), ``parameters`` (every weight and bias packed into one
vector, :mod:`.layout`), ``state`` (layers * directions, N, H or P), ``state_cell`` for an LSTM
(layers * directions, N, H) and ``sequence_length`` (N,) with ``use_sequence_length``. Outputs:
``output`` (T, N, directions * (H or P)), with ``state_outputs`` the final states
``state_output`` (and ``statecell_output`` for an LSTM), and a hidden ``reserve``
(:mod:`.reserve`) that carries the forward pass's gates and states to ``_backward_RNN``.

The forward pass runs layer by layer; within a layer each direction computes its input
contribution for all steps in one product and then walks the steps (:mod:`.cells`); the
right-to-left direction walks them backwards, and the two directions' outputs sit side by
side. Between layers, in training, dropout with rate ``p`` is applied to each layer's output
but the last, with masks drawn from the resource manager's generator (as ``Dropout`` does).
The backward pass (BPTT) goes back through the layers in reverse, each direction's gradient
of the gate pre-activations giving the input weights' gradient and the layer input's in one
product each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...resource import ResourceRequest
from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT, dtype_name, shape_assign, shape_known, type_assign
from ..kernel import INPLACE, NULL, WRITE, Req, assign
from ..node import Entry, Node, NodeAttrs
from ..params import REQUIRED, OperatorParamError, Param, ParamSet
from ..registry import register
from .cells import Cell, Clip, Direction, input_projection, make_cell
from .layout import RNNShape, input_size_from_param_size, param_size, unpack
from .reserve import carve, reserve_size

FLOAT_TYPES = ("float16", "float32", "float64")


class RNNParam(ParamSet):
    state_size = Param(int, REQUIRED, "Size of the hidden state of each layer (H).", low=1)
    num_layers = Param(int, REQUIRED, "Number of stacked layers.", low=1)
    bidirectional = Param(bool, False, "Whether each layer also runs right to left.")
    mode = Param(str, REQUIRED, "The recurrence to compute.", choices=("gru", "lstm", "rnn_relu", "rnn_tanh"))
    p = Param(float, 0.0, "Dropout rate on the output of each layer but the last (training only).", low=0.0, high=1.0)
    state_outputs = Param(bool, False, "Whether the final states are outputs too.")
    projection_size = Param(int, None, "LSTM only: project the hidden state to this size (LSTMP).", low=1)
    lstm_state_clip_min = Param(float, None, "LSTM only: lower clip of the cell state (with lstm_state_clip_max).")
    lstm_state_clip_max = Param(float, None, "LSTM only: upper clip of the cell state (with lstm_state_clip_min).")
    lstm_state_clip_nan = Param(bool, False, "With clipping: NaN cell states become lstm_state_clip_min.")
    use_sequence_length = Param(bool, False, "Whether a sequence_length input gives each sample's length.")

    @classmethod
    def parse(cls, op_name: str, kwargs: Mapping[str, Any]) -> ParamSet:
        """Per-field checks, then the rules that tie parameters together."""
        p = super().parse(op_name, kwargs)
        if p.projection_size is not None and p.mode != "lstm":
            raise OperatorParamError(
                f"{op_name}: parameter 'projection_size' is for mode='lstm' only, got mode={p.mode!r}"
            )
        low, high = p.lstm_state_clip_min, p.lstm_state_clip_max
        if (low is None) != (high is None):
            missing = "lstm_state_clip_max" if high is None else "lstm_state_clip_min"
            raise OperatorParamError(f"{op_name}: parameter '{missing}' is needed too: clipping takes both bounds")
        if low is not None:
            if p.mode != "lstm":
                raise OperatorParamError(
                    f"{op_name}: parameter 'lstm_state_clip_min' is for mode='lstm' only, got mode={p.mode!r}"
                )
            if low > high:
                raise OperatorParamError(
                    f"{op_name}: parameter 'lstm_state_clip_min' ({low}) exceeds lstm_state_clip_max ({high})"
                )
        return p


# ----------------------------------------------------------------------------- inputs and outputs
def input_names(attrs: NodeAttrs) -> list[str]:
    p = attrs.parsed
    names = ["data", "parameters", "state"]
    if p.mode == "lstm":
        names.append("state_cell")
    if p.use_sequence_length:
        names.append("sequence_length")
    return names


def visible_output_names(attrs: NodeAttrs) -> list[str]:
    p = attrs.parsed
    names = ["output"]
    if p.state_outputs:
        names.append("state_output")
        if p.mode == "lstm":
            names.append("statecell_output")
    return names


def _num_visible(attrs: NodeAttrs) -> int:
    return len(visible_output_names(attrs))


def rnn_shape(attrs: NodeAttrs, input_size: int) -> RNNShape:
    """The layout-defining sizes of this node for data with ``input_size`` features."""
    p = attrs.parsed
    return RNNShape(p.mode, p.num_layers, p.state_size, input_size, p.bidirectional, p.projection_size)


def _clip(attrs: NodeAttrs) -> Clip | None:
    p = attrs.parsed
    if p.lstm_state_clip_min is None:
        return None
    return Clip(p.lstm_state_clip_min, p.lstm_state_clip_max, p.lstm_state_clip_nan)


# ----------------------------------------------------------------------------- inference
def _known_dim(name: str, what: str, shape: ShapeT, rank: int, axis: int, current: int) -> int:
    """Dimension ``axis`` of ``shape`` merged into ``current`` (0 = unknown), checking the rank."""
    if shape is None:
        return current
    if len(shape) != rank:
        raise InferenceError(f"{name}: RNN {what} must have {rank} dimensions, got shape {shape}")
    value = shape[axis]
    if value and current and value != current:
        raise InferenceError(f"{name}: RNN {what} has {value} along axis {axis}, expected {current} (shape {shape})")
    return current or value


def _rnn_infer_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """Everything from the data's (T, N, C); T and N also from the states and outputs, C from
    the parameter vector's length."""
    p, name = attrs.parsed, attrs.name
    ins = {n: i for i, n in enumerate(input_names(attrs))}
    outs = {n: i for i, n in enumerate(visible_output_names(attrs))}
    spec = rnn_shape(attrs, 0)
    data = in_shapes[0]
    steps = _known_dim(name, "data (T, N, C)", data, 3, 0, 0)
    batch = _known_dim(name, "data (T, N, C)", data, 3, 1, 0)
    features = data[2] if data is not None else 0
    steps = _known_dim(name, "output", out_shapes[0], 3, 0, steps)
    batch = _known_dim(name, "output", out_shapes[0], 3, 1, batch)
    for what, shape in [
        ("state", in_shapes[ins["state"]]),
        ("state_cell", in_shapes[ins["state_cell"]] if "state_cell" in ins else None),
        ("state_output", out_shapes[outs["state_output"]] if "state_output" in outs else None),
        ("statecell_output", out_shapes[outs["statecell_output"]] if "statecell_output" in outs else None),
    ]:
        batch = _known_dim(name, what, shape, 3, 1, batch)
    if "sequence_length" in ins:
        batch = _known_dim(name, "sequence_length", in_shapes[ins["sequence_length"]], 1, 0, batch)
    packed = in_shapes[1]
    if not features and packed is not None and len(packed) == 1 and packed[0]:
        features = input_size_from_param_size(spec, packed[0]) or 0
        if not features:
            raise InferenceError(
                f"{name}: RNN parameters of length {packed[0]} fit no input size for mode={p.mode!r}, "
                f"num_layers={p.num_layers}, state_size={p.state_size}"
            )
    shape_assign(in_shapes, 0, (steps, batch, features), name, "data")
    if features:
        spec = rnn_shape(attrs, features)
        shape_assign(in_shapes, 1, (param_size(spec),), name, "parameters")
    layers = p.num_layers * spec.directions
    shape_assign(in_shapes, ins["state"], (layers, batch, spec.output_size), name, "state")
    if "state_cell" in ins:
        shape_assign(in_shapes, ins["state_cell"], (layers, batch, p.state_size), name, "state_cell")
    if "sequence_length" in ins:
        shape_assign(in_shapes, ins["sequence_length"], (batch,), name, "sequence_length")
    shape_assign(out_shapes, 0, (steps, batch, spec.directions * spec.output_size), name, "output")
    if "state_output" in outs:
        shape_assign(out_shapes, outs["state_output"], (layers, batch, spec.output_size), name, "state_output")
    if "statecell_output" in outs:
        shape_assign(out_shapes, outs["statecell_output"], (layers, batch, p.state_size), name, "statecell_output")
    if steps and batch:
        size = reserve_size(spec, make_cell(p.mode), steps, batch, p.p)
        shape_assign(out_shapes, len(out_shapes) - 1, (size,), name, "reserve")
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))


def _rnn_infer_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    """One float type for everything; ``sequence_length`` may have any type (data's by default)."""
    name = attrs.name
    names = input_names(attrs)
    float_inputs = [i for i, n in enumerate(names) if n != "sequence_length"]
    known = next((t for t in [in_types[i] for i in float_inputs] + list(out_types) if t is not None), None)
    if known is None:
        return False
    known = dtype_name(known)
    if known not in FLOAT_TYPES:
        raise InferenceError(f"{name}: RNN computes in {', '.join(FLOAT_TYPES)}, got {known}")
    for i in float_inputs:
        type_assign(in_types, i, known, name, names[i])
    for i in range(len(out_types)):
        type_assign(out_types, i, known, name, f"output {i}")
    if "sequence_length" in names and in_types[-1] is None:
        in_types[-1] = known
    return True


# ----------------------------------------------------------------------------- compute helpers
def _scratch(xp: Any, out: Any, req: Req, zero: bool) -> Any:
    """Where to compute an output: itself when it is overwritten, else a temporary."""
    if req in (WRITE, INPLACE):
        if zero:
            out[...] = 0
        return out
    return xp.zeros(out.shape, dtype=out.dtype) if zero else xp.empty(out.shape, dtype=out.dtype)


def _deliver(out: Any, req: Req, value: Any) -> None:
    """Finish an output computed by :func:`_scratch` (a no-op when it was computed in place)."""
    if value is not out:
        assign(out, req, value)


def _valid_steps(xp: Any, lengths: Any, steps: int, dtype: Any) -> Any | None:
    """(T, N, 1) mask of the steps inside each sample's length; None when every sample is full."""
    lengths = xp.clip(lengths.astype("int64"), 0, steps)
    if bool((lengths == steps).all()):
        return None
    return (xp.arange(steps)[:, None] < lengths[None, :]).astype(dtype)[:, :, None]


def _directions(spec: RNNShape, cell: Cell, views: dict, weights: dict, layer: int, valid: Any | None) -> list:
    """The :class:`Direction` of each direction of ``layer``: weights, cache and output views."""
    width = spec.output_size
    result = []
    for direction in range(spec.directions):
        cache = {f: views[("cache", layer, direction, f)] for f, _ in cell.cache_fields(spec)}
        out = views[("output", layer)][:, :, direction * width : (direction + 1) * width]
        result.append(Direction(weights[(layer, direction)], cache, out, direction == 1, valid))
    return result


def _prepare(attrs: NodeAttrs, data: Any, packed: Any, reserve: Any) -> tuple:
    """The shape, cell, weight views and reserve views both passes start from."""
    p = attrs.parsed
    spec = rnn_shape(attrs, data.shape[2])
    cell = make_cell(p.mode)
    views = carve(reserve, spec, cell, data.shape[0], data.shape[1], p.p)
    return spec, cell, unpack(spec, packed), views


def _layer_input(views: dict, data: Any, layer: int) -> Any:
    """What layer ``layer`` reads: the data, or the previous layer's output after dropout."""
    if layer == 0:
        return data
    below = views[("output", layer - 1)]
    mask = views.get(("mask", layer - 1))
    return below if mask is None else below * mask


def _draw_dropout(attrs: NodeAttrs, op_ctx: Any, mask: Any) -> None:
    """Fill ``mask`` with kept/``1 - p`` scaled draws in training, ones otherwise."""
    rate = attrs.parsed.p
    if not op_ctx.is_train:
        mask[...] = 1
        return
    keep = op_ctx.requested[0].generator.random(mask.shape) >= rate
    mask[...] = keep * (0.0 if rate >= 1 else 1.0 / (1.0 - rate))


# ----------------------------------------------------------------------------- forward
def _rnn_forward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    p, xp = attrs.parsed, op_ctx.xp
    names = input_names(attrs)
    data, packed, state = inputs[0], inputs[1], inputs[2]
    state_cell = inputs[names.index("state_cell")] if p.mode == "lstm" else None
    steps = data.shape[0]
    reserve = _scratch(xp, outputs[-1], req[-1], zero=False)
    spec, cell, weights, views = _prepare(attrs, data, packed, reserve)
    valid = None
    if p.use_sequence_length:
        valid = _valid_steps(xp, inputs[names.index("sequence_length")], steps, data.dtype)
    clip = _clip(attrs)
    final_h = xp.empty(state.shape, dtype=data.dtype)
    final_c = xp.empty(state_cell.shape, dtype=data.dtype) if state_cell is not None else None
    for layer in range(p.num_layers):
        x = _layer_input(views, data, layer)
        for direction, d in enumerate(_directions(spec, cell, views, weights, layer, valid)):
            k = layer * spec.directions + direction
            xw = input_projection(xp, cell, x, d.weights)
            h, c = cell.forward(xp, xw, d, state[k], None if state_cell is None else state_cell[k], clip)
            final_h[k] = h
            if final_c is not None:
                final_c[k] = c
        if ("mask", layer) in views:
            _draw_dropout(attrs, op_ctx, views[("mask", layer)])
    assign(outputs[0], req[0], views[("output", p.num_layers - 1)])
    if p.state_outputs:
        assign(outputs[1], req[1], final_h)
        if final_c is not None:
            assign(outputs[2], req[2], final_c)
    _deliver(outputs[-1], req[-1], reserve)


# ----------------------------------------------------------------------------- backward
def _rnn_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Backward inputs: the visible outputs' gradients, the forward inputs, the reserve."""
    visible = _num_visible(node.attrs)
    reserve = Entry(node, node.num_outputs() - 1)
    backward = make_backward_node(node, "_backward_RNN", [*out_grads[:visible], *node.inputs, reserve])
    return [Entry(backward, i) for i in range(len(node.inputs))]


def _rnn_backward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    p, xp = attrs.parsed, op_ctx.xp
    visible = _num_visible(attrs)
    names = input_names(attrs)
    forward = dict(zip(names, inputs[visible : visible + len(names)], strict=True))
    data, state, state_cell = forward["data"], forward["state"], forward.get("state_cell")
    dy, dhy = inputs[0], inputs[1] if p.state_outputs else None
    dcy = inputs[2] if p.state_outputs and p.mode == "lstm" else None
    spec, cell, weights, views = _prepare(attrs, data, forward["parameters"], inputs[-1])
    steps = data.shape[0]
    valid = None
    if p.use_sequence_length:
        valid = _valid_steps(xp, forward["sequence_length"], steps, data.dtype)
    clip = _clip(attrs)
    grad_packed = _scratch(xp, outputs[1], req[1], zero=True)
    grad_weights = unpack(spec, grad_packed)
    grad_state = _scratch(xp, outputs[2], req[2], zero=False)
    grad_cell = _scratch(xp, outputs[3], req[3], zero=False) if state_cell is not None else None
    grad_data = None
    d_above = dy  # gradient of the current layer's output
    for layer in range(p.num_layers - 1, -1, -1):
        x = _layer_input(views, data, layer)
        flat_x = x.reshape(-1, x.shape[-1])
        need_dx = layer > 0 or req[0] is not NULL
        dx = xp.zeros(x.shape, dtype=x.dtype) if need_dx else None
        for direction, d in enumerate(_directions(spec, cell, views, weights, layer, valid)):
            k = layer * spec.directions + direction
            width = d.out.shape[-1]
            dh = dhy[k].copy() if dhy is not None else xp.zeros(state[k].shape, dtype=data.dtype)
            dc = None
            if state_cell is not None:
                dc = dcy[k].copy() if dcy is not None else xp.zeros(state_cell[k].shape, dtype=data.dtype)
            grads = grad_weights[(layer, direction)]
            dgates, dh0, dc0 = cell.backward(
                xp,
                d,
                d_above[:, :, direction * width : (direction + 1) * width],
                dh,
                dc,
                state[k],
                None if state_cell is None else state_cell[k],
                clip,
                grads,
            )
            flat = dgates.reshape(-1, dgates.shape[-1])
            grads["i2h_weight"] += xp.matmul(flat.T, flat_x)
            grads["i2h_bias"] += flat.sum(axis=0)
            if dx is not None:
                dx += xp.matmul(flat, d.weights["i2h_weight"]).reshape(x.shape)
            grad_state[k] = dh0
            if grad_cell is not None:
                grad_cell[k] = dc0
        if layer > 0:
            mask = views.get(("mask", layer - 1))
            d_above = dx if mask is None else dx * mask
        else:
            grad_data = dx
    if grad_data is not None:
        assign(outputs[0], req[0], grad_data)
    _deliver(outputs[1], req[1], grad_packed)
    _deliver(outputs[2], req[2], grad_state)
    if grad_cell is not None:
        _deliver(outputs[3], req[3], grad_cell)
    if p.use_sequence_length:
        assign(outputs[-1], req[-1], 0)  # lengths are not differentiable


def _backward_infer_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    first = _num_visible(attrs)
    for i in range(len(out_shapes)):
        shape_assign(out_shapes, i, in_shapes[first + i], attrs.name, f"gradient of {input_names(attrs)[i]}")
    return all(shape_known(s) for s in out_shapes)


def _backward_infer_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    first = _num_visible(attrs)
    for i in range(len(out_types)):
        type_assign(out_types, i, in_types[first + i], attrs.name, f"gradient of {input_names(attrs)[i]}")
    return all(t is not None for t in out_types)


(
    register("RNN")
    .describe(
        "Applies a stack of recurrent layers (vanilla RNN with tanh or ReLU, LSTM, GRU) to TNC data, "
        "optionally bidirectional, with every parameter packed in one vector."
    )
    .set_params(RNNParam)
    .set_num_inputs(lambda attrs: len(input_names(attrs)))
    .set_input_names(input_names)
    .set_num_outputs(lambda attrs: _num_visible(attrs) + 1)
    .set_num_visible_outputs(_num_visible)
    .set_output_names(lambda attrs: [*visible_output_names(attrs), "reserve"])
    .set_infer_shape(_rnn_infer_shape)
    .set_infer_type(_rnn_infer_type)
    .set_compute(_rnn_forward)
    .set_resource_request(lambda attrs: [ResourceRequest.RANDOM] if attrs.parsed.p > 0 else [])
    .set_gradient(_rnn_gradient)
)
(
    register("_backward_RNN")
    .set_params(RNNParam)
    .set_num_inputs(lambda attrs: _num_visible(attrs) + len(input_names(attrs)) + 1)
    .set_num_outputs(lambda attrs: len(input_names(attrs)))
    .set_infer_shape(_backward_infer_shape)
    .set_infer_type(_backward_infer_type)
    .set_compute(_rnn_backward)
    .set_is_backward()
)
