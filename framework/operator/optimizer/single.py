"""One weight per call: ``signsgd_update``, ``signum_update``, ``ftml_update``, ``ftrl_update``,
``lamb_update_phase1/2`` (and ``mp_``), ``_adamw_update``/``_mp_adamw_update`` and
``_contrib_group_adagrad_update``.

Each is one engine push that reads the gradient, writes the new weight (the output, usually
``out=weight``) and rewrites its optimizer state in place (declared with
``set_mutate_inputs``, so the engine orders it against every other reader of the state).
``mp_`` forms keep a float32 master copy ``weight32`` of a float16 weight (mutated too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..infer import InferenceError, shape_assign, type_assign
from ..kernel import OpContext, Req, assign
from ..node import NodeAttrs
from ..params import Param, ParamSet
from ..registry import register
from .common import CLIP, LR, RESCALE, WD, check_float, clip, rescaled, same_shapes, same_types, scalar


# ---------------------------------------------------------------------- parameters
class SignSGDParam(ParamSet):
    lr = Param(float, description=LR)
    wd = Param(float, 0.0, WD)
    rescale_grad = Param(float, 1.0, RESCALE)
    clip_gradient = Param(float, -1.0, CLIP)


class SignumParam(SignSGDParam):
    momentum = Param(float, 0.0, "The decay rate of momentum estimates at each epoch.")
    wd_lh = Param(float, 0.0, "Weight decay applied to the weight directly, outside the momentum (decoupled).")


class FTMLParam(ParamSet):
    lr = Param(float, description="Learning rate.")
    beta1 = Param(float, 0.6, "Generally close to 0.5.", low=0.0, high=1.0)
    beta2 = Param(float, 0.999, "Generally close to 1.", low=0.0, high=1.0)
    epsilon = Param(float, 1e-8, "Epsilon to prevent div 0.")
    t = Param(int, description="Number of update.", low=1)
    wd = Param(float, 0.0, WD)
    rescale_grad = Param(float, 1.0, RESCALE)
    clip_grad = Param(float, -1.0, CLIP)


class FtrlParam(ParamSet):
    lr = Param(float, description=LR)
    lamda1 = Param(float, 0.01, "The L1 regularization coefficient.")
    beta = Param(float, 1.0, "Per-Coordinate Learning Rate beta.")
    wd = Param(float, 0.0, WD)
    rescale_grad = Param(float, 1.0, RESCALE)
    clip_gradient = Param(float, -1.0, CLIP)


class LambPhase1Param(ParamSet):
    beta1 = Param(float, 0.9, "The decay rate for the 1st moment estimates.")
    beta2 = Param(float, 0.999, "The decay rate for the 2nd moment estimates.")
    epsilon = Param(float, 1e-6, "A small constant for numerical stability.")
    t = Param(int, description="Index update count.", low=1)
    bias_correction = Param(bool, True, "Whether to use bias correction.")
    wd = Param(float, description=WD)
    rescale_grad = Param(float, 1.0, RESCALE)
    clip_gradient = Param(float, -1.0, CLIP)


class LambPhase2Param(ParamSet):
    lr = Param(float, description=LR)
    lower_bound = Param(float, -1.0, "Lower limit of norm of weight. If lower_bound <= 0, Lower limit is not set")
    upper_bound = Param(float, -1.0, "Upper limit of norm of weight. If upper_bound <= 0, Upper limit is not set")


class AdamWParam(ParamSet):
    lr = Param(float, description=LR)
    beta1 = Param(float, 0.9, "The decay rate for the 1st moment estimates.")
    beta2 = Param(float, 0.999, "The decay rate for the 2nd moment estimates.")
    epsilon = Param(float, 1e-8, "A small constant for numerical stability.")
    wd = Param(float, 0.0, WD)
    eta = Param(float, description="Learning rate schedule multiplier")
    clip_gradient = Param(float, -1.0, CLIP)


class GroupAdaGradParam(ParamSet):
    lr = Param(float, description=LR)
    rescale_grad = Param(float, 1.0, RESCALE)
    clip_gradient = Param(float, -1.0, CLIP)
    epsilon = Param(float, 1e-5, "Epsilon for numerical stability")


# ---------------------------------------------------------------------- the update rules
def _signsgd(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """Only the gradient's sign matters, so rescaling and clipping (positive factors) change nothing."""
    xp, p = op_ctx.xp, attrs.parsed
    weight, grad = inputs
    one = weight.dtype.type(1)
    assign(outputs[0], req[0], (one - scalar(p.lr) * scalar(p.wd)) * weight - p.lr * xp.sign(grad))


def _signum(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """``mom`` holds minus the moving average (as MXNet's SGD momentum does); ``wd_lh`` decays the weight directly."""
    xp, p = op_ctx.xp, attrs.parsed
    weight, grad, mom = inputs
    decay = scalar(1) - scalar(p.momentum)
    g = rescaled(xp, grad, p.rescale_grad, p.clip_gradient)
    mom[...] = p.momentum * mom - decay * scalar(p.wd) * weight - decay * g
    one = weight.dtype.type(1)
    assign(outputs[0], req[0], (one - scalar(p.lr) * scalar(p.wd_lh)) * weight + p.lr * xp.sign(mom))


def _ftml(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """Follow the Moving Leader: the weight is ``-z / d``, both states rebuilt from the new gradient."""
    xp, p = op_ctx.xp, attrs.parsed
    weight, grad, d, v, z = inputs
    beta1, beta2 = scalar(p.beta1), scalar(p.beta2)
    g = clip(xp, grad * scalar(p.rescale_grad) + scalar(p.wd) * weight, p.clip_grad)
    v[...] = beta2 * v + (scalar(1) - beta2) * g * g
    bias1 = scalar(1) - beta1 ** scalar(p.t)
    bias2 = scalar(1) - beta2 ** scalar(p.t)
    d_t = bias1 / scalar(p.lr) * (xp.sqrt(v / bias2) + scalar(p.epsilon))
    z[...] = beta1 * z + (scalar(1) - beta1) * g - (d_t - beta1 * d) * weight
    d[...] = d_t
    assign(outputs[0], req[0], -z / d_t)


def _ftrl(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """Follow the Regularized Leader (proximal): weights with ``|z| <= lamda1`` become exactly 0."""
    xp, p = op_ctx.xp, attrs.parsed
    weight, grad, z, n = inputs
    lr = scalar(p.lr)
    g = rescaled(xp, grad, p.rescale_grad, p.clip_gradient)
    z += g - (xp.sqrt(n + g * g) - xp.sqrt(n)) * weight / lr
    n += g * g
    new = (xp.sign(z) * scalar(p.lamda1) - z) / ((scalar(p.beta) + xp.sqrt(n)) / lr + scalar(p.wd))
    assign(outputs[0], req[0], new * (xp.abs(z) > p.lamda1))


def _lamb_direction(xp: Any, p: ParamSet, weight: Any, grad: Any, mean: Any, var: Any) -> Any:
    """Phase 1: Adam's moments (updated in place) turned into a direction, plus decoupled decay."""
    beta1, beta2 = scalar(p.beta1), scalar(p.beta2)
    g = rescaled(xp, grad, p.rescale_grad, p.clip_gradient)
    mean[...] = beta1 * mean + (scalar(1) - beta1) * g
    var[...] = beta2 * var + (scalar(1) - beta2) * g * g
    if p.bias_correction:
        mean_hat = mean / (scalar(1) - beta1 ** scalar(p.t))
        var_hat = var / (scalar(1) - beta2 ** scalar(p.t))
    else:
        mean_hat, var_hat = mean, var
    return mean_hat / (xp.sqrt(var_hat) + scalar(p.epsilon)) + scalar(p.wd) * weight


def _lamb_phase1(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    weight, grad, mean, var = inputs
    assign(outputs[0], req[0], _lamb_direction(op_ctx.xp, attrs.parsed, weight, grad, mean, var))


def _mp_lamb_phase1(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    _, grad, mean, var, weight32 = inputs
    g = _lamb_direction(op_ctx.xp, attrs.parsed, weight32, grad.astype(weight32.dtype), mean, var)
    assign(outputs[0], req[0], g)


def _lamb_step(xp: Any, p: ParamSet, weight: Any, g: Any, r1: Any, r2: Any) -> Any:
    """Phase 2: the trust ratio ``r1 / r2`` (weight norm over direction norm) scales the step.

    ``r1`` and ``r2`` are one-element arrays (usually from ``norm``), so the ratio stays on the device.
    """
    r1 = r1.astype(weight.dtype)
    if p.lower_bound >= 0:
        r1 = xp.maximum(r1, weight.dtype.type(p.lower_bound))
    if p.upper_bound >= 0:
        r1 = xp.minimum(r1, weight.dtype.type(p.upper_bound))
    r2 = r2.astype(weight.dtype)
    valid = (r1 != 0) & (r2 != 0)
    ratio = xp.where(valid, r1 / xp.where(valid, r2, 1), 1).astype(weight.dtype)
    return weight - scalar(p.lr) * ratio.reshape(-1)[0] * g


def _lamb_phase2(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    weight, g, r1, r2 = inputs
    assign(outputs[0], req[0], _lamb_step(op_ctx.xp, attrs.parsed, weight, g, r1, r2))


def _mp_lamb_phase2(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    _, g, r1, r2, weight32 = inputs
    weight32[...] = _lamb_step(op_ctx.xp, attrs.parsed, weight32, g, r1, r2)
    assign(outputs[0], req[0], weight32.astype(outputs[0].dtype))


def _adamw_step(xp: Any, p: ParamSet, weight: Any, grad: Any, mean: Any, var: Any, rescale: Any) -> Any:
    """Adam's moments, with the weight decay kept out of them (decoupled) and both scaled by ``eta``."""
    beta1, beta2 = scalar(p.beta1), scalar(p.beta2)
    g = clip(xp, grad * rescale, p.clip_gradient)
    mean[...] = beta1 * mean + (scalar(1) - beta1) * g
    var[...] = beta2 * var + (scalar(1) - beta2) * g * g
    eta, lr = scalar(p.eta), scalar(p.lr)
    return weight - eta * (lr * mean / (xp.sqrt(var) + scalar(p.epsilon)) + scalar(p.wd) * weight)


def _rescale_or_skip(xp: Any, rescale_grad: Any, dtype: Any) -> Any:
    """``rescale_grad`` as a scalar, or None when it is 0, NaN or infinite: MXNet skips such a step
    (a dynamic loss scaler signals an overflowed gradient this way)."""
    value = rescale_grad.reshape(-1)[0].astype(dtype)
    if not bool(xp.isfinite(value)) or float(value) == 0:
        return None
    return value


def _adamw(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    xp = op_ctx.xp
    weight, grad, mean, var, rescale_grad = inputs
    rescale = _rescale_or_skip(xp, rescale_grad, weight.dtype)
    if rescale is None:
        if outputs[0] is not weight:
            assign(outputs[0], req[0], weight.copy())
        return
    assign(outputs[0], req[0], _adamw_step(xp, attrs.parsed, weight, grad, mean, var, rescale))


def _mp_adamw(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    xp = op_ctx.xp
    _, grad, mean, var, weight32, rescale_grad = inputs
    rescale = _rescale_or_skip(xp, rescale_grad, weight32.dtype)
    if rescale is not None:
        weight32[...] = _adamw_step(xp, attrs.parsed, weight32, grad.astype(weight32.dtype), mean, var, rescale)
    assign(outputs[0], req[0], weight32.astype(outputs[0].dtype))


def _group_adagrad(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """AdaGrad with one history value per row: the mean squared gradient of the row accumulates."""
    xp, p = op_ctx.xp, attrs.parsed
    weight, grad, history = inputs
    g = rescaled(xp, grad, p.rescale_grad, p.clip_gradient)
    rows = g.reshape(g.shape[0], -1)
    history += xp.mean(rows * rows, axis=1).reshape(history.shape).astype(history.dtype)
    scale = history.reshape((g.shape[0],) + (1,) * (g.ndim - 1))
    assign(outputs[0], req[0], weight - scalar(p.lr) * g / xp.sqrt(scale + scalar(p.epsilon)))


# ---------------------------------------------------------------------- inference
def _elemwise_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    """Every input and the output share the weight's shape (``r1``/``r2`` of phase 2 excepted)."""
    n = len(in_shapes)
    if attrs.op.name.endswith("phase2"):
        for i in (2, 3):
            shape_assign(in_shapes, i, (1,), attrs.name, f"input {i}")
        tensors = [i for i in range(n) if i not in (2, 3)]
    elif attrs.op.name in ("_adamw_update", "_mp_adamw_update"):
        shape_assign(in_shapes, n - 1, (1,), attrs.name, "rescale_grad")
        tensors = list(range(n - 1))
    else:
        tensors = list(range(n))
    return same_shapes(attrs, in_shapes, out_shapes, tensors, [0]) and all(s is not None for s in in_shapes)


def _group_adagrad_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    """``history`` holds one value per row: shape ``(rows, 1)``."""
    done = same_shapes(attrs, in_shapes, out_shapes, [0, 1], [0])
    if done:
        if len(in_shapes[0]) < 2:
            raise InferenceError(f"{attrs.name}: weight must have at least 2 dimensions, got {in_shapes[0]}")
        shape_assign(in_shapes, 2, (in_shapes[0][0], 1), attrs.name, "history")
    return done


def _elemwise_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    done = same_types(attrs, in_types, out_types, list(range(len(in_types))), [0])
    check_float(attrs, in_types)
    return done


def _mp_type(first_float32: int, float32_output: bool) -> Callable[..., bool]:
    """weight and grad share a dtype (float16 usually); inputs from ``first_float32`` on are float32.

    ``mp_lamb_update_phase1`` returns the float32 direction; the others return the weight's dtype.
    """

    def infer(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
        weight_group = [0, 1] if not attrs.op.name.endswith("phase2") else [0]
        done = same_types(attrs, in_types, out_types, weight_group, [] if float32_output else [0])
        for i in range(first_float32, len(in_types)):
            type_assign(in_types, i, "float32", attrs.name, f"input {i}")
        if attrs.op.name.endswith("phase2"):
            type_assign(in_types, 1, "float32", attrs.name, "g")
        if float32_output:
            type_assign(out_types, 0, "float32", attrs.name, "output")
        check_float(attrs, in_types)
        return done and all(t is not None for t in in_types)

    return infer


# ---------------------------------------------------------------------- registration
_OPS = (
    # name, params, inputs, mutated inputs, compute, type function, shape function, description
    (
        "signsgd_update",
        SignSGDParam,
        ["weight", "grad"],
        [],
        _signsgd,
        _elemwise_type,
        _elemwise_shape,
        "Update function for SignSGD optimizer.\n\n    weight = (1 - lr * wd) * weight - lr * sign(grad)",
    ),
    (
        "signum_update",
        SignumParam,
        ["weight", "grad", "mom"],
        [2],
        _signum,
        _elemwise_type,
        _elemwise_shape,
        "SIGN momentUM (Signum) optimizer.\n\n"
        "    mom = momentum * mom - (1 - momentum) * (wd * weight + clip(rescale_grad * grad))\n"
        "    weight = (1 - lr * wd_lh) * weight + lr * sign(mom)",
    ),
    (
        "ftml_update",
        FTMLParam,
        ["weight", "grad", "d", "v", "z"],
        [2, 3, 4],
        _ftml,
        _elemwise_type,
        _elemwise_shape,
        "The FTML optimizer (Follow the Moving Leader, Zheng & Kwok 2017).\n\n"
        "    g = clip(rescale_grad * grad + wd * weight)\n"
        "    v = beta2 * v + (1 - beta2) * g**2\n"
        "    d_t = (1 - beta1**t) / lr * (sqrt(v / (1 - beta2**t)) + epsilon)\n"
        "    z = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * weight\n"
        "    d = d_t;  weight = -z / d_t",
    ),
    (
        "ftrl_update",
        FtrlParam,
        ["weight", "grad", "z", "n"],
        [2, 3],
        _ftrl,
        _elemwise_type,
        _elemwise_shape,
        "Update function for Ftrl optimizer (McMahan et al., Ad Click Prediction).\n\n"
        "    g = clip(rescale_grad * grad)\n"
        "    z += g - (sqrt(n + g**2) - sqrt(n)) * weight / lr\n"
        "    n += g**2\n"
        "    weight = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) * (abs(z) > lamda1)",
    ),
    (
        "lamb_update_phase1",
        LambPhase1Param,
        ["weight", "grad", "mean", "var"],
        [2, 3],
        _lamb_phase1,
        _elemwise_type,
        _elemwise_shape,
        "Phase I of the LAMB update (You et al. 2019): returns the direction g.\n\n"
        "    grad = clip(rescale_grad * grad)\n"
        "    mean = beta1 * mean + (1 - beta1) * grad;  var = beta2 * var + (1 - beta2) * grad**2\n"
        "    g = mean_hat / (sqrt(var_hat) + epsilon) + wd * weight   (hats: bias-corrected if bias_correction)",
    ),
    (
        "lamb_update_phase2",
        LambPhase2Param,
        ["weight", "g", "r1", "r2"],
        [],
        _lamb_phase2,
        _elemwise_type,
        _elemwise_shape,
        "Phase II of the LAMB update: weight = weight - lr * (r1 / r2) * g, with r1 (the weight's norm) "
        "clamped to [lower_bound, upper_bound] when those are >= 0, and the ratio 1 when r1 or r2 is 0.",
    ),
    (
        "mp_lamb_update_phase1",
        LambPhase1Param,
        ["weight", "grad", "mean", "var", "weight32"],
        [2, 3],
        _mp_lamb_phase1,
        _mp_type(2, True),
        _elemwise_shape,
        "Mixed precision version of Phase I of the LAMB update (float32 master weight, float32 g).",
    ),
    (
        "mp_lamb_update_phase2",
        LambPhase2Param,
        ["weight", "g", "r1", "r2", "weight32"],
        [4],
        _mp_lamb_phase2,
        _mp_type(1, False),
        _elemwise_shape,
        "Mixed precision version of Phase II of the LAMB update (updates weight32, writes its rounded copy).",
    ),
    (
        "_adamw_update",
        AdamWParam,
        ["weight", "grad", "mean", "var", "rescale_grad"],
        [2, 3],
        _adamw,
        _elemwise_type,
        _elemwise_shape,
        "Update function for AdamW optimizer (Adam with decoupled weight decay).\n\n"
        "    g = clip(rescale_grad * grad)\n"
        "    mean = beta1 * mean + (1 - beta1) * g;  var = beta2 * var + (1 - beta2) * g**2\n"
        "    weight -= eta * (lr * mean / (sqrt(var) + epsilon) + wd * weight)\n\n"
        "rescale_grad is a one-element array; when it is 0, NaN or infinite the step is skipped.",
    ),
    (
        "_mp_adamw_update",
        AdamWParam,
        ["weight", "grad", "mean", "var", "weight32", "rescale_grad"],
        [2, 3, 4],
        _mp_adamw,
        _mp_type(2, False),
        _elemwise_shape,
        "Update function for multi-precision AdamW optimizer (float32 master weight).",
    ),
    (
        "_contrib_group_adagrad_update",
        GroupAdaGradParam,
        ["weight", "grad", "history"],
        [2],
        _group_adagrad,
        _elemwise_type,
        _group_adagrad_shape,
        "Update function for Group AdaGrad optimizer (one accumulated history value per row).\n\n"
        "    grad = clip(rescale_grad * grad)\n"
        "    history += mean(grad**2 over each row), shape (rows, 1)\n"
        "    weight -= lr * grad / sqrt(history + epsilon)",
    ),
)

for _name, _params, _inputs, _mutated, _compute, _type_fn, _shape_fn, _doc in _OPS:
    (
        register(_name)
        .describe(_doc)
        .set_params(_params)
        .set_num_inputs(len(_inputs))
        .set_num_outputs(1)
        .set_input_names(_inputs)
        .set_infer_shape(_shape_fn)
        .set_infer_type(_type_fn)
        .set_compute(_compute)
        .set_mutate_inputs(lambda attrs, m=tuple(_mutated): list(m))
    )
