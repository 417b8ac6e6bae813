"""BatchNorm: normalise each channel by its batch statistics, then scale and shift.

For channel axis ``axis`` (default 1, NCHW), with ``mean`` and ``var`` taken over every
other axis::

    out = (x - mean) / sqrt(var + eps) * gamma + beta

In training (``is_train`` and not ``use_global_stats``) the statistics are the batch's,
and the running averages, inputs 3 and 4, are updated *in place*::

    moving_mean = momentum * moving_mean + (1 - momentum) * mean
    moving_var  = momentum * moving_var  + (1 - momentum) * var     (biased variance)

In inference (or with ``use_global_stats``) the moving statistics are used instead.
``moving_mean`` and ``moving_var`` are *auxiliary states*: inputs the operator writes
(``set_mutate_inputs``), which symbols list separately from the arguments and which get
no gradient. MXNet 1.x on CPU updates them in the backward pass; MXLab updates them in
the forward pass (as MXNet does with cuDNN), so the numbers after one training step agree.

``fix_gamma=True`` (the default!) uses ``gamma = 1`` and gives gamma a zero gradient.
(MXNet 1.9.1 also overwrites the gamma array with ones; MXLab leaves the input alone.)

Three outputs: ``out``, ``mean`` and ``var``; only ``out`` is visible unless
``output_mean_var=True``. As in MXNet 1.x, the ``var`` output holds the *inverse
standard deviation* ``1 / sqrt(var + eps)`` of the statistics used, which is exactly
what backward needs. With batch statistics the gradient accounts for ``x`` entering the
mean and variance too (``xhat`` = normalised input, ``M`` = elements per channel)::

    dbeta = sum(g),  dgamma = sum(g * xhat)
    dx = gamma * invstd / M * (M * g - dbeta - xhat * dgamma)

with global statistics it is just ``dx = g * gamma * invstd``. For float16 data the
parameters and statistics are float32.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..kernel import assign
from ..node import Entry, Node, NodeAttrs
from ..params import Param, ParamSet
from ..registry import register
from .activation import compute_dtype


class BatchNormParam(ParamSet):
    eps = Param(float, 1e-3, "Added to the variance to avoid dividing by zero.", low=0.0)
    momentum = Param(float, 0.9, "Momentum of the moving averages.")
    fix_gamma = Param(bool, True, "Use gamma = 1 and give gamma no gradient.")
    use_global_stats = Param(bool, False, "Normalise with the moving statistics even in training.")
    output_mean_var = Param(bool, False, "Also output the mean and inverse standard deviation.")
    axis = Param(int, 1, "The channel axis.")
    cudnn_off = Param(bool, False, "Do not use cuDNN (no effect in MXLab).")
    min_calib_range = Param(float, None, "Quantisation calibration minimum (unused here).")
    max_calib_range = Param(float, None, "Quantisation calibration maximum (unused here).")


_INPUTS = ["data", "gamma", "beta", "moving_mean", "moving_var"]


def _channel_axis(attrs: NodeAttrs, ndim: int) -> int:
    axis = attrs.parsed.axis
    if not -ndim <= axis < ndim:
        raise InferenceError(f"{attrs.name}: BatchNorm axis {axis} is out of range for data with {ndim} dimension(s)")
    return axis % ndim


def _batch_norm_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name = attrs.name
    shape_assign(out_shapes, 0, in_shapes[0], name, "output")
    shape_assign(in_shapes, 0, out_shapes[0], name, "data")
    dshape = in_shapes[0]
    if dshape is not None:
        if len(dshape) == 0:
            raise InferenceError(f"{name}: BatchNorm needs data with at least one dimension, got shape ()")
        channels = dshape[_channel_axis(attrs, len(dshape))]
        if channels:
            for i in range(1, 5):
                shape_assign(in_shapes, i, (channels,), name, _INPUTS[i])
            for i in (1, 2):
                shape_assign(out_shapes, i, (channels,), name, ("mean", "var")[i - 1])
    # the channel count may also come from any parameter or statistic
    known = next((s for s in list(in_shapes[1:]) + list(out_shapes[1:]) if s is not None), None)
    if known is not None:
        if len(known) != 1:
            raise InferenceError(f"{name}: BatchNorm parameters and statistics must be 1-D (channels,), got {known}")
        for i in range(1, 5):
            shape_assign(in_shapes, i, known, name, _INPUTS[i])
        for i in (1, 2):
            shape_assign(out_shapes, i, known, name, ("mean", "var")[i - 1])
        if dshape is not None:
            axis = _channel_axis(attrs, len(dshape))
            shape_assign(in_shapes, 0, (*dshape[:axis], known[0], *dshape[axis + 1 :]), name, "data")
            shape_assign(out_shapes, 0, in_shapes[0], name, "output")
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))


def param_dtype(data_dtype: str) -> str:
    """Parameters and statistics of float16 data are float32; otherwise the data's type."""
    return "float32" if np.dtype(data_dtype) == np.float16 else np.dtype(data_dtype).name


def _batch_norm_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    name = attrs.name
    type_assign(out_types, 0, in_types[0], name, "output")
    type_assign(in_types, 0, out_types[0], name, "data")
    if in_types[0] is None:
        return False
    stats = param_dtype(in_types[0])
    for i in range(1, 5):
        type_assign(in_types, i, stats, name, _INPUTS[i])
    for i in (1, 2):
        type_assign(out_types, i, stats, name, ("mean", "var")[i - 1])
    return True


def _broadcast_shape(ndim: int, axis: int, channels: int) -> tuple[int, ...]:
    return tuple(channels if i == axis else 1 for i in range(ndim))


def _batch_norm_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    out, mean, _, invstd = normalize(attrs, op_ctx, inputs)
    assign(outputs[0], req[0], out)
    assign(outputs[1], req[1], mean)
    assign(outputs[2], req[2], invstd)


def normalize(attrs: NodeAttrs, op_ctx, inputs: list) -> tuple:
    """BatchNorm's forward pass as values: ``(out, mean, var, invstd)`` of the statistics used.

    Shared by the operators that are BatchNorm plus a twist (``_contrib_SyncBatchNorm``,
    ``_contrib_BatchNormWithReLU``); in training it also updates the moving statistics.
    """
    p, xp = attrs.parsed, op_ctx.xp
    data, gamma, beta, moving_mean, moving_var = inputs
    axis = _channel_axis(attrs, data.ndim)
    channels = data.shape[axis]
    reduce_axes = tuple(i for i in range(data.ndim) if i != axis)
    bshape = _broadcast_shape(data.ndim, axis, channels)
    work = np.promote_types(compute_dtype(data.dtype), moving_mean.dtype)
    x = data.astype(work, copy=False)
    if op_ctx.is_train and not p.use_global_stats:
        mean = x.mean(axis=reduce_axes)
        var = xp.square(x - mean.reshape(bshape)).mean(axis=reduce_axes)
        new_mean = p.momentum * moving_mean + (1 - p.momentum) * mean
        new_var = p.momentum * moving_var + (1 - p.momentum) * var
        moving_mean[...] = new_mean  # auxiliary states: updated in place
        moving_var[...] = new_var
    else:
        mean = moving_mean.astype(work)
        var = moving_var.astype(work)
    invstd = 1 / xp.sqrt(var + p.eps)
    scale = invstd if p.fix_gamma else invstd * gamma.astype(work, copy=False)
    out = (x - mean.reshape(bshape)) * scale.reshape(bshape) + beta.astype(work, copy=False).reshape(bshape)
    return out, mean, var, invstd


def _batch_norm_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    p = attrs.parsed
    grad, data, gamma, mean, invstd = inputs[:5]
    axis = _channel_axis(attrs, data.ndim)
    channels = data.shape[axis]
    reduce_axes = tuple(i for i in range(data.ndim) if i != axis)
    bshape = _broadcast_shape(data.ndim, axis, channels)
    work = np.promote_types(compute_dtype(data.dtype), mean.dtype)
    g = grad.astype(work, copy=False)
    xhat = (data.astype(work, copy=False) - mean.reshape(bshape)) * invstd.reshape(bshape)
    dbeta = g.sum(axis=reduce_axes)
    dgamma = (g * xhat).sum(axis=reduce_axes)
    scale = invstd if p.fix_gamma else invstd * gamma.astype(work, copy=False)
    if op_ctx.is_train and not p.use_global_stats:
        count = data.size // channels if channels else 0
        dx = scale.reshape(bshape) / count * (count * g - dbeta.reshape(bshape) - xhat * dgamma.reshape(bshape))
    else:
        dx = g * scale.reshape(bshape)
    assign(outputs[0], req[0], dx)
    assign(outputs[1], req[1], 0 if p.fix_gamma else dgamma)
    assign(outputs[2], req[2], dbeta)
    assign(outputs[3], req[3], 0)  # auxiliary states get no gradient
    assign(outputs[4], req[4], 0)


def batch_norm_gradient(
    backward_op: str, extra_outputs: tuple[int, ...] = ()
) -> Callable[[Node, list[Entry]], list[Entry]]:
    """The gradient wiring of BatchNorm and its variants (batch_norm_variants.py), which share the backward.

    Backward inputs: head gradient, data, gamma, saved mean and inverse std, beta and aux (for
    shapes), then the forward outputs named by ``extra_outputs`` (a variant's own saved state).
    """

    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        data, gamma, beta, moving_mean, moving_var = node.inputs
        inputs = [out_grads[0], data, gamma, Entry(node, 1), Entry(node, 2), beta, moving_mean, moving_var]
        inputs += [Entry(node, i) for i in extra_outputs]
        backward = make_backward_node(node, backward_op, inputs)
        return [Entry(backward, i) for i in range(5)]

    return gradient


_GRAD_SOURCE = (1, 2, 5, 6, 7)  # backward input holding the forward input of each gradient


def _backward_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    for i, source in enumerate(_GRAD_SOURCE):
        shape_assign(out_shapes, i, in_shapes[source], attrs.name, f"gradient of {_INPUTS[i]}")
    return all(shape_known(s) for s in out_shapes)


def _backward_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    for i, source in enumerate(_GRAD_SOURCE):
        type_assign(out_types, i, in_types[source], attrs.name, f"gradient of {_INPUTS[i]}")
    return all(t is not None for t in out_types)


def register_batch_norm(
    name: str,
    description: str,
    params: type[ParamSet],
    forward: Callable,
    backward: Callable,
    output_names: tuple[str, ...] = ("output", "mean", "var"),
    infer_shape: Callable = _batch_norm_shape,
    infer_type: Callable = _batch_norm_type,
    extra_outputs: tuple[int, ...] = (),
    backward_name: str | None = None,
) -> None:
    """Register BatchNorm or a variant (batch_norm_variants.py) and its ``_backward_`` node.

    They share the contract: five inputs (the moving statistics mutated in place), the output
    plus mean and var (visible with ``output_mean_var``), and BatchNorm's backward inputs (see
    :func:`batch_norm_gradient`) followed by the ``extra_outputs`` a variant saves. The backward
    node is ``_backward_<name>`` unless ``backward_name`` says otherwise (MXNet's own spelling).
    """
    backward_name = backward_name or "_backward_" + name
    (
        register(name)
        .describe(description)
        .set_params(params)
        .set_num_inputs(5)
        .set_num_outputs(len(output_names))
        .set_num_visible_outputs(lambda attrs: 3 if attrs.parsed.output_mean_var else 1)
        .set_input_names(_INPUTS)
        .set_output_names(list(output_names))
        .set_infer_shape(infer_shape)
        .set_infer_type(infer_type)
        .set_compute(forward)
        .set_gradient(batch_norm_gradient(backward_name, extra_outputs))
        .set_mutate_inputs(lambda attrs: [3, 4])
    )
    (
        register(backward_name)
        .set_params(params)
        .set_num_inputs(8 + len(extra_outputs))
        .set_num_outputs(5)
        .set_infer_shape(_backward_shape)
        .set_infer_type(_backward_type)
        .set_compute(backward)
        .set_is_backward()
    )


register_batch_norm(
    "BatchNorm",
    "Batch normalisation: per-channel standardisation, scale gamma and shift beta.",
    BatchNormParam,
    _batch_norm_forward,
    _batch_norm_backward,
)
