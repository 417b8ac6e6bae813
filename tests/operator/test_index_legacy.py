"""batch_take, choose_element_0index, fill_element_0index, _onehot_encode, ravel/unravel_index."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng, to_nd

import framework as mx
from framework import autograd
from framework.executor import GradientError
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req

nd = mx.nd
DTYPES = ["float16", "float32", "float64", "int32"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_take(dtype):
    rng = seeded_rng(1)
    a = rng.uniform(0, 9, (2, 3, 4)).astype(dtype)
    idx = rng.integers(-2, 6, (6,)).astype(np.int32)
    got = nd.batch_take(to_nd(a, dtype), nd.array(idx, dtype="int32"))
    rows = a.reshape(6, 4)
    assert_almost_equal(got, rows[np.arange(6), np.clip(idx, 0, 3)])  # out-of-range indices clip (MXNet 1.9.1)
    check_req("batch_take", [a.astype(np.float32), idx])
    assert infer_types("batch_take", {}, ["float32", None])[0] == ["float32", "int32"]
    with pytest.raises(InferenceError, match="one element per row"):
        nd.batch_take(nd.ones((2, 3)), nd.array([0, 1, 2], dtype="int32"))
    x = nd.ones((2, 3))
    x.attach_grad()
    with pytest.raises(GradientError, match="batch_take"), autograd.record():
        nd.batch_take(x, nd.array([0, 1], dtype="int32")).backward()


def test_choose_element_0index_is_pick():
    rng = seeded_rng(2)
    a = rng.uniform(-1, 1, (3, 4))
    idx = np.array([3, 0, 2], np.float64)
    assert_almost_equal(nd.choose_element_0index(to_nd(a), to_nd(idx)), a[np.arange(3), idx.astype(int)])
    check_imperative_gradient(lambda x: nd.choose_element_0index(x, to_nd(idx)), [a])
    check_req("choose_element_0index", [a.astype(np.float32), idx.astype(np.float32)])


@pytest.mark.parametrize("dtype", DTYPES)
def test_fill_element_0index(dtype):
    rng = seeded_rng(3)
    lhs = rng.uniform(0, 9, (3, 4)).astype(dtype)
    mhs = rng.uniform(0, 9, (3,)).astype(dtype)
    rhs = np.array([2, 0, 3], dtype)
    expected = lhs.copy()
    expected[np.arange(3), rhs.astype(int)] = mhs
    assert_almost_equal(nd.fill_element_0index(to_nd(lhs, dtype), to_nd(mhs, dtype), to_nd(rhs, dtype)), expected)
    check_req("fill_element_0index", [lhs.astype(np.float32), mhs.astype(np.float32), rhs.astype(np.float32)])
    with pytest.raises(InferenceError, match="mhs"):
        nd.fill_element_0index(nd.ones((3, 4)), nd.ones((2,)), nd.ones((3,)))


def test_onehot_encode():
    got = nd._internal._onehot_encode(nd.array([3, 0, 1]), nd.zeros((3, 4)))
    assert_almost_equal(got, np.eye(4, dtype=np.float32)[[3, 0, 1]])
    check_req("_onehot_encode", [np.array([1, 2], np.float32), np.zeros((2, 3), np.float32)])
    with pytest.raises(InferenceError, match="lhs"):
        nd._internal._onehot_encode(nd.array([1, 2]), nd.zeros((3, 4)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_ravel_and_unravel_round_trip(dtype):
    rng = seeded_rng(4)
    shape = (3, 4, 5)
    coords = np.stack([rng.integers(0, d, (7,)) for d in shape]).astype(dtype)
    flat = nd.ravel_multi_index(to_nd(coords, dtype), shape=shape)
    assert flat.dtype == np.dtype(dtype)
    assert_almost_equal(flat, np.ravel_multi_index(coords.astype(int), shape))
    back = nd.unravel_index(flat, shape=shape)
    assert back.shape == (3, 7) and back.dtype == np.dtype(dtype)
    assert_almost_equal(back, coords)
    # no bounds checks: MXNet 1.9.1 gives [1, 39] and [[3, 0], [2, -1]] here
    assert nd.ravel_multi_index(nd.array([[0, 5], [1, 9]]), shape=(3, 6)).asnumpy().tolist() == [1, 39]
    assert nd.unravel_index(nd.array([20, -1]), shape=(3, 6)).asnumpy().tolist() == [[3, 0], [2, -1]]


def test_ravel_req_inference_and_errors():
    check_req("ravel_multi_index", [np.array([[0, 1], [2, 3]], np.float32)], shape=(3, 4))
    check_req("unravel_index", [np.array([0, 7, 11], np.float32)], shape=(3, 4))
    assert infer_shapes("_unravel_index", {"shape": (3, 4)}, [None], [(2, 5)])[0] == [(5,)]
    assert infer_shapes("_ravel_multi_index", {"shape": (3, 4)}, [(2, 5)])[1] == [(5,)]
    with pytest.raises(InferenceError, match="one row per axis"):
        nd.ravel_multi_index(nd.ones((3, 2)), shape=(3, 4))
    with pytest.raises(InferenceError, match="positive sizes"):
        nd.unravel_index(nd.ones((3,)), shape=(3, 0))
    with pytest.raises(OperatorParamError, match="shape"):
        nd.unravel_index(nd.ones((3,)), shape="three")
