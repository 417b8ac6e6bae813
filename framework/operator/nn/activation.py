"""Activation functions: ``Activation`` and ``LeakyReLU``.

``Activation`` applies one of five classic non-linearities element-wise. Its backward
pass, like MXNet's, is written in terms of the *output* ``y`` wherever the derivative can
be: ``relu'`` is ``y > 0``, ``sigmoid'`` is ``y (1 - y)``, ``tanh'`` is ``1 - y^2``,
``softrelu'`` is ``1 - exp(-y)``. Keeping only the output alive lets the memory planner
let ``relu`` overwrite its input in place. ``softsign'`` = ``1 / (1 + |x|)^2`` needs the
input, so the backward node receives it too.

``LeakyReLU`` collects the ReLU variants that have a parameter, selected by ``act_type``:

=========  ==================================================================
leaky      ``x if x > 0 else slope * x``
prelu      like leaky, but the slope is the learned input ``gamma`` (one per
           channel, axis 1, or a single value), which gets a gradient too
rrelu      randomized leaky ReLU: in training each element draws its slope from
           U(lower_bound, upper_bound) (kept in the hidden ``mask`` output); in
           inference the slope is the mean of the bounds
elu        ``x if x > 0 else slope * (exp(x) - 1)``
selu       ``lambda * (x if x > 0 else alpha * (exp(x) - 1))`` with the fixed
           constants of Klambauer et al.
gelu       ``x * Phi(x)`` (Phi: the standard normal CDF, computed with erf)
=========  ==================================================================

At ``x == 0`` the gradients follow MXNet: the negative branch is taken.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np

from ...resource import ResourceRequest
from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT, elemwise_shape, elemwise_type, shape_assign, shape_known, type_assign
from ..kernel import INPLACE, WRITE, assign, assign_ufunc
from ..node import Entry, Node, NodeAttrs
from ..params import Param, ParamSet
from ..registry import register

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_LAMBDA = 1.0507009873554804934193349852946


def compute_dtype(dtype: Any) -> np.dtype:
    """The dtype to compute in: float16 is widened to float32 for accuracy, as MXNet's accumulators do."""
    return np.dtype(np.float32) if np.dtype(dtype) == np.float16 else np.dtype(dtype)


def erf_array(xp: ModuleType, x: Any) -> Any:
    """The error function, element-wise and vectorised (NumPy has no ``erf``).

    For ``|x| < 3`` the everywhere-positive series
    ``erf(x) = 2/sqrt(pi) exp(-x^2) sum_n 2^n x^(2n+1) / (1*3*...*(2n+1))`` (no
    cancellation); beyond, the continued fraction of ``erfc``. Accurate to ~1e-15.
    """
    dtype = x.dtype
    x = x.astype(np.float64)
    a = xp.abs(x)
    small = xp.minimum(a, 3.0)
    term = small.copy()
    total = small.copy()
    two_x2 = 2 * small * small
    for n in range(1, 90):  # loop over series terms, not elements
        term = term * two_x2 / (2 * n + 1)
        total = total + term
    series = 2 / math.sqrt(math.pi) * xp.exp(-small * small) * total
    big = xp.maximum(a, 3.0)
    fraction = big.copy()
    for k in range(60, 0, -1):  # erfc(x) = exp(-x^2) / sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
        fraction = big + (k / 2) / fraction
    tail = 1 - xp.exp(-big * big) / (math.sqrt(math.pi) * fraction)
    return (xp.sign(x) * xp.where(a < 3.0, series, tail)).astype(dtype)


# ----------------------------------------------------------------------------- Activation
class ActivationParam(ParamSet):
    act_type = Param(
        str,
        description="Activation function to apply.",
        choices=("relu", "sigmoid", "softrelu", "softsign", "tanh"),
    )


def _activation(xp, act_type: str, x, out=None):
    """The activation of ``x``; its last step is one ufunc, which writes into ``out`` when given."""
    if act_type == "relu":
        return xp.maximum(x, 0, out=out)
    if act_type == "sigmoid":
        return xp.divide(1, 1 + xp.exp(-x), out=out)
    if act_type == "tanh":
        return xp.tanh(x, out=out)
    if act_type == "softrelu":
        return xp.logaddexp(x, 0, out=out)  # log(1 + exp(x)) without overflow
    return xp.divide(x, 1 + xp.abs(x), out=out)  # softsign


def _activation_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    x, out = inputs[0], outputs[0]
    work = compute_dtype(x.dtype)
    x = x.astype(work, copy=False)
    if req[0] in (WRITE, INPLACE) and out.dtype == work:  # no temporary and no copy: written in place
        _activation(op_ctx.xp, attrs.parsed.act_type, x, out=out)
        return
    assign(out, req[0], _activation(op_ctx.xp, attrs.parsed.act_type, x))


def _activation_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Backward inputs: output gradient and output (softsign: and the input)."""
    inputs = [out_grads[0], Entry(node, 0)]
    if node.attrs.parsed.act_type == "softsign":
        inputs.append(node.inputs[0])
    return [Entry(make_backward_node(node, "_backward_Activation", inputs), 0)]


def _tanh_backward_into(xp: ModuleType, grad: Any, y: Any, out: Any) -> None:
    """``out = grad * (1 - y * y)`` in three passes with no temporary when ``out`` is fresh memory.

    A temporary as large as a convolution's output is a fresh allocation on every step (and
    its pages are faulted in again), which costs about as much as the arithmetic. When ``out``
    is ``grad``'s own memory (the in-place option) the derivative needs one temporary.
    """
    if xp.may_share_memory(out, grad) or xp.may_share_memory(out, y):
        slope = xp.multiply(y, y)
        xp.subtract(1, slope, out=slope)
        xp.multiply(grad, slope, out=out)
        return
    xp.multiply(y, y, out=out)
    xp.subtract(1, out, out=out)
    xp.multiply(out, grad, out=out)


def _activation_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    xp, act_type = op_ctx.xp, attrs.parsed.act_type
    work = compute_dtype(inputs[0].dtype)
    grad, y = inputs[0].astype(work, copy=False), inputs[1].astype(work, copy=False)
    out = outputs[0]
    if act_type == "tanh" and out.dtype == work and req[0] in (WRITE, INPLACE):
        _tanh_backward_into(xp, grad, y, out)
        return
    # each rule ends in one product (or quotient) that writes the gradient straight into the output
    if act_type == "relu":
        left, right, ufunc = grad, y > 0, xp.multiply
    elif act_type == "sigmoid":
        left, right, ufunc = grad * y, 1 - y, xp.multiply
    elif act_type == "tanh":
        left, right, ufunc = grad, 1 - y * y, xp.multiply
    elif act_type == "softrelu":
        left, right, ufunc = grad, -xp.expm1(-y), xp.multiply
    else:
        x = inputs[2].astype(work, copy=False)
        left, right, ufunc = grad, xp.square(1 + xp.abs(x)), xp.divide
    if outputs[0].dtype == work:
        assign_ufunc(outputs[0], req[0], ufunc, left, right)
    else:  # float16: computed in float32, then rounded into the output
        assign(outputs[0], req[0], ufunc(left, right))


(
    register("Activation")
    .describe("Applies an activation function (relu, sigmoid, tanh, softrelu, softsign) element-wise.")
    .set_params(ActivationParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(elemwise_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_activation_forward)
    .set_gradient(_activation_gradient)
    .set_inplace_option(lambda attrs: [(0, 0)])
)
(
    register("_backward_Activation")
    .set_params(ActivationParam)
    .set_num_inputs(lambda attrs: 3 if attrs.parsed.act_type == "softsign" else 2)
    .set_infer_shape(elemwise_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_activation_backward)
    .set_inplace_option(lambda attrs: [(0, 0)])
    .set_is_backward()
)


# ----------------------------------------------------------------------------- LeakyReLU
class LeakyReLUParam(ParamSet):
    act_type = Param(
        str,
        "leaky",
        "Activation function to apply.",
        choices=("elu", "gelu", "leaky", "prelu", "rrelu", "selu"),
    )
    slope = Param(float, 0.25, "Slope of the negative part (leaky, elu).")
    lower_bound = Param(float, 0.125, "Lower bound of the random slope (rrelu).")
    upper_bound = Param(float, 0.334, "Upper bound of the random slope (rrelu).")


def _leaky_num_inputs(attrs: NodeAttrs) -> int:
    return 2 if attrs.parsed.act_type == "prelu" else 1


def _leaky_num_outputs(attrs: NodeAttrs) -> int:
    return 2 if attrs.parsed.act_type == "rrelu" else 1


def _gamma_shape(dshape: tuple[int, ...], gshape: tuple[int, ...]) -> tuple[int, ...]:
    """How ``gamma`` broadcasts against the data: per channel (axis 1), one value, or full."""
    if tuple(gshape) == tuple(dshape) or math.prod(gshape) == 1:
        return tuple(gshape) if tuple(gshape) == tuple(dshape) else (1,) * len(dshape)
    return tuple(gshape[0] if i == 1 else 1 for i in range(len(dshape)))


def _leaky_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name, act_type = attrs.name, attrs.parsed.act_type
    shape_assign(out_shapes, 0, in_shapes[0], name, "output")
    shape_assign(in_shapes, 0, out_shapes[0], name, "data")
    dshape = in_shapes[0]
    if act_type == "rrelu":
        shape_assign(out_shapes, 1, dshape, name, "mask")
        shape_assign(in_shapes, 0, out_shapes[1], name, "data")
        shape_assign(out_shapes, 0, in_shapes[0], name, "output")
    if act_type == "prelu" and dshape is not None:
        gshape = in_shapes[1]
        if gshape is None:
            if len(dshape) < 2:
                raise InferenceError(
                    f"{name}: LeakyReLU(prelu) cannot infer gamma for data of shape {dshape}; "
                    "it needs at least 2 dimensions (gamma has one value per channel, axis 1)"
                )
            shape_assign(in_shapes, 1, (dshape[1],), name, "gamma")
        elif shape_known(gshape) and shape_known(dshape):
            per_channel = len(gshape) == 1 and len(dshape) >= 2 and gshape[0] == dshape[1]
            if not (per_channel or math.prod(gshape) == 1 or tuple(gshape) == tuple(dshape)):
                raise InferenceError(
                    f"{name}: LeakyReLU(prelu) gamma of shape {gshape} does not fit data of shape {dshape}; "
                    "expected (channels,) = (data.shape[1],), (1,) or the data shape"
                )
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))


def _leaky_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    p, xp = attrs.parsed, op_ctx.xp
    x = inputs[0].astype(compute_dtype(inputs[0].dtype), copy=False)
    act = p.act_type
    if act == "leaky":
        y = xp.where(x > 0, x, p.slope * x)
    elif act == "prelu":
        gamma = inputs[1].astype(x.dtype, copy=False).reshape(_gamma_shape(x.shape, inputs[1].shape))
        y = xp.where(x > 0, x, gamma * x)
    elif act == "rrelu":
        if op_ctx.is_train:
            generator = op_ctx.requested[0].generator
            slope = generator.uniform(p.lower_bound, p.upper_bound, size=x.shape).astype(x.dtype)
        else:
            slope = xp.full(x.shape, (p.lower_bound + p.upper_bound) / 2, dtype=x.dtype)
        y = xp.where(x > 0, x, slope * x)
        assign(outputs[1], req[1], slope)
    elif act == "elu":
        y = xp.where(x > 0, x, p.slope * xp.expm1(xp.minimum(x, 0)))
    elif act == "selu":
        y = SELU_LAMBDA * xp.where(x > 0, x, SELU_ALPHA * xp.expm1(xp.minimum(x, 0)))
    else:  # gelu
        y = 0.5 * x * (1 + erf_array(xp, x / math.sqrt(2)))
    assign(outputs[0], req[0], y)


def _leaky_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Backward inputs: output gradient, the forward inputs, then the forward outputs."""
    outputs = [Entry(node, i) for i in range(node.num_outputs())]
    backward = make_backward_node(node, "_backward_LeakyReLU", [out_grads[0], *node.inputs, *outputs])
    return [Entry(backward, i) for i in range(len(node.inputs))]


def _leaky_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    p, xp = attrs.parsed, op_ctx.xp
    work = compute_dtype(inputs[1].dtype)
    grad, x = inputs[0].astype(work, copy=False), inputs[1].astype(work, copy=False)
    act = p.act_type
    positive = x > 0
    if act == "leaky":
        dx = grad * xp.where(positive, 1, p.slope)
    elif act == "prelu":
        gshape = inputs[2].shape
        gamma = inputs[2].astype(work, copy=False).reshape(_gamma_shape(x.shape, gshape))
        dx = grad * xp.where(positive, 1, gamma)
        dgamma = grad * xp.where(positive, 0, x)
        bshape = _gamma_shape(x.shape, gshape)
        axes = tuple(i for i in range(x.ndim) if bshape[i] == 1)
        assign(outputs[1], req[1], dgamma.sum(axis=axes).reshape(gshape) if axes else dgamma.reshape(gshape))
    elif act == "rrelu":
        slope = inputs[3].astype(work, copy=False)  # inputs: grad, data, output, mask
        dx = grad * xp.where(positive, 1, slope)
    elif act == "elu":
        dx = grad * xp.where(positive, 1, p.slope * xp.exp(xp.minimum(x, 0)))
    elif act == "selu":
        dx = grad * SELU_LAMBDA * xp.where(positive, 1, SELU_ALPHA * xp.exp(xp.minimum(x, 0)))
    else:  # gelu: Phi(x) + x * phi(x)
        cdf = 0.5 * (1 + erf_array(xp, x / math.sqrt(2)))
        pdf = xp.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
        dx = grad * (cdf + x * pdf)
    assign(outputs[0], req[0], dx)


def _leaky_backward_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    for i in range(len(out_shapes)):
        shape_assign(out_shapes, i, in_shapes[1 + i], attrs.name, f"gradient {i}")
    return all(shape_known(s) for s in out_shapes)


def _leaky_backward_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    for i in range(len(out_types)):
        type_assign(out_types, i, in_types[1 + i], attrs.name, f"gradient {i}")
    return all(t is not None for t in out_types)


(
    register("LeakyReLU")
    .describe("Applies a leaky, parametric, randomized, exponential or Gaussian-error linear unit.")
    .set_params(LeakyReLUParam)
    .set_num_inputs(_leaky_num_inputs)
    .set_num_outputs(_leaky_num_outputs)
    .set_num_visible_outputs(1)
    .set_input_names(lambda attrs: ["data", "gamma"] if attrs.parsed.act_type == "prelu" else ["data"])
    .set_output_names(lambda attrs: ["output", "mask"] if attrs.parsed.act_type == "rrelu" else ["output"])
    .set_infer_shape(_leaky_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_leaky_forward)
    .set_gradient(_leaky_gradient)
    .set_resource_request(lambda attrs: [ResourceRequest.RANDOM] if attrs.parsed.act_type == "rrelu" else [])
)
(
    register("_backward_LeakyReLU")
    .set_params(LeakyReLUParam)
    .set_num_inputs(lambda attrs: 1 + _leaky_num_inputs(attrs) + _leaky_num_outputs(attrs))
    .set_num_outputs(_leaky_num_inputs)
    .set_infer_shape(_leaky_backward_shape)
    .set_infer_type(_leaky_backward_type)
    .set_compute(_leaky_backward)
    .set_is_backward()
)
