"""BatchNorm plus a twist: ``_contrib_SyncBatchNorm`` and ``_contrib_BatchNormWithReLU``.

Both run BatchNorm's own forward and backward passes (``batch_norm.normalize`` and its
backward compute), so the three can never disagree about the statistics:

* ``_contrib_SyncBatchNorm`` normalises with the statistics of the whole batch *across
  devices*: MXNet's data-parallel training gives each GPU a slice of the batch, and the
  devices meeting under the same ``key`` (``ndev`` of them) exchange their partial sums. MXLab
  runs one process with one slice, where that exchange is the identity, so the operator is
  BatchNorm with the channel axis fixed at 1 and two extra parameters. As in MXNet, its
  ``var`` output is the variance itself (BatchNorm's is the inverse standard deviation); the
  backward operator turns it back into ``1 / sqrt(var + eps)``.
* ``_contrib_BatchNormWithReLU`` is ``relu(BatchNorm(...))`` fused into one node (MXNet fuses
  it for oneDNN). Its hidden fourth output, ``workspace``, holds where the output is positive,
  which is all the backward pass needs to mask the incoming gradient before BatchNorm's.
"""

from __future__ import annotations

from ..infer import ShapeT, shape_assign, shape_known, type_assign
from ..kernel import assign
from ..node import NodeAttrs
from ..params import REQUIRED, Param, ParamSet
from .batch_norm import (
    BatchNormParam,
    _batch_norm_backward,
    _batch_norm_shape,
    _batch_norm_type,
    normalize,
    param_dtype,
    register_batch_norm,
)


# ----------------------------------------------------------------------------- SyncBatchNorm
class SyncBatchNormParam(ParamSet):
    eps = Param(float, 1e-3, "Added to the variance to avoid dividing by zero.", low=0.0)
    momentum = Param(float, 0.9, "Momentum of the moving averages.")
    fix_gamma = Param(bool, True, "Use gamma = 1 and give gamma no gradient.")
    use_global_stats = Param(bool, False, "Normalise with the moving statistics even in training.")
    output_mean_var = Param(bool, False, "Also output the mean and the variance.")
    ndev = Param(int, 1, "Number of devices sharing the batch statistics (one process here).", low=1)
    key = Param(str, REQUIRED, "Names the layer: devices with the same key share statistics.")

    #: Not a parameter: SyncBatchNorm normalises NCHW data over channel axis 1, and BatchNorm's
    #: compute reads the axis from the parsed parameters.
    axis = 1


def _with_variance(attrs: NodeAttrs, inputs: list) -> list:
    """Backward inputs with the saved variance turned into the inverse std BatchNorm's backward reads."""
    converted = list(inputs)
    converted[4] = 1 / (inputs[4] + attrs.parsed.eps) ** 0.5
    return converted


def _sync_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    out, mean, var, _ = normalize(attrs, op_ctx, inputs)
    assign(outputs[0], req[0], out)
    assign(outputs[1], req[1], mean)
    assign(outputs[2], req[2], var)


def _sync_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    _batch_norm_backward(attrs, op_ctx, _with_variance(attrs, inputs), req, outputs)


register_batch_norm(
    "_contrib_SyncBatchNorm",
    "Batch normalisation with statistics shared across devices (one device here: BatchNorm on axis 1).",
    SyncBatchNormParam,
    _sync_forward,
    _sync_backward,
)


# ----------------------------------------------------------------------------- BatchNormWithReLU
def _with_relu_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape_assign(in_shapes, 0, out_shapes[3], attrs.name, "data")
    view = out_shapes[:3]  # BatchNorm's three outputs
    known = _batch_norm_shape(attrs, in_shapes, view)
    out_shapes[:3] = view
    shape_assign(out_shapes, 3, in_shapes[0], attrs.name, "workspace")
    return known and shape_known(out_shapes[3])


def _with_relu_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    view = out_types[:3]
    known = _batch_norm_type(attrs, in_types, view)
    out_types[:3] = view
    if in_types[0] is not None:
        type_assign(out_types, 3, param_dtype(in_types[0]), attrs.name, "workspace")
    return known and out_types[3] is not None


def _with_relu_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    out, mean, _, invstd = normalize(attrs, op_ctx, inputs)
    positive = out > 0
    assign(outputs[0], req[0], out * positive)
    assign(outputs[1], req[1], mean)
    assign(outputs[2], req[2], invstd)
    assign(outputs[3], req[3], positive)


def _with_relu_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """Mask the head gradient where relu cut the output, then BatchNorm's backward."""
    grad, *rest = inputs[:8]
    positive = inputs[8]
    _batch_norm_backward(attrs, op_ctx, [grad * positive.astype(grad.dtype, copy=False), *rest], req, outputs)


register_batch_norm(
    "_contrib_BatchNormWithReLU",
    "Batch normalisation followed by relu, in one node; hidden output 'workspace' marks the positives.",
    BatchNormParam,
    _with_relu_forward,
    _with_relu_backward,
    output_names=("output", "mean", "var", "workspace"),
    infer_shape=_with_relu_shape,
    infer_type=_with_relu_type,
    extra_outputs=(3,),
    backward_name="_backward_contrib_BatchNormWithReLU",
)
