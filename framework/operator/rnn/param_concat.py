"""``_rnn_param_concat``: ``Concat`` as Gluon uses it to pack a fused RNN's parameter vector.

Gluon's recurrent layers keep each weight and bias as its own parameter, flatten them and
join them in the packed order (:mod:`.layout`) before calling ``RNN``. Before the first batch
the layer-0 input weights have an unknown size (the input size is not known yet), so this
``Concat`` infers it backwards: the packed vector's length comes from ``RNN``'s shape
inference, and the one or two inputs of unknown length along ``dim`` (layer 0's input weight
of each direction, which have the same size) share what the known inputs leave of it equally.
Otherwise it is ``Concat``: same parameters, same compute, and ``_backward_Concat`` splits
the gradient.
"""

from __future__ import annotations

from typing import Any

from ..grad import elemwise_grad_use_in
from ..infer import InferenceError, ShapeT, elemwise_type, shape_assign, shape_known
from ..registry import register
from ..tensor.common import merge_or_raise, normalize_axis, put
from ..tensor.join_split import ConcatParam

#: How many inputs of unknown length the output's length can be shared between.
MAX_UNKNOWN = 2


def _param_concat_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name = attrs.name
    every = [*in_shapes, out_shapes[0]]
    known = [s for s in every if s is not None]
    if not known:
        return False
    ndim = len(known[0])
    if any(len(s) != ndim for s in known):
        raise InferenceError(f"{name}: inputs and output must have the same rank, got {in_shapes} -> {out_shapes[0]}")
    axis = normalize_axis(name, attrs.parsed.dim, ndim, "dim")
    common: ShapeT = None
    for shape in known:
        common = merge_or_raise(name, common, shape[:axis] + (0,) + shape[axis + 1 :], f"the dimensions but dim={axis}")
    sizes = [s[axis] if s is not None else 0 for s in in_shapes]
    total = out_shapes[0][axis] if out_shapes[0] is not None else 0
    unknown = [i for i, n in enumerate(sizes) if n == 0]
    if not unknown:
        if total and total != sum(sizes):
            raise InferenceError(f"{name}: output length {total} along dim={axis} is not the sum of {sizes}")
        total = sum(sizes)
    elif total:
        residual = total - sum(sizes)
        if len(unknown) > MAX_UNKNOWN:
            raise InferenceError(
                f"{name}: {len(unknown)} inputs of unknown length; at most {MAX_UNKNOWN} can share the output's"
            )
        if residual <= 0 or residual % len(unknown):
            raise InferenceError(
                f"{name}: output length {total} leaves {residual} for {len(unknown)} input(s) of unknown length "
                f"(known lengths {sizes})"
            )
        for i in unknown:
            sizes[i] = residual // len(unknown)
    for i, size in enumerate(sizes):
        shape_assign(in_shapes, i, common[:axis] + (size,) + common[axis + 1 :], name, f"input {i}")
    shape_assign(out_shapes, 0, common[:axis] + (total,) + common[axis + 1 :], name, "output")
    return all(shape_known(s) for s in [*in_shapes, out_shapes[0]])


def _param_concat_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    axis = normalize_axis(attrs.name, attrs.parsed.dim, inputs[0].ndim, "dim")
    put(outputs[0], req[0], op_ctx.xp.concatenate(inputs, axis=axis))


(
    register("_rnn_param_concat")
    .describe("Concat for packing RNN parameters: inputs of unknown length share the output's remaining length.")
    .set_params(ConcatParam)
    .set_num_inputs(lambda attrs: attrs.parsed.num_args)
    .set_input_names(lambda attrs: [f"arg{i}" for i in range(attrs.parsed.num_args)])
    .set_key_var_num_args("num_args")
    .set_infer_shape(_param_concat_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_param_concat_compute)
    .set_gradient(elemwise_grad_use_in("_backward_Concat"))
)
