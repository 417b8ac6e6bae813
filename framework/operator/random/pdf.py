"""``_random_pdf_<dist>``: the density (or mass) of given samples, differentiable in the samples
and in the distribution's parameters.

Each parameter array has one shape ``s``; ``sample`` has shape ``s + t``: the samples at index
``i`` of ``s`` are scored against the distribution at index ``i``. The output has the sample's
shape (for ``dirichlet``, whose samples are vectors of length ``k``: ``s + t`` from a sample
``s + t + (k,)`` and ``alpha`` ``s + (k,)``). ``is_log=True`` returns the log density.

One table entry per distribution gives its log density and that log density's derivatives;
both modes and the gradient follow from them (``d pdf = pdf * d log pdf``), and a parameter's
gradient sums over the ``t`` axes it was broadcast along. Discrete distributions (poisson and
the negative binomials) have a zero gradient in their samples, as in MXNet.

MXNet's parameterisations, kept here: ``gamma`` takes shape ``alpha`` and *rate* ``beta`` (the
sampler ``_random_gamma`` takes a scale), ``negative_binomial`` takes ``k`` failures and success
probability ``p``, ``generalized_negative_binomial`` mean ``mu`` and dispersion ``alpha``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...backend import special_functions
from ..grad import elemwise_grad_use_in_out
from ..infer import InferenceError, shape_assign, type_assign
from ..kernel import OpContext, Req, assign
from ..node import NodeAttrs
from ..params import Param, ParamSet
from ..registry import alias, register
from ..tensor.common import register_backward

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class PdfParam(ParamSet):
    is_log = Param(bool, False, "If set, compute the density of the log-probability instead of the probability.")


# Each function takes (xp, special, sample, *params), parameters already broadcast to the sample.
def _uniform_log(xp: Any, sp: Any, x: Any, low: Any, high: Any) -> Any:
    inside = (x >= low) & (x <= high)
    return xp.where(inside, -xp.log(high - low), -xp.inf)


def _uniform_grad(xp: Any, sp: Any, x: Any, low: Any, high: Any) -> list:
    inside = (x >= low) & (x <= high)
    width = xp.where(inside, high - low, 1)
    return [xp.zeros_like(x), xp.where(inside, 1 / width, 0), xp.where(inside, -1 / width, 0)]


def _normal_log(xp: Any, sp: Any, x: Any, mu: Any, sigma: Any) -> Any:
    z = (x - mu) / sigma
    return -0.5 * z * z - xp.log(sigma) - _HALF_LOG_2PI


def _normal_grad(xp: Any, sp: Any, x: Any, mu: Any, sigma: Any) -> list:
    d = x - mu
    var = sigma * sigma
    return [-d / var, d / var, d * d / (var * sigma) - 1 / sigma]


def _gamma_log(xp: Any, sp: Any, x: Any, alpha: Any, beta: Any) -> Any:
    return alpha * xp.log(beta) + (alpha - 1) * xp.log(x) - beta * x - sp.gammaln(alpha)


def _gamma_grad(xp: Any, sp: Any, x: Any, alpha: Any, beta: Any) -> list:
    return [(alpha - 1) / x - beta, xp.log(beta) + xp.log(x) - sp.digamma(alpha), alpha / beta - x]


def _exponential_log(xp: Any, sp: Any, x: Any, lam: Any) -> Any:
    return xp.log(lam) - lam * x


def _exponential_grad(xp: Any, sp: Any, x: Any, lam: Any) -> list:
    return [-lam + 0 * x, 1 / lam - x]


def _poisson_log(xp: Any, sp: Any, x: Any, lam: Any) -> Any:
    return x * xp.log(lam) - lam - sp.gammaln(x + 1)


def _poisson_grad(xp: Any, sp: Any, x: Any, lam: Any) -> list:
    return [xp.zeros_like(x), x / lam - 1]


def _nb_log(xp: Any, sp: Any, x: Any, k: Any, p: Any) -> Any:
    return sp.gammaln(x + k) - sp.gammaln(k) - sp.gammaln(x + 1) + k * xp.log(p) + x * xp.log1p(-p)


def _nb_grad(xp: Any, sp: Any, x: Any, k: Any, p: Any) -> list:
    return [xp.zeros_like(x), sp.digamma(x + k) - sp.digamma(k) + xp.log(p), k / p - x / (1 - p)]


def _gnb_log(xp: Any, sp: Any, x: Any, mu: Any, alpha: Any) -> Any:
    return _nb_log(xp, sp, x, 1 / alpha, 1 / (mu * alpha + 1))


def _gnb_grad(xp: Any, sp: Any, x: Any, mu: Any, alpha: Any) -> list:
    """Chain rule through ``k = 1 / alpha`` and ``p = 1 / (mu * alpha + 1)``."""
    k, p = 1 / alpha, 1 / (mu * alpha + 1)
    _, d_k, d_p = _nb_grad(xp, sp, x, k, p)
    p_sq = p * p
    return [xp.zeros_like(x), d_p * (-alpha * p_sq), d_k * (-k * k) + d_p * (-mu * p_sq)]


def _dirichlet_log(xp: Any, sp: Any, x: Any, alpha: Any) -> Any:
    """Vectors along the last axis; the result drops that axis."""
    total = alpha.sum(axis=-1)
    return sp.gammaln(total) - sp.gammaln(alpha).sum(axis=-1) + ((alpha - 1) * xp.log(x)).sum(axis=-1)


def _dirichlet_grad(xp: Any, sp: Any, x: Any, alpha: Any) -> list:
    total = alpha.sum(axis=-1, keepdims=True)
    return [(alpha - 1) / x, sp.digamma(total) - sp.digamma(alpha) + xp.log(x)]


@dataclass(frozen=True)
class PdfDist:
    """One distribution: its parameter (input) names, log density and the latter's derivatives."""

    name: str
    params: tuple[str, ...]
    log_pdf: Callable[..., Any]
    log_pdf_grad: Callable[..., list]
    doc: str
    vector: bool = False  # samples are vectors along the last axis (dirichlet)


PDF_DISTS = (
    PdfDist("uniform", ("low", "high"), _uniform_log, _uniform_grad, "uniform distributions on [low, high]"),
    PdfDist("normal", ("mu", "sigma"), _normal_log, _normal_grad, "normal distributions (mean mu, deviation sigma)"),
    PdfDist("gamma", ("alpha", "beta"), _gamma_log, _gamma_grad, "gamma distributions (shape alpha, rate beta)"),
    PdfDist("exponential", ("lam",), _exponential_log, _exponential_grad, "exponential distributions (rate lam)"),
    PdfDist("poisson", ("lam",), _poisson_log, _poisson_grad, "Poisson distributions (rate lam)"),
    PdfDist(
        "negative_binomial", ("k", "p"), _nb_log, _nb_grad, "negative binomial distributions (k failures, success p)"
    ),
    PdfDist(
        "generalized_negative_binomial",
        ("mu", "alpha"),
        _gnb_log,
        _gnb_grad,
        "generalized negative binomial distributions (mean mu, dispersion alpha)",
    ),
    PdfDist("dirichlet", ("alpha",), _dirichlet_log, _dirichlet_grad, "Dirichlet distributions", vector=True),
)


# ---------------------------------------------------------------------- broadcasting
def _extra_axes(dist: PdfDist, sample: Any, param: Any) -> int:
    """How many ``t`` axes the sample has beyond the parameters' shape ``s``."""
    return sample.ndim - param.ndim


def _broadcast(dist: PdfDist, sample: Any, param: Any) -> Any:
    """``param`` reshaped so it broadcasts against ``sample`` (ones inserted for the ``t`` axes)."""
    extra = _extra_axes(dist, sample, param)
    if dist.vector:
        return param.reshape(param.shape[:-1] + (1,) * extra + param.shape[-1:])
    return param.reshape(param.shape + (1,) * extra)


def _reduce_to(dist: PdfDist, grad: Any, param: Any) -> Any:
    """Sum a broadcast parameter's gradient back over the ``t`` axes."""
    extra = _extra_axes(dist, grad, param)
    if extra == 0:
        return grad
    start = param.ndim - 1 if dist.vector else param.ndim
    return grad.sum(axis=tuple(range(start, start + extra)))


# ---------------------------------------------------------------------- compute
def _forward(dist: PdfDist) -> Callable[..., None]:
    def compute(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
        xp = op_ctx.xp
        sample, params = inputs[0], [_broadcast(dist, inputs[0], p) for p in inputs[1:]]
        log_pdf = dist.log_pdf(xp, special_functions(xp), sample, *params)
        value = log_pdf if attrs.parsed.is_log else xp.exp(log_pdf)
        assign(outputs[0], req[0], value.astype(outputs[0].dtype, copy=False))

    return compute


def _backward(dist: PdfDist) -> Callable[..., None]:
    """Inputs: output gradient, sample, parameters, forward output; outputs: their gradients."""

    def compute(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
        xp = op_ctx.xp
        out_grad, sample, params, out = inputs[0], inputs[1], inputs[2:-1], inputs[-1]
        wide = [_broadcast(dist, sample, p) for p in params]
        derivatives = dist.log_pdf_grad(xp, special_functions(xp), sample, *wide)
        scale = out_grad if attrs.parsed.is_log else out_grad * out  # d pdf = pdf * d log pdf
        if dist.vector:
            scale = scale[..., None]
        grads = [scale * derivatives[0]]
        grads += [_reduce_to(dist, scale * d, p) for d, p in zip(derivatives[1:], params, strict=True)]
        for i, g in enumerate(grads):
            assign(outputs[i], req[i], xp.broadcast_to(g, inputs[1 + i].shape).astype(outputs[i].dtype, copy=False))

    return compute


# ---------------------------------------------------------------------- inference
def _infer_shape(dist: PdfDist) -> Callable[..., bool]:
    def infer(attrs: NodeAttrs, in_shapes: list, out_shapes: list) -> bool:
        n = len(in_shapes)
        known = next((in_shapes[i] for i in range(1, n) if in_shapes[i] is not None), None)
        if known is not None:
            for i in range(1, n):
                shape_assign(in_shapes, i, known, attrs.name, dist.params[i - 1])
        sample = in_shapes[0]
        if sample is None and out_shapes[0] is not None and not dist.vector:
            shape_assign(in_shapes, 0, out_shapes[0], attrs.name, "sample")
            sample = in_shapes[0]
        if sample is None:
            return False
        if known is not None:
            batch = known[:-1] if dist.vector else known
            ok = len(sample) >= len(known) and tuple(sample[: len(batch)]) == tuple(batch)
            if dist.vector:
                ok = ok and sample[-1] == known[-1]
            if not ok:
                raise InferenceError(
                    f"{attrs.name}: the parameters' shape {tuple(known)} must lead the sample's shape {tuple(sample)}"
                    + (" (and the vector length must match)" if dist.vector else "")
                )
        shape_assign(out_shapes, 0, tuple(sample[:-1]) if dist.vector else tuple(sample), attrs.name, "output")
        return known is not None

    return infer


def _infer_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    known = next((t for t in [*in_types, out_types[0]] if t is not None), None)
    if known is None:
        return False
    if not known.startswith("float"):
        raise InferenceError(f"{attrs.name}: samples and parameters must be floating-point arrays, got {known}")
    for i in range(len(in_types)):
        type_assign(in_types, i, known, attrs.name, f"input {i}")
    type_assign(out_types, 0, known, attrs.name, "output")
    return True


for _dist in PDF_DISTS:
    _name = f"_random_pdf_{_dist.name}"
    (
        register(_name)
        .describe(
            f"Computes the value of the PDF of *sample* of {_dist.doc}. The parameters share one shape, "
            "which must lead the sample's shape; the densities at index i use the parameters at index i."
        )
        .set_params(PdfParam)
        .set_num_inputs(1 + len(_dist.params))
        .set_input_names(["sample", *_dist.params])
        .set_infer_shape(_infer_shape(_dist))
        .set_infer_type(_infer_type)
        .set_compute(_forward(_dist))
        .set_gradient(elemwise_grad_use_in_out(f"_backward_pdf_{_dist.name}"))
    )
    alias(f"random_pdf_{_dist.name}", _name)
    register_backward(
        f"_backward_pdf_{_dist.name}",
        _backward(_dist),
        PdfParam,
        num_inputs=2 + len(_dist.params) + 1,
        num_outputs=1 + len(_dist.params),
    )
