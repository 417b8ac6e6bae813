"""Optimizer update operators: ``sgd_update``, ``adam_update``, ... (MXNet's ``optimizer_op.cc``).

An optimizer step is an operator like any other. ``mx.optimizer.SGD`` does not loop over
the weight in Python; it calls ``mx.nd.sgd_mom_update(weight, grad, mom, out=weight,
lr=..., momentum=...)``, which is one engine push that

* reads ``grad``,
* writes ``weight`` (the output, given as ``out=weight``), and
* writes the optimizer state (``mom``): the operator declares it with
  ``set_mutate_inputs``, so the engine orders the update after every earlier read of the
  momentum and before every later one, exactly as for BatchNorm's moving statistics.

So an update queues behind the backward pass that produces ``grad`` and in front of the
next forward pass that reads ``weight``, without any explicit synchronisation.

Conventions shared by every operator here (MXNet 1.x's kernels):

* ``grad`` is first multiplied by ``rescale_grad`` (usually ``1 / batch_size``);
* ``clip_gradient >= 0`` clips the rescaled gradient to ``[-clip_gradient, clip_gradient]``;
  the default -1 switches clipping off (the Python optimizers only pass it when set);
* ``wd`` is L2 weight decay: ``wd * weight`` is added to the gradient;
* the state inputs are updated in place, whatever ``req`` says for the output;
* none of them has a gradient.

``mp_*`` variants keep a float32 master copy of a float16 weight (``weight32``, updated in
place) and write its rounded value into the float16 output, so small updates are not lost to
float16 rounding (MXNet's ``multi_precision=True``).

``adagrad_update`` has no dense counterpart in MXNet 1.x (only ``_sparse_adagrad_update``;
the Python ``AdaGrad`` composes small operators instead); MXLab registers it so that AdaGrad
is one push too, with the same arithmetic as MXNet's Python code.
"""

from __future__ import annotations

from typing import Any

from ..infer import InferenceError, elemwise_shape, elemwise_type, type_assign
from ..kernel import INPLACE, OpContext, Req, assign
from ..node import NodeAttrs
from ..optimizer.common import sgd_in_place
from ..params import Param, ParamSet
from ..registry import register

_LR = "Learning rate"
_WD = (
    "Weight decay augments the objective function with a regularization term that penalizes large weights. "
    "The penalty scales with the square of the magnitude of each weight."
)
_RESCALE = "Rescale gradient to grad = rescale_grad*grad."
_CLIP = (
    "Clip gradient to the range of [-clip_gradient, clip_gradient] If clip_gradient <= 0, gradient clipping "
    "is turned off. grad = max(min(grad, clip_gradient), -clip_gradient)."
)
_CLIP_W = (
    "Clip weights to the range of [-clip_weights, clip_weights] If clip_weights <= 0, weight clipping is "
    "turned off. weights = max(min(weights, clip_weights), -clip_weights)."
)
_LAZY = "If true, lazy updates are applied if gradient's stype is row_sparse (MXLab arrays are dense: no effect)."
_MOMENTUM = "The decay rate of momentum estimates at each epoch."
_EPS = "A small constant for numerical stability."


class SGDParam(ParamSet):
    lr = Param(float, description=_LR)
    wd = Param(float, 0.0, _WD)
    rescale_grad = Param(float, 1.0, _RESCALE)
    clip_gradient = Param(float, -1.0, _CLIP)
    lazy_update = Param(bool, True, _LAZY)


class SGDMomParam(ParamSet):
    lr = Param(float, description=_LR)
    momentum = Param(float, 0.0, _MOMENTUM)
    wd = Param(float, 0.0, _WD)
    rescale_grad = Param(float, 1.0, _RESCALE)
    clip_gradient = Param(float, -1.0, _CLIP)
    lazy_update = Param(bool, True, _LAZY)


class NAGMomParam(ParamSet):
    lr = Param(float, description=_LR)
    momentum = Param(float, 0.0, _MOMENTUM)
    wd = Param(float, 0.0, _WD)
    rescale_grad = Param(float, 1.0, _RESCALE)
    clip_gradient = Param(float, -1.0, _CLIP)


class AdamParam(ParamSet):
    lr = Param(float, description=_LR)
    beta1 = Param(float, 0.9, "The decay rate for the 1st moment estimates.")
    beta2 = Param(float, 0.999, "The decay rate for the 2nd moment estimates.")
    epsilon = Param(float, 1e-8, _EPS)
    wd = Param(float, 0.0, _WD)
    rescale_grad = Param(float, 1.0, _RESCALE)
    clip_gradient = Param(float, -1.0, _CLIP)
    lazy_update = Param(bool, True, _LAZY)


class RMSPropParam(ParamSet):
    lr = Param(float, description=_LR)
    gamma1 = Param(float, 0.95, "The decay rate of momentum estimates.")
    epsilon = Param(float, 1e-8, _EPS)
    wd = Param(float, 0.0, _WD)
    rescale_grad = Param(float, 1.0, _RESCALE)
    clip_gradient = Param(float, -1.0, _CLIP)
    clip_weights = Param(float, -1.0, _CLIP_W)


class RMSPropAlexParam(ParamSet):
    lr = Param(float, description=_LR)
    gamma1 = Param(float, 0.95, "Decay rate.")
    gamma2 = Param(float, 0.9, "Decay rate.")
    epsilon = Param(float, 1e-8, _EPS)
    wd = Param(float, 0.0, _WD)
    rescale_grad = Param(float, 1.0, _RESCALE)
    clip_gradient = Param(float, -1.0, _CLIP)
    clip_weights = Param(float, -1.0, _CLIP_W)


class AdaGradParam(ParamSet):
    lr = Param(float, description=_LR)
    epsilon = Param(float, 1e-7, "Added to the history before the square root (the optimizer's ``eps``).")
    wd = Param(float, 0.0, _WD)
    rescale_grad = Param(float, 1.0, _RESCALE)
    clip_gradient = Param(float, -1.0, _CLIP)


# ---------------------------------------------------------------------- shared arithmetic
def _clip(xp: Any, value: Any, bound: float) -> Any:
    """MXNet's convention: a negative bound means "no clipping"."""
    return xp.clip(value, -bound, bound) if bound >= 0 else value


def _rescaled(xp: Any, p: ParamSet, grad: Any) -> Any:
    """``clip(rescale_grad * grad)``: the gradient as SGD-family kernels use it."""
    return _clip(xp, p.rescale_grad * grad, p.clip_gradient)


def _rescaled_with_wd(xp: Any, p: ParamSet, grad: Any, weight: Any) -> Any:
    """``clip(rescale_grad * grad + wd * weight)``: Adam and RMSProp fold decay in before clipping."""
    return _clip(xp, p.rescale_grad * grad + p.wd * weight, p.clip_gradient)


def _nag_step(xp: Any, p: ParamSet, weight: Any, grad: Any, mom: Any, write: Any) -> None:
    """MXNet's NAG kernel, in its order: scale ``mom``, ``write`` the new weight, then finish ``mom``.

    The momentum's decay term reads ``weight`` *after* the write. When the output is the
    weight itself (``out=weight``, as the optimizer calls it) that is the updated weight: a
    quirk of MXNet 1.x's kernel that MXLab keeps so the numbers match.
    """
    g = _rescaled(xp, p, grad)
    mom *= p.momentum
    write(weight - mom + (p.momentum + 1) * (mom - p.lr * (g + p.wd * weight)))
    mom -= p.lr * (g + p.wd * weight)


# ---------------------------------------------------------------------- compute functions
def _sgd_rule(p: ParamSet) -> tuple[float, float, float, float, float]:
    """``lr, wd, momentum, rescale_grad, clip_gradient`` for :func:`sgd_in_place`."""
    return p.lr, p.wd, getattr(p, "momentum", 0.0), p.rescale_grad, p.clip_gradient


def _sgd_update(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    weight, grad = inputs
    sgd_in_place(op_ctx.xp, weight, grad, None, outputs[0], req[0], *_sgd_rule(attrs.parsed))


def _sgd_mom_update(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """In place, with one temporary: this runs once per weight per step, so it matters."""
    weight, grad, mom = inputs
    sgd_in_place(op_ctx.xp, weight, grad, mom, outputs[0], req[0], *_sgd_rule(attrs.parsed))


def _nag_mom_update(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    weight, grad, mom = inputs
    _nag_step(op_ctx.xp, attrs.parsed, weight, grad, mom, lambda value: assign(outputs[0], req[0], value))


def _mp_sgd_update(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    _, grad, weight32 = inputs
    sgd_in_place(op_ctx.xp, weight32, grad, None, weight32, INPLACE, *_sgd_rule(attrs.parsed))
    assign(outputs[0], req[0], weight32.astype(outputs[0].dtype))


def _mp_sgd_mom_update(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    _, grad, mom, weight32 = inputs
    sgd_in_place(op_ctx.xp, weight32, grad, mom, weight32, INPLACE, *_sgd_rule(attrs.parsed))
    assign(outputs[0], req[0], weight32.astype(outputs[0].dtype))


def _mp_nag_mom_update(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    _, grad, mom, weight32 = inputs

    def write(value: Any) -> None:
        weight32[...] = value

    _nag_step(op_ctx.xp, attrs.parsed, weight32, grad.astype(weight32.dtype), mom, write)
    assign(outputs[0], req[0], weight32.astype(outputs[0].dtype))


def _adam_update(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """Adam without bias correction: the Python optimizer folds it into ``lr``.

    MXNet's parameters are C ``float``, so ``1 - beta`` is computed in float32 there:
    ``1.f - 0.999f`` is 1.00005e-3, not float32(0.001). Computing it in float64 first (as
    Python would) scales every variance by 4e-5 and drifts from MXNet's trajectory.
    """
    xp, p = op_ctx.xp, attrs.parsed
    weight, grad, mean, var = inputs
    beta1, beta2 = weight.dtype.type(p.beta1), weight.dtype.type(p.beta2)
    one = weight.dtype.type(1)
    g = _rescaled_with_wd(xp, p, grad, weight)
    mean[...] = beta1 * mean + (one - beta1) * g
    var[...] = beta2 * var + (one - beta2) * g * g
    assign(outputs[0], req[0], weight - p.lr * mean / (xp.sqrt(var) + p.epsilon))


def _rmsprop_update(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """Tieleman & Hinton: divide the gradient by a running root mean square of recent gradients.

    ``1 - gamma1`` is computed in the weight's dtype, as MXNet's C ``float`` does (see Adam).
    """
    xp, p = op_ctx.xp, attrs.parsed
    weight, grad, n = inputs
    gamma1 = weight.dtype.type(p.gamma1)
    g = _rescaled_with_wd(xp, p, grad, weight)
    n[...] = (weight.dtype.type(1) - gamma1) * g * g + gamma1 * n
    new_weight = _clip(xp, weight - p.lr * g / xp.sqrt(n + p.epsilon), p.clip_weights)
    assign(outputs[0], req[0], new_weight)


def _rmspropalex_update(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """Graves' centred RMSProp: divide by the running standard deviation, with momentum ``gamma2``.

    ``1 - gamma1`` is computed in the weight's dtype, as MXNet's C ``float`` does (see Adam).
    """
    xp, p = op_ctx.xp, attrs.parsed
    weight, grad, n, g_avg, delta = inputs
    gamma1 = weight.dtype.type(p.gamma1)
    one_minus_gamma1 = weight.dtype.type(1) - gamma1
    g = _rescaled_with_wd(xp, p, grad, weight)
    n[...] = one_minus_gamma1 * g * g + gamma1 * n
    g_avg[...] = one_minus_gamma1 * g + gamma1 * g_avg
    delta[...] = p.gamma2 * delta - p.lr * g / xp.sqrt(n - g_avg * g_avg + p.epsilon)
    assign(outputs[0], req[0], _clip(xp, weight + delta, p.clip_weights))


def _adagrad_update(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """AdaGrad: the step shrinks with the accumulated squared gradient of each element."""
    xp, p = op_ctx.xp, attrs.parsed
    weight, grad, history = inputs
    g = _rescaled(xp, p, grad)
    history += g * g
    assign(outputs[0], req[0], weight - p.lr * (g / xp.sqrt(history + p.epsilon) + p.wd * weight))


# ---------------------------------------------------------------------- inference
def _mp_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    """weight, grad and the output share a dtype; momentum and weight32 are float32."""
    elemwise_type(attrs, [in_types[0], in_types[1]], out_types)
    weight_type = out_types[0]
    in_types[0] = in_types[1] = weight_type
    for i in range(2, len(in_types)):
        type_assign(in_types, i, "float32", attrs.name, f"input {i}")
    return weight_type is not None


def _check_float(infer_type: Any) -> Any:
    """Wrap a type function: the update arithmetic needs floating-point arrays."""

    def infer(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
        done = infer_type(attrs, in_types, out_types)
        for i, t in enumerate(in_types):
            if t is not None and not t.startswith("float"):
                raise InferenceError(f"{attrs.name}: input {i} must be a floating-point array, got {t}")
        return done

    return infer


_OPS = (
    # name, params, inputs, mutated inputs, compute, type function, description
    (
        "sgd_update",
        SGDParam,
        ["weight", "grad"],
        [],
        _sgd_update,
        elemwise_type,
        "Update function for Stochastic Gradient Descent (SGD) optimizer.\n\n"
        "    weight = (1 - lr * wd) * weight - lr * clip(rescale_grad * grad)",
    ),
    (
        "sgd_mom_update",
        SGDMomParam,
        ["weight", "grad", "mom"],
        [2],
        _sgd_mom_update,
        elemwise_type,
        "Momentum update function for Stochastic Gradient Descent (SGD) optimizer.\n\n"
        "    mom = momentum * mom - lr * wd * weight - lr * clip(rescale_grad * grad)\n"
        "    weight = weight + mom",
    ),
    (
        "nag_mom_update",
        NAGMomParam,
        ["weight", "grad", "mom"],
        [2],
        _nag_mom_update,
        elemwise_type,
        "Update function for Nesterov Accelerated Gradient (NAG) optimizer.\n\n"
        "    g = clip(rescale_grad * grad) + wd * weight\n"
        "    mom = momentum * mom - lr * g\n"
        "    weight = weight + momentum * mom - lr * g\n\n"
        "With ``out=weight`` the decay term of ``mom`` reads the updated weight, as in MXNet 1.x.",
    ),
    (
        "mp_sgd_update",
        SGDParam,
        ["weight", "grad", "weight32"],
        [2],
        _mp_sgd_update,
        _mp_type,
        "Updater function for multi-precision sgd optimizer (float32 master copy ``weight32``).",
    ),
    (
        "mp_sgd_mom_update",
        SGDMomParam,
        ["weight", "grad", "mom", "weight32"],
        [2, 3],
        _mp_sgd_mom_update,
        _mp_type,
        "Updater function for multi-precision sgd optimizer with momentum.",
    ),
    (
        "mp_nag_mom_update",
        NAGMomParam,
        ["weight", "grad", "mom", "weight32"],
        [2, 3],
        _mp_nag_mom_update,
        _mp_type,
        "Update function for multi-precision Nesterov Accelerated Gradient (NAG) optimizer.",
    ),
    (
        "adam_update",
        AdamParam,
        ["weight", "grad", "mean", "var"],
        [2, 3],
        _adam_update,
        elemwise_type,
        "Update function for Adam optimizer.\n\n"
        "    g = clip(rescale_grad * grad + wd * weight)\n"
        "    mean = beta1 * mean + (1 - beta1) * g\n"
        "    var = beta2 * var + (1 - beta2) * g**2\n"
        "    weight = weight - lr * mean / (sqrt(var) + epsilon)",
    ),
    (
        "rmsprop_update",
        RMSPropParam,
        ["weight", "grad", "n"],
        [2],
        _rmsprop_update,
        elemwise_type,
        "Update function for `RMSProp` optimizer.\n\n"
        "    g = clip(rescale_grad * grad + wd * weight)\n"
        "    n = (1 - gamma1) * g**2 + gamma1 * n\n"
        "    weight = clip_weights(weight - lr * g / sqrt(n + epsilon))",
    ),
    (
        "rmspropalex_update",
        RMSPropAlexParam,
        ["weight", "grad", "n", "g", "delta"],
        [2, 3, 4],
        _rmspropalex_update,
        elemwise_type,
        "Update function for RMSPropAlex optimizer (Graves' centred RMSProp).\n\n"
        "    g = clip(rescale_grad * grad + wd * weight)\n"
        "    n = (1 - gamma1) * g**2 + gamma1 * n\n"
        "    g_avg = (1 - gamma1) * g + gamma1 * g_avg\n"
        "    delta = gamma2 * delta - lr * g / sqrt(n - g_avg**2 + epsilon)\n"
        "    weight = clip_weights(weight + delta)",
    ),
    (
        "adagrad_update",
        AdaGradParam,
        ["weight", "grad", "history"],
        [2],
        _adagrad_update,
        elemwise_type,
        "Update function for AdaGrad optimizer (dense; MXNet 1.x composes it in Python).\n\n"
        "    g = clip(rescale_grad * grad)\n"
        "    history = history + g**2\n"
        "    weight = weight - lr * (g / sqrt(history + epsilon) + wd * weight)",
    ),
)

for _name, _params, _inputs, _mutated, _compute, _type_fn, _doc in _OPS:
    (
        register(_name)
        .describe(_doc)
        .set_params(_params)
        .set_num_inputs(len(_inputs))
        .set_num_outputs(1)
        .set_input_names(_inputs)
        .set_infer_shape(elemwise_shape)
        .set_infer_type(_check_float(_type_fn))
        .set_compute(_compute)
        .set_mutate_inputs(lambda attrs, m=tuple(_mutated): list(m))
    )
