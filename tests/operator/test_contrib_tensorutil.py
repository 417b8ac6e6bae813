"""Contrib utilities: sign_ste, round_ste, gradientmultiplier, div_sqrt_dim, allclose,
index_copy and the interleaved multi-head attention kernels."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng, to_nd

import framework as mx
from framework import autograd
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req

nd = mx.nd
FLOATS = ["float16", "float32", "float64"]


def _grad(fn, x: np.ndarray) -> np.ndarray:
    arr = to_nd(x)
    arr.attach_grad()
    with autograd.record():
        out = fn(arr)
    out.backward(nd.ones_like(out) * 2)
    return arr.grad.asnumpy()


@pytest.mark.parametrize("dtype", FLOATS)
def test_straight_through_estimators(dtype):
    rng = seeded_rng(1)
    x = rng.uniform(-3, 3, (3, 4)).astype(dtype)
    assert_almost_equal(nd.contrib.sign_ste(to_nd(x, dtype)), np.sign(x))
    assert_almost_equal(nd.contrib.round_ste(nd.array([-2.5, -0.5, 0.5, 1.5])), np.array([-3, -1, 1, 2], np.float32))
    # the gradient passes straight through (MXNet 1.9.1)
    assert (_grad(nd.contrib.sign_ste, x) == 2).all()
    assert (_grad(nd.contrib.round_ste, x) == 2).all()
    check_req("_contrib_sign_ste", [x.astype(np.float32)])
    check_req("_contrib_round_ste", [x.astype(np.float32)])
    check_imperative_gradient(lambda a: nd.contrib.round_ste(a) * 0 + a, [x.astype(np.float64)])


def test_gradientmultiplier():
    rng = seeded_rng(2)
    x = rng.uniform(-1, 1, (2, 3))
    assert_almost_equal(nd.contrib.gradientmultiplier(to_nd(x), scalar=-3), x)
    assert_almost_equal(_grad(lambda a: nd.contrib.gradientmultiplier(a, scalar=-3), x), np.full((2, 3), -6.0))
    check_req("_contrib_gradientmultiplier", [x.astype(np.float32)], scalar=0.5)
    with pytest.raises(OperatorParamError, match="scalar"):
        nd.contrib.gradientmultiplier(nd.ones((2,)), scalar="big")


@pytest.mark.parametrize("dtype", FLOATS)
def test_div_sqrt_dim(dtype):
    rng = seeded_rng(3)
    x = rng.uniform(-1, 1, (2, 3, 16)).astype(dtype)
    assert_almost_equal(nd.contrib.div_sqrt_dim(to_nd(x, dtype)), (x / 4).astype(dtype))
    check_imperative_gradient(nd.contrib.div_sqrt_dim, [x[:, :, :5].astype(np.float64)])
    check_req("_contrib_div_sqrt_dim", [x.astype(np.float32)])


def test_allclose():
    rng = seeded_rng(4)
    a = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    for b, kw in ((a + 1e-7, {}), (a * 1.05, {"rtol": 0.1}), (a + 0.5, {}), (a + 0.5, {"atol": 1.0})):
        got = nd.contrib.allclose(nd.array(a), nd.array(b), **kw)
        assert got.shape == () and got.dtype == np.uint8
        assert int(got.asnumpy()) == int(np.allclose(a, b, **kw))
    nan = nd.array([np.nan, 1.0])
    assert int(nd.contrib.allclose(nan, nan).asnumpy()) == 1
    assert int(nd.contrib.allclose(nan, nan, equal_nan=False).asnumpy()) == 0
    check_req("_contrib_allclose", [a, a])
    assert infer_types("_contrib_allclose", {}, [None, "float64"])[0] == ["float64", "float64"]
    with pytest.raises(InferenceError, match="same shape"):
        nd.contrib.allclose(nd.ones((2, 2)), nd.ones((2,)))
    with pytest.raises(OperatorParamError, match="rtol"):
        nd.contrib.allclose(nd.ones((2,)), nd.ones((2,)), rtol=-1)


@pytest.mark.parametrize("dtype", FLOATS)
def test_index_copy(dtype):
    rng = seeded_rng(5)
    old = rng.uniform(-1, 1, (5, 3)).astype(dtype)
    new = rng.uniform(-1, 1, (2, 3)).astype(dtype)
    index = np.array([4, 1], np.float32)
    expected = old.copy()
    expected[[4, 1]] = new
    assert_almost_equal(nd.contrib.index_copy(to_nd(old, dtype), nd.array(index), to_nd(new, dtype)), expected)


def test_index_copy_gradient_req_and_errors():
    rng = seeded_rng(6)
    old, new = rng.uniform(-1, 1, (4, 2)), rng.uniform(-1, 1, (2, 2))
    index = nd.array([3, 0], dtype="float64")
    check_imperative_gradient(lambda o, n: nd.contrib.index_copy(o, index, n), [old, new])
    check_req("_contrib_index_copy", [old, np.array([3.0, 0.0]), new])
    with pytest.raises(InferenceError, match="index_vector"):
        nd.contrib.index_copy(nd.ones((4, 2)), nd.array([0]), nd.ones((2, 2)))
    ins, _outs, _ = infer_shapes("_contrib_index_copy", {}, [None, (2,), (2, 3)], [(5, 3)])
    assert ins[0] == (5, 3)


# ------------------------------------------------------------------------ interleaved attention


def _heads(x: np.ndarray, heads: int, parts: int) -> np.ndarray:
    seq, batch, width = x.shape
    d = width // (heads * parts)
    return x.reshape(seq, batch, heads, parts, d).transpose(3, 1, 2, 0, 4).reshape(parts, batch * heads, seq, d)


def _attention_reference(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    return (q / np.sqrt(q.shape[-1])) @ np.swapaxes(k, -1, -2)


def _merge(out: np.ndarray, batch: int, heads: int) -> np.ndarray:
    _bh, seq, d = out.shape
    return out.reshape(batch, heads, seq, d).transpose(2, 0, 1, 3).reshape(seq, batch, heads * d)


@pytest.mark.parametrize("dtype", FLOATS)
def test_interleaved_attention_forward(dtype):
    rng = seeded_rng(7)
    heads, d, seq, batch, klen = 2, 3, 4, 2, 5
    qkv = rng.uniform(-1, 1, (seq, batch, heads * 3 * d)).astype(dtype)
    q, k, v = _heads(qkv.astype(np.float64), heads, 3)
    scores = nd.contrib.interleaved_matmul_selfatt_qk(to_nd(qkv, dtype), heads=heads)
    assert scores.shape == (batch * heads, seq, seq) and scores.dtype == np.dtype(dtype)
    assert_almost_equal(scores, _attention_reference(q, k).astype(dtype))
    att = rng.uniform(0, 1, (batch * heads, seq, seq)).astype(dtype)
    out = nd.contrib.interleaved_matmul_selfatt_valatt(to_nd(qkv, dtype), to_nd(att, dtype), heads=heads)
    assert_almost_equal(out, _merge(att.astype(np.float64) @ v, batch, heads).astype(dtype))

    queries = rng.uniform(-1, 1, (seq, batch, heads * d)).astype(dtype)
    kv = rng.uniform(-1, 1, (klen, batch, heads * 2 * d)).astype(dtype)
    (qe,) = _heads(queries.astype(np.float64), heads, 1)
    ke, ve = _heads(kv.astype(np.float64), heads, 2)
    got = nd.contrib.interleaved_matmul_encdec_qk(to_nd(queries, dtype), to_nd(kv, dtype), heads=heads)
    assert_almost_equal(got, _attention_reference(qe, ke).astype(dtype))
    att = rng.uniform(0, 1, (batch * heads, seq, klen)).astype(dtype)
    got = nd.contrib.interleaved_matmul_encdec_valatt(to_nd(kv, dtype), to_nd(att, dtype), heads=heads)
    assert_almost_equal(got, _merge(att.astype(np.float64) @ ve, batch, heads).astype(dtype))


def test_interleaved_attention_gradients_and_req():
    rng = seeded_rng(8)
    qkv = rng.uniform(-1, 1, (3, 2, 2 * 3 * 2))
    att = rng.uniform(0, 1, (4, 3, 3))
    queries, kv = rng.uniform(-1, 1, (3, 2, 4)), rng.uniform(-1, 1, (4, 2, 8))
    att_ed = rng.uniform(0, 1, (4, 3, 4))
    cases = [
        ("_contrib_interleaved_matmul_selfatt_qk", nd.contrib.interleaved_matmul_selfatt_qk, [qkv]),
        ("_contrib_interleaved_matmul_selfatt_valatt", nd.contrib.interleaved_matmul_selfatt_valatt, [qkv, att]),
        ("_contrib_interleaved_matmul_encdec_qk", nd.contrib.interleaved_matmul_encdec_qk, [queries, kv]),
        ("_contrib_interleaved_matmul_encdec_valatt", nd.contrib.interleaved_matmul_encdec_valatt, [kv, att_ed]),
    ]
    for name, fn, inputs in cases:
        check_imperative_gradient(lambda *a, f=fn: f(*a, heads=2), inputs)
        check_req(name, [x.astype(np.float32) for x in inputs], heads=2)


def test_interleaved_attention_inference_and_errors():
    _, outs, done = infer_shapes("_contrib_interleaved_matmul_selfatt_qk", {"heads": 4}, [(7, 2, 96)])
    assert outs == [(8, 7, 7)] and done
    ins, outs, _ = infer_shapes("_contrib_interleaved_matmul_selfatt_valatt", {"heads": 4}, [(7, 2, 96), None])
    assert ins[1] == (8, 7, 7) and outs == [(7, 2, 32)]
    _, outs, _ = infer_shapes("_contrib_interleaved_matmul_encdec_valatt", {"heads": 2}, [(5, 3, 16), (6, 4, 5)])
    assert outs == [(4, 3, 8)]
    with pytest.raises(InferenceError, match="not divisible"):
        nd.contrib.interleaved_matmul_selfatt_qk(nd.ones((2, 2, 10)), heads=4)
    with pytest.raises(InferenceError, match="do not match"):
        nd.contrib.interleaved_matmul_encdec_qk(nd.ones((2, 3, 4)), nd.ones((2, 2, 8)), heads=2)
    with pytest.raises(OperatorParamError, match="heads"):
        nd.contrib.interleaved_matmul_selfatt_qk(nd.ones((2, 2, 6)), heads=0)
