"""contrib fft/ifft, count_sketch and hawkesll against NumPy references."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng, to_nd

import framework as mx
from framework.base import MXLabError
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req

nd = mx.nd


def _interleaved(z: np.ndarray) -> np.ndarray:
    return np.stack([z.real, z.imag], axis=-1).reshape(*z.shape[:-1], 2 * z.shape[-1])


@pytest.mark.parametrize("shape", [(3, 8), (2, 1, 3, 5)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fft_and_ifft(shape, dtype):
    rng = seeded_rng(1)
    x = rng.uniform(-1, 1, shape).astype(dtype)
    spectrum = nd.contrib.fft(to_nd(x, dtype))
    assert spectrum.shape == (*shape[:-1], 2 * shape[-1]) and spectrum.dtype == np.dtype(dtype)
    assert_almost_equal(spectrum, _interleaved(np.fft.fft(x.astype(np.float64), axis=-1)).astype(dtype))
    packed = rng.uniform(-1, 1, (*shape[:-1], 2 * shape[-1])).astype(dtype)
    z = packed[..., 0::2] + 1j * packed[..., 1::2]
    expected = (np.fft.ifft(z, axis=-1) * shape[-1]).real  # MXNet does not divide by d
    assert_almost_equal(nd.contrib.ifft(to_nd(packed, dtype)), expected.astype(dtype))
    assert_almost_equal(nd.contrib.ifft(spectrum), (x * shape[-1]).astype(dtype), rtol=1e-4, atol=1e-4)


def test_fft_gradients_req_and_errors():
    rng = seeded_rng(2)
    check_imperative_gradient(nd.contrib.fft, [rng.uniform(-1, 1, (2, 4))])
    check_imperative_gradient(nd.contrib.ifft, [rng.uniform(-1, 1, (2, 6))])
    check_req("_contrib_fft", [rng.uniform(-1, 1, (2, 4)).astype(np.float32)])
    check_req("_contrib_ifft", [rng.uniform(-1, 1, (2, 4)).astype(np.float32)], compute_size=4)
    assert infer_shapes("_contrib_ifft", {}, [None], [(3, 5)])[0] == [(3, 10)]
    with pytest.raises(InferenceError, match="2-D"):
        nd.contrib.fft(nd.ones((2, 3, 4)))
    with pytest.raises(InferenceError, match="even"):
        nd.contrib.ifft(nd.ones((2, 5)))
    with pytest.raises(OperatorParamError, match="compute_size"):
        nd.contrib.fft(nd.ones((2, 4)), compute_size=0)


def _sketch_reference(data: np.ndarray, h: np.ndarray, s: np.ndarray, out_dim: int) -> np.ndarray:
    out = np.zeros((data.shape[0], out_dim))
    np.add.at(out.T, h.reshape(-1).astype(int), (data * s.reshape(-1)).T)
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_count_sketch(dtype):
    rng = seeded_rng(3)
    data = rng.uniform(-1, 1, (4, 6)).astype(dtype)
    h = rng.integers(0, 3, (1, 6)).astype(dtype)
    s = rng.choice([-1.0, 1.0], (1, 6)).astype(dtype)
    got = nd.contrib.count_sketch(to_nd(data, dtype), to_nd(h, dtype), to_nd(s, dtype), out_dim=3)
    assert_almost_equal(got, _sketch_reference(data, h, s, 3).astype(dtype))


def test_count_sketch_gradient_req_and_errors():
    rng = seeded_rng(4)
    data, h, s = rng.uniform(-1, 1, (3, 5)), np.array([[0, 3, 1, 3, 2]], float), np.array([[1, -1, -1, 1, 1]], float)
    check_imperative_gradient(lambda d: nd.contrib.count_sketch(d, to_nd(h), to_nd(s), out_dim=4), [data])
    check_req("_contrib_count_sketch", [data, h, s], out_dim=4)
    ins, outs, done = infer_shapes("_contrib_count_sketch", {"out_dim": 7}, [(2, 5), None, None])
    assert ins[1:] == [(1, 5), (1, 5)] and outs == [(2, 7)] and done
    with pytest.raises(OperatorParamError, match="out_dim"):
        nd.contrib.count_sketch(to_nd(data), to_nd(h), to_nd(s))
    with pytest.raises(MXLabError, match=r"\[0, 2\)"):  # raised by the kernel, seen at the first wait
        nd.contrib.count_sketch(to_nd(data), to_nd(h), to_nd(s), out_dim=2).asnumpy()


def _hawkes_reference(lda, alpha, beta, state, lags, marks, valid, max_time):
    """Event-by-event log-likelihood, written from the definition."""
    n, k = lda.shape
    loglike, final = np.zeros(n), np.zeros((n, k))
    for i in range(n):
        times = np.cumsum(lags[i, : int(valid[i])])
        ll = 0.0
        for e, t in enumerate(times):
            m = marks[i, e]
            past = times[:e][marks[i, :e] == m]
            memory = state[i, m] * np.exp(-beta[m] * t) + np.exp(-beta[m] * (t - past)).sum()
            ll += np.log(lda[i, m] + alpha[m] * beta[m] * memory)
        for m in range(k):
            own = times[marks[i, : len(times)] == m]
            final[i, m] = state[i, m] * np.exp(-beta[m] * max_time[i]) + np.exp(-beta[m] * (max_time[i] - own)).sum()
            integral = lda[i, m] * max_time[i] + alpha[m] * state[i, m] * (1 - np.exp(-beta[m] * max_time[i]))
            integral += alpha[m] * (1 - np.exp(-beta[m] * (max_time[i] - own))).sum()
            ll -= integral
        loglike[i] = ll
    return loglike, final


def _hawkes_inputs(rng: np.random.Generator):
    n, k, t = 3, 2, 4
    return [
        rng.uniform(0.5, 1.5, (n, k)),
        rng.uniform(0.1, 0.5, (k,)),
        rng.uniform(0.5, 2.0, (k,)),
        rng.uniform(0.0, 0.5, (n, k)),
        rng.uniform(0.1, 1.0, (n, t)),
        rng.integers(0, k, (n, t)).astype(np.int32),
        np.array([4.0, 2.0, 0.0]),
        np.array([5.0, 3.0, 2.0]),
    ]


def test_hawkesll_forward():
    rng = seeded_rng(5)
    inputs = _hawkes_inputs(rng)
    loglike, states = nd.contrib.hawkesll(*[to_nd(x, "int32" if x.dtype == np.int32 else "float64") for x in inputs])
    expected_ll, expected_states = _hawkes_reference(*inputs)
    assert_almost_equal(loglike, expected_ll)
    assert_almost_equal(states, expected_states)
    # the example worked by hand in MXNet 1.9.1's terms
    got = nd.contrib.hawkesll(
        nd.array([[0.5, 0.5]]),
        nd.array([0.2, 0.2]),
        nd.array([1.0, 1.0]),
        nd.zeros((1, 2)),
        nd.array([[1.0, 1.0, 2.0]]),
        nd.array([[0, 1, 0]], dtype="int32"),
        nd.array([3.0]),
        nd.array([10.0]),
    )
    assert_almost_equal(got[0], np.array([-12.659135], np.float32))


def test_hawkesll_gradient_req_inference_and_errors():
    rng = seeded_rng(6)
    inputs = _hawkes_inputs(rng)
    observations = [to_nd(x, "int32" if x.dtype == np.int32 else "float64") for x in inputs[4:]]
    check_imperative_gradient(lambda *p: nd.contrib.hawkesll(*p, *observations), inputs[:4])
    check_req("_contrib_hawkesll", inputs)
    ins, outs, done = infer_shapes("_contrib_hawkesll", {}, [(5, 3), None, None, None, (5, 7), None, None, None])
    assert ins[1:4] == [(3,), (3,), (5, 3)] and ins[5:] == [(5, 7), (5,), (5,)] and outs == [(5,), (5, 3)] and done
    types = infer_types("_contrib_hawkesll", {}, ["float32", *[None] * 7])[0]
    assert types[5] == "int32" and types[7] == "float32"
    with pytest.raises(InferenceError, match="same N"):
        infer_shapes("_contrib_hawkesll", {}, [(5, 3), None, None, None, (4, 7), None, None, None])
