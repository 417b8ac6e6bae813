"""Indexing (take, pick, one_hot, gather_nd, scatter_nd) and ordering (topk, sort, argsort)
operators against NumPy.

Expectations marked "MXNet 1.9.1" were read off the real MXNet (pip ``mxnet==1.9.1``) and
are written here as plain values; the tests never import MXNet.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import infer_shapes, seeded_rng, to_nd

import framework as mx
from framework.base import MXLabError
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req, rand_shape_nd

FLOATS = ["float16", "float32", "float64"]
nd = mx.nd


def _grads_of(fn, *arrays: np.ndarray) -> list[np.ndarray]:
    """Gradients of sum(fn(*arrays)) with respect to every input (float64)."""
    inputs = [to_nd(a) for a in arrays]
    for a in inputs:
        a.attach_grad()
    with mx.autograd.record():
        out = fn(*inputs)
    out.backward()
    return [a.grad.asnumpy() for a in inputs]


# ----------------------------------------------------------------------------- take


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_take_forward(mode, dtype):
    rng = seeded_rng(1)
    for ndim in range(1, 6):
        shape = rand_shape_nd(ndim, 4, rng=rng)
        x = rng.uniform(-1, 1, shape).astype(dtype)
        axis = int(rng.integers(-ndim, ndim))
        length = shape[axis]
        indices = rng.uniform(-length - 2, length + 2, size=rand_shape_nd(int(rng.integers(1, 3)), 3, rng=rng))
        got = nd.take(to_nd(x, dtype), to_nd(indices, "float32"), axis=axis, mode=mode)
        expected = np.take(x, np.trunc(indices.astype(np.float32)).astype(int), axis=axis, mode=mode)
        assert got.dtype == np.dtype(dtype)
        assert_almost_equal(got, expected)
    # MXNet 1.9.1: indices truncate; clip clamps, wrap takes the index modulo the length
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    idx = nd.array(np.array([[0, 1.7], [2, -1]]))
    assert_almost_equal(nd.take(nd.array(x), idx, axis=1)[0, 1, 1], x[0, 0])
    assert_almost_equal(nd.take(nd.array(x), idx, axis=1, mode="wrap")[0, 1, 1], x[0, 2])
    assert nd.take(nd.array(x), nd.array(np.array([1.0])), axis=-1).shape == (2, 3, 1)
    ints = nd.take(nd.array(x), nd.array(np.array([2, 0]), dtype="int32"))
    assert_almost_equal(ints, x[[1, 0]])


def test_take_gradient_scatters_and_accumulates():
    rng = seeded_rng(2)
    x = rng.uniform(-1, 1, (3, 4, 2))
    for axis, mode in ((0, "clip"), (1, "wrap"), (-1, "clip")):
        indices = np.array([[0.0, 2.5], [-1.0, 5.0]])
        check_imperative_gradient(lambda a, i: nd.take(a, i, axis=axis, mode=mode), [x, indices], grad_nodes=[0])
    data_grad, index_grad = _grads_of(nd.take, np.ones((3, 2)), np.array([0.0, 0.0, 2.0]))
    np.testing.assert_array_equal(data_grad, [[2, 2], [0, 0], [1, 1]])  # index 0 taken twice: gradients add
    np.testing.assert_array_equal(index_grad, np.zeros(3))
    check_req("take", [x.astype(np.float32), np.array([[0, 2], [1, 1]], dtype=np.float32)], axis=1)
    check_req("take", [x.astype(np.float32), np.array([5, -1], dtype=np.float32)], mode="wrap")


def test_take_inference_and_errors():
    ins, outs, done = infer_shapes("take", {"axis": 1}, [(3, 4, 5), (2, 6)], [None])
    assert done and outs == [(3, 2, 6, 5)]
    ins, outs, done = infer_shapes("take", {"axis": 1}, [(3, 4, 5), None], [(3, 2, 6, 5)])
    assert done and ins[1] == (2, 6)  # the indices' shape is read off the output
    types_in, types_out = ["float16", "int32"], [None]
    op = mx.operator.get("take")
    assert op.run_infer_type(op.parse_attrs({}), types_in, types_out) and types_out == ["float16"]
    a = nd.ones((2, 3))
    with pytest.raises(InferenceError, match=r"take: axis=2 is out of range"):
        nd.take(a, nd.array(np.array([0.0])), axis=2)
    with pytest.raises(OperatorParamError, match=r"take: parameter 'mode' expects one of \['raise', 'wrap', 'clip'\]"):
        nd.take(a, nd.array(np.array([0.0])), mode="nearest")
    with pytest.raises(MXLabError, match=r"take: indices out of bound"):
        nd.take(a, nd.array(np.array([0.0, 3.0])), mode="raise").asnumpy()
    assert_almost_equal(nd.take(a, nd.array(np.array([1.0])), mode="raise"), np.ones((1, 3)))


# ----------------------------------------------------------------------------- pick


@pytest.mark.parametrize("dtype", FLOATS)
def test_pick_forward(dtype):
    rng = seeded_rng(3)
    for ndim in range(1, 6):
        shape = rand_shape_nd(ndim, 4, rng=rng)
        x = rng.uniform(-1, 1, shape).astype(dtype)
        axis = int(rng.integers(-ndim, ndim))
        length = shape[axis]
        index_shape = shape[: axis % ndim] + shape[axis % ndim + 1 :] or (1,)
        index = rng.integers(-2, length + 2, size=index_shape).astype(np.float32)
        kept_shape = shape[: axis % ndim] + (1,) + shape[axis % ndim + 1 :]
        for mode, fix in (("clip", lambda i: np.clip(i, 0, length - 1)), ("wrap", lambda i: np.mod(i, length))):
            picked = fix(index.astype(int)).reshape(kept_shape)
            expected = np.take_along_axis(x, picked, axis=axis % ndim)
            got = nd.pick(to_nd(x, dtype), to_nd(index, "float32"), axis=axis, mode=mode, keepdims=True)
            assert_almost_equal(got, expected)
            flat = nd.pick(to_nd(x, dtype), to_nd(index, "float32"), axis=axis, mode=mode)
            assert_almost_equal(flat, expected.reshape(index_shape))
            # MXNet 1.9.1 also accepts the index with the picked axis kept
            again = nd.pick(to_nd(x, dtype), to_nd(index.reshape(kept_shape), "float32"), axis=axis, mode=mode)
            assert_almost_equal(again, expected.reshape(index_shape))
    # MXNet 1.9.1 values
    x = nd.array(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    index = nd.array(np.array([[5, -1, 0, 1], [0, 0, 0, 0]], dtype=np.float32))
    np.testing.assert_array_equal(nd.pick(x, index, axis=1).asnumpy().ravel()[:4], [8, 1, 2, 7])
    np.testing.assert_array_equal(nd.pick(x, index, axis=1, mode="wrap").asnumpy().ravel()[:4], [8, 9, 2, 7])


def test_pick_gradient_req_inference_and_errors():
    rng = seeded_rng(4)
    x = rng.uniform(-1, 1, (3, 4))
    index = np.array([0.0, 3.0, 9.0])
    check_imperative_gradient(lambda a, i: nd.pick(a, i, axis=1), [x, index], grad_nodes=[0])
    check_imperative_gradient(
        lambda a, i: nd.pick(a, i, axis=0, keepdims=True, mode="wrap"),
        [x, np.array([0.0, 3.0, 1.0, -1.0])],
        grad_nodes=[0],
    )
    _, index_grad = _grads_of(lambda a, i: nd.pick(a, i, axis=1), x, index)
    np.testing.assert_array_equal(index_grad, np.zeros(3))
    check_req("pick", [x.astype(np.float32), index.astype(np.float32)], axis=1)
    check_req("pick", [x.astype(np.float32), index.astype(np.float32)], axis=-1, keepdims=True, mode="wrap")
    ins, outs, done = infer_shapes("pick", {"axis": 1}, [(3, 4, 5), None], [None])
    assert done and ins[1] == (3, 5) and outs == [(3, 5)]
    ins, outs, done = infer_shapes("pick", {"axis": 1, "keepdims": True}, [(3, 0, 5), (0, 1, 5)], [None])
    assert not done and ins[1] == (3, 1, 5) and outs == [(3, 1, 5)]
    assert infer_shapes("pick", {"axis": 0}, [(4,), None], [None])[0][1] == (1,)  # MXNet 1.9.1: never 0-d
    a = nd.ones((2, 3))
    with pytest.raises(InferenceError, match=r"pick: axis=None is not supported"):
        nd.pick(a, nd.ones((2,)), axis=None)
    with pytest.raises(InferenceError, match=r"pick: index shape \(3,\) does not match data shape \(2, 3\)"):
        nd.pick(a, nd.ones((3,)), axis=1)
    with pytest.raises(OperatorParamError, match=r"pick: parameter 'mode' expects one of \['clip', 'wrap'\]"):
        nd.pick(a, nd.ones((2,)), mode="raise")


# ----------------------------------------------------------------------------- one_hot


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
def test_one_hot(dtype):
    rng = seeded_rng(5)
    for ndim in range(1, 4):
        indices = rng.integers(-1, 6, size=rand_shape_nd(ndim, 4, rng=rng)).astype(np.float32)
        got = nd.one_hot(nd.array(indices), depth=5, on_value=3, off_value=-1, dtype=dtype)
        expected = np.where(indices[..., None] == np.arange(5), 3, -1).astype(dtype)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got.asnumpy(), expected)  # out-of-range indices: all off_value
    assert nd.one_hot(nd.array(np.array([1.0, 2.0])), depth=3).dtype == np.float32
    ins, _outs, done = infer_shapes("one_hot", {"depth": 4}, [None], [(2, 3, 4)])
    assert done and ins == [(2, 3)]
    check_req("one_hot", [np.array([0, 2, 1], dtype=np.float32)], depth=3)
    (index_grad,) = _grads_of(lambda i: nd.one_hot(i, depth=3), np.array([0.0, 2.0]))
    np.testing.assert_array_equal(index_grad, np.zeros(2))  # indices are not differentiable
    with pytest.raises(OperatorParamError, match=r"one_hot: parameter 'depth' expects a value >= 1"):
        nd.one_hot(nd.ones((2,)), depth=0)
    with pytest.raises(InferenceError, match=r"one_hot: output shape \(2, 5\) must end with depth=4"):
        infer_shapes("one_hot", {"depth": 4}, [None], [(2, 5)])


# ----------------------------------------------------------------------------- gather_nd, scatter_nd


@pytest.mark.parametrize("dtype", FLOATS)
def test_gather_nd_scatter_nd_forward(dtype):
    rng = seeded_rng(6)
    for ndim in range(1, 5):
        shape = rand_shape_nd(ndim, 4, rng=rng)
        x = rng.uniform(-1, 1, shape).astype(dtype)
        m = int(rng.integers(1, ndim + 1))
        y = rand_shape_nd(int(rng.integers(1, 3)), 3, rng=rng)
        indices = np.stack([rng.integers(-shape[i], shape[i], size=y) for i in range(m)]).astype(np.float32)
        got = nd.gather_nd(to_nd(x, dtype), nd.array(indices))
        expected = x[tuple(indices.astype(int))]
        assert_almost_equal(got, expected)
        # scatter_nd with distinct positions puts the values back
        positions = np.stack(np.unravel_index(rng.permutation(int(np.prod(shape[:m])))[:2], shape[:m]))
        values = rng.uniform(-1, 1, (2, *shape[m:])).astype(dtype)
        scattered = nd.scatter_nd(to_nd(values, dtype), nd.array(positions.astype(np.float32)), shape=shape)
        expected = np.zeros(shape, dtype)
        expected[tuple(positions)] = values
        assert_almost_equal(scattered, expected)
    # MXNet 1.9.1
    x = nd.array(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert nd.gather_nd(x, nd.array(np.array([[0], [1], [2]], dtype=np.float32))).shape == (1,)
    assert_almost_equal(
        nd.scatter_nd(nd.array(np.array([1.0, 2.0])), nd.array(np.array([[0, 1], [1, 2]])), shape=(2, 3)),
        np.array([[0, 1, 0], [0, 0, 2]], dtype=np.float32),
    )


def test_gather_nd_scatter_nd_gradients_req_and_errors():
    rng = seeded_rng(7)
    x = rng.uniform(-1, 1, (3, 4, 2))
    indices = np.array([[0, 2, 0], [1, 3, 1]], dtype=np.float64)  # (0,1) is gathered twice
    check_imperative_gradient(nd.gather_nd, [x, indices], grad_nodes=[0])
    data_grad, _ = _grads_of(nd.gather_nd, x, indices)
    assert data_grad[0, 1, 0] == 2 and data_grad[2, 3, 1] == 1
    values = rng.uniform(-1, 1, (2, 2))
    positions = np.array([[0, 2], [1, 3]], dtype=np.float64)
    check_imperative_gradient(lambda v, i: nd.scatter_nd(v, i, shape=(3, 4, 2)), [values, positions], grad_nodes=[0])
    f32 = np.float32
    check_req("gather_nd", [x.astype(f32), indices.astype(f32)])
    check_req("scatter_nd", [values.astype(f32), positions.astype(f32)], shape=(3, 4, 2))
    ins, _, done = infer_shapes("scatter_nd", {"shape": (3, 4, 2)}, [None, (2, 5)], [None])
    assert done and ins[0] == (5, 2)
    with pytest.raises(InferenceError, match=r"gather_nd: indices must have at least 2 dimensions"):
        nd.gather_nd(nd.ones((2, 3)), nd.array(np.array([0.0, 1.0])))
    with pytest.raises(InferenceError, match=r"gather_nd: indices address 3 axes but the data has only 2"):
        nd.gather_nd(nd.ones((2, 3)), nd.zeros((3, 1)))
    with pytest.raises(InferenceError, match=r"scatter_nd: shape inconsistent for data"):
        nd.scatter_nd(nd.ones((3,)), nd.zeros((2, 2)), shape=(3, 4))


# ----------------------------------------------------------------------------- topk, sort, argsort


def _distinct(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Distinct values (no ties, exact in float16) so every order is unique."""
    return (rng.permutation(int(np.prod(shape))).reshape(shape) - 10).astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_topk_sort_argsort_forward(dtype):
    rng = seeded_rng(8)
    for ndim in range(1, 6):
        shape = rand_shape_nd(ndim, 4, rng=rng)
        x = _distinct(rng, shape, dtype)
        a = to_nd(x, dtype)
        axis = int(rng.integers(-ndim, ndim))
        length = shape[axis]
        k = int(rng.integers(1, length + 1))
        ascending = np.argsort(x, axis=axis)
        descending = np.flip(ascending, axis=axis)
        top = np.take(descending, np.arange(k), axis=axis)
        got = nd.topk(a, axis=axis, k=k)
        assert got.dtype == np.float32  # MXNet 1.9.1: float32 indices by default
        np.testing.assert_array_equal(got.asnumpy(), top)
        values, idx = nd.topk(a, axis=axis, k=k, ret_typ="both", dtype="int32")
        assert idx.dtype == np.int32 and values.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(idx.asnumpy(), top)
        assert_almost_equal(values, np.take_along_axis(x, top, axis=axis))
        assert_almost_equal(nd.topk(a, axis=axis, k=k, ret_typ="value"), np.take_along_axis(x, top, axis=axis))
        low = np.take(ascending, np.arange(k), axis=axis)
        np.testing.assert_array_equal(nd.topk(a, axis=axis, k=k, is_ascend=True).asnumpy(), low)
        mask = np.zeros(shape, dtype)
        np.put_along_axis(mask, top, 1, axis=axis)
        assert_almost_equal(nd.topk(a, axis=axis, k=k, ret_typ="mask"), mask)
        assert_almost_equal(nd.sort(a, axis=axis), np.sort(x, axis=axis))
        assert_almost_equal(nd.sort(a, axis=axis, is_ascend=False), np.flip(np.sort(x, axis=axis), axis=axis))
        np.testing.assert_array_equal(nd.argsort(a, axis=axis).asnumpy(), ascending)
        np.testing.assert_array_equal(nd.argsort(a, axis=axis, is_ascend=False, dtype="int64").asnumpy(), descending)
        assert_almost_equal(nd.sort(a, axis=None), np.sort(x, axis=None))
        np.testing.assert_array_equal(nd.argsort(a, axis=None).asnumpy(), np.argsort(x, axis=None))
        np.testing.assert_array_equal(
            nd.topk(a, axis=None, k=2 if x.size > 1 else 1).asnumpy(),
            np.argsort(-x, axis=None)[: 2 if x.size > 1 else 1],
        )
    # MXNet 1.9.1: k=0 keeps everything; defaults are axis=-1, k=1, ret_typ='indices'
    x = nd.array(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert nd.topk(x, k=0, ret_typ="value").shape == (2, 3, 4)
    assert nd.topk(x).shape == (2, 3, 1)
    assert nd.argsort(x, dtype="int64").dtype == np.int64


def test_sort_and_topk_gradients_follow_the_values():
    rng = seeded_rng(9)
    x = _distinct(rng, (3, 4, 2), "float64") / 7
    check_imperative_gradient(lambda a: nd.sort(a, axis=1), [x])
    check_imperative_gradient(lambda a: nd.sort(a, axis=None, is_ascend=False), [x])
    check_imperative_gradient(lambda a: nd.topk(a, axis=1, k=2, ret_typ="value"), [x])
    check_imperative_gradient(lambda a: nd.topk(a, axis=0, k=2, ret_typ="both", is_ascend=True)[0], [x])
    check_imperative_gradient(lambda a: nd.topk(a, axis=None, k=3, ret_typ="value"), [x])
    for fn in (nd.argsort, lambda a: nd.topk(a, k=2), lambda a: nd.topk(a, k=2, ret_typ="mask")):
        (grad,) = _grads_of(fn, x)
        np.testing.assert_array_equal(grad, np.zeros(x.shape))
    f32 = x.astype(np.float32)
    check_req("sort", [f32], axis=1)
    check_req("argsort", [f32], is_ascend=False)
    for ret_typ in ("value", "indices", "both", "mask"):
        check_req("topk", [f32], k=2, ret_typ=ret_typ)


def test_ordering_inference_and_errors():
    _, outs, done = infer_shapes("topk", {"k": 2, "ret_typ": "both", "axis": 0}, [(5, 3)], [None, None])
    assert done and outs == [(2, 3), (2, 3)]
    _, outs, done = infer_shapes("topk", {"k": 2, "ret_typ": "value"}, [(5, 3)], [None, None])  # hidden indices
    assert outs == [(5, 2), (5, 2)]
    _, outs, done = infer_shapes("sort", {}, [(5, 3)], [None, None])
    assert outs == [(5, 3), (5, 3)]
    op = mx.operator.get("topk")
    attrs = op.parse_attrs({"ret_typ": "value"})
    assert op.get_num_outputs(attrs) == 2 and op.get_num_visible_outputs(attrs) == 1  # MXNet 1.9.1
    types_out = [None, None]
    op.run_infer_type(attrs, ["float16"], types_out)
    assert types_out == ["float16", "float32"]
    assert mx.operator.get("sort").get_num_visible_outputs(mx.operator.get("sort").parse_attrs({})) == 1
    a = nd.ones((2, 4))
    with pytest.raises(InferenceError, match=r"topk: k=5 must be at most the length 4"):
        nd.topk(a, k=5)
    with pytest.raises(InferenceError, match=r"sort: axis=2 is out of range"):
        nd.sort(a, axis=2)
    with pytest.raises(OperatorParamError, match=r"topk: parameter 'ret_typ' expects one of"):
        nd.topk(a, ret_typ="values")
    with pytest.raises(OperatorParamError, match=r"argsort: parameter 'dtype'"):
        nd.argsort(a, dtype="bool")
