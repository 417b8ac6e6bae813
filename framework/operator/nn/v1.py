"""BatchNorm_v1, Convolution_v1, Pooling_v1: MXNet's older layer operators, kept for old symbol files.

MXNet 1.x still registers the first versions of these layers so that networks saved by
early MXNet releases load. Each has its own, smaller parameter set (what those releases
accepted) but computes what today's operator computes, so here each is a thin adapter: it
parses its v1 parameters, translates them into the current operator's parameters (filling
the parameters v1 lacks with their defaults) and runs the current operator's inference and
compute functions. The backward operators (``_backward_BatchNorm_v1``, ...) adapt the same way.

What v1 does not accept: ``Convolution_v1`` and ``Pooling_v1`` are 2-D or 3-D only (kernel
``(h, w)`` or ``(d, h, w)``; 4-D or 5-D data); ``Pooling_v1`` has no ``lp`` pooling,
``p_value``, ``count_include_pad`` or ``layout``; ``BatchNorm_v1`` normalises axis 1 only.
One output differs: ``BatchNorm_v1``'s third output is the *variance* of the statistics used,
where ``BatchNorm`` outputs the inverse standard deviation.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT
from ..kernel import WRITE, assign
from ..node import Entry, Node, NodeAttrs
from ..params import OperatorParamError, Param, ParamSet, Shape
from ..registry import get, register


class BatchNormV1Param(ParamSet):
    eps = Param(float, 1e-3, "Added to the variance to avoid dividing by zero.", low=0.0)
    momentum = Param(float, 0.9, "Momentum of the moving averages.")
    fix_gamma = Param(bool, True, "Use gamma = 1 and give gamma no gradient.")
    use_global_stats = Param(bool, False, "Normalise with the moving statistics even in training.")
    output_mean_var = Param(bool, False, "Also output the mean and variance.")


class ConvolutionV1Param(ParamSet):
    kernel = Param(Shape, description="Convolution kernel size: (h, w) or (d, h, w).")
    stride = Param(Shape, Shape(), "Convolution stride: (h, w) or (d, h, w). Defaults to 1 for each dimension.")
    dilate = Param(Shape, Shape(), "Convolution dilate: (h, w) or (d, h, w). Defaults to 1 for each dimension.")
    pad = Param(Shape, Shape(), "Zero pad for convolution: (h, w) or (d, h, w). Defaults to no padding.")
    num_filter = Param(int, description="Convolution filter (channel) number.", low=1, high=100000)
    num_group = Param(int, 1, "Number of group partitions.", low=1)
    workspace = Param(int, 1024, "Maximum temporary workspace (MB).", low=0)
    no_bias = Param(bool, False, "Whether to disable the bias parameter.")
    cudnn_tune = Param(
        str, None, "cuDNN algorithm choice; accepted, no effect.", choices=("fastest", "limited_workspace", "off")
    )
    cudnn_off = Param(bool, False, "Turn off cuDNN for this layer; accepted, no effect.")
    layout = Param(
        str, None, "Layout of data, weight and output; only NCHW/NCDHW.", choices=("NCDHW", "NCHW", "NDHWC", "NHWC")
    )


class PoolingV1Param(ParamSet):
    kernel = Param(Shape, Shape(), "Pooling kernel size: (y, x) or (d, y, x).")
    pool_type = Param(str, "max", "Pooling type to be applied.", choices=("avg", "max", "sum"))
    global_pool = Param(bool, False, "Ignore kernel size, pool over the whole feature map.")
    pooling_convention = Param(str, "valid", "Pooling convention to be applied.", choices=("full", "valid"))
    stride = Param(Shape, Shape(), "Stride: (y, x) or (d, y, x). Defaults to 1 for each dimension.")
    pad = Param(Shape, Shape(), "Pad for pooling: (y, x) or (d, y, x). Defaults to no padding.")


# ---------------------------------------------------------------------------- translation
@functools.lru_cache(maxsize=256)
def _batch_norm_params(v1: ParamSet) -> ParamSet:
    return get("BatchNorm").params.parse("BatchNorm", {**v1.as_dict(), "axis": 1})


def _check_kernel(name: str, op_name: str, kernel: tuple, global_pool: bool = False) -> None:
    if not global_pool and len(kernel) not in (2, 3):
        raise OperatorParamError(
            f"{name}: {op_name} takes 2-D and 3-D kernels only ((h, w) or (d, h, w)), got kernel={tuple(kernel)}"
        )


@functools.lru_cache(maxsize=256)
def _convolution_params(v1: ParamSet) -> ParamSet:
    return get("Convolution").params.parse("Convolution", v1.as_dict())


@functools.lru_cache(maxsize=256)
def _pooling_params(v1: ParamSet) -> ParamSet:
    return get("Pooling").params.parse("Pooling", v1.as_dict())


def _as(current: str, translate: Callable[[ParamSet], ParamSet], check: Callable[[NodeAttrs], None]) -> Any:
    """``attrs`` of a v1 node seen as a node of the ``current`` operator (same name, translated parameters)."""

    def convert(attrs: NodeAttrs) -> NodeAttrs:
        check(attrs)
        return NodeAttrs(attrs.name, get(current), translate(attrs.parsed), attrs.extra)

    return convert


def _no_check(attrs: NodeAttrs) -> None:
    return None


def _conv_check(attrs: NodeAttrs) -> None:
    _check_kernel(attrs.name, "Convolution_v1", attrs.parsed.kernel)


def _pool_check(attrs: NodeAttrs) -> None:
    _check_kernel(attrs.name, "Pooling_v1", attrs.parsed.kernel, attrs.parsed.global_pool)


def _delegate(op_name: str, convert: Callable[[NodeAttrs], NodeAttrs]) -> tuple[Any, Any, Any]:
    """Shape inference, type inference and compute of ``op_name`` applied to converted attrs."""

    def infer_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        return get(op_name).run_infer_shape(convert(attrs), in_shapes, out_shapes)

    def infer_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
        return get(op_name).run_infer_type(convert(attrs), in_types, out_types)

    def compute(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
        get(op_name).get_compute(op_ctx.ctx.device_type)(convert(attrs), op_ctx, inputs, req, outputs)

    return infer_shape, infer_type, compute


def _four_or_five_d(infer_shape: Any, check: Callable[[NodeAttrs], None]) -> Any:
    """Pooling_v1 and Convolution_v1 take (N, C, H, W) or (N, C, D, H, W) data only (parameters checked first)."""

    def infer(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        check(attrs)
        data = in_shapes[0]
        if data is not None and len(data) not in (4, 5):
            raise InferenceError(f"{attrs.name}: data must be 4-D or 5-D (batch, channel, *spatial), got shape {data}")
        return infer_shape(attrs, in_shapes, out_shapes)

    return infer


# ---------------------------------------------------------------------------- BatchNorm_v1
_as_batch_norm = _as("BatchNorm", _batch_norm_params, _no_check)
_bn_shape, _bn_type, _ = _delegate("BatchNorm", _as_batch_norm)
_bn_backward_shape, _bn_backward_type, _bn_backward_compute = _delegate("_backward_BatchNorm", _as_batch_norm)


def _batch_norm_v1_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """BatchNorm's forward, with its inverse standard deviation turned into the variance."""
    xp, eps = op_ctx.xp, attrs.parsed.eps
    invstd = xp.empty_like(outputs[2])
    current = _as_batch_norm(attrs)
    get("BatchNorm").get_compute(op_ctx.ctx.device_type)(
        current, op_ctx, inputs, [req[0], req[1], WRITE], [outputs[0], outputs[1], invstd]
    )
    assign(outputs[2], req[2], 1 / (invstd * invstd) - eps)


def _batch_norm_v1_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """BatchNorm's backward, given the inverse standard deviation it expects."""
    xp, eps = op_ctx.xp, attrs.parsed.eps
    inputs = list(inputs)
    inputs[4] = 1 / xp.sqrt(inputs[4] + eps)
    _bn_backward_compute(attrs, op_ctx, inputs, req, outputs)


def _batch_norm_v1_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """As BatchNorm: head gradient, data, gamma, saved mean and variance, beta and the states (for shapes)."""
    data, gamma, beta, moving_mean, moving_var = node.inputs
    inputs = [out_grads[0], data, gamma, Entry(node, 1), Entry(node, 2), beta, moving_mean, moving_var]
    backward = make_backward_node(node, "_backward_BatchNorm_v1", inputs)
    return [Entry(backward, i) for i in range(5)]


(
    register("BatchNorm_v1")
    .describe("Batch normalisation over axis 1 (MXNet's first version; its third output is the variance).")
    .set_params(BatchNormV1Param)
    .set_num_inputs(5)
    .set_num_outputs(3)
    .set_num_visible_outputs(lambda attrs: 3 if attrs.parsed.output_mean_var else 1)
    .set_input_names(["data", "gamma", "beta", "moving_mean", "moving_var"])
    .set_output_names(["output", "mean", "var"])
    .set_infer_shape(_bn_shape)
    .set_infer_type(_bn_type)
    .set_compute(_batch_norm_v1_forward)
    .set_gradient(_batch_norm_v1_gradient)
    .set_mutate_inputs(lambda attrs: [3, 4])
)
(
    register("_backward_BatchNorm_v1")
    .set_params(BatchNormV1Param)
    .set_num_inputs(8)
    .set_num_outputs(5)
    .set_infer_shape(_bn_backward_shape)
    .set_infer_type(_bn_backward_type)
    .set_compute(_batch_norm_v1_backward)
    .set_is_backward()
)


# ---------------------------------------------------------------------------- Convolution_v1
_as_convolution = _as("Convolution", _convolution_params, _conv_check)
_conv_shape, _conv_type, _conv_compute = _delegate("Convolution", _as_convolution)
_conv_backward_shape, _conv_backward_type, _conv_backward_compute = _delegate("_backward_Convolution", _as_convolution)


def _conv_inputs(attrs: NodeAttrs) -> list[str]:
    return ["data", "weight"] if attrs.parsed.no_bias else ["data", "weight", "bias"]


def _conv_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """As Convolution: one backward node reading (out_grad, data, weight)."""
    backward = make_backward_node(node, "_backward_Convolution_v1", [out_grads[0], node.inputs[0], node.inputs[1]])
    return [Entry(backward, i) for i in range(len(node.inputs))]


def _temp_space(attrs: NodeAttrs) -> list:
    return get("Convolution").resource_request(_as_convolution(attrs))


(
    register("Convolution_v1")
    .describe("2-D/3-D convolution (MXNet's first version of Convolution; same computation).")
    .set_params(ConvolutionV1Param)
    .set_num_inputs(lambda attrs: len(_conv_inputs(attrs)))
    .set_input_names(_conv_inputs)
    .set_infer_shape(_four_or_five_d(_conv_shape, _conv_check))
    .set_infer_type(_conv_type)
    .set_compute(_conv_compute)
    .set_gradient(_conv_gradient)
    .set_resource_request(_temp_space)
)
(
    register("_backward_Convolution_v1")
    .set_params(ConvolutionV1Param)
    .set_num_inputs(3)
    .set_num_outputs(lambda attrs: len(_conv_inputs(attrs)))
    .set_infer_shape(_conv_backward_shape)
    .set_infer_type(_conv_backward_type)
    .set_compute(_conv_backward_compute)
    .set_resource_request(_temp_space)
    .set_is_backward()
)


# ---------------------------------------------------------------------------- Pooling_v1
_as_pooling = _as("Pooling", _pooling_params, _pool_check)
_pool_shape, _pool_type, _pool_compute = _delegate("Pooling", _as_pooling)
_pool_backward_shape, _pool_backward_type, _pool_backward_compute = _delegate("_backward_Pooling", _as_pooling)


def _pool_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """As Pooling: the backward node reads (out_grad, data, output)."""
    backward = make_backward_node(node, "_backward_Pooling_v1", [out_grads[0], node.inputs[0], Entry(node, 0)])
    return [Entry(backward, 0)]


(
    register("Pooling_v1")
    .describe("2-D/3-D max, avg or sum pooling (MXNet's first version of Pooling; same computation).")
    .set_params(PoolingV1Param)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_four_or_five_d(_pool_shape, _pool_check))
    .set_infer_type(_pool_type)
    .set_compute(_pool_compute)
    .set_gradient(_pool_gradient)
)
(
    register("_backward_Pooling_v1")
    .set_params(PoolingV1Param)
    .set_num_inputs(3)
    .set_infer_shape(_pool_backward_shape)
    .set_infer_type(_pool_backward_type)
    .set_compute(_pool_backward_compute)
    .set_is_backward()
)
