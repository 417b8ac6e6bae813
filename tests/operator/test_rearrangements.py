"""``reverse``/``flip``, ``reshape_like``, ``depth_to_space``/``space_to_depth``, ``shape_array``/``size_array``."""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework.operator.infer import InferenceError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req

RNG = np.random.default_rng(3)


def _depth_to_space_reference(x, b):
    n, c, h, w = x.shape
    return x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2).reshape(n, c // (b * b), h * b, w * b)


@pytest.mark.parametrize("axis", [(0,), (1,), (0, 1), (-1,)])
def test_reverse_matches_numpy_flip(axis):
    x = RNG.uniform(-1, 1, (3, 4))
    assert_almost_equal(mx.nd.reverse(mx.nd.array(x, dtype="float64"), axis=axis), np.flip(x, axis=axis))
    assert_almost_equal(mx.nd.array(x, dtype="float64").flip(axis=axis), np.flip(x, axis=axis))
    check_imperative_gradient(lambda a: mx.nd.reverse(a, axis=axis), [x])
    check_req("reverse", [x], axis=axis)
    with pytest.raises(InferenceError, match="axis=2 is out of range"):
        mx.nd.reverse(mx.nd.ones((2, 2)), axis=(2,))


def test_reshape_like_shapes_and_gradient():
    x, like = RNG.uniform(-1, 1, (2, 6)), np.zeros((3, 4))
    got = mx.nd.reshape_like(mx.nd.array(x, dtype="float64"), mx.nd.array(like, dtype="float64"))
    assert_almost_equal(got, x.reshape(3, 4))
    check_imperative_gradient(mx.nd.reshape_like, [x, like], grad_nodes=[0])
    check_req("reshape_like", [x, like])
    with pytest.raises(InferenceError, match="cannot reshape lhs of shape \\(2, 6\\) to \\(5,\\)"):
        mx.nd.reshape_like(mx.nd.ones((2, 6)), mx.nd.ones((5,)))
    sym = mx.sym.Variable("a").reshape_like(mx.sym.Variable("b"))
    assert sym.infer_shape(a=(2, 6), b=(4, 3))[1] == [(4, 3)]


@pytest.mark.parametrize("block", [1, 2, 3])
def test_depth_to_space_and_back(block):
    x = RNG.uniform(-1, 1, (2, 2 * block * block, 3, 2))
    out = mx.nd.depth_to_space(mx.nd.array(x, dtype="float64"), block_size=block)
    assert_almost_equal(out, _depth_to_space_reference(x, block))
    back = mx.nd.space_to_depth(out, block_size=block)
    assert_almost_equal(back, x)  # the two are inverses
    check_imperative_gradient(lambda a: mx.nd.depth_to_space(a, block_size=block), [x])
    check_imperative_gradient(
        lambda a: mx.nd.space_to_depth(a, block_size=block), [_depth_to_space_reference(x, block)]
    )
    check_req("depth_to_space", [x], block_size=block)
    check_req("space_to_depth", [_depth_to_space_reference(x, block)], block_size=block)


def test_depth_space_errors_name_the_constraint():
    with pytest.raises(
        InferenceError, match=r"channels 3 of input \(1, 3, 2, 2\) must be a multiple of block_size\^2 = 4"
    ):
        mx.nd.depth_to_space(mx.nd.ones((1, 3, 2, 2)), block_size=2)
    with pytest.raises(InferenceError, match=r"input \(1, 1, 3, 2\) must have H and W divisible by block_size = 2"):
        mx.nd.space_to_depth(mx.nd.ones((1, 1, 3, 2)), block_size=2)
    with pytest.raises(InferenceError, match="4-d"):
        mx.nd.depth_to_space(mx.nd.ones((4, 2)), block_size=2)


def test_shape_array_and_size_array():
    x = mx.nd.ones((2, 3, 4))
    assert x.shape_array().dtype == np.int64 and x.shape_array().asnumpy().tolist() == [2, 3, 4]
    assert mx.nd.size_array(x).asnumpy().tolist() == [24]
    check_req("shape_array", [np.ones((2, 5))])
    check_req("size_array", [np.ones((2, 5))])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.sum(x.shape_array())
    y.backward()
    assert x.grad.asnumpy().sum() == 0  # integers carry no gradient


@pytest.mark.parametrize(
    ("shape", "like", "axes"), [((3, 4), (2, 3), ()), ((3, 4), (1, 2), (1,)), ((2, 3, 4), (2, 2, 2), (0, -1))]
)
def test_slice_like_cuts_from_the_start(shape, like, axes):
    x = RNG.uniform(-1, 1, shape)
    got = mx.nd.slice_like(mx.nd.array(x, dtype="float64"), mx.nd.zeros(like), axes=axes)
    chosen = {a % len(shape) for a in axes} if axes else set(range(len(shape)))
    key = tuple(slice(0, like[i]) if i in chosen else slice(None) for i in range(len(shape)))
    assert_almost_equal(got, x[key])
    check_imperative_gradient(lambda a, b: mx.nd.slice_like(a, b, axes=axes), [x, np.zeros(like)], grad_nodes=[0])
    check_req("slice_like", [x, np.zeros(like)], axes=axes)


def test_slice_like_errors():
    with pytest.raises(InferenceError, match="is larger than data"):
        mx.nd.slice_like(mx.nd.ones((2, 2)), mx.nd.ones((3, 2)))
    with pytest.raises(InferenceError, match="the same number of dimensions"):
        mx.nd.slice_like(mx.nd.ones((2, 2)), mx.nd.ones((2,)))


@pytest.mark.parametrize(
    ("shape", "params"),
    [
        ((4,), {"k": 0}),
        ((3,), {"k": -1}),
        ((3, 4), {"k": 1}),
        ((4, 3), {"k": -2}),
        ((2, 3, 4), {"axis1": 1, "axis2": 2}),
    ],
)
def test_diag_matches_numpy(shape, params):
    x = RNG.uniform(-1, 1, shape)
    got = mx.nd.diag(mx.nd.array(x, dtype="float64"), **params)
    k = params.get("k", 0)
    if len(shape) == 1:
        expected = np.diag(x, k)
    else:
        expected = np.diagonal(x, offset=k, axis1=params.get("axis1", 0), axis2=params.get("axis2", 1))
    assert_almost_equal(got, expected)
    check_imperative_gradient(lambda a: mx.nd.diag(a, **params), [x])
    check_req("diag", [x], **params)
    with pytest.raises(InferenceError, match="axis1 and axis2 must differ"):
        mx.nd.diag(mx.nd.ones((2, 2)), axis1=1, axis2=1)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_matches_numpy_and_its_gradient_sums_the_copies(mode):
    x = RNG.uniform(-1, 1, (1, 2, 3, 3))
    width = (0, 0, 0, 0, 1, 2, 2, 1)
    pairs = [(0, 0), (0, 0), (1, 2), (2, 1)]
    extra = {"constant_value": 0.5} if mode == "constant" else {}
    got = mx.nd.Pad(mx.nd.array(x, dtype="float64"), mode=mode, pad_width=width, **extra)
    if mode == "constant":
        expected = np.pad(x, pairs, mode="constant", constant_values=0.5)
    else:
        expected = np.pad(x, pairs, mode=mode)
    assert_almost_equal(got, expected)
    check_imperative_gradient(lambda a: mx.nd.pad(a, mode=mode, pad_width=width, **extra), [x])
    check_req("Pad", [x], mode=mode, pad_width=width, **extra)


def test_pad_errors_name_the_rule():
    with pytest.raises(InferenceError, match="padding the batch and channel axes is not supported"):
        mx.nd.Pad(mx.nd.ones((1, 1, 2, 2)), pad_width=(1, 0, 0, 0, 0, 0, 0, 0))
    with pytest.raises(InferenceError, match="4-d or 5-d"):
        mx.nd.Pad(mx.nd.ones((2, 2)), pad_width=(0, 0, 1, 1))
    with pytest.raises(InferenceError, match=r"2 \* ndim = 8 numbers"):
        mx.nd.Pad(mx.nd.ones((1, 1, 2, 2)), pad_width=(0, 0, 0, 0, 1, 1))
    with pytest.raises(InferenceError, match="reflect padding .* must be smaller"):
        mx.nd.Pad(mx.nd.ones((1, 1, 2, 2)), mode="reflect", pad_width=(0, 0, 0, 0, 2, 0, 0, 0))
