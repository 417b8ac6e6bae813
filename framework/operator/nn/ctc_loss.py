"""CTCLoss (``ctc_loss``, ``_contrib_CTCLoss``): connectionist temporal classification.

Inputs: ``data`` ``(T, N, A)``, unnormalised scores over an alphabet of ``A`` symbols (one of
them the *blank*), ``label`` ``(N, L)``, padded label sequences, and optionally
``data_lengths`` / ``label_lengths`` ``(N,)``. Output: ``(N,)``, each sequence's
``-log p(label | data)`` where ``p`` sums over every alignment of the label to the ``T`` steps
(a label symbol may repeat over consecutive steps, blanks may sit between symbols, and a
repeated symbol needs a blank in between). As in MXNet the softmax is applied inside.

``blank_label='first'`` reserves symbol 0 for the blank (labels are ``1..A-1``, padded with
0); ``'last'`` reserves ``A-1`` (labels ``0..A-2``, padded with -1). Without
``use_label_lengths`` a label ends at its first padding value; without ``use_data_lengths``
every sequence has ``T`` steps.

How it is computed (the forward-backward algorithm, in log space so that long sequences do
not underflow): each label is extended to ``blank, l1, blank, l2, ..., blank`` (``S = 2L + 1``
states); ``alpha[t, s]`` is the log-probability of all path prefixes ending in state ``s`` at
step ``t``, built from ``alpha[t-1]`` at ``s``, ``s-1`` and, unless state ``s`` is a blank or
repeats ``s-2``, ``s-2``. ``beta`` is the same from the end. Every step is one vectorised
update over the batch and all states (``logaddexp`` of shifted copies); only the time steps
are a Python loop. A sequence shorter than ``T`` simply stops changing after its last step.

The gradient with respect to ``data`` is ``softmax(data) - posterior``, where
``posterior[t, n, k]`` sums ``exp(alpha + beta - log y - loss)`` over the states showing
symbol ``k`` (one ``einsum`` with the one-hot states); steps beyond a sequence's length get
zero. As in MXNet it is computed in the forward pass of training and kept as a hidden second
output; the backward pass multiplies it by the head gradient. Labels and lengths get no gradient.
"""

from __future__ import annotations

from typing import Any

from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..kernel import assign
from ..node import Entry, Node, NodeAttrs
from ..params import Param, ParamSet
from ..registry import alias, register
from .activation import compute_dtype

FLOAT_TYPES = ("float16", "float32", "float64")


class CTCLossParam(ParamSet):
    use_data_lengths = Param(bool, False, "Take the data lengths from the data_lengths input (else all T steps).")
    use_label_lengths = Param(
        bool, False, "Take the label lengths from the label_lengths input (else up to the first padding value)."
    )
    blank_label = Param(
        str, "first", "Which symbol is the blank: 0 ('first') or A-1 ('last').", choices=("first", "last")
    )


def _input_names(attrs: NodeAttrs) -> list[str]:
    p = attrs.parsed
    return (
        ["data", "label"]
        + (["data_lengths"] if p.use_data_lengths else [])
        + (["label_lengths"] if p.use_label_lengths else [])
    )


def _num_inputs(attrs: NodeAttrs) -> int:
    return len(_input_names(attrs))


def _ctc_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """data (T, N, A), label (N, L), lengths (N,) -> loss (N,) and the hidden gradient (T, N, A)."""
    name = attrs.name
    shape_assign(in_shapes, 0, out_shapes[1], name, "data")
    data, label = in_shapes[0], in_shapes[1]
    if data is not None and len(data) != 3:
        raise InferenceError(f"{name}: data must be 3-D (sequence length, batch, alphabet size), got shape {data}")
    if label is not None and len(label) != 2:
        raise InferenceError(f"{name}: label must be 2-D (batch, label length), got shape {label}")
    batch = max(data[1] if data is not None else 0, label[0] if label is not None else 0, (out_shapes[0] or (0,))[0])
    for i in range(2, len(in_shapes)):
        if in_shapes[i] is not None and len(in_shapes[i]) != 1:
            raise InferenceError(f"{name}: {_input_names(attrs)[i]} must be 1-D (batch,), got shape {in_shapes[i]}")
        batch = batch or (in_shapes[i] or (0,))[0]
    if batch:
        if data is not None:
            shape_assign(in_shapes, 0, (data[0], batch, data[2]), name, "data")
        if label is not None:
            shape_assign(in_shapes, 1, (batch, label[1]), name, "label")
        for i in range(2, len(in_shapes)):
            shape_assign(in_shapes, i, (batch,), name, _input_names(attrs)[i])
        shape_assign(out_shapes, 0, (batch,), name, "output")
    shape_assign(out_shapes, 1, in_shapes[0], name, "gradient (hidden output)")
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))


def _ctc_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    """The loss and gradient have the data's floating-point type; labels and lengths any type."""
    name = attrs.name
    for i in (0, 1):
        type_assign(in_types, 0, out_types[i], name, "data")
    if in_types[0] is None:
        return False
    if in_types[0] not in FLOAT_TYPES:
        raise InferenceError(f"{name}: data must be float16, float32 or float64, got {in_types[0]}")
    for i in (0, 1):
        type_assign(out_types, i, in_types[0], name, ("output", "gradient (hidden output)")[i])
    return all(t is not None for t in in_types)


def _log_softmax(xp: Any, x: Any) -> Any:
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - xp.log(xp.exp(shifted).sum(axis=-1, keepdims=True))


def _shift(xp: Any, values: Any, by: int) -> Any:
    """``values`` moved ``by`` states to the right along the last axis, -inf filling in."""
    out = xp.full_like(values, -xp.inf)
    out[..., by:] = values[..., :-by]
    return out


def ctc_forward_backward(xp: Any, logp: Any, states: Any, valid: Any, skip: Any, steps: Any) -> tuple[Any, Any, Any]:
    """``(log_alpha, log_beta, log_likelihood)`` over ``T`` steps for a batch.

    ``logp`` (T, N, A) log-probabilities; ``states`` (N, S) the symbol of each extended-label
    state; ``valid`` (N, S) which states exist for the sequence's label length; ``skip`` (N, S)
    where the transition from ``s - 2`` is allowed; ``steps`` (N,) each sequence's length.
    """
    n_steps, batch = logp.shape[0], logp.shape[1]
    rows = xp.arange(batch)[:, None]
    emit = logp[:, rows, states]  # (T, N, S): log y of each state's symbol
    neg_inf = -xp.inf
    alpha = xp.full(emit.shape, neg_inf, dtype=emit.dtype)
    start = xp.full(emit.shape[1:], neg_inf, dtype=emit.dtype)
    start[:, :2] = 0.0
    current = xp.where(valid, start + emit[0], neg_inf)
    alpha[0] = current
    for t in range(1, n_steps):
        merged = xp.logaddexp(current, _shift(xp, current, 1))
        merged = xp.where(skip, xp.logaddexp(merged, _shift(xp, current, 2)), merged)
        step = xp.where(valid, merged + emit[t], neg_inf)
        current = xp.where((t < steps)[:, None], step, current)  # finished sequences keep their last alpha
        alpha[t] = current
    # the label ends in its last symbol or the blank after it: states 2L - 1 and 2L
    last = valid.sum(axis=1) - 1
    end_alpha = current[rows[:, 0], last]
    before_end = xp.where(last >= 1, current[rows[:, 0], xp.maximum(last - 1, 0)], neg_inf)
    log_likelihood = xp.logaddexp(end_alpha, before_end)

    beta = xp.full(emit.shape, neg_inf, dtype=emit.dtype)
    state_index = xp.arange(states.shape[1])[None, :]
    final = xp.where((state_index == last[:, None]) | (state_index == last[:, None] - 1), 0.0, neg_inf)
    current = xp.full(emit.shape[1:], neg_inf, dtype=emit.dtype)
    skip_from = xp.zeros_like(skip)
    skip_from[:, :-2] = skip[:, 2:]  # s may jump to s + 2 when s + 2 may be reached from s
    for t in range(n_steps - 1, -1, -1):
        later = xp.logaddexp(current, _shift_left(xp, current, 1))
        later = xp.where(skip_from, xp.logaddexp(later, _shift_left(xp, current, 2)), later)
        from_next = xp.where((t == steps - 1)[:, None], final, later)
        current = xp.where(valid & (t < steps)[:, None], from_next + emit[t], neg_inf)
        beta[t] = current
    return alpha, beta, log_likelihood


def _shift_left(xp: Any, values: Any, by: int) -> Any:
    """``values`` moved ``by`` states to the left along the last axis, -inf filling in."""
    out = xp.full_like(values, -xp.inf)
    out[..., :-by] = values[..., by:]
    return out


def _extended_labels(attrs: NodeAttrs, xp: Any, inputs: list, alphabet: int) -> tuple[Any, Any, Any]:
    """``(states, valid, skip)`` of each sequence's extended label ``blank, l1, blank, ..., blank``."""
    p = attrs.parsed
    labels = inputs[1].astype("int64")
    batch, max_len = labels.shape
    blank, padding = (0, 0) if p.blank_label == "first" else (alphabet - 1, -1)
    position = xp.arange(max_len)[None, :]
    if p.use_label_lengths:
        lengths = xp.clip(inputs[-1].astype("int64"), 0, max_len)
    else:
        is_pad = labels == padding
        lengths = xp.where(is_pad.any(axis=1), is_pad.argmax(axis=1), max_len)
    real = position < lengths[:, None]
    bad = real & ((labels < 0) | (labels >= alphabet) | (labels == blank))
    if bool(bad.any()):
        raise InferenceError(
            f"{attrs.name}: label values must lie in the alphabet [0, {alphabet}) and differ from the blank "
            f"({blank}, blank_label='{p.blank_label}'); got {labels[bad].tolist()[:5]}"
        )
    states = xp.full((batch, 2 * max_len + 1), blank, dtype="int64")
    states[:, 1::2] = xp.where(real, labels, blank)
    state_index = xp.arange(2 * max_len + 1)[None, :]
    valid = state_index < 2 * lengths[:, None] + 1
    skip = xp.zeros(states.shape, dtype=bool)
    skip[:, 2:] = (states[:, 2:] != blank) & (states[:, 2:] != states[:, :-2])
    return states, valid, skip & valid


def _ctc_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    xp, data = op_ctx.xp, inputs[0]
    n_steps, batch, alphabet = data.shape
    logp = _log_softmax(xp, data.astype(compute_dtype(data.dtype), copy=False))
    states, valid, skip = _extended_labels(attrs, xp, inputs, alphabet)
    if attrs.parsed.use_data_lengths:
        steps = xp.clip(inputs[2].astype("int64"), 1, n_steps)
    else:
        steps = xp.full((batch,), n_steps, dtype="int64")
    alpha, beta, log_likelihood = ctc_forward_backward(xp, logp, states, valid, skip, steps)
    assign(outputs[0], req[0], -log_likelihood)
    if not op_ctx.is_train:
        assign(outputs[1], req[1], 0)  # the gradient is only computed for training, as in MXNet
        return
    rows = xp.arange(batch)[:, None]
    # a label that no alignment fits (too long for the data) has loss inf and no posterior
    possible = xp.isfinite(log_likelihood)
    log_occupancy = alpha + beta - logp[:, rows, states] - xp.where(possible, log_likelihood, 0.0)[None, :, None]
    occupancy = xp.where(possible[None, :, None], xp.exp(log_occupancy), 0.0)
    one_hot = (states[:, :, None] == xp.arange(alphabet)[None, None, :]).astype(occupancy.dtype)
    posterior = xp.einsum("tns,nsa->tna", occupancy, one_hot)
    running = (xp.arange(n_steps)[:, None] < steps[None, :])[:, :, None]
    assign(outputs[1], req[1], xp.where(running, xp.exp(logp) - posterior, 0.0))


def _ctc_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Backward inputs: the loss gradient, the hidden gradient output, then the forward inputs (for shapes)."""
    backward = make_backward_node(node, "_backward_ctc_loss", [out_grads[0], Entry(node, 1), *node.inputs])
    return [Entry(backward, i) for i in range(len(node.inputs))]


def _ctc_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    head, saved = inputs[0], inputs[1]
    assign(outputs[0], req[0], head.reshape(1, -1, 1) * saved)
    for i in range(1, len(outputs)):
        assign(outputs[i], req[i], 0)  # labels and lengths are not differentiable


def _backward_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    for i in range(len(out_shapes)):
        shape_assign(out_shapes, i, in_shapes[2 + i], attrs.name, f"gradient {i}")
    return all(shape_known(s) for s in out_shapes)


def _backward_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    for i in range(len(out_types)):
        type_assign(out_types, i, in_types[2 + i], attrs.name, f"gradient {i}")
    return all(t is not None for t in out_types)


(
    register("CTCLoss")
    .describe(
        "Connectionist temporal classification loss of unnormalised scores (T, N, alphabet) against padded "
        "label sequences (N, L); softmax is applied inside."
    )
    .set_params(CTCLossParam)
    .set_num_inputs(_num_inputs)
    .set_num_outputs(2)
    .set_num_visible_outputs(1)
    .set_input_names(_input_names)
    .set_infer_shape(_ctc_shape)
    .set_infer_type(_ctc_type)
    .set_compute(_ctc_forward)
    .set_gradient(_ctc_gradient)
)
for _name in ("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"):
    alias(_name, "CTCLoss")
(
    register("_backward_ctc_loss")
    .set_params(CTCLossParam)
    .set_num_inputs(lambda attrs: 2 + _num_inputs(attrs))
    .set_num_outputs(_num_inputs)
    .set_infer_shape(_backward_shape)
    .set_infer_type(_backward_type)
    .set_compute(_ctc_backward)
    .set_is_backward()
)
