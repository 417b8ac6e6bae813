"""Random samplers: ``_random_uniform``, ``_random_normal``, ``_random_randint`` and friends.

A sampler is a *creation* operator (like ``_zeros``): it takes no input arrays, only
parameters (the distribution's, plus ``shape``, ``ctx`` and ``dtype``). What makes it
special is where its randomness comes from. It never calls ``np.random`` itself; it
*requests* ``ResourceRequest.RANDOM`` and draws from ``op_ctx.requested[0].generator``, the
one generator of the device. The invoke path adds that resource's engine variable to the
operation's write set, so every draw on a device is serialised in push order by the
engine: after ``mx.random.seed(n)`` the same program gives the same numbers on
NaiveEngine, ThreadedEngine and ThreadedEnginePerDevice (see framework/resource.py).

Three groups, as in MXNet 1.x (``src/operator/random/``):

* ``_random_<dist>``: parameters are numbers, ``shape`` says how many draws
  (``mx.nd.random.uniform(0, 1, shape=(2, 3))``).
* ``_random_<dist>_like``: one input ``data``; the output has its shape and dtype.
* ``_sample_<dist>``: the parameters are arrays of shape ``s``; the output has shape
  ``s + shape``, one block of draws per distribution (what ``mx.nd.random.uniform`` calls
  when ``low``/``high`` are NDArrays).

Parameters that make no distribution (``high < low``, ``scale <= 0``...) are refused when the
call is parsed, with MXNet's wording, so the error appears at the call and not later on an
engine worker. For ``_sample_*`` the parameters are data, so they are checked when the
operation runs and the error surfaces at the next wait (MXNet does not check them at all
and draws garbage). Such an error also travels on the device's random resource, which the
failed operation wrote: a later draw on that device, pushed before anyone waited on the
failed output, is skipped and re-raises the same error, the engine's usual rule.

MXLab vs MXNet: ``randint`` with ``high == low`` is refused (MXNet 1.9.1 divides by zero),
as are int32 outputs whose bounds do not fit in int32 (MXNet wraps around). The numbers
come from NumPy/CuPy generators, so a seed gives different values than in MXNet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...resource import ResourceRequest
from ..grad import zero_grad
from ..infer import InferenceError, elemwise_shape, elemwise_type, shape_assign, type_assign
from ..kernel import assign
from ..params import DType, OperatorParamError, Param, ParamSet, Shape
from ..registry import alias, register

FLOAT_DTYPES = ("float16", "float32", "float64")
INT_DTYPES = ("int32", "int64")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


# --------------------------------------------------------------------------- parameters
class _CheckedParams(ParamSet):
    """A ParamSet whose cross-field rules (``high >= low``) run right after parsing."""

    checks: tuple[tuple[Callable[[Any], bool], str], ...] = ()

    @classmethod
    def parse(cls, op_name: str, kwargs: Mapping[str, Any]) -> ParamSet:
        parsed = super().parse(op_name, kwargs)
        shape = parsed.as_dict().get("shape")
        if shape is not None and any(d < 0 for d in shape):
            raise OperatorParamError(f"{op_name}: shape must hold dimensions >= 0, got {tuple(shape)}")
        for ok, message in cls.checks:
            if not ok(parsed):
                raise OperatorParamError(f"{op_name}: {message.format(p=parsed)}")
        return parsed


class _CreationParams(_CheckedParams):
    """The output's shape, context and dtype, declared after the distribution's own fields.

    MXNet declares them last, so its generated functions take ``random_normal(loc, scale,
    shape, ctx, dtype)`` positionally; subclasses get the same order here.
    """

    shape = Param(Shape, Shape(), "Shape of the output.")
    ctx = Param(str, "", "Context of the output, such as cpu(0) (set by the front end).")
    dtype = Param(
        DType,
        None,
        "DType of the output in case it can't be inferred; float32 if not defined.",
        choices=FLOAT_DTYPES,
    )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        creation = ("shape", "ctx", "dtype")
        cls.fields = {
            **{k: f for k, f in cls.fields.items() if k not in creation},
            **{k: cls.fields[k] for k in creation},
        }


class UniformParam(_CreationParams):
    low = Param(float, 0.0, "Lower bound of the distribution.")
    high = Param(float, 1.0, "Upper bound of the distribution.")
    checks = (
        (
            lambda p: p.high >= p.low,
            "low must be less or equal to high in uniform distribution, got low={p.low}, high={p.high}",
        ),
    )


class NormalParam(_CreationParams):
    loc = Param(float, 0.0, "Mean of the distribution.")
    scale = Param(float, 1.0, "Standard deviation of the distribution.")
    checks = ((lambda p: p.scale > 0, "scale parameter in gaussian has to be positive, got scale={p.scale}"),)


class GammaParam(_CreationParams):
    alpha = Param(float, 1.0, "Alpha parameter (shape) of the gamma distribution.")
    beta = Param(float, 1.0, "Beta parameter (scale) of the gamma distribution.")
    checks = (
        (lambda p: p.alpha > 0, "alpha parameter in gamma distribution has to be positive, got alpha={p.alpha}"),
        (lambda p: p.beta > 0, "beta parameter in gamma distribution has to be positive, got beta={p.beta}"),
    )


class ExponentialParam(_CreationParams):
    lam = Param(float, 1.0, "Lambda parameter (rate) of the exponential distribution.")
    checks = (
        (lambda p: p.lam > 0, "lambda parameter in exponential distribution has to be positive, got lam={p.lam}"),
    )


class PoissonParam(_CreationParams):
    lam = Param(float, 1.0, "Lambda parameter (rate) of the Poisson distribution.")
    checks = (
        (lambda p: p.lam >= 0, "lambda parameter in poisson distribution has to be non-negative, got lam={p.lam}"),
    )


class NegBinomialParam(_CreationParams):
    k = Param(int, 1, "Limit of unsuccessful experiments.")
    p = Param(float, 1.0, "Failure probability in each experiment.")
    checks = (
        (lambda p: p.k > 0, "k parameter in negative binomial distribution has to be positive, got k={p.k}"),
        (lambda p: 0 < p.p <= 1, "p parameter in negative binomial distribution has to be in (0, 1], got p={p.p}"),
    )


class GenNegBinomialParam(_CreationParams):
    mu = Param(float, 1.0, "Mean of the negative binomial distribution.")
    alpha = Param(float, 1.0, "Alpha (dispersion) parameter of the negative binomial distribution.")
    checks = (
        (
            lambda p: p.mu > 0,
            "mu parameter in generalized negative binomial distribution has to be positive, got mu={p.mu}",
        ),
        (
            lambda p: p.alpha >= 0,
            "alpha parameter in generalized negative binomial distribution has to be non-negative, got alpha={p.alpha}",
        ),
    )


class RandIntParam(_CreationParams):
    low = Param(int, description="Lower bound of the distribution (inclusive).")
    high = Param(int, description="Upper bound of the distribution (exclusive).")
    dtype = Param(
        DType, None, "DType of the output in case it can't be inferred; int32 if not defined.", choices=INT_DTYPES
    )
    checks = (
        (
            lambda p: _INT64_MIN <= p.low and p.high <= _INT64_MAX,
            "low and high must fit in int64, got low={p.low}, high={p.high}",
        ),
        # MXNet 1.9 checks high >= low and then divides by zero when they are equal.
        (
            lambda p: p.high > p.low,
            "high must be greater than low in randint (the interval [low, high) is "
            "empty otherwise), got low={p.low}, high={p.high}",
        ),
    )


def _like_params(base: type[_CreationParams]) -> type[_CheckedParams]:
    """The ``_like`` variant of a parameter set: the distribution's fields only."""
    fields = {n: f for n, f in base.fields.items() if n not in ("shape", "ctx", "dtype")}
    fresh = {n: Param(f.type, f.default, f.description) for n, f in fields.items()}
    return type(f"{base.__name__}Like", (_CheckedParams,), {**fresh, "checks": base.checks})


class SampleParams(_CheckedParams):
    shape = Param(Shape, Shape(), "Shape to be sampled from each random distribution.")
    dtype = Param(
        DType,
        None,
        "DType of the output in case it can't be inferred; float32 if not defined.",
        choices=FLOAT_DTYPES,
    )


# --------------------------------------------------------------------------- drawing
# A drawer is ``draw(generator, params, size, xp) -> array``; params are numbers or
# (for _sample_*) arrays already shaped to broadcast against ``size``. Only methods that
# numpy.random.Generator and cupy.random.Generator share are used.


def _float_dtype(size_dtype: Any) -> Any:
    """Generators draw float32 or float64; float16 outputs are drawn in float32."""
    return np.float64 if np.dtype(size_dtype) == np.float64 else np.float32


def _draw_uniform(gen: Any, p: dict, size: tuple, dtype: Any) -> Any:
    low, high = p["low"], p["high"]
    return low + (high - low) * gen.random(size, dtype=_float_dtype(dtype))


def _draw_normal(gen: Any, p: dict, size: tuple, dtype: Any) -> Any:
    return p["loc"] + p["scale"] * gen.standard_normal(size, dtype=_float_dtype(dtype))


def _draw_exponential(gen: Any, p: dict, size: tuple, dtype: Any) -> Any:
    return gen.standard_exponential(size, dtype=_float_dtype(dtype)) / p["lam"]


def _draw_gamma(gen: Any, p: dict, size: tuple, dtype: Any) -> Any:
    return gen.standard_gamma(p["alpha"], size, dtype=_float_dtype(dtype)) * p["beta"]


def _draw_poisson(gen: Any, p: dict, size: tuple, dtype: Any) -> Any:
    return gen.poisson(p["lam"], size)


def _draw_negative_binomial(gen: Any, p: dict, size: tuple, dtype: Any) -> Any:
    # A gamma-Poisson mixture, as MXNet samples it: lambda ~ Gamma(k, (1 - p) / p).
    rate = gen.standard_gamma(p["k"], size) * ((1 - p["p"]) / p["p"])
    return gen.poisson(rate, size)


def _draw_gen_negative_binomial(gen: Any, p: dict, size: tuple, dtype: Any) -> Any:
    # lambda ~ Gamma(1 / alpha, alpha * mu), then Poisson(lambda); alpha == 0 is Poisson(mu).
    # Written with 0/1 masks instead of branches so numbers and (CPU or GPU) arrays both work.
    mu, alpha = p["mu"], p["alpha"]
    positive = (alpha > 0) * 1.0
    safe = alpha * positive + (1.0 - positive)  # 1 where alpha == 0, to keep Gamma's shape finite
    rate = gen.standard_gamma(1.0 / safe, size) * (safe * mu)
    return gen.poisson(rate * positive + mu * (1.0 - positive), size)


def _draw_randint(gen: Any, p: dict, size: tuple, dtype: Any) -> Any:
    return gen.integers(p["low"], p["high"], size, dtype=np.int64)


# (distribution, param class, drawer, parameter names as _sample_* inputs, MXNet's doc line)
_DISTRIBUTIONS: list[tuple[str, type[_CreationParams], Callable, tuple[str, ...], str]] = [
    (
        "uniform",
        UniformParam,
        _draw_uniform,
        ("low", "high"),
        "Draw random samples from a uniform distribution on the half-open interval [low, high).",
    ),
    (
        "normal",
        NormalParam,
        _draw_normal,
        ("mu", "sigma"),
        "Draw random samples from a normal (Gaussian) distribution with mean loc and standard deviation scale.",
    ),
    (
        "gamma",
        GammaParam,
        _draw_gamma,
        ("alpha", "beta"),
        "Draw random samples from a gamma distribution with shape alpha and scale beta (mean alpha * beta).",
    ),
    (
        "exponential",
        ExponentialParam,
        _draw_exponential,
        ("lam",),
        "Draw random samples from an exponential distribution with rate lam (mean 1 / lam).",
    ),
    (
        "poisson",
        PoissonParam,
        _draw_poisson,
        ("lam",),
        "Draw random samples from a Poisson distribution with rate lam; integer values in a float array.",
    ),
    (
        "negative_binomial",
        NegBinomialParam,
        _draw_negative_binomial,
        ("k", "p"),
        "Draw random samples from a negative binomial distribution: failures before the k-th success, "
        "each trial succeeding with probability p.",
    ),
    (
        "generalized_negative_binomial",
        GenNegBinomialParam,
        _draw_gen_negative_binomial,
        ("mu", "alpha"),
        "Draw random samples from a generalized negative binomial distribution (mean mu, dispersion alpha).",
    ),
]


def _param_values(parsed: ParamSet, names: tuple[str, ...]) -> dict[str, Any]:
    return {n: getattr(parsed, n) for n in names}


# --------------------------------------------------------------------------- _random_<dist>
def _creation_shape(attrs: Any, in_shapes: list, out_shapes: list) -> bool:
    """``shape`` gives the output's shape; an unset ``shape`` keeps a known ``out=``'s."""
    shape = attrs.parsed.shape
    if shape == () and out_shapes[0] is not None:
        return True
    shape_assign(out_shapes, 0, shape, attrs.name, "output")
    return True


def _creation_type(default: str, allowed: tuple[str, ...]) -> Callable[..., bool]:
    """``dtype`` if given, else the ``out=`` array's, else ``default``; only ``allowed`` kinds."""

    def infer_type(attrs: Any, in_types: list, out_types: list) -> bool:
        dtype = attrs.parsed.dtype
        if dtype is not None:
            type_assign(out_types, 0, dtype, attrs.name, "output")
        elif out_types[0] is None:
            out_types[0] = default
        if out_types[0] not in allowed:
            raise InferenceError(
                f"{attrs.op.name if attrs.op else attrs.name}: output dtype must be one of {', '.join(allowed)}, "
                f"got {out_types[0]}"
            )
        return True

    return infer_type


def _randint_type(attrs: Any, in_types: list, out_types: list) -> bool:
    _creation_type("int32", INT_DTYPES)(attrs, in_types, out_types)
    p = attrs.parsed
    if out_types[0] == "int32" and not (-(2**31) <= p.low and p.high <= 2**31):
        raise InferenceError(
            f"_random_randint: low={p.low}, high={p.high} do not fit in the int32 output; use dtype='int64'"
        )
    return True


def _creation_compute(draw: Callable, names: tuple[str, ...]) -> Callable[..., None]:
    def compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
        out = outputs[0]
        gen = op_ctx.random_generator(attrs.name)
        values = draw(gen, _param_values(attrs.parsed, names), out.shape, out.dtype)
        assign(out, req[0], values.astype(out.dtype, copy=False))

    return compute


def _random_request(attrs: Any) -> list[ResourceRequest]:
    return [ResourceRequest.RANDOM]


def _register_random(
    name: str, params: type[_CreationParams], draw: Callable, doc: str, default_dtype: str, allowed: tuple[str, ...]
) -> None:
    names = tuple(n for n in params.fields if n not in ("shape", "ctx", "dtype"))
    type_fn = _randint_type if name == "_random_randint" else _creation_type(default_dtype, allowed)
    (
        register(name)
        .describe(doc)
        .set_params(params)
        .set_num_inputs(0)
        .set_infer_shape(_creation_shape)
        .set_infer_type(type_fn)
        .set_compute(_creation_compute(draw, names))
        .set_resource_request(_random_request)
    )


# --------------------------------------------------------------------------- _random_<dist>_like
def _like_type(attrs: Any, in_types: list, out_types: list) -> bool:
    done = elemwise_type(attrs, in_types, out_types)
    dtype = in_types[0] or out_types[0]
    if dtype is not None and dtype not in FLOAT_DTYPES:
        raise InferenceError(f"{attrs.name}: data must be a float array ({', '.join(FLOAT_DTYPES)}), got {dtype}")
    return done


def _register_like(name: str, params: type[_CreationParams], draw: Callable, doc: str) -> None:
    like_params = _like_params(params)
    names = tuple(like_params.fields)
    (
        register(name + "_like")
        .describe(doc + " The output has the shape and dtype of the input data.")
        .set_params(like_params)
        .set_num_inputs(1)
        .set_input_names(["data"])
        .set_infer_shape(elemwise_shape)
        .set_infer_type(_like_type)
        .set_compute(_creation_compute(draw, names))
        .set_resource_request(_random_request)
        .set_gradient(zero_grad)
    )


# --------------------------------------------------------------------------- _sample_<dist>
def _sample_shape(num_inputs: int) -> Callable[..., bool]:
    """Inputs share shape ``s``; the output is ``s + shape`` (and gives ``s`` back when known)."""

    def infer_shape(attrs: Any, in_shapes: list, out_shapes: list) -> bool:
        tail = tuple(attrs.parsed.shape)
        common = None
        for i in range(num_inputs):
            if in_shapes[i] is not None:
                common = in_shapes[i]
                break
        out = out_shapes[0]
        if common is None and out is not None and len(out) >= len(tail):
            common = tuple(out[: len(out) - len(tail)])
        if common is None:
            return False
        for i in range(num_inputs):
            shape_assign(in_shapes, i, common, attrs.name, f"input {i} (the distribution parameters share a shape)")
        shape_assign(out_shapes, 0, tuple(in_shapes[0]) + tail, attrs.name, "output")
        return all(s is not None and 0 not in s for s in (*in_shapes, out_shapes[0]))

    return infer_shape


def _sample_type(num_inputs: int) -> Callable[..., bool]:
    def infer_type(attrs: Any, in_types: list, out_types: list) -> bool:
        known = next((t for t in in_types if t is not None), None)
        for i in range(num_inputs):
            type_assign(in_types, i, known, attrs.name, f"input {i}")
        if known is not None and known not in FLOAT_DTYPES:
            raise InferenceError(f"{attrs.name}: distribution parameters must be float arrays, got {known}")
        return _creation_type("float32", FLOAT_DTYPES)(attrs, in_types, out_types) and known is not None

    return infer_type


def _sample_compute(
    draw: Callable, param_names: tuple[str, ...], check: Callable[[dict], str | None]
) -> Callable[..., None]:
    def compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
        out = outputs[0]
        tail = len(attrs.parsed.shape)
        # Each parameter array of shape s is viewed as s + (1,) * len(shape): one distribution per element.
        arrays = {
            n: inp.astype(np.float64).reshape(inp.shape + (1,) * tail)
            for n, inp in zip(param_names, inputs, strict=True)
        }
        problem = check(arrays)
        if problem is not None:
            raise OperatorParamError(f"{attrs.name}: {problem}")
        values = draw(op_ctx.random_generator(attrs.name), arrays, out.shape, out.dtype)
        assign(out, req[0], values.astype(out.dtype, copy=False))

    return compute


# What each _sample_* input must satisfy, checked on the data when the operation runs.
_SAMPLE_CHECKS: dict[str, Callable[[dict], str | None]] = {
    "uniform": lambda a: None if (a["high"] >= a["low"]).all() else "low must be less or equal to high",
    "normal": lambda a: None if (a["scale"] > 0).all() else "sigma (scale) must be positive",
    "gamma": lambda a: None if (a["alpha"] > 0).all() and (a["beta"] > 0).all() else "alpha and beta must be positive",
    "exponential": lambda a: None if (a["lam"] > 0).all() else "lam must be positive",
    "poisson": lambda a: None if (a["lam"] >= 0).all() else "lam must be non-negative",
    "negative_binomial": lambda a: (
        None if (a["k"] > 0).all() and ((a["p"] > 0) & (a["p"] <= 1)).all() else "k must be positive and p in (0, 1]"
    ),
    "generalized_negative_binomial": lambda a: (
        None if (a["mu"] > 0).all() and (a["alpha"] >= 0).all() else "mu must be positive and alpha non-negative"
    ),
}


def _register_sample(
    dist: str, params: type[_CreationParams], draw: Callable, input_names: tuple[str, ...], doc: str
) -> None:
    param_names = tuple(n for n in params.fields if n not in ("shape", "ctx", "dtype"))
    count = len(input_names)
    name = f"_sample_{dist}"
    (
        register(name)
        .describe(
            doc.replace("Draw random samples", "Concurrent sampling from several distributions")
            + f" The parameters ({', '.join(input_names)}) are arrays of one shape s; the output has shape "
            "s + shape."
        )
        .set_params(SampleParams)
        .set_num_inputs(count)
        .set_input_names(list(input_names))
        .set_infer_shape(_sample_shape(count))
        .set_infer_type(_sample_type(count))
        .set_compute(_sample_compute(draw, param_names, _SAMPLE_CHECKS[dist]))
        .set_resource_request(_random_request)
        .set_gradient(zero_grad)
    )
    alias(f"sample_{dist}", name)


for _dist, _params, _draw, _inputs, _doc in _DISTRIBUTIONS:
    _register_random(f"_random_{_dist}", _params, _draw, _doc, "float32", FLOAT_DTYPES)
    alias(f"random_{_dist}", f"_random_{_dist}")
    _register_like(f"_random_{_dist}", _params, _draw, _doc)
    _register_sample(_dist, _params, _draw, _inputs, _doc)

# MXNet's deprecated short names of the first two samplers.
alias("uniform", "_random_uniform")
alias("normal", "_random_normal")

_register_random(
    "_random_randint",
    RandIntParam,
    _draw_randint,
    "Draw random integers from a discrete uniform distribution on the half-open interval [low, high).",
    "int32",
    INT_DTYPES,
)
alias("random_randint", "_random_randint")
