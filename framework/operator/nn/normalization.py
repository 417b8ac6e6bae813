"""Normalisation layers that use each sample's own statistics: LayerNorm, InstanceNorm, GroupNorm, L2Normalization.

BatchNorm (``batch_norm.py``) standardises each channel over the *batch*; these operators
standardise within each sample, so they behave the same in training and inference and need
no moving averages. They differ only in which elements share one mean and variance:

============== ====================================== =============================
operator       one mean/std per                        gamma/beta per
============== ====================================== =============================
LayerNorm      position off ``axis`` (stats along it)  entry of ``axis``
InstanceNorm   (sample, channel) (stats over space)    channel
GroupNorm      (sample, group of channels)             group (MXNet 1.9.1's shape)
============== ====================================== =============================

Each views the data as ``(rows..., reduced)`` and shares one kernel: ``xhat = (x - mean) / std``
with ``std = sqrt(var + eps)`` (biased variance), ``out = xhat * gamma + beta``. The backward
pass is the analytic formula, with ``dxhat = g * gamma`` and means taken over the reduced
elements::

    dx = (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) / std
    dgamma = sum(g * xhat),  dbeta = sum(g)      (over everything but gamma's axis)

The statistics are hidden outputs, as in MXNet: LayerNorm and GroupNorm output ``mean`` and
``std`` (visible with ``output_mean_var``), InstanceNorm ``mean`` and ``var`` (always hidden).
L2Normalization divides by ``norm = sqrt(sum(x^2) + eps)`` over the instance, the channels or the
spatial positions (``mode``) and keeps ``norm`` as its hidden second output; its gradient is
``(g - out * sum(g * out)) / norm``. float16 data is computed in float32.
"""

from __future__ import annotations

from typing import Any

from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT, elemwise_type, shape_assign, shape_known, type_assign
from ..kernel import assign
from ..node import Entry, Node, NodeAttrs
from ..params import Param, ParamSet
from ..registry import register
from ..tensor.common import normalize_axis
from .activation import compute_dtype

FLOAT_TYPES = ("float16", "float32", "float64")


class LayerNormParam(ParamSet):
    axis = Param(int, -1, "The axis to normalise along (negative counts from the end).")
    eps = Param(float, 1e-5, "Added to the variance to avoid dividing by zero.", low=0.0)
    output_mean_var = Param(bool, False, "Also output the mean and standard deviation.")


class InstanceNormParam(ParamSet):
    eps = Param(float, 1e-3, "Added to the variance to avoid dividing by zero.", low=0.0)


class GroupNormParam(ParamSet):
    num_groups = Param(int, 1, "Number of groups the channels are split into.", low=1)
    eps = Param(float, 1e-5, "Added to the variance to avoid dividing by zero.", low=0.0)
    output_mean_var = Param(bool, False, "Also output the mean and standard deviation.")


class L2NormalizationParam(ParamSet):
    eps = Param(float, 1e-10, "Added to the sum of squares for numerical stability.", low=0.0)
    mode = Param(str, "instance", "Which elements share one norm.", choices=("channel", "instance", "spatial"))


# ---------------------------------------------------------------------------- the shared kernel
def standardize(xp: Any, x: Any, axis: int, eps: float) -> tuple[Any, Any, Any]:
    """``(xhat, mean, std)`` of ``x`` along ``axis`` (statistics keep the axis, length 1)."""
    mean = x.mean(axis=axis, keepdims=True)
    centred = x - mean
    std = xp.sqrt(xp.square(centred).mean(axis=axis, keepdims=True) + eps)
    return centred / std, mean, std


def standardize_backward(dxhat: Any, xhat: Any, std: Any, axis: int) -> Any:
    """The gradient through ``xhat = (x - mean(x)) / std(x)`` along ``axis``, given ``dxhat``."""
    mean_d = dxhat.mean(axis=axis, keepdims=True)
    mean_dx = (dxhat * xhat).mean(axis=axis, keepdims=True)
    return (dxhat - mean_d - xhat * mean_dx) / std


def _float_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    """Every input and output shares one floating-point dtype."""
    done = elemwise_type(attrs, in_types, out_types)
    if done and in_types[0] not in FLOAT_TYPES:
        raise InferenceError(f"{attrs.name}: supports {', '.join(FLOAT_TYPES)} data only, got {in_types[0]}")
    return done


def _backward_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    """Gradients have the head gradient's dtype."""
    for i in range(len(out_types)):
        type_assign(out_types, i, in_types[0], attrs.name, f"gradient {i}")
    return all(t is not None for t in out_types)


def _grads_like(sources: tuple[int, ...]) -> Any:
    """Backward shape inference: gradient ``i`` is shaped like backward input ``sources[i]``."""

    def infer(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        for i, source in enumerate(sources):
            shape_assign(out_shapes, i, in_shapes[source], attrs.name, f"gradient {i}")
        return all(shape_known(s) for s in out_shapes)

    return infer


def _stats_gradient(backward_name: str) -> Any:
    """Backward inputs: the output gradient, data, gamma, the saved statistics (outputs 1, 2), beta
    (for its shape). Gradients of the statistics outputs are ignored, as in MXNet."""

    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        data, gamma, beta = node.inputs
        inputs = [out_grads[0], data, gamma, Entry(node, 1), Entry(node, 2), beta]
        backward = make_backward_node(node, backward_name, inputs)
        return [Entry(backward, i) for i in range(3)]

    return gradient


def _register_stats_norm(
    name: str, params: type[ParamSet], description: str, infer_shape: Any, forward: Any, backward: Any, stats: str
) -> None:
    """Register a (data, gamma, beta) -> (output, mean, ``stats``) operator and its backward."""
    visible = (lambda attrs: 3 if attrs.parsed.output_mean_var else 1) if "output_mean_var" in params.fields else 1
    (
        register(name)
        .describe(description)
        .set_params(params)
        .set_num_inputs(3)
        .set_num_outputs(3)
        .set_num_visible_outputs(visible)
        .set_input_names(["data", "gamma", "beta"])
        .set_output_names(["output", "mean", stats])
        .set_infer_shape(infer_shape)
        .set_infer_type(_float_type)
        .set_compute(forward)
        .set_gradient(_stats_gradient(f"_backward_{name}"))
    )
    (
        register(f"_backward_{name}")
        .set_params(params)
        .set_num_inputs(6)
        .set_num_outputs(3)
        .set_infer_shape(_grads_like((1, 2, 5)))
        .set_infer_type(_backward_type)
        .set_compute(backward)
        .set_is_backward()
    )


def _affine_backward(req, outputs, g, xhat, std, gamma_b, axis, sum_axes) -> None:
    """Write dx, dgamma, dbeta for ``out = xhat * gamma_b + beta`` (stats along ``axis``)."""
    dx = standardize_backward(g * gamma_b, xhat, std, axis)
    assign(outputs[0], req[0], dx.reshape(outputs[0].shape))
    assign(outputs[1], req[1], (g * xhat).sum(axis=sum_axes).reshape(outputs[1].shape))
    assign(outputs[2], req[2], g.sum(axis=sum_axes).reshape(outputs[2].shape))


# ---------------------------------------------------------------------------- LayerNorm
def _layer_norm_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """data = output; gamma = beta = (data[axis],); mean = std = data with axis -> 1."""
    name = attrs.name
    shape_assign(out_shapes, 0, in_shapes[0], name, "output")
    shape_assign(in_shapes, 0, out_shapes[0], name, "data")
    dshape = in_shapes[0]
    if dshape is None:
        return False
    axis = normalize_axis(name, attrs.parsed.axis, len(dshape))
    for i in (1, 2):  # the statistics give every dimension but the normalised one
        stat = out_shapes[i]
        if stat is not None and len(stat) == len(dshape):
            shape_assign(in_shapes, 0, (*stat[:axis], 0, *stat[axis + 1 :]), name, "data")
    for i in (1, 2):
        gamma = in_shapes[i]
        if gamma is not None and len(gamma) == 1:
            shape_assign(in_shapes, 0, (*in_shapes[0][:axis], gamma[0], *in_shapes[0][axis + 1 :]), name, "data")
    dshape = in_shapes[0]
    shape_assign(out_shapes, 0, dshape, name, "output")
    shape_assign(in_shapes, 1, (dshape[axis],), name, "gamma")
    shape_assign(in_shapes, 2, (dshape[axis],), name, "beta")
    stat_shape = (*dshape[:axis], 1, *dshape[axis + 1 :])
    shape_assign(out_shapes, 1, stat_shape, name, "mean")
    shape_assign(out_shapes, 2, stat_shape, name, "std")
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))


def _along(vector: Any, ndim: int, axis: int) -> Any:
    """A 1-D parameter shaped to broadcast along ``axis`` of an ``ndim``-D array."""
    return vector.reshape(tuple(-1 if i == axis else 1 for i in range(ndim)))


def _layer_norm_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    data, gamma, beta = inputs
    work = compute_dtype(data.dtype)
    axis = normalize_axis(attrs.name, attrs.parsed.axis, data.ndim)
    xhat, mean, std = standardize(op_ctx.xp, data.astype(work, copy=False), axis, attrs.parsed.eps)
    out = xhat * _along(gamma.astype(work, copy=False), data.ndim, axis) + _along(beta, data.ndim, axis)
    assign(outputs[0], req[0], out)
    assign(outputs[1], req[1], mean)
    assign(outputs[2], req[2], std)


def _layer_norm_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    grad, data, gamma, mean, std = inputs[:5]
    work = compute_dtype(data.dtype)
    axis = normalize_axis(attrs.name, attrs.parsed.axis, data.ndim)
    xhat = (data.astype(work, copy=False) - mean) / std
    gamma_b = _along(gamma.astype(work, copy=False), data.ndim, axis)
    sum_axes = tuple(i for i in range(data.ndim) if i != axis)
    _affine_backward(req, outputs, grad.astype(work, copy=False), xhat, std, gamma_b, axis, sum_axes)


_register_stats_norm(
    "LayerNorm",
    LayerNormParam,
    "Layer normalisation: standardise along axis, then scale by gamma and shift by beta.",
    _layer_norm_shape,
    _layer_norm_forward,
    _layer_norm_backward,
    "std",
)


# ---------------------------------------------------------------------------- InstanceNorm and GroupNorm
def _grouped_shape(groups_of: Any, stat_names: tuple[str, str], min_ndim: int) -> Any:
    """Shape inference for norms over (N, G, rest) views: gamma/beta (G,), statistics (N, G)."""

    def infer(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        name = attrs.name
        shape_assign(out_shapes, 0, in_shapes[0], name, "output")
        shape_assign(in_shapes, 0, out_shapes[0], name, "data")
        dshape = in_shapes[0]
        if dshape is None:
            return False
        if len(dshape) < min_ndim:
            raise InferenceError(
                f"{name}: data must have at least {min_ndim} dimensions (batch, channel, ...), got shape {dshape}"
            )
        groups = groups_of(attrs, dshape)
        if groups is None:
            return False
        shape_assign(in_shapes, 1, (groups,), name, "gamma")
        shape_assign(in_shapes, 2, (groups,), name, "beta")
        for i, what in ((1, stat_names[0]), (2, stat_names[1])):
            shape_assign(out_shapes, i, (dshape[0], groups), name, what)
        return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))

    return infer


def _channels(attrs: NodeAttrs, dshape: tuple[int, ...]) -> int | None:
    return dshape[1] or None


def _groups(attrs: NodeAttrs, dshape: tuple[int, ...]) -> int | None:
    groups, channels = attrs.parsed.num_groups, dshape[1]
    if channels and channels % groups:
        raise InferenceError(f"{attrs.name}: {channels} channels are not divisible by num_groups={groups}")
    return groups


def _grouped_forward(groups: int, data: Any, gamma: Any, beta: Any, eps: float, xp: Any) -> tuple[Any, Any, Any]:
    """``(out, mean, std)`` with statistics per (sample, group) and parameters per group."""
    work = compute_dtype(data.dtype)
    x = data.astype(work, copy=False).reshape(data.shape[0], groups, -1)
    xhat, mean, std = standardize(xp, x, 2, eps)
    out = xhat * gamma.astype(work, copy=False).reshape(1, -1, 1) + beta.astype(work, copy=False).reshape(1, -1, 1)
    return out.reshape(data.shape), mean.reshape(data.shape[0], groups), std.reshape(data.shape[0], groups)


def _grouped_backward(groups: int, inputs: list, req: list, outputs: list, std_of: Any) -> None:
    grad, data, gamma, mean, stat = inputs[:5]
    work = compute_dtype(data.dtype)
    shape3 = (data.shape[0], groups, -1)
    mean3 = mean.reshape(data.shape[0], groups, 1)
    std3 = std_of(stat.astype(work, copy=False)).reshape(data.shape[0], groups, 1)
    xhat = (data.astype(work, copy=False).reshape(shape3) - mean3) / std3
    gamma_b = gamma.astype(work, copy=False).reshape(1, -1, 1)
    g = grad.astype(work, copy=False).reshape(shape3)
    _affine_backward(req, outputs, g, xhat, std3, gamma_b, 2, (0, 2))


def _instance_norm_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    data, gamma, beta = inputs
    out, mean, std = _grouped_forward(data.shape[1], data, gamma, beta, attrs.parsed.eps, op_ctx.xp)
    assign(outputs[0], req[0], out)
    assign(outputs[1], req[1], mean)
    assign(outputs[2], req[2], std * std - attrs.parsed.eps)  # the hidden output is the variance


def _instance_norm_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    eps, xp = attrs.parsed.eps, op_ctx.xp
    _grouped_backward(inputs[1].shape[1], inputs, req, outputs, lambda var: xp.sqrt(var + eps))


def _group_norm_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    data, gamma, beta = inputs
    out, mean, std = _grouped_forward(attrs.parsed.num_groups, data, gamma, beta, attrs.parsed.eps, op_ctx.xp)
    assign(outputs[0], req[0], out)
    assign(outputs[1], req[1], mean)
    assign(outputs[2], req[2], std)


def _group_norm_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    _grouped_backward(attrs.parsed.num_groups, inputs, req, outputs, lambda std: std)


_register_stats_norm(
    "InstanceNorm",
    InstanceNormParam,
    "Instance normalisation: standardise each channel of each sample over its spatial positions, "
    "then scale by gamma and shift by beta (per channel).",
    _grouped_shape(_channels, ("mean", "var"), 2),
    _instance_norm_forward,
    _instance_norm_backward,
    "var",
)
_register_stats_norm(
    "GroupNorm",
    GroupNormParam,
    "Group normalisation: standardise each group of channels of each sample, then scale by gamma "
    "and shift by beta (per group, of shape (num_groups,), as in MXNet 1.9.1).",
    _grouped_shape(_groups, ("mean", "std"), 3),
    _group_norm_forward,
    _group_norm_backward,
    "std",
)


# ---------------------------------------------------------------------------- L2Normalization
def _l2_reduce_axes(attrs: NodeAttrs, ndim: int) -> tuple[int, ...]:
    """The axes one norm covers: all but the batch (instance), the channels, or the spatial axes."""
    mode = attrs.parsed.mode
    need = {"instance": 2, "channel": 2, "spatial": 3}[mode]
    if ndim < need:
        raise InferenceError(f"{attrs.name}: mode='{mode}' needs data with at least {need} dimensions, got {ndim}")
    if mode == "instance":
        return tuple(range(1, ndim))
    if mode == "channel":
        return (1,)
    return tuple(range(2, ndim))


def _l2_norm_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name = attrs.name
    shape_assign(out_shapes, 0, in_shapes[0], name, "output")
    shape_assign(in_shapes, 0, out_shapes[0], name, "data")
    dshape = in_shapes[0]
    if dshape is None:
        return False
    axes = _l2_reduce_axes(attrs, len(dshape))
    shape_assign(out_shapes, 1, tuple(d for i, d in enumerate(dshape) if i not in axes), name, "norm")
    return shape_known(dshape)


def _l2_norm_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    xp, data = op_ctx.xp, inputs[0]
    x = data.astype(compute_dtype(data.dtype), copy=False)
    axes = _l2_reduce_axes(attrs, data.ndim)
    norm = xp.sqrt(xp.square(x).sum(axis=axes, keepdims=True) + attrs.parsed.eps)
    assign(outputs[0], req[0], x / norm)
    assign(outputs[1], req[1], norm.reshape(outputs[1].shape))


def _l2_norm_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    grad, out, norm = inputs
    work = compute_dtype(out.dtype)
    axes = _l2_reduce_axes(attrs, out.ndim)
    g, y = grad.astype(work, copy=False), out.astype(work, copy=False)
    kept = tuple(1 if i in axes else d for i, d in enumerate(out.shape))
    dot = (g * y).sum(axis=axes, keepdims=True)
    assign(outputs[0], req[0], (g - y * dot) / norm.astype(work, copy=False).reshape(kept))


def _l2_norm_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Backward inputs: the output gradient, the output and the saved norm."""
    backward = make_backward_node(node, "_backward_L2Normalization", [out_grads[0], Entry(node, 0), Entry(node, 1)])
    return [Entry(backward, 0)]


(
    register("L2Normalization")
    .describe("Divides each instance, channel vector or spatial map by its L2 norm sqrt(sum(x^2) + eps).")
    .set_params(L2NormalizationParam)
    .set_num_inputs(1)
    .set_num_outputs(2)
    .set_num_visible_outputs(1)
    .set_input_names(["data"])
    .set_output_names(["output", "norm"])
    .set_infer_shape(_l2_norm_shape)
    .set_infer_type(_float_type)
    .set_compute(_l2_norm_forward)
    .set_gradient(_l2_norm_gradient)
)
(
    register("_backward_L2Normalization")
    .set_params(L2NormalizationParam)
    .set_num_inputs(3)
    .set_num_outputs(1)
    .set_infer_shape(_grads_like((1,)))
    .set_infer_type(_backward_type)
    .set_compute(_l2_norm_backward)
    .set_is_backward()
)
