"""framework/operator/random/: the ``_random_pdf_*`` densities (against SciPy, and their gradients
against finite differences), ``_sample_multinomial``, ``_shuffle`` and ``_sample_unique_zipfian``
(statistics with wide margins on seeded draws, reproducibility under ``mx.random.seed``).

The pdf values and gradients are also compared with MXNet 1.9.1's through the committed
tests/data/mxnet_1_9_1/ops/ops_random_pdf.npz (the script beside it runs live when
``MXNET_PYTHON`` names an interpreter with MXNet 1.9.1).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
from op_helpers import infer_shapes, infer_types, seeded_rng

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req

nd = mx.nd
DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "ops"


def _params(dist: str, rng: np.random.Generator, s: tuple) -> list[np.ndarray]:
    """Parameters of shape ``s`` (``s + (3,)`` for dirichlet) inside each distribution's domain."""
    u = lambda lo, hi: rng.uniform(lo, hi, size=s)  # noqa: E731
    return {
        "uniform": [u(-2, -1), u(1, 3)],
        "normal": [u(-1, 1), u(0.5, 2)],
        "gamma": [u(1.5, 3), u(0.5, 2)],
        "exponential": [u(0.5, 2)],
        "poisson": [u(1, 4)],
        "negative_binomial": [u(1, 4), u(0.2, 0.8)],
        "generalized_negative_binomial": [u(1, 3), u(0.2, 0.8)],
        "dirichlet": [rng.uniform(0.5, 3, size=s + (3,))],
    }[dist]


def _sample(dist: str, rng: np.random.Generator, s: tuple, t: tuple) -> np.ndarray:
    if dist == "dirichlet":
        x = rng.uniform(0.1, 1, size=s + t + (3,))
        return x / x.sum(axis=-1, keepdims=True)
    if dist in ("poisson", "negative_binomial", "generalized_negative_binomial"):
        return rng.integers(0, 6, size=s + t).astype(np.float64)
    if dist == "uniform":
        return rng.uniform(-0.9, 0.9, size=s + t)
    return rng.uniform(0.2, 2.5, size=s + t)


def _scipy_log_pdf(dist: str, x: np.ndarray, params: list[np.ndarray], t: tuple) -> np.ndarray:
    wide = [p.reshape(p.shape + (1,) * len(t)) for p in params] if dist != "dirichlet" else params
    if dist == "uniform":
        return scipy.stats.uniform.logpdf(x, wide[0], wide[1] - wide[0])
    if dist == "normal":
        return scipy.stats.norm.logpdf(x, wide[0], wide[1])
    if dist == "gamma":
        return scipy.stats.gamma.logpdf(x, wide[0], scale=1 / wide[1])
    if dist == "exponential":
        return scipy.stats.expon.logpdf(x, scale=1 / wide[0])
    if dist == "poisson":
        return scipy.stats.poisson.logpmf(x, wide[0])
    if dist == "negative_binomial":
        return scipy.stats.nbinom.logpmf(x, wide[0], wide[1])
    if dist == "generalized_negative_binomial":
        mu, alpha = wide
        return scipy.stats.nbinom.logpmf(x, 1 / alpha, 1 / (mu * alpha + 1))
    alpha = params[0]
    flat_x, flat_a = x.reshape(-1, 3), np.repeat(alpha.reshape(-1, 3), int(np.prod(t, dtype=int)), axis=0)
    return np.array([scipy.stats.dirichlet.logpdf(xi, ai) for xi, ai in zip(flat_x, flat_a, strict=True)]).reshape(
        x.shape[:-1]
    )


DISTS = [
    "uniform",
    "normal",
    "gamma",
    "exponential",
    "poisson",
    "negative_binomial",
    "generalized_negative_binomial",
    "dirichlet",
]
DISCRETE = {"poisson", "negative_binomial", "generalized_negative_binomial"}
PDF_OPERATORS = {  # MXNet's operator names, each checked for req and gradients below
    "uniform": "_random_pdf_uniform",
    "normal": "_random_pdf_normal",
    "gamma": "_random_pdf_gamma",
    "exponential": "_random_pdf_exponential",
    "poisson": "_random_pdf_poisson",
    "negative_binomial": "_random_pdf_negative_binomial",
    "generalized_negative_binomial": "_random_pdf_generalized_negative_binomial",
    "dirichlet": "_random_pdf_dirichlet",
}


@pytest.mark.parametrize("dist", DISTS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pdf_matches_scipy(dist, dtype):
    rng = seeded_rng(DISTS.index(dist))
    s, t = (2, 3), (4,)
    x, params = _sample(dist, rng, s, t), _params(dist, rng, s)
    expected = _scipy_log_pdf(dist, x, params, t)
    function = getattr(nd, f"random_pdf_{dist}")
    args = [nd.array(a, dtype=dtype) for a in (x, *params)]
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == "float32" else {"rtol": 1e-9, "atol": 1e-11}
    log_pdf = function(*args, is_log=True)
    assert log_pdf.dtype == np.dtype(dtype) and log_pdf.shape == expected.shape
    assert_almost_equal(log_pdf, expected, **tol)
    assert_almost_equal(function(*args), np.exp(expected), **tol)


def test_pdf_samples_may_equal_the_parameter_shape():
    out = nd.random_pdf_normal(nd.array([0.0, 1.0]), nd.array([0.0, 1.0]), nd.array([1.0, 2.0]))
    assert_almost_equal(out, scipy.stats.norm.pdf([0.0, 1.0], [0.0, 1.0], [1.0, 2.0]), rtol=1e-5, atol=1e-7)


def test_uniform_pdf_is_zero_outside_the_interval():
    out = nd.random_pdf_uniform(nd.array([[-1.0, 0.5, 3.0]]), nd.array([0.0]), nd.array([2.0]))
    assert_almost_equal(out, [[0.0, 0.5, 0.0]], rtol=0, atol=0)


def _compare_with_reference(path: Path) -> list[str]:
    """Run every case of an ops_random_pdf.npz through MXLab (values and gradients)."""
    data = np.load(path)
    cases = sorted({k.split("/")[0] for k in data.files})
    for case in cases:
        inputs = [nd.array(data[k], dtype="float32") for i in range(3) if (k := f"{case}/in{i}") in data.files]
        for x in inputs:
            x.attach_grad()
        with mx.autograd.record():
            out = getattr(nd.op, str(data[f"{case}/op"]))(*inputs, is_log=bool(data[f"{case}/is_log"]))
        out.backward(nd.array(data[f"{case}/head"], dtype="float32"))
        tol = {"rtol": 1e-4, "atol": 1e-5}
        assert_almost_equal(out, data[f"{case}/out"], names=(f"MXLab {case}", "MXNet 1.9.1"), **tol)
        for i, x in enumerate(inputs):
            assert_almost_equal(x.grad, data[f"{case}/grad{i}"], names=(f"MXLab {case} grad{i}", "MXNet 1.9.1"), **tol)
    return cases


def test_pdf_values_and_gradients_match_mxnet_1_9_1():
    """Including MXNet's conventions: the gamma density takes a rate, discrete samples get no gradient."""
    cases = _compare_with_reference(DATA / "ops_random_pdf.npz")
    assert len(cases) == 2 * len(DISTS)


@pytest.mark.skipif(not os.environ.get("MXNET_PYTHON"), reason="set MXNET_PYTHON to an interpreter with MXNet 1.9.1")
def test_pdf_values_and_gradients_match_mxnet_1_9_1_live(tmp_path):
    target = tmp_path / "ops_random_pdf.npz"
    subprocess.run([os.environ["MXNET_PYTHON"], str(DATA / "ops_random_pdf.py"), str(target)], check=True, timeout=600)
    assert len(_compare_with_reference(target)) == 2 * len(DISTS)


@pytest.mark.parametrize("dist", DISTS)
@pytest.mark.parametrize("is_log", [False, True])
def test_pdf_gradients_match_finite_differences(dist, is_log):
    rng = seeded_rng(10 + DISTS.index(dist))
    s, t = (2,), (3,)
    location = [_sample(dist, rng, s, t), *_params(dist, rng, s)]
    function = getattr(nd.op, PDF_OPERATORS[dist])
    # Discrete samples are integers: only the parameters are differentiated (MXNet gives the samples 0).
    nodes = list(range(1, len(location))) if dist in DISCRETE or dist == "uniform" else None
    check_imperative_gradient(
        lambda *args: function(*args, is_log=is_log), location, grad_nodes=nodes, rtol=1e-4, atol=1e-6
    )


def test_pdf_honours_req():
    rng = seeded_rng(3)
    for dist in DISTS:
        args = [_sample(dist, rng, (2,), (3,)), *_params(dist, rng, (2,))]
        check_req(PDF_OPERATORS[dist], [a.astype(np.float32) for a in args], is_log=dist == "gamma")


def test_pdf_inference_both_ways_and_errors():
    ins, outs, done = infer_shapes("_random_pdf_normal", {}, [None, (2,), None], [(2, 5)])
    assert done and ins == [(2, 5), (2,), (2,)]
    ins, outs, done = infer_shapes("_random_pdf_dirichlet", {}, [(2, 4, 3), (2, 3)])
    assert done and outs == [(2, 4)]
    with pytest.raises(InferenceError, match="must lead the sample"):
        infer_shapes("_random_pdf_gamma", {}, [(3, 4), (2,), (2,)])
    with pytest.raises(InferenceError, match="vector length"):
        infer_shapes("_random_pdf_dirichlet", {}, [(2, 4, 3), (2, 4)])
    ins, outs = infer_types("_random_pdf_poisson", {}, [None, None], ["float64"])
    assert ins == ["float64", "float64"]
    with pytest.raises(InferenceError, match="floating-point"):
        infer_types("_random_pdf_poisson", {}, ["int32", None])
    with pytest.raises(OperatorParamError, match="is_log"):
        mx.operator.get("_random_pdf_normal").parse_attrs({"is_log": "maybe"})


# ============================================================================ _sample_multinomial
def test_multinomial_frequencies_follow_the_probabilities():
    mx.random.seed(42)
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.0, 0.5]], dtype=np.float32)
    draws = nd.random.multinomial(nd.array(probs, dtype="float32"), shape=(20000,)).asnumpy()
    assert draws.shape == (2, 20000) and draws.dtype == np.int32
    for row in range(2):
        freq = np.bincount(draws[row], minlength=3) / draws.shape[1]
        assert_almost_equal(freq, probs[row], rtol=0, atol=0.02)
    assert (draws[1] != 1).all()  # a zero-probability category is never drawn


def test_multinomial_log_probabilities_and_shapes():
    mx.random.seed(0)
    probs = np.array([[[0.25, 0.75]], [[0.9, 0.1]]], dtype=np.float64)
    draws, log_p = nd.random.multinomial(nd.array(probs, dtype="float64"), shape=(2, 3), get_prob=True, dtype="float32")
    assert draws.shape == log_p.shape == (2, 1, 2, 3)
    assert draws.dtype == np.float32 and log_p.dtype == np.float64
    picks = draws.asnumpy().astype(np.int64).reshape(2, 6)  # rows of probs: the leading (2, 1)
    expected = np.log(np.take_along_axis(probs.reshape(2, 2), picks, axis=1)).reshape(2, 1, 2, 3)
    assert_almost_equal(log_p, expected, rtol=1e-12, atol=0)


def test_multinomial_is_reproducible_after_seeding():
    probs = nd.array(np.full((3, 5), 0.2), dtype="float32")
    mx.random.seed(7)
    first = nd.random.multinomial(probs, shape=50).asnumpy()
    mx.random.seed(7)
    second = mx.random.multinomial(probs, shape=50).asnumpy()
    assert (first == second).all()
    assert not (first == nd.random.multinomial(probs, shape=50).asnumpy()).all()


def _seeded_log_prob(probs):
    mx.random.seed(11)  # the same draws on every call, so finite differences see a smooth function
    return nd.random.multinomial(probs, shape=4, get_prob=True)[1]


def test_multinomial_log_probability_gradient():
    location = [np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])]
    check_imperative_gradient(_seeded_log_prob, location, rtol=1e-4, atol=1e-6)
    probs = nd.array(location[0], dtype="float64")
    probs.attach_grad()
    with mx.autograd.record():
        log_p = _seeded_log_prob(probs)
    log_p.backward(nd.ones(log_p.shape, dtype="float64"))
    mx.random.seed(11)
    picks = nd.random.multinomial(nd.array(location[0], dtype="float64"), shape=4).asnumpy()
    expected = np.zeros((2, 3))
    for row in range(2):
        for j in picks[row]:
            expected[row, j] += 1 / location[0][row, j]
    assert_almost_equal(probs.grad, expected, rtol=1e-12, atol=0)


def test_multinomial_without_get_prob_gives_data_a_zero_gradient():
    probs = nd.array([[0.5, 0.5]], dtype="float32")
    probs.attach_grad()
    with mx.autograd.record():
        draws = nd.random.multinomial(probs, shape=3, dtype="float32")
    draws.backward()
    assert (probs.grad.asnumpy() == 0).all()


def test_multinomial_inference_and_parameter_errors():
    _, outs, done = infer_shapes("_sample_multinomial", {"shape": (4,), "get_prob": True}, [(2, 3, 5)])
    assert done and outs == [(2, 3, 4), (2, 3, 4)]
    ins, outs = infer_types("_sample_multinomial", {"get_prob": True, "dtype": "uint8"}, [None], [None, "float16"])
    assert ins == ["float16"] and outs == ["uint8", "float16"]
    with pytest.raises(InferenceError, match="floating-point"):
        infer_types("_sample_multinomial", {}, ["int32"])
    with pytest.raises(InferenceError, match="last axis"):
        infer_shapes("_sample_multinomial", {}, [(2, 0)])
    with pytest.raises(OperatorParamError, match="dtype"):
        mx.operator.get("_sample_multinomial").parse_attrs({"dtype": "int64"})
    with pytest.raises(mx.MXLabError, match="NDArray of probabilities"):
        nd.random.multinomial([0.5, 0.5])
    sym = mx.sym.random.multinomial(mx.sym.var("p"), shape=(2,), get_prob=True)
    assert sym.infer_shape(p=(4, 3))[1] == [(4, 2), (4, 2)]


# ============================================================================ _shuffle
def test_shuffle_permutes_the_first_axis_reproducibly():
    data = np.arange(40, dtype=np.float32).reshape(20, 2)
    mx.random.seed(5)
    first = nd.random.shuffle(nd.array(data, dtype="float32")).asnumpy()
    assert sorted(first[:, 0].tolist()) == data[:, 0].tolist()
    assert (first[:, 1] == first[:, 0] + 1).all()  # rows move as a whole
    assert not (first == data).all()
    mx.random.seed(5)
    assert (mx.random.shuffle(nd.array(data, dtype="float32")).asnumpy() == first).all()
    assert nd.shuffle(nd.array([3.0])).asnumpy().tolist() == [3.0]


def test_shuffle_positions_are_uniform():
    mx.random.seed(9)
    data = nd.arange(4, dtype="float32")
    firsts = np.array([nd.random.shuffle(data).asnumpy()[0] for _ in range(2000)])
    assert_almost_equal(np.bincount(firsts.astype(int), minlength=4) / 2000, np.full(4, 0.25), rtol=0, atol=0.05)


def test_shuffle_in_symbols_and_inference():
    assert mx.sym.random.shuffle(mx.sym.var("x")).infer_shape(x=(3, 2))[1] == [(3, 2)]
    ins, _, done = infer_shapes("_shuffle", {}, [None], [(5, 2)])
    assert done and ins == [(5, 2)]
    ins, _ = infer_types("_shuffle", {}, [None], ["int64"])
    assert ins == ["int64"]


# ============================================================================ _sample_unique_zipfian
def test_unique_zipfian_draws_distinct_classes_with_a_log_uniform_bias():
    mx.random.seed(3)
    range_max, wanted = 1000, 50
    samples, tries = nd._internal._sample_unique_zipfian(range_max=range_max, shape=(40, wanted))
    samples, tries = samples.asnumpy(), tries.asnumpy()
    assert samples.dtype == tries.dtype == np.int64 and samples.shape == (40, wanted) and tries.shape == (40,)
    assert all(len(set(row)) == wanted for row in samples)
    assert samples.min() >= 0 and samples.max() < range_max
    assert (tries >= wanted).all()
    # P(class 0) = log 2 / log 1001 ~ 0.1: among ~50+ draws per row it is almost always present.
    assert np.mean([(row == 0).any() for row in samples]) > 0.9
    assert np.mean(samples < 100) > 0.5  # log-uniform: small classes dominate


def test_unique_zipfian_is_reproducible_after_seeding():
    draw = lambda: [a.asnumpy() for a in nd._internal._sample_unique_zipfian(range_max=500, shape=(3, 20))]  # noqa: E731
    mx.random.seed(21, ctx=mx.cpu(0))
    first = draw()
    mx.random.seed(21, ctx=mx.cpu(0))
    second = draw()
    assert all((a == b).all() for a, b in zip(first, second, strict=True))


def test_unique_zipfian_parameter_errors_and_inference():
    op = mx.operator.get("_sample_unique_zipfian")
    with pytest.raises(OperatorParamError, match="shape"):
        op.parse_attrs({"range_max": 10, "shape": (5,)})
    with pytest.raises(OperatorParamError, match="range_max"):
        op.parse_attrs({"range_max": 4, "shape": (2, 5)})
    with pytest.raises(OperatorParamError, match="range_max"):
        op.parse_attrs({"shape": (2, 5)})
    _, outs, done = infer_shapes("_sample_unique_zipfian", {"range_max": 9, "shape": (3, 4)}, [])
    assert done and outs == [(3, 4), (3,)]
    assert infer_types("_sample_unique_zipfian", {"range_max": 9, "shape": (3, 4)}, [])[1] == ["int64", "int64"]


def test_samplers_honour_req():
    check_req("_sample_multinomial", [np.array([[0.3, 0.7], [0.5, 0.5]], np.float32)], shape=(3,), get_prob=True)
    check_req("_shuffle", [np.arange(12, dtype=np.float32).reshape(6, 2)])
    check_req("_sample_unique_zipfian", [], range_max=50, shape=(2, 5))
