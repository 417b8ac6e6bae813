"""Many weights per call: ``multi_sgd_update``, ``multi_sgd_mom_update``, their ``mp_`` forms, the
``preloaded_multi_*`` forms, ``_multi_adamw_update``, ``_multi_lamb_update`` (and ``mp_``) and
``multi_lars``.

A network has hundreds of weights; pushing one update operation per weight costs one engine
round trip each. The multi forms take all of them in one operation: the inputs are groups
``weight_i, grad_i[, mom_i][, weight32_i]`` for ``i < num_weights``, the outputs are the
``num_weights`` new weights, and each weight has its own learning rate and weight decay:
parameters ``lrs``/``wds`` (tuples), or, in the ``preloaded_`` forms, two trailing
``(num_weights,)`` arrays, so a schedule (LARS, ``multi_lars``) can compute them on the device.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..infer import InferenceError, shape_assign, type_assign
from ..kernel import INPLACE, OpContext, Req, assign
from ..node import NodeAttrs
from ..params import OperatorParamError, Param, ParamSet, Shape
from ..registry import register
from .common import CLIP, RESCALE, WD, ListParams, check_float, parse_float_list, scalar, sgd_in_place
from .single import _adamw_step, _lamb_direction, _lamb_step, _rescale_or_skip

_NUM_WEIGHTS = "Number of updated weights."


class _MultiBase(ParamSet):
    rescale_grad = Param(float, 1.0, RESCALE)
    clip_gradient = Param(float, -1.0, CLIP)
    num_weights = Param(int, 1, _NUM_WEIGHTS, low=1)


class MultiSGDParam(ListParams):
    list_fields = ("lrs", "wds")
    lrs = Param(str, description="Learning rates.")
    wds = Param(str, description=WD)
    rescale_grad = Param(float, 1.0, RESCALE)
    clip_gradient = Param(float, -1.0, CLIP)
    num_weights = Param(int, 1, _NUM_WEIGHTS, low=1)


class MultiSGDMomParam(MultiSGDParam):
    momentum = Param(float, 0.0, "The decay rate of momentum estimates at each epoch.")


class PreloadedSGDParam(_MultiBase):
    pass


class PreloadedSGDMomParam(_MultiBase):
    momentum = Param(float, 0.0, "The decay rate of momentum estimates at each epoch.")


class MultiLarsParam(ParamSet):
    eta = Param(float, description="LARS eta")
    eps = Param(float, description="LARS eps")
    rescale_grad = Param(float, 1.0, "Gradient rescaling factor")


def _count(attrs: NodeAttrs) -> int:
    """How many weights the operation updates (LAMB calls it ``num_tensors``)."""
    return getattr(attrs.parsed, getattr(type(attrs.parsed), "count_field", "num_weights"))


def _compute(group: int, momentum: bool, mp: bool, preloaded: bool) -> Callable[..., None]:
    def compute(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
        xp, p = op_ctx.xp, attrs.parsed
        n = p.num_weights
        if preloaded:
            lrs, wds = (a.tolist() if hasattr(a, "tolist") else list(a) for a in inputs[n * group :])
            lrs, wds = [float(v) for v in lrs], [float(v) for v in wds]
        else:
            lrs, wds = parse_float_list(p.lrs), parse_float_list(p.wds)
        for i in range(n):
            arrays = inputs[i * group : (i + 1) * group]
            weight, grad = arrays[0], arrays[1]
            mom = arrays[2] if momentum else None
            rule = (lrs[i], wds[i], getattr(p, "momentum", 0.0), p.rescale_grad, p.clip_gradient)
            if mp:
                weight32 = arrays[-1]
                sgd_in_place(xp, weight32, grad, mom, weight32, INPLACE, *rule)
                assign(outputs[i], req[i], weight32.astype(outputs[i].dtype))
            else:
                sgd_in_place(xp, weight, grad, mom, outputs[i], req[i], *rule)

    return compute


def _input_names(kinds: tuple[str, ...], preloaded: bool) -> Callable[[NodeAttrs], list[str]]:
    def names(attrs: NodeAttrs) -> list[str]:
        listed = [f"{kind}_{i}" for i in range(attrs.parsed.num_weights) for kind in kinds]
        return [*listed, "lrs", "wds"] if preloaded else listed

    return names


def _shape(group: int, preloaded: bool) -> Callable[..., bool]:
    """Each group's arrays share the weight's shape (and output ``i``); preloaded lrs/wds are ``(n,)``."""

    def infer(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
        n = _count(attrs)
        for i in range(n):
            members = list(range(i * group, (i + 1) * group))
            known = next((in_shapes[j] for j in members if in_shapes[j]), out_shapes[i])
            if known is None:
                continue
            for j in members:
                shape_assign(in_shapes, j, known, attrs.name, f"input {j}")
            shape_assign(out_shapes, i, known, attrs.name, f"output {i}")
        if preloaded:
            for j in (n * group, n * group + 1):
                shape_assign(in_shapes, j, (n,), attrs.name, "lrs" if j == n * group else "wds")
        return all(s is not None for s in in_shapes)

    return infer


def _type(group: int, mp: bool, preloaded: bool) -> Callable[..., bool]:
    """Weight, grad and output share a dtype per group; momentum/weight32 of ``mp_`` forms are float32."""

    def infer(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
        n = _count(attrs)
        for i in range(n):
            base = i * group
            same = [base, base + 1] if mp else list(range(base, base + group))
            known = next((in_types[j] for j in same if in_types[j]), out_types[i])
            if known is not None:
                for j in same:
                    type_assign(in_types, j, known, attrs.name, f"input {j}")
                type_assign(out_types, i, known, attrs.name, f"output {i}")
            if mp:
                for j in range(base + 2, base + group):
                    type_assign(in_types, j, "float32", attrs.name, f"input {j}")
        if preloaded:
            for j in (n * group, n * group + 1):
                type_assign(in_types, j, "float32", attrs.name, f"input {j}")
        check_float(attrs, in_types)
        return all(t is not None for t in in_types)

    return infer


_MULTI = (
    # name, params, kinds of each group's arrays, momentum, mixed precision, preloaded
    ("multi_sgd_update", MultiSGDParam, ("weight", "grad"), False, False, False),
    ("multi_sgd_mom_update", MultiSGDMomParam, ("weight", "grad", "mom"), True, False, False),
    ("multi_mp_sgd_update", MultiSGDParam, ("weight", "grad", "weight32"), False, True, False),
    ("multi_mp_sgd_mom_update", MultiSGDMomParam, ("weight", "grad", "mom", "weight32"), True, True, False),
    ("preloaded_multi_sgd_update", PreloadedSGDParam, ("weight", "grad"), False, False, True),
    ("preloaded_multi_sgd_mom_update", PreloadedSGDMomParam, ("weight", "grad", "mom"), True, False, True),
    ("preloaded_multi_mp_sgd_update", PreloadedSGDParam, ("weight", "grad", "weight32"), False, True, True),
    (
        "preloaded_multi_mp_sgd_mom_update",
        PreloadedSGDMomParam,
        ("weight", "grad", "mom", "weight32"),
        True,
        True,
        True,
    ),
)

for _name, _params, _kinds, _momentum, _mp, _preloaded in _MULTI:
    _group = len(_kinds)
    _state = [k for k, kind in enumerate(_kinds) if kind in ("mom", "weight32")]
    (
        register(_name)
        .describe(
            f"SGD{' with momentum' if _momentum else ''} on num_weights weights in one operation"
            f"{' (float32 master copies weight32)' if _mp else ''}; inputs are the groups "
            f"({', '.join(_kinds)}) per weight"
            + (", then the (num_weights,) arrays lrs and wds." if _preloaded else "; lrs and wds give each its own.")
        )
        .set_params(_params)
        .set_num_inputs(lambda attrs, g=_group, pre=_preloaded: g * attrs.parsed.num_weights + (2 if pre else 0))
        .set_num_outputs(lambda attrs: attrs.parsed.num_weights)
        .set_input_names(_input_names(_kinds, _preloaded))
        .set_key_var_num_args("num_weights")
        .set_infer_shape(_shape(_group, _preloaded))
        .set_infer_type(_type(_group, _mp, _preloaded))
        .set_compute(_compute(_group, _momentum, _mp, _preloaded))
        .set_mutate_inputs(
            lambda attrs, g=_group, s=tuple(_state): [i * g + k for i in range(attrs.parsed.num_weights) for k in s]
        )
    )


# ---------------------------------------------------------------------- multi_lars
def _lars(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """Layer-wise trust ratio ``eta * |w| / (|g| + wd * |w| + eps)``; 1 where either norm is 0."""
    xp, p = op_ctx.xp, attrs.parsed
    lrs, w_sq, g_sq, wds = inputs
    w_norm = xp.sqrt(w_sq)
    g_norm = xp.sqrt(g_sq) * scalar(p.rescale_grad)
    valid = (w_norm > 0) & (g_sq > 0)
    ratio = scalar(p.eta) * w_norm / (g_norm + wds * w_norm + scalar(p.eps))
    assign(outputs[0], req[0], lrs * xp.where(valid, ratio, lrs.dtype.type(1)))


def _lars_shape(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
    known = next((s for s in [*in_shapes, out_shapes[0]] if s), None)
    if known is None:
        return False
    if len(known) != 1:
        raise InferenceError(f"{attrs.name}: every input is a 1-D vector (one value per weight), got {known}")
    for i in range(4):
        shape_assign(in_shapes, i, known, attrs.name, f"input {i}")
    shape_assign(out_shapes, 0, known, attrs.name, "output")
    return True


def _lars_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    for i in range(4):
        type_assign(in_types, i, "float32", attrs.name, f"input {i}")
    type_assign(out_types, 0, "float32", attrs.name, "output")
    return True


(
    register("multi_lars")
    .describe(
        "Compute the LARS coefficients of multiple weights and grads from their sums of squares:\n\n"
        "    out = lrs * (eta * |w| / (rescale_grad * |g| + wds * |w| + eps)   if |w| > 0 and |g| > 0 else 1)"
    )
    .set_params(MultiLarsParam)
    .set_num_inputs(4)
    .set_input_names(["lrs", "weights_sum_sq", "grads_sum_sq", "wds"])
    .set_infer_shape(_lars_shape)
    .set_infer_type(_lars_type)
    .set_compute(_lars)
)


# ---------------------------------------------------------------------- _multi_adamw_update, _multi_lamb_update
class MultiAdamWParam(ListParams):
    list_fields = ("lrs", "wds", "etas")
    lrs = Param(str, description="Learning rates")
    beta1 = Param(float, 0.9, "The decay rate for the 1st moment estimates.")
    beta2 = Param(float, 0.999, "The decay rate for the 2nd moment estimates.")
    epsilon = Param(float, 1e-8, "A small constant for numerical stability.")
    wds = Param(str, description=WD)
    etas = Param(str, description="Learning rates schedule multiplier")
    clip_gradient = Param(float, -1.0, CLIP)
    num_weights = Param(int, 1, _NUM_WEIGHTS, low=1)


class MultiLambParam(ListParams):
    list_fields = ("learning_rates", "wds")
    learning_rates = Param(str, description="List of learning rates")
    beta1 = Param(float, 0.9, "Exponential decay rate for the first moment estimates.")
    beta2 = Param(float, 0.999, "Exponential decay rate for the second moment estimates.")
    epsilon = Param(float, 1e-6, "Small value to avoid division by 0.")
    wds = Param(str, description="List of Weight decays. " + WD)
    rescale_grad = Param(float, 1.0, "Gradient rescaling factor")
    lower_bound = Param(float, -1.0, "Lower limit of norm of weight. If lower_bound <= 0, Lower limit is not set")
    upper_bound = Param(float, -1.0, "Upper limit of norm of weight. If upper_bound <= 0, Upper limit is not set")
    clip_gradient = Param(float, -1.0, CLIP)
    bias_correction = Param(bool, True, "Whether to use bias correction.")
    step_count = Param(Shape, description="Step count for each tensor")
    num_tensors = Param(int, 1, "Number of tensors", low=1)
    count_field = "num_tensors"

    @classmethod
    def parse(cls, op_name: str, kwargs: Any) -> ParamSet:
        parsed = super().parse(op_name, kwargs)
        if len(parsed.step_count) != parsed.num_tensors:
            raise OperatorParamError(
                f"{op_name}: parameter 'step_count' needs one count per tensor (num_tensors={parsed.num_tensors}), "
                f"got {len(parsed.step_count)}"
            )
        return parsed


class _StepParams:
    """The per-tensor view of the multi-tensor parameters that the single-tensor rules read."""

    def __init__(self, p: ParamSet, **values: Any) -> None:
        self.__dict__.update(p.as_dict())
        self.__dict__.update(values)


def _adamw_multi_compute(mp: bool) -> Callable[..., None]:
    group = 5 if mp else 4

    def compute(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
        xp, p = op_ctx.xp, attrs.parsed
        lrs, wds, etas = (parse_float_list(getattr(p, f)) for f in ("lrs", "wds", "etas"))
        for i in range(p.num_weights):
            weight, grad, mean, var = inputs[i * group : i * group + 4]
            master = inputs[i * group + 4] if mp else weight
            rescale = _rescale_or_skip(xp, inputs[-1], master.dtype)
            if rescale is None:
                if mp:
                    assign(outputs[i], req[i], master.astype(outputs[i].dtype))
                elif outputs[i] is not weight:
                    assign(outputs[i], req[i], weight.copy())
                continue
            step = _StepParams(p, lr=lrs[i], wd=wds[i], eta=etas[i])
            new = _adamw_step(xp, step, master, grad.astype(master.dtype), mean, var, rescale)
            if mp:
                master[...] = new
                new = master.astype(outputs[i].dtype)
            assign(outputs[i], req[i], new)

    return compute


def _lamb_multi_compute(mp: bool) -> Callable[..., None]:
    group = 5 if mp else 4

    def compute(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
        xp, p = op_ctx.xp, attrs.parsed
        lrs, wds = parse_float_list(p.learning_rates), parse_float_list(p.wds)
        for i in range(p.num_tensors):
            weight, grad, mean, var = inputs[i * group : i * group + 4]
            master = inputs[i * group + 4] if mp else weight
            step = _StepParams(p, lr=lrs[i], wd=wds[i], t=p.step_count[i])
            g = _lamb_direction(xp, step, master, grad.astype(master.dtype), mean, var)
            r1 = xp.sqrt((master * master).sum()).reshape(1)
            r2 = xp.sqrt((g * g).sum()).reshape(1)
            new = _lamb_step(xp, step, master, g, r1, r2)
            if mp:
                master[...] = new
                new = master.astype(outputs[i].dtype)
            assign(outputs[i], req[i], new)

    return compute


_ADAM_LAMB = (
    # name, params, kinds per weight, mixed precision, compute, trailing rescale_grad array
    ("_multi_adamw_update", MultiAdamWParam, ("weight", "grad", "mean", "var"), False, _adamw_multi_compute, True),
    (
        "_multi_mp_adamw_update",
        MultiAdamWParam,
        ("weight", "grad", "mean", "var", "weight32"),
        True,
        _adamw_multi_compute,
        True,
    ),
    ("_multi_lamb_update", MultiLambParam, ("weight", "grad", "mean", "var"), False, _lamb_multi_compute, False),
    (
        "_multi_mp_lamb_update",
        MultiLambParam,
        ("weight", "grad", "mean", "var", "weight32"),
        True,
        _lamb_multi_compute,
        False,
    ),
)


def _adam_lamb_names(kinds: tuple[str, ...], rescale: bool) -> Callable[[NodeAttrs], list[str]]:
    def names(attrs: NodeAttrs) -> list[str]:
        listed = [f"{kind}_{i}" for i in range(_count(attrs)) for kind in kinds]
        return [*listed, "rescale_grad"] if rescale else listed

    return names


def _adam_lamb_shape(group: int, rescale: bool) -> Callable[..., bool]:
    plain = _shape(group, False)

    def infer(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
        if rescale:
            shape_assign(in_shapes, len(in_shapes) - 1, (1,), attrs.name, "rescale_grad")
            head = in_shapes[:-1]
            done = plain(attrs, head, out_shapes)
            in_shapes[:-1] = head
            return done
        return plain(attrs, in_shapes, out_shapes)

    return infer


def _adam_lamb_type(group: int, mp: bool, rescale: bool) -> Callable[..., bool]:
    """Per group: weight/grad/output share a dtype; mean/var are float32 with a master copy, else the weight's."""

    def infer(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
        for i in range(_count(attrs)):
            base = i * group
            same = [base, base + 1] if mp else list(range(base, base + group))
            known = next((in_types[j] for j in same if in_types[j]), out_types[i])
            if known is not None:
                for j in same:
                    type_assign(in_types, j, known, attrs.name, f"input {j}")
                type_assign(out_types, i, known, attrs.name, f"output {i}")
            if mp:
                for j in range(base + 2, base + group):
                    type_assign(in_types, j, "float32", attrs.name, f"input {j}")
        if rescale:
            type_assign(in_types, len(in_types) - 1, "float32", attrs.name, "rescale_grad")
        check_float(attrs, in_types)
        return all(t is not None for t in in_types)

    return infer


for _name, _params, _kinds, _mp, _make, _rescale in _ADAM_LAMB:
    _group = len(_kinds)
    (
        register(_name)
        .describe(
            ("AdamW" if "adamw" in _name else "LAMB (both phases, trust ratio |w| / |g| per tensor)")
            + f" on many weights in one operation; inputs are the groups ({', '.join(_kinds)}) per weight"
            + (", then the one-element rescale_grad array (0, NaN or Inf skips the step)." if _rescale else ".")
        )
        .set_params(_params)
        .set_num_inputs(lambda attrs, g=_group, r=_rescale: g * _count(attrs) + (1 if r else 0))
        .set_num_outputs(_count)
        .set_input_names(_adam_lamb_names(_kinds, _rescale))
        .set_key_var_num_args("num_tensors" if "lamb" in _name else "num_weights")
        .set_infer_shape(_adam_lamb_shape(_group, _rescale))
        .set_infer_type(_adam_lamb_type(_group, _mp, _rescale))
        .set_compute(_make(_mp))
        .set_mutate_inputs(
            lambda attrs, g=_group, s=tuple(range(2, _group)): [i * g + k for i in range(_count(attrs)) for k in s]
        )
    )
