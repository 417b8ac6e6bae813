"""Embedding: look up one row of a ``(input_dim, output_dim)`` weight table per index.

``out[..., :] = weight[data[...], :]``, so ``data`` of shape ``S`` gives ``S + (output_dim,)``.
Indices are truncated to integers and clipped into ``[0, input_dim - 1]``, as MXNet does.
The lookup is a gather; its gradient is the matching *scatter-add*: each output gradient
row is added to the weight row it came from (``xp.add.at`` accumulates repeated
indices correctly, where ``grad[idx] += g`` would keep only one of them). The indices
get a zero gradient (MXNet refuses to compute one).

``dtype`` is the weight's (and output's) type when the weight's type is not otherwise
known; the indices may be of any numeric type. ``sparse_grad`` asks MXNet for a
row-sparse gradient; MXLab accepts the flag and returns a dense one.
"""

from __future__ import annotations

import numpy as np

from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..kernel import ADD, NULL, assign
from ..node import Entry, Node, NodeAttrs
from ..params import DType, Param, ParamSet
from ..registry import register


class EmbeddingParam(ParamSet):
    input_dim = Param(int, description="Vocabulary size: the number of rows of the weight.", low=1)
    output_dim = Param(int, description="Size of each embedding vector.", low=1)
    dtype = Param(DType, "float32", "Data type of the weight and output.")
    sparse_grad = Param(bool, False, "Request a row-sparse weight gradient (dense in MXLab).")


def _embedding_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    p, name = attrs.parsed, attrs.name
    shape_assign(in_shapes, 1, (p.input_dim, p.output_dim), name, "weight")
    oshape = out_shapes[0]
    if oshape is not None:
        if len(oshape) == 0:
            raise InferenceError(f"{name}: Embedding output must have at least one dimension, got ()")
        shape_assign(in_shapes, 0, oshape[:-1], name, "data")
    if in_shapes[0] is not None:
        shape_assign(out_shapes, 0, (*in_shapes[0], p.output_dim), name, "output")
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))


def _embedding_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    name = attrs.name
    type_assign(in_types, 1, out_types[0], name, "weight")
    if in_types[1] is None:
        in_types[1] = attrs.parsed.dtype
    type_assign(out_types, 0, in_types[1], name, "output")
    if in_types[0] is None:
        in_types[0] = attrs.parsed.dtype
    return True


def _indices(xp, data, input_dim: int):
    return xp.clip(data.astype(np.int64), 0, input_dim - 1)


def _embedding_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    index = _indices(op_ctx.xp, inputs[0], attrs.parsed.input_dim)
    assign(outputs[0], req[0], op_ctx.xp.take(inputs[1], index, axis=0))


def _embedding_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    p, xp = attrs.parsed, op_ctx.xp
    grad, data = inputs[0], inputs[1]
    assign(outputs[0], req[0], 0)
    if req[1] is NULL:
        return
    rows = grad.reshape(-1, p.output_dim)
    index = _indices(xp, data, p.input_dim).reshape(-1)
    if req[1] is ADD:
        target = xp.zeros(outputs[1].shape, dtype=outputs[1].dtype)
        xp.add.at(target, index, rows)
        outputs[1] += target
    else:
        outputs[1][...] = 0
        xp.add.at(outputs[1], index, rows)


def _embedding_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Backward inputs: head gradient, indices, weight (for its shape and type)."""
    backward = make_backward_node(node, "_backward_Embedding", [out_grads[0], *node.inputs])
    return [Entry(backward, 0), Entry(backward, 1)]


def _backward_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape_assign(out_shapes, 0, in_shapes[1], attrs.name, "data gradient")
    shape_assign(out_shapes, 1, in_shapes[2], attrs.name, "weight gradient")
    return all(shape_known(s) for s in out_shapes)


def _backward_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, in_types[1], attrs.name, "data gradient")
    type_assign(out_types, 1, in_types[2], attrs.name, "weight gradient")
    return all(t is not None for t in out_types)


(
    register("Embedding")
    .describe("Maps integer indices to rows of a learned (input_dim, output_dim) weight table.")
    .set_params(EmbeddingParam)
    .set_num_inputs(2)
    .set_input_names(["data", "weight"])
    .set_infer_shape(_embedding_shape)
    .set_infer_type(_embedding_type)
    .set_compute(_embedding_forward)
    .set_gradient(_embedding_gradient)
)
(
    register("_backward_Embedding")
    .set_params(EmbeddingParam)
    .set_num_inputs(3)
    .set_num_outputs(2)
    .set_infer_shape(_backward_shape)
    .set_infer_type(_backward_type)
    .set_compute(_embedding_backward)
    .set_is_backward()
)
