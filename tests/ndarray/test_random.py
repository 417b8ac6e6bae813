"""The random samplers (framework/operator/tensor/random_ops.py) and mx.nd.random's wrappers."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import framework as mx
from framework import random as mx_random
from framework.operator import registry
from framework.operator.infer import InferenceError
from framework.operator.params import OperatorParamError
from framework.test_utils import check_req

ndrandom = importlib.import_module("framework.ndarray.random")
N = 100_000


def draw_sequence() -> list[np.ndarray]:
    """Draws from every sampler and both dispatch paths, pushed without waiting in between."""
    outs = [
        ndrandom.uniform(-1, 3, shape=(40,)),
        ndrandom.normal(2, 0.5, shape=(3, 5)),
        ndrandom.randint(-5, 5, shape=(30,)),
        ndrandom.gamma(2.0, 1.5, shape=(10,)),
        ndrandom.poisson(4.0, shape=(10,)),
        ndrandom.negative_binomial(3, 0.4, shape=(10,)),
        ndrandom.generalized_negative_binomial(2.0, 0.3, shape=(10,)),
        mx.nd.op._random_exponential(lam=2.0, shape=(10,)),
        ndrandom.uniform_like(mx.nd.zeros((4, 2), dtype="float64")),
        ndrandom.normal(mx.nd.array([0.0, 10.0]), mx.nd.array([1.0, 2.0]), shape=(3,)),
        ndrandom.uniform(-1, 3, shape=(5,), ctx=mx.cpu(1)),
    ]
    return [o.asnumpy() for o in outs]


ENGINES = ["NaiveEngine", "ThreadedEngine", "ThreadedEnginePerDevice"]


# --------------------------------------------------------------------------- reproducibility
def test_seed_makes_sequences_reproducible_on_every_engine(make_engine):
    runs = {}
    for kind in ENGINES:
        with mx.engine.use(make_engine(kind, 2)):
            mx.random.seed(123)
            first = draw_sequence()
            mx.random.seed(123)
            second = draw_sequence()
            mx.random.seed(124)
            other = draw_sequence()
        for a, b in zip(first, second, strict=True):
            np.testing.assert_array_equal(a, b)
        assert not np.array_equal(first[0], other[0])
        runs[kind] = first
    for kind in ENGINES[1:]:
        for a, b in zip(runs["NaiveEngine"], runs[kind], strict=True):
            np.testing.assert_array_equal(a, b, err_msg=f"{kind} differs from NaiveEngine")


def test_draws_are_ordered_by_the_engine_not_by_timing(make_engine):
    """Many small draws pushed at once on a threaded engine equal the same draws done one by one."""
    with mx.engine.use(make_engine("NaiveEngine")):
        mx.random.seed(9)
        expected = [ndrandom.uniform(shape=(3,)).asnumpy() for _ in range(30)]
    with mx.engine.use(make_engine("ThreadedEnginePerDevice", 4)):
        mx.random.seed(9)
        pending = [ndrandom.uniform(shape=(3,)) for _ in range(30)]
        got = [p.asnumpy() for p in pending]
    np.testing.assert_array_equal(np.stack(got), np.stack(expected))


def test_seed_one_device_leaves_the_others_alone(make_engine):
    with mx.engine.use(make_engine("ThreadedEngine", 2)):
        mx.random.seed(1)
        a0 = ndrandom.uniform(shape=(8,), ctx=mx.cpu(0)).asnumpy()
        a1 = ndrandom.uniform(shape=(8,), ctx=mx.cpu(1)).asnumpy()
        assert not np.array_equal(a0, a1)  # each device has its own stream
        mx.random.seed(1, ctx=mx.cpu(1))
        b1 = ndrandom.uniform(shape=(8,), ctx=mx.cpu(1)).asnumpy()
        b0 = ndrandom.uniform(shape=(8,), ctx=mx.cpu(0)).asnumpy()
        np.testing.assert_array_equal(a1, b1)
        assert not np.array_equal(a0, b0)  # cpu(0) kept going


def test_seed_is_reexported():
    assert ndrandom.seed is mx_random.seed


# --------------------------------------------------------------------------- distributions
def _moments(arr: mx.nd.NDArray) -> tuple[float, float]:
    values = arr.asnumpy().astype(np.float64)
    return values.mean(), values.std()


@pytest.mark.parametrize(
    ("make", "mean", "std"),
    [
        (lambda: ndrandom.uniform(-2.0, 4.0, shape=(N,)), 1.0, 6.0 / np.sqrt(12)),
        (lambda: ndrandom.normal(3.0, 0.5, shape=(N,)), 3.0, 0.5),
        (lambda: ndrandom.normal(-1.0, 2.0, shape=(N,), dtype="float64"), -1.0, 2.0),
        (lambda: ndrandom.exponential(2.0, shape=(N,)), 2.0, 2.0),
        (lambda: mx.nd.op._random_exponential(lam=4.0, shape=(N,)), 0.25, 0.25),
        (lambda: ndrandom.gamma(3.0, 2.0, shape=(N,)), 6.0, np.sqrt(3.0) * 2.0),
        (lambda: ndrandom.poisson(5.0, shape=(N,)), 5.0, np.sqrt(5.0)),
        (lambda: ndrandom.negative_binomial(4, 0.25, shape=(N,)), 12.0, np.sqrt(4 * 0.75 / 0.25**2)),
        (lambda: ndrandom.generalized_negative_binomial(3.0, 0.5, shape=(N,)), 3.0, np.sqrt(3.0 + 0.5 * 9.0)),
        (lambda: ndrandom.generalized_negative_binomial(3.0, 0.0, shape=(N,)), 3.0, np.sqrt(3.0)),
        (lambda: ndrandom.randint(-3, 7, shape=(N,)), 1.5, np.sqrt((10**2 - 1) / 12)),
        (lambda: ndrandom.randn(N, loc=1.0, scale=3.0), 1.0, 3.0),
    ],
)
def test_sample_moments(make, mean, std):
    mx.random.seed(2024)
    got_mean, got_std = _moments(make())
    assert abs(got_mean - mean) < 5 * std / np.sqrt(N)
    assert abs(got_std - std) < 0.02 * std


def test_uniform_and_randint_bounds():
    mx.random.seed(5)
    for dtype in ("float32", "float64"):
        values = ndrandom.uniform(-0.5, 0.25, shape=(N,), dtype=dtype).asnumpy()
        assert values.dtype == dtype
        assert values.min() >= -0.5 and values.max() < 0.25
    half = ndrandom.uniform(1.0, 2.0, shape=(1000,), dtype="float16").asnumpy()
    assert half.min() >= 1.0 and half.max() <= 2.0
    ints = ndrandom.randint(-4, 3, shape=(N,)).asnumpy()
    assert ints.dtype == np.int32
    assert set(np.unique(ints).tolist()) == set(range(-4, 3))
    wide = ndrandom.randint(2**40, 2**40 + 5, shape=(1000,), dtype="int64").asnumpy()
    assert wide.dtype == np.int64 and wide.min() >= 2**40 and wide.max() < 2**40 + 5
    same = ndrandom.uniform(1.5, 1.5, shape=(4,)).asnumpy()  # MXNet allows low == high
    assert (same == 1.5).all()


def test_poisson_values_are_integers_in_a_float_array():
    values = ndrandom.poisson(3.0, shape=(1000,)).asnumpy()
    assert values.dtype == np.float32
    assert (values == np.round(values)).all() and values.min() >= 0
    assert (ndrandom.poisson(0.0, shape=(5,)).asnumpy() == 0).all()


# --------------------------------------------------------------------------- shapes, dtypes, out=
def test_default_shape_and_dtype_follow_mxnet():
    assert ndrandom.uniform().shape == (1,)
    assert ndrandom.uniform().dtype == np.float32
    assert ndrandom.randint(0, 3).dtype == np.int32
    assert ndrandom.normal(shape=5).shape == (5,)
    assert ndrandom.normal(shape=(2, 3, 4), dtype=np.float16).dtype == np.float16
    assert ndrandom.uniform(ctx=mx.cpu(2)).context == mx.cpu(2)


def test_out_gives_shape_dtype_and_context():
    out = mx.nd.zeros((3, 2), ctx=mx.cpu(1), dtype="float64")
    result = ndrandom.uniform(5.0, 6.0, out=out)
    assert result is out
    values = out.asnumpy()
    assert values.dtype == np.float64 and values.min() >= 5.0
    ints = mx.nd.zeros((4,), dtype="int64")
    ndrandom.randint(0, 10, out=ints)
    assert ints.asnumpy().max() < 10


def test_out_with_conflicting_shape_or_dtype_is_refused():
    with pytest.raises(InferenceError, match=r"_random_uniform: shape inconsistent for output"):
        ndrandom.uniform(shape=(2, 2), out=mx.nd.zeros((3,)))
    with pytest.raises(InferenceError, match=r"type inconsistent for output: expected float16, got float32"):
        ndrandom.normal(dtype="float16", out=mx.nd.zeros((3,)))
    with pytest.raises(InferenceError, match=r"_random_normal: output dtype must be one of float16, float32, float64"):
        ndrandom.normal(out=mx.nd.zeros((3,), dtype="int32"))


def test_shape_and_type_inference():
    op = mx.operator.get("_random_uniform")
    attrs = op.parse_attrs({"shape": (2, 3)})
    out_shapes = [None]
    assert op.run_infer_shape(attrs, [], out_shapes) and out_shapes == [(2, 3)]
    attrs = op.parse_attrs({})
    out_shapes = [(4, 5)]  # an unset shape keeps a known output's
    assert op.run_infer_shape(attrs, [], out_shapes) and out_shapes == [(4, 5)]
    out_types = [None]
    op.run_infer_type(attrs, [], out_types)
    assert out_types == ["float32"]
    out_types = ["float64"]
    op.run_infer_type(attrs, [], out_types)
    assert out_types == ["float64"]
    sample = mx.operator.get("_sample_normal")
    attrs = sample.parse_attrs({"shape": (3,)})
    in_shapes, out_shapes = [None, None], [(2, 4, 3)]  # the parameters' shape from the output
    sample.run_infer_shape(attrs, in_shapes, out_shapes)
    assert in_shapes == [(2, 4), (2, 4)]


def test_symbol_json_attribute_strings_parse():
    attrs = mx.operator.get("_random_uniform").parse_attrs(
        {"low": "-1", "high": "2.5", "shape": "(2, 3)", "ctx": "", "dtype": "None"}
    )
    assert (attrs.parsed.low, attrs.parsed.high, tuple(attrs.parsed.shape), attrs.parsed.dtype) == (
        -1.0,
        2.5,
        (2, 3),
        None,
    )


# --------------------------------------------------------------------------- bad parameters
@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: ndrandom.uniform(2.0, 1.0, shape=3), r"_random_uniform: low must be less or equal to high .*low=2.0"),
        (lambda: ndrandom.normal(0.0, 0.0, shape=3), r"_random_normal: scale parameter in gaussian has to be positive"),
        (lambda: ndrandom.normal(0.0, -1.0, shape=3), r"scale parameter in gaussian has to be positive, got scale=-1"),
        (lambda: ndrandom.randint(3, 3, shape=3), r"_random_randint: high must be greater than low .*low=3, high=3"),
        (lambda: ndrandom.randint(5, 1, shape=3), r"high must be greater than low"),
        (lambda: ndrandom.exponential(0.0, shape=3), r"exponential: scale must be positive, got 0.0"),
        (lambda: mx.nd.op._random_exponential(lam=-1.0, shape=(3,)), r"lambda parameter in exponential distribution"),
        (lambda: ndrandom.gamma(0.0, 1.0, shape=3), r"_random_gamma: alpha parameter in gamma distribution"),
        (lambda: ndrandom.gamma(1.0, -2.0, shape=3), r"_random_gamma: beta parameter in gamma distribution"),
        (lambda: ndrandom.poisson(-0.5, shape=3), r"_random_poisson: lambda parameter in poisson .*non-negative"),
        (lambda: ndrandom.negative_binomial(0, 0.5, shape=3), r"k parameter in negative binomial"),
        (lambda: ndrandom.negative_binomial(2, 1.5, shape=3), r"p parameter in negative binomial .* \(0, 1\]"),
        (lambda: ndrandom.generalized_negative_binomial(0.0, 1.0, shape=3), r"mu parameter"),
        (lambda: ndrandom.generalized_negative_binomial(1.0, -1.0, shape=3), r"alpha parameter"),
        (lambda: ndrandom.uniform(shape=3, dtype="int32"), r"_random_uniform: parameter 'dtype' expects one of"),
        (lambda: ndrandom.randint(0, 4, dtype="float32"), r"_random_randint: parameter 'dtype' expects one of"),
        (lambda: ndrandom.randint(0, 2**40), r"do not fit in the int32 output; use dtype='int64'"),
        (lambda: ndrandom.randint(0, 2**70, dtype="int64"), r"low and high must fit in int64"),
        (lambda: ndrandom.uniform(shape=(-1, 2)), r"_random_uniform: shape must hold dimensions >= 0, got \(-1, 2\)"),
        (
            lambda: mx.nd.op._sample_uniform(mx.nd.zeros((1,)), mx.nd.ones((1,)), shape=(2, -3)),
            r"_sample_uniform: shape",
        ),
        (lambda: mx.nd.op._random_uniform(lo=1.0), r"_random_uniform: unknown parameter\(s\) 'lo'"),
    ],
)
def test_bad_parameters_raise_at_the_call(call, match):
    with pytest.raises(mx.MXLabError, match=match):
        call()


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: ndrandom.uniform(mx.nd.zeros((2,)), 1.0), r"must all have the same type, got NDArray and float"),
        (lambda: ndrandom.uniform(0.0, mx.nd.ones((2,))), r"must all have the same type, got a number and NDArray"),
        (lambda: ndrandom.normal("0", 1.0), r"must be either NDArrays or numbers, got str"),
        (lambda: ndrandom.randint(0.5, 3), r"randint: low must be an int, got 0.5"),
        (lambda: ndrandom.randint(mx.nd.zeros((1,)), 3), r"randint: low must be an int"),
        (lambda: ndrandom.normal(mx.nd.zeros((2,)), mx.nd.ones((2,)), ctx=mx.cpu(0)), r"ctx= is not used"),
    ],
)
def test_wrapper_argument_errors(call, match):
    with pytest.raises(mx.MXLabError, match=match):
        call()


# --------------------------------------------------------------------------- _like and _sample operators
def test_like_operators_take_shape_and_dtype_from_data():
    data = mx.nd.zeros((3, 4), dtype="float16")
    for name in ("uniform_like", "normal_like", "gamma_like", "exponential_like", "poisson_like"):
        out = getattr(ndrandom, name)(data)
        assert out.shape == (3, 4) and out.dtype == np.float16, name
    values = ndrandom.uniform_like(mx.nd.zeros((N,)), low=2.0, high=3.0).asnumpy()
    assert 2.0 <= values.min() and values.max() < 3.0
    with pytest.raises(InferenceError, match=r"_random_uniform_like: data must be a float array"):
        ndrandom.uniform_like(mx.nd.zeros((2,), dtype="int32"))
    with pytest.raises(OperatorParamError, match=r"_random_normal_like: scale parameter in gaussian"):
        ndrandom.normal_like(mx.nd.zeros((2,)), scale=0.0)


def test_sample_operators_draw_per_distribution():
    mx.random.seed(77)
    low = mx.nd.array([[0.0, 10.0], [100.0, -5.0]])
    high = mx.nd.array([[1.0, 20.0], [101.0, -4.0]])
    out = ndrandom.uniform(low, high, shape=(N // 10,)).asnumpy()
    assert out.shape == (2, 2, N // 10)
    lows, highs = low.asnumpy()[..., None], high.asnumpy()[..., None]
    assert (out >= lows).all() and (out < highs).all()
    np.testing.assert_allclose(out.mean(axis=-1), ((lows + highs) / 2)[..., 0], atol=0.2)
    lam = mx.nd.array([1.0, 10.0])
    pois = mx.nd.op._sample_poisson(lam, shape=(N // 10,)).asnumpy()
    np.testing.assert_allclose(pois.mean(axis=-1), [1.0, 10.0], rtol=0.05)
    one = mx.nd.op._sample_gamma(mx.nd.array([2.0, 3.0]), mx.nd.array([1.0, 1.0]))  # no shape: one draw each
    assert one.shape == (2,)
    if registry.exists("_rdiv_scalar"):  # exponential(scale=NDArray) computes lam = 1 / scale with NDArray math
        expo = ndrandom.exponential(mx.nd.array([0.5, 4.0]), shape=(N // 10,)).asnumpy()
        np.testing.assert_allclose(expo.mean(axis=-1), [0.5, 4.0], rtol=0.05)


def test_sample_operators_check_parameter_values_when_run():
    bad = ndrandom.normal(mx.nd.array([0.0, 0.0]), mx.nd.array([1.0, -1.0]), shape=(2,))
    with pytest.raises(OperatorParamError, match=r"_sample_normal: sigma \(scale\) must be positive"):
        bad.asnumpy()
    with pytest.raises(InferenceError, match=r"_sample_uniform: shape inconsistent for input 1"):
        ndrandom.uniform(mx.nd.zeros((2,)), mx.nd.ones((3,)))


def test_aliases_match_mxnet():
    for short, full in [
        ("uniform", "_random_uniform"),
        ("random_uniform", "_random_uniform"),
        ("normal", "_random_normal"),
        ("random_normal", "_random_normal"),
        ("random_randint", "_random_randint"),
        ("random_gamma", "_random_gamma"),
        ("random_exponential", "_random_exponential"),
        ("random_poisson", "_random_poisson"),
        ("sample_uniform", "_sample_uniform"),
    ]:
        assert registry.get(short) is registry.get(full)
    assert mx.operator.get("_random_normal").resource_request(None)[0].name == "RANDOM"
    with pytest.raises(AttributeError, match=r"mx.nd.random has no attribute 'no_such_sampler'"):
        _ = ndrandom.no_such_sampler
    assert {"uniform", "normal", "randint", "uniform_like", "seed"} <= set(dir(ndrandom))


@pytest.mark.parametrize(
    ("name", "inputs", "params"),
    [
        ("_random_uniform", [], {"low": -1.0, "high": 1.0, "shape": (3, 4)}),
        ("_random_normal", [], {"shape": (5,), "dtype": "float64"}),
        ("_random_randint", [], {"low": 0, "high": 9, "shape": (6,)}),
        ("_random_gamma", [], {"alpha": 2.0, "shape": (2, 2)}),
        ("_random_poisson", [], {"lam": 3.0, "shape": (4,)}),
        ("_random_uniform_like", [np.zeros((2, 3), np.float32)], {}),
        ("_sample_normal", [np.zeros(2, np.float32), np.ones(2, np.float32)], {"shape": (3,)}),
    ],
)
def test_req_add_and_null(name, inputs, params):
    check_req(name, inputs, **params)


def test_like_operator_gradient_is_zero():
    x = mx.nd.array(np.ones((2, 3), np.float32))
    x.attach_grad()
    with mx.autograd.record():
        y = ndrandom.normal_like(x)
    y.backward()
    assert (x.grad.asnumpy() == 0).all()


def test_a_failed_sample_error_travels_on_the_random_resource(make_engine):
    """The failed draw wrote the generator's variable: the next draw inherits its error until waited on."""
    with mx.engine.use(make_engine("ThreadedEnginePerDevice", 2)):
        bad = ndrandom.uniform(mx.nd.array([2.0]), mx.nd.array([1.0]), shape=(2,))
        later = ndrandom.uniform(shape=(2,))
        with pytest.raises(OperatorParamError, match=r"_sample_uniform: low must be less or equal to high"):
            later.asnumpy()
        bad.wait_to_read()  # one shared error, reported once: it is now cleared for every variable
        assert ndrandom.uniform(shape=(2,)).asnumpy().shape == (2,)
