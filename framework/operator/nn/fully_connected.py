"""FullyConnected: the dense layer ``out = data . weight^T + bias``.

This is the layer that makes symbolic shape inference worth having: the user gives only
``num_hidden`` and the data shape, and inference fills in the parameter shapes
(``weight`` is ``(num_hidden, in_features)``, ``bias`` is ``(num_hidden,)``), which is how
``sym.infer_shape(data=...)`` can allocate every parameter of a network.

``flatten=True`` (the default) treats the data as ``(batch, everything else)``; with
``flatten=False`` only the last axis is contracted, so ``(N, T, C)`` becomes
``(N, T, num_hidden)``. ``no_bias=True`` removes the ``bias`` input: the input *names*
depend on the parameters, so ``list_arguments`` of a symbol changes with them.

The computation is one matrix product (BLAS through ``xp.dot``); the gradients are two
more: ``d data = g . W``, ``d weight = g^T . x`` and ``d bias = sum(g, axis=0)``. Those are
differentiable again (``_backward_gradient``), as in MXNet 1.9.1, so a gradient penalty
(the norm of ``d out / d data``, minimised) trains through a dense layer.
"""

from __future__ import annotations

import math
from typing import Any

from ..grad import FormulaBuilder, make_backward_node
from ..infer import InferenceError, ShapeT, elemwise_type, shape_assign, shape_known, type_assign
from ..kernel import NULL, WRITE, Req, assign
from ..node import Entry, Node, NodeAttrs
from ..params import Param, ParamSet
from ..registry import register


class FullyConnectedParam(ParamSet):
    num_hidden = Param(int, description="Number of hidden units (output features).", low=1)
    no_bias = Param(bool, False, "Whether to leave out the bias input.")
    flatten = Param(bool, True, "Whether to collapse all but the first axis of the data.")


def _num_inputs(attrs: NodeAttrs) -> int:
    return 2 if attrs.parsed.no_bias else 3


def _input_names(attrs: NodeAttrs) -> list[str]:
    return ["data", "weight"] if attrs.parsed.no_bias else ["data", "weight", "bias"]


def _fc_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """Infer weight/bias/output from data, and the batch dimension back from the output."""
    p, name = attrs.parsed, attrs.name
    dshape = in_shapes[0]
    if dshape is None:
        return False
    if len(dshape) == 0:
        raise InferenceError(f"{name}: FullyConnected needs data with at least one dimension, got shape ()")
    oshape = out_shapes[0]
    if p.flatten:
        in_features = math.prod(dshape[1:])
        expected_out = (dshape[0], p.num_hidden)
    else:
        in_features = dshape[-1]
        expected_out = (*dshape[:-1], p.num_hidden)
    if oshape is not None and len(oshape) != len(expected_out):
        raise InferenceError(f"{name}: shape inconsistent for output: expected {expected_out}, got {oshape}")
    # the batch dimension(s) may come back from a known output (MXNet does this for dim 0)
    if oshape is not None:
        known_batch = oshape[:1] if p.flatten else oshape[:-1]
        shape_assign(in_shapes, 0, (*known_batch, *in_shapes[0][len(known_batch) :]), name, "data")
        dshape = in_shapes[0]
        expected_out = (dshape[0], p.num_hidden) if p.flatten else (*dshape[:-1], p.num_hidden)
    if in_features:
        shape_assign(in_shapes, 1, (p.num_hidden, in_features), name, "weight")
    elif in_shapes[1] is not None and len(in_shapes[1]) == 2 and (not p.flatten or len(dshape) == 2):
        # the unknown feature dimension of the data comes from a known weight
        shape_assign(in_shapes, 0, (*dshape[:-1], in_shapes[1][1]), name, "data")
    if not p.no_bias:
        bias = in_shapes[2]
        if bias is not None and len(bias) == 2:
            shape_assign(in_shapes, 2, (p.num_hidden, 1), name, "bias")
        else:
            shape_assign(in_shapes, 2, (p.num_hidden,), name, "bias")
    shape_assign(out_shapes, 0, expected_out, name, "output")
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))


def _as_matrix(data, flatten: bool):
    """The data as a 2-D matrix (rows = samples) for one BLAS call."""
    if flatten:
        return data.reshape(data.shape[0], -1)
    return data.reshape(-1, data.shape[-1])


def _writable(out: Any, req: Req, dtype: Any) -> bool:
    """True when BLAS may write a product straight into ``out`` (no temporary, no copy)."""
    return req is WRITE and out.flags.c_contiguous and out.dtype == dtype


def _dot_into(xp: Any, a: Any, b: Any, out: Any, req: Req) -> None:
    """``a . b`` written into ``out`` (of the product's size) as ``req`` says."""
    if req is NULL:
        return
    if _writable(out, req, a.dtype) and b.dtype == a.dtype:
        xp.dot(a, b, out=out.reshape(a.shape[0], b.shape[1]))
    else:
        assign(out, req, xp.dot(a, b).reshape(out.shape))


def _column_block(out: Any, req: Req, dtype: Any) -> bool:
    """True for a 2-D output whose rows are strided but whose elements are not: a block of columns.

    The executor's forward split (``executor/split_forward.py``) hands each block of a product
    such a view of the whole output; ``matmul`` writes it in place (BLAS takes the row stride),
    where ``dot`` accepts only a C-contiguous ``out``.
    """
    return req is WRITE and out.ndim == 2 and out.strides[1] == out.itemsize and out.dtype == dtype


def _fc_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    p, xp = attrs.parsed, op_ctx.xp
    x, weight, out = _as_matrix(inputs[0], p.flatten), inputs[1], outputs[0]
    if req[0] is NULL:
        return
    if weight.dtype == x.dtype and not out.flags.c_contiguous and _column_block(out, req[0], x.dtype):
        xp.matmul(x, weight.T, out=out)
        if not p.no_bias:
            out += inputs[2].reshape(1, -1)
        return
    if _writable(out, req[0], x.dtype) and weight.dtype == x.dtype:
        target = out.reshape(x.shape[0], -1)
        xp.dot(x, weight.T, out=target)
        if not p.no_bias:
            target += inputs[2].reshape(1, -1)
        return
    result = xp.dot(x, weight.T)
    if not p.no_bias:
        result += inputs[2].reshape(1, -1)
    assign(out, req[0], result.reshape(out.shape))


def _fc_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Backward inputs: output gradient, data, weight (and bias, for its shape)."""
    backward = make_backward_node(node, "_backward_FullyConnected", [out_grads[0], *node.inputs])
    return [Entry(backward, i) for i in range(len(node.inputs))]


def _backward_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """The gradient of ``_backward_FullyConnected(g, x, W[, b])``, given head gradients ``A`` (for
    ``d x = g . W``), ``B`` (for ``d W = g^T . x``) and ``C`` (for ``d b = sum g``):

    * for ``g``: ``A . W^T + C + x . B^T``, two FullyConnected layers;
    * for ``x``: ``g . B``, in ``x``'s shape;
    * for ``W``: ``g^T . A``, with ``g`` and ``A`` as matrices the way the layer flattens them;
    * for ``b``: zero (the backward does not read its values).
    """
    p = node.attrs.parsed
    f = FormulaBuilder(node.name)
    grad, data, weight = node.inputs[:3]
    heads = list(out_grads)
    layer = {"num_hidden": p.num_hidden, "flatten": p.flatten}
    through_weight = f.op("FullyConnected", heads[0], weight, *heads[2:], no_bias=p.no_bias, **layer)
    through_data = f.op("FullyConnected", data, heads[1], no_bias=True, **layer)
    rows = {"shape": (-1, 0), "reverse": True}  # (..., features) -> (rows, features)
    grad_rows = f.op("Reshape", grad, **rows)
    head_rows = f.op("Flatten", heads[0]) if p.flatten else f.op("Reshape", heads[0], **rows)
    gradients = [
        f.op("elemwise_add", through_weight, through_data),
        f.op("reshape_like", f.op("dot", grad_rows, heads[1]), data),
        f.op("dot", grad_rows, head_rows, transpose_a=True),
    ]
    if not p.no_bias:
        gradients.append(f.zeros_like(node.inputs[3]))
    return gradients


def _fc_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    p, xp = attrs.parsed, op_ctx.xp
    data, weight = inputs[1], inputs[2]
    grad = inputs[0].reshape(-1, p.num_hidden)
    x = _as_matrix(data, p.flatten)
    _dot_into(xp, grad, weight, outputs[0], req[0])  # skipped when req is null (the input layer)
    _dot_into(xp, grad.T, x, outputs[1], req[1])
    if not p.no_bias and req[2] is not NULL:
        assign(outputs[2], req[2], grad.sum(axis=0).reshape(outputs[2].shape))


def _backward_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    for i in range(len(out_shapes)):
        shape_assign(out_shapes, i, in_shapes[i + 1], attrs.name, f"gradient {i}")
    return all(shape_known(s) for s in out_shapes)


def _backward_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    for i in range(len(out_types)):
        type_assign(out_types, i, in_types[i + 1], attrs.name, f"gradient {i}")
    return all(t is not None for t in out_types)


(
    register("FullyConnected")
    .describe("Applies a linear transformation: out = data . weight^T + bias.")
    .set_params(FullyConnectedParam)
    .set_num_inputs(_num_inputs)
    .set_num_outputs(1)
    .set_input_names(_input_names)
    .set_infer_shape(_fc_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_fc_forward)
    .set_gradient(_fc_gradient)
)
(
    register("_backward_FullyConnected")
    .set_params(FullyConnectedParam)
    .set_num_inputs(lambda attrs: 1 + _num_inputs(attrs))
    .set_num_outputs(_num_inputs)
    .set_infer_shape(_backward_shape)
    .set_infer_type(_backward_type)
    .set_compute(_fc_backward)
    .set_is_backward()
    .set_gradient(_backward_gradient)
)
