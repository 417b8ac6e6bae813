"""Attention kernels: ``_contrib_div_sqrt_dim`` and the four ``_contrib_interleaved_matmul_*``
operators that compute multi-head attention scores and outputs from packed projections.

Transformer layers project the input once into a packed tensor. For self-attention it has
shape ``(seq, batch, heads * 3 * d)``: for each head, its query, key and value vectors of
``d`` elements side by side ("interleaved"); for encoder-decoder attention the queries
``(q_len, batch, heads * d)`` and the packed keys/values ``(k_len, batch, heads * 2 * d)`` come
separately. The kernels unpack the heads into a batch of ``batch * heads`` matrices and:

* ``selfatt_qk`` / ``encdec_qk``: scores ``(q / sqrt(d)) @ k^T``, shape ``(batch*heads, q_len, k_len)``;
* ``selfatt_valatt`` / ``encdec_valatt``: ``attention @ v``, packed back to ``(q_len, batch, heads*d)``.

The scaling by ``1/sqrt(d)`` is ``div_sqrt_dim`` (divide by the square root of the last axis).
Gradients are the usual matrix-product rules (``dA = G B^T``, ``dB = A^T G``) written back
into the packed layout, with zeros for the parts an operator does not read.
"""

from __future__ import annotations

import math
from typing import Any

from ..grad import elemwise_grad_use_in
from ..infer import InferenceError, ShapeT, elemwise_shape, elemwise_type, shape_assign, shape_known
from ..node import Entry, Node
from ..params import REQUIRED, Param, ParamSet
from ..registry import register
from ..tensor.common import forward_node, put, register_backward

# ----------------------------------------------------------------------------- div_sqrt_dim


def _div_sqrt_dim(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x = inputs[0]
    put(outputs[0], req[0], x / math.sqrt(x.shape[-1]))


def _div_sqrt_dim_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    return [forward_node(node, "_contrib_div_sqrt_dim", {}, [out_grads[0]])]  # linear: same scaling


(
    register("_contrib_div_sqrt_dim")
    .describe("x / sqrt(size of x's last axis): the scaling of dot-product attention scores.")
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(elemwise_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_div_sqrt_dim)
    .set_gradient(_div_sqrt_dim_gradient)
    .set_inplace_option(lambda attrs: [(0, 0)])
)

# ----------------------------------------------------------------- packing and unpacking heads


class AttentionParam(ParamSet):
    heads = Param(int, REQUIRED, "Number of attention heads.", low=1)


def _unpack(x: Any, heads: int, parts: int) -> Any:
    """``(seq, batch, heads * parts * d)`` -> ``(parts, batch * heads, seq, d)``."""
    seq, batch, width = x.shape
    d = width // (heads * parts)
    return x.reshape(seq, batch, heads, parts, d).transpose(3, 1, 2, 0, 4).reshape(parts, batch * heads, seq, d)


def _pack(xp: Any, parts: Any, batch: int, heads: int) -> Any:
    """Inverse of :func:`_unpack`: ``(parts, batch * heads, seq, d)`` -> ``(seq, batch, heads * parts * d)``."""
    n, _, seq, d = parts.shape
    split = parts.reshape(n, batch, heads, seq, d).transpose(3, 1, 2, 0, 4)
    return xp.ascontiguousarray(split).reshape(seq, batch, heads * n * d)


def _head_dim(name: str, shape: tuple[int, ...], heads: int, parts: int, what: str) -> int:
    if len(shape) != 3:
        raise InferenceError(f"{name}: {what} must be (seq_length, batch_size, features), got {shape}")
    if shape[2] and shape[2] % (heads * parts):
        raise InferenceError(f"{name}: {what}'s last axis {shape[2]} is not divisible by heads*{parts}={heads * parts}")
    return shape[2] // (heads * parts)


def _matmul(xp: Any, a: Any, b: Any, transpose_b: bool = False) -> Any:
    return xp.matmul(a, xp.swapaxes(b, -1, -2) if transpose_b else b)


# ----------------------------------------------------------------------- the scores (q @ k^T)


def _selfatt_qk_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    qkv, heads = in_shapes[0], attrs.parsed.heads
    if qkv is None:
        return False
    _head_dim(attrs.name, qkv, heads, 3, "queries_keys_values")
    shape_assign(out_shapes, 0, (qkv[1] * heads, qkv[0], qkv[0]), attrs.name, "output")
    return shape_known(qkv)


def _encdec_qk_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    q, kv = in_shapes
    heads = attrs.parsed.heads
    if q is None or kv is None:
        return False
    dq = _head_dim(attrs.name, q, heads, 1, "queries")
    dk = _head_dim(attrs.name, kv, heads, 2, "keys_values")
    if (q[1] and kv[1] and q[1] != kv[1]) or (dq and dk and dq != dk):
        raise InferenceError(f"{attrs.name}: queries {q} and keys_values {kv} do not match (batch or head size)")
    shape_assign(out_shapes, 0, (q[1] * heads, q[0], kv[0]), attrs.name, "output")
    return shape_known(q) and shape_known(kv)


def _scores(xp: Any, q: Any, k: Any) -> Any:
    return _matmul(xp, q / math.sqrt(q.shape[-1]), k, transpose_b=True)


def _selfatt_qk(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    q, k, _ = _unpack(inputs[0], attrs.parsed.heads, 3)
    put(outputs[0], req[0], _scores(op_ctx.xp, q, k))


def _encdec_qk(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    heads = attrs.parsed.heads
    (q,) = _unpack(inputs[0], heads, 1)
    k, _ = _unpack(inputs[1], heads, 2)
    put(outputs[0], req[0], _scores(op_ctx.xp, q, k))


def _score_grads(xp: Any, g: Any, q: Any, k: Any) -> tuple[Any, Any]:
    """Gradients of ``(q / sqrt(d)) @ k^T`` with respect to q and k."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    return xp.matmul(g, k) * scale, _matmul(xp, xp.swapaxes(g, -1, -2), q) * scale


def _selfatt_qk_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, heads = op_ctx.xp, attrs.parsed.heads
    g, qkv = inputs
    q, k, v = _unpack(qkv, heads, 3)
    dq, dk = _score_grads(xp, g, q, k)
    put(outputs[0], req[0], _pack(xp, xp.stack([dq, dk, xp.zeros_like(v)]), qkv.shape[1], heads))


def _encdec_qk_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, heads = op_ctx.xp, attrs.parsed.heads
    g, queries, kv = inputs
    (q,) = _unpack(queries, heads, 1)
    k, v = _unpack(kv, heads, 2)
    dq, dk = _score_grads(xp, g, q, k)
    put(outputs[0], req[0], _pack(xp, dq[None], queries.shape[1], heads))
    put(outputs[1], req[1], _pack(xp, xp.stack([dk, xp.zeros_like(v)]), kv.shape[1], heads))


# -------------------------------------------------------------- the outputs (attention @ v)


def _valatt_shape(parts: int, what: str) -> Any:
    def infer(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        packed, att = in_shapes
        heads = attrs.parsed.heads
        if packed is None:
            return False
        d = _head_dim(attrs.name, packed, heads, parts, what)
        if att is not None and (len(att) != 3 or (packed[1] and att[0] and att[0] != packed[1] * heads)):
            raise InferenceError(
                f"{attrs.name}: attention {att} must be (batch*heads, q_len, k_len) for {what} {packed}"
            )
        if parts == 3:  # self-attention: the scores are square over the sequence
            shape_assign(in_shapes, 1, (packed[1] * heads, packed[0], packed[0]), attrs.name, "attention")
            att = in_shapes[1]
        if att is None:
            return False
        shape_assign(out_shapes, 0, (att[1], packed[1], heads * d), attrs.name, "output")
        return shape_known(packed) and shape_known(att)

    return infer


def _valatt(parts: int) -> Any:
    def compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
        packed, att = inputs
        v = _unpack(packed, attrs.parsed.heads, parts)[parts - 1]
        put(outputs[0], req[0], _pack(op_ctx.xp, op_ctx.xp.matmul(att, v)[None], packed.shape[1], attrs.parsed.heads))

    return compute


def _valatt_backward(parts: int) -> Any:
    def compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
        xp, heads = op_ctx.xp, attrs.parsed.heads
        g_packed, packed, att = inputs
        (g,) = _unpack(g_packed, heads, 1)
        unpacked = _unpack(packed, heads, parts)
        v = unpacked[parts - 1]
        d_att = _matmul(xp, g, v, transpose_b=True)
        d_v = xp.matmul(xp.swapaxes(att, -1, -2), g)
        grads = [xp.zeros_like(p) for p in unpacked[:-1]] + [d_v]
        put(outputs[0], req[0], _pack(xp, xp.stack(grads), packed.shape[1], heads))
        put(outputs[1], req[1], d_att)

    return compute


for _name, _inputs, _infer, _compute, _backward, _text in (
    (
        "selfatt_qk",
        ["queries_keys_values"],
        _selfatt_qk_shape,
        _selfatt_qk,
        _selfatt_qk_backward,
        "Self-attention scores (q / sqrt(d)) @ k^T per head, from packed q/k/v projections.",
    ),
    (
        "selfatt_valatt",
        ["queries_keys_values", "attention"],
        _valatt_shape(3, "queries_keys_values"),
        _valatt(3),
        _valatt_backward(3),
        "Self-attention output attention @ v per head, packed back to (seq, batch, heads*d).",
    ),
    (
        "encdec_qk",
        ["queries", "keys_values"],
        _encdec_qk_shape,
        _encdec_qk,
        _encdec_qk_backward,
        "Encoder-decoder attention scores (q / sqrt(d)) @ k^T per head.",
    ),
    (
        "encdec_valatt",
        ["keys_values", "attention"],
        _valatt_shape(2, "keys_values"),
        _valatt(2),
        _valatt_backward(2),
        "Encoder-decoder attention output attention @ v per head, packed to (q_len, batch, heads*d).",
    ),
):
    (
        register(f"_contrib_interleaved_matmul_{_name}")
        .describe(_text)
        .set_params(AttentionParam)
        .set_num_inputs(len(_inputs))
        .set_input_names(_inputs)
        .set_infer_shape(_infer)
        .set_infer_type(elemwise_type)
        .set_compute(_compute)
        .set_gradient(elemwise_grad_use_in(f"_backward_interleaved_matmul_{_name}"))
    )
    register_backward(
        f"_backward_interleaved_matmul_{_name}", _backward, AttentionParam, len(_inputs) + 1, len(_inputs)
    )
