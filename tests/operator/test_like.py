"""Operators that take a shape from an array: reshape_like, slice_like, shape_array,
size_array, contrib arange_like and index_array, _identity_with_attr_like_rhs."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng, to_nd

import framework as mx
from framework import autograd
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req

nd = mx.nd
DTYPES = ["float16", "float32", "float64", "int32"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_reshape_like_forward(dtype):
    rng = seeded_rng(1)
    x = rng.uniform(-5, 5, (2, 6)).astype(dtype)
    got = nd.reshape_like(to_nd(x, dtype), nd.ones((3, 4)))
    assert got.dtype == np.dtype(dtype)
    assert_almost_equal(got, x.reshape(3, 4))
    # replace the last axis of lhs by rhs's axes 1.. (MXNet's documented example shape)
    part = nd.reshape_like(nd.ones((30, 12)), nd.ones((4, 2, 2, 3)), lhs_begin=-1, rhs_begin=1)
    assert part.shape == (30, 2, 2, 3)
    assert nd.reshape_like(nd.ones((30, 7)), nd.ones((15, 2, 4)), lhs_begin=0, lhs_end=1, rhs_end=2).shape == (15, 2, 7)


def test_reshape_like_gradient_req_and_errors():
    rng = seeded_rng(2)
    lhs, rhs = rng.uniform(-1, 1, (2, 6)), rng.uniform(-1, 1, (4, 3))
    check_imperative_gradient(nd.reshape_like, [lhs, rhs])
    check_req("reshape_like", [lhs.astype(np.float32), rhs.astype(np.float32)])
    with pytest.raises(InferenceError, match="cannot reshape"):
        nd.reshape_like(nd.ones((2, 3)), nd.ones((4, 2)))
    with pytest.raises(InferenceError, match="lhs_begin=3"):
        nd.reshape_like(nd.ones((2, 3)), nd.ones((6,)), lhs_begin=3)
    with pytest.raises(OperatorParamError, match="rhs_end"):
        nd.reshape_like(nd.ones((2, 3)), nd.ones((6,)), rhs_end="x")
    assert infer_types("reshape_like", {}, [None, "float32"], ["float16"])[0][0] == "float16"


@pytest.mark.parametrize("dtype", DTYPES)
def test_slice_like_forward(dtype):
    rng = seeded_rng(3)
    x = rng.uniform(-5, 5, (3, 4, 5)).astype(dtype)
    like = nd.ones((2, 3, 4))
    assert_almost_equal(nd.slice_like(to_nd(x, dtype), like), x[:2, :3, :4])
    assert_almost_equal(nd.slice_like(to_nd(x, dtype), like, axes=(0, -1)), x[:2, :, :4])
    assert_almost_equal(nd.slice_like(to_nd(x, dtype), nd.ones((1, 2)), axes=(1,)), x[:, :2, :])


def test_slice_like_gradient_req_and_errors():
    rng = seeded_rng(4)
    x, like = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (2, 2))
    check_imperative_gradient(lambda a, b: nd.slice_like(a, b, axes=(1,)), [x, like])
    check_req("slice_like", [x.astype(np.float32), like.astype(np.float32)])
    with pytest.raises(InferenceError, match="same number of dimensions"):
        nd.slice_like(nd.ones((2, 3)), nd.ones((2,)))
    with pytest.raises(InferenceError, match="only shrinks"):
        nd.slice_like(nd.ones((2, 3)), nd.ones((2, 5)))
    with pytest.raises(InferenceError, match="axes=2"):
        nd.slice_like(nd.ones((2, 3)), nd.ones((2, 2)), axes=(2,))
    _, outs, done = infer_shapes("slice_like", {"axes": (0,)}, [(5, 3), (2, 7)])
    assert outs == [(2, 3)] and done


def test_shape_and_size_array():
    x = nd.ones((2, 3, 4), dtype="float16")
    assert nd.shape_array(x).dtype == np.int64 and nd.shape_array(x).asnumpy().tolist() == [2, 3, 4]
    assert nd.size_array(x).dtype == np.int64 and nd.size_array(x).asnumpy().tolist() == [24]
    check_req("shape_array", [np.ones((2, 5), np.float32)])
    check_req("size_array", [np.ones((2, 5), np.float32)])
    assert infer_shapes("shape_array", {}, [(2, 0, 4)])[1] == [(3,)]
    assert infer_types("size_array", {}, ["float16"])[1] == ["int64"]
    # the gradient is zero (MXNet 1.9.1)
    y = nd.ones((2, 3))
    y.attach_grad()
    with autograd.record():
        z = nd.shape_array(y).astype("float32") * 2
    z.backward()
    assert y.grad.asnumpy().tolist() == [[0, 0, 0], [0, 0, 0]]


def test_arange_like():
    x = nd.ones((2, 3), dtype="float64")
    got = nd.contrib.arange_like(x, start=1, step=2, repeat=2)
    assert got.dtype == np.float64
    assert got.asnumpy().tolist() == [[1, 1, 3], [3, 5, 5]]  # MXNet 1.9.1
    assert nd.contrib.arange_like(x, axis=1, start=1).asnumpy().tolist() == [1, 2, 3]
    assert nd.contrib.arange_like(x, axis=-2).shape == (2,)
    check_req("_contrib_arange_like", [np.ones((3, 2), np.float32)], start=0.5, step=0.25)
    assert infer_shapes("_contrib_arange_like", {}, [None], [(4, 2)])[0] == [(4, 2)]
    with pytest.raises(OperatorParamError, match="repeat"):
        nd.contrib.arange_like(x, repeat=0)
    with pytest.raises(InferenceError, match="axis=2"):
        nd.contrib.arange_like(x, axis=2)


def test_index_array():
    rng = seeded_rng(5)
    x = rng.uniform(size=(2, 3, 4))
    got = nd.contrib.index_array(to_nd(x))
    assert got.dtype == np.int64 and got.shape == (2, 3, 4, 3)
    assert_almost_equal(got, np.stack(np.indices(x.shape), axis=-1))
    sub = nd.contrib.index_array(to_nd(x), axes=(2, 0))
    assert_almost_equal(sub, np.stack([np.indices(x.shape)[2], np.indices(x.shape)[0]], axis=-1))
    check_req("_contrib_index_array", [x.astype(np.float32)], axes=(1,))
    with pytest.raises(InferenceError, match="axes=3"):
        nd.contrib.index_array(to_nd(x), axes=(3,))


def test_identity_with_attr_like_rhs():
    rng = seeded_rng(6)
    a, b = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (2, 3))
    assert_almost_equal(nd._internal._identity_with_attr_like_rhs(to_nd(a), to_nd(b)), a)
    check_imperative_gradient(nd._internal._identity_with_attr_like_rhs, [a, b])
    check_req("_identity_with_attr_like_rhs", [a.astype(np.float32), b.astype(np.float32)])
    ins, outs, done = infer_shapes("_identity_with_attr_like_rhs", {}, [None, (4, 5)])
    assert ins == [(4, 5), (4, 5)] and outs == [(4, 5)] and done
    with pytest.raises(InferenceError):
        infer_shapes("_identity_with_attr_like_rhs", {}, [(2, 3), (3, 2)])
