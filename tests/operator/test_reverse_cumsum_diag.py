"""reverse/flip, cumsum (_np_cumsum), diag and moments against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng, to_nd

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req, rand_shape_nd

nd = mx.nd
FLOATS = ["float16", "float32", "float64"]


# ----------------------------------------------------------------------------- reverse


@pytest.mark.parametrize("dtype", [*FLOATS, "int32", "uint8"])
def test_reverse_forward(dtype):
    rng = seeded_rng(1)
    for _ in range(5):
        shape = rand_shape_nd(int(rng.integers(1, 5)), 4, rng=rng)
        x = rng.uniform(0, 50, shape).astype(dtype)
        axes = tuple(int(a) for a in rng.choice(len(shape), size=int(rng.integers(1, len(shape) + 1)), replace=False))
        assert_almost_equal(nd.reverse(to_nd(x, dtype), axis=axes), np.flip(x, axes))
        assert_almost_equal(nd.flip(to_nd(x, dtype), axis=(-1,)), np.flip(x, -1))


def test_reverse_gradient_req_and_errors():
    rng = seeded_rng(2)
    x = rng.uniform(-1, 1, (2, 3, 2))
    check_imperative_gradient(lambda a: nd.reverse(a, axis=(0, 2)), [x])
    check_req("reverse", [x.astype(np.float32)], axis=(1,))
    check_req("flip", [x.astype(np.float32)], axis=(0, 1))
    with pytest.raises(InferenceError, match="axis=3"):
        nd.reverse(nd.ones((2, 3)), axis=(3,))
    with pytest.raises(InferenceError, match="twice"):
        nd.reverse(nd.ones((2, 3)), axis=(1, -1))
    with pytest.raises(OperatorParamError, match="axis"):
        nd.reverse(nd.ones((2, 3)))  # required
    assert infer_shapes("reverse", {"axis": (0,)}, [None], [(4, 5)])[0] == [(4, 5)]


# ----------------------------------------------------------------------------- cumsum


@pytest.mark.parametrize("dtype", [*FLOATS, "int32", "int64"])
def test_cumsum_forward(dtype):
    rng = seeded_rng(3)
    x = rng.uniform(-5, 5, (3, 4, 2)).astype(dtype)
    for axis in (0, 1, 2, -1):
        expected = np.cumsum(x.astype(np.float64), axis=axis)
        got = nd.cumsum(to_nd(x, dtype), axis=axis)
        assert got.dtype == np.dtype(dtype)
        assert_almost_equal(got, expected.astype(dtype), rtol=1e-2 if dtype == "float16" else None)
    flat = nd.cumsum(to_nd(x, dtype))
    assert flat.shape == (x.size,)
    # MXNet 1.9.1 keeps int8 as int8; dtype= chooses the output type
    assert nd.cumsum(nd.ones((2, 2), dtype="int8")).dtype == np.int8
    assert nd.cumsum(nd.ones((2, 2), dtype="float16"), dtype="float64").dtype == np.float64


def test_cumsum_gradient_req_inference_and_errors():
    rng = seeded_rng(4)
    x = rng.uniform(-1, 1, (2, 3))
    check_imperative_gradient(lambda a: nd.cumsum(a, axis=1), [x])
    check_imperative_gradient(nd.cumsum, [x])
    check_req("cumsum", [x.astype(np.float32)], axis=0)
    check_req("_np_cumsum", [x.astype(np.float32)])
    assert infer_shapes("cumsum", {"axis": 1}, [None], [(2, 5)])[0] == [(2, 5)]
    assert infer_shapes("cumsum", {}, [(2, 5)])[1] == [(10,)]
    assert infer_types("cumsum", {}, [None], ["float16"])[0] == ["float16"]
    assert infer_types("cumsum", {"dtype": "int64"}, ["float32"])[1] == ["int64"]
    with pytest.raises(OperatorParamError, match="dtype"):
        nd.cumsum(nd.ones((2,)), dtype="uint8")
    with pytest.raises(InferenceError, match="axis=2"):
        nd.cumsum(nd.ones((2, 2)), axis=2)


# ----------------------------------------------------------------------------- diag


@pytest.mark.parametrize("dtype", [*FLOATS, "int32"])
def test_diag_forward(dtype):
    rng = seeded_rng(5)
    v = rng.uniform(-3, 3, (4,)).astype(dtype)
    for k in (-2, 0, 3):
        assert_almost_equal(nd.diag(to_nd(v, dtype), k=k), np.diag(v, k))
    m = rng.uniform(-3, 3, (3, 5)).astype(dtype)
    for k in (-2, 0, 4):
        assert_almost_equal(nd.diag(to_nd(m, dtype), k=k), np.diag(m, k))
    t = rng.uniform(-3, 3, (2, 3, 4)).astype(dtype)
    for k, a1, a2 in ((0, 0, 1), (1, 2, 0), (-1, -1, 1)):
        got = nd.diag(to_nd(t, dtype), k=k, axis1=a1, axis2=a2)
        assert_almost_equal(got, np.diagonal(t, offset=k, axis1=a1, axis2=a2))


def test_diag_gradient_req_and_errors():
    rng = seeded_rng(6)
    check_imperative_gradient(lambda a: nd.diag(a, k=1), [rng.uniform(-1, 1, (3,))])
    check_imperative_gradient(lambda a: nd.diag(a, k=-1), [rng.uniform(-1, 1, (3, 4))])
    check_imperative_gradient(lambda a: nd.diag(a, k=1, axis1=2, axis2=0), [rng.uniform(-1, 1, (3, 2, 4))])
    check_req("diag", [rng.uniform(-1, 1, (3, 4)).astype(np.float32)], k=1)
    check_req("diag", [rng.uniform(-1, 1, (3,)).astype(np.float32)], k=-2)
    with pytest.raises(InferenceError, match="axis1 and axis2"):
        nd.diag(nd.ones((2, 2)), axis1=1, axis2=1)
    with pytest.raises(InferenceError, match="k=5"):
        nd.diag(nd.ones((2, 3)), k=5)
    with pytest.raises(OperatorParamError, match="k"):
        nd.diag(nd.ones((2, 3)), k=0.5)
    assert infer_shapes("diag", {"k": 1}, [(3,)])[1] == [(4, 4)]
    assert infer_types("diag", {}, [None], ["int32"])[0] == ["int32"]


# ----------------------------------------------------------------------------- moments


@pytest.mark.parametrize("dtype", FLOATS)
def test_moments_forward(dtype):
    rng = seeded_rng(7)
    x = rng.uniform(-2, 2, (3, 4, 5)).astype(dtype)
    for axes, keep in (((0,), False), ((0, 2), True), ((-1,), False), ((0, 1, 2), False)):
        mean, var = nd.moments(to_nd(x, dtype), axes=axes, keepdims=keep)
        x64 = x.astype(np.float64)
        exp_mean = x64.mean(axis=axes, keepdims=keep)
        exp_var = x64.var(axis=axes, keepdims=keep)
        exp_shape = exp_mean.shape or (1,)
        assert mean.shape == exp_shape and var.shape == exp_shape and mean.dtype == np.dtype(dtype)
        assert_almost_equal(mean, exp_mean.reshape(exp_shape).astype(dtype))
        assert_almost_equal(var, exp_var.reshape(exp_shape).astype(dtype))


def test_moments_gradient_req_inference_and_errors():
    rng = seeded_rng(8)
    x = rng.uniform(-1, 1, (2, 3, 2))
    check_imperative_gradient(lambda a: nd.moments(a, axes=(0, 2)), [x])
    check_imperative_gradient(lambda a: nd.moments(a, axes=(1,), keepdims=True)[1], [x])
    check_req("moments", [x.astype(np.float32)], axes=(1,))
    _, outs, done = infer_shapes("moments", {"axes": (1,), "keepdims": True}, [(2, 3, 4)])
    assert outs == [(2, 1, 4), (2, 1, 4)] and done
    assert infer_types("moments", {"axes": (0,)}, [None], [None, "float64"])[0] == ["float64"]
    with pytest.raises(InferenceError, match="axes"):
        nd.moments(nd.ones((2, 3)))  # MXNet 1.9.1 rejects empty axes too
    with pytest.raises(OperatorParamError, match="keepdims"):
        nd.moments(nd.ones((2, 3)), axes=(0,), keepdims="maybe")
