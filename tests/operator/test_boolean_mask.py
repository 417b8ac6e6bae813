"""_contrib_boolean_mask: an output shape that depends on the values of an input.

The imperative path computes the shape from the index's values before allocating; shape
inference leaves it unknown and binding a graph with the operator fails, naming it.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng

import framework as mx
from framework.executor.arguments import ExecutorError
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req

nd = mx.nd


def _reference(data, index, axis):
    return np.compress(index != 0, data, axis=axis)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "uint8"])
@pytest.mark.parametrize("index_dtype", ["float32", "int32", "uint8", "bool"])
def test_boolean_mask_forward_matches_numpy(dtype, index_dtype):
    rng = seeded_rng(1)
    for ndim in (1, 2, 3):
        shape = tuple(int(d) for d in rng.integers(1, 5, ndim))
        axis = int(rng.integers(0, ndim))
        data = (rng.uniform(0, 10, shape)).astype(dtype)
        index = (rng.uniform(0, 1, shape[axis]) < 0.5).astype(index_dtype)
        out = nd.contrib.boolean_mask(nd.array(data, dtype=dtype), nd.array(index, dtype=index_dtype), axis=axis)
        assert out.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(out.asnumpy(), _reference(data, index, axis))


def test_boolean_mask_counts_any_non_zero_value_and_may_keep_nothing():
    data = nd.array(np.arange(12).reshape(3, 4))
    out = nd.contrib.boolean_mask(data, nd.array([0, -2, 0.5]))
    np.testing.assert_array_equal(out.asnumpy(), [[4, 5, 6, 7], [8, 9, 10, 11]])
    assert nd.contrib.boolean_mask(data, nd.zeros(3)).shape == (0, 4)
    out = nd.contrib.boolean_mask(data, nd.array([1, 0, 1, 1]), axis=-1)
    np.testing.assert_array_equal(out.asnumpy(), np.arange(12).reshape(3, 4)[:, [0, 2, 3]])


def test_boolean_mask_waits_for_an_index_still_being_computed():
    data = nd.array(np.arange(6).reshape(3, 2))
    index = nd.array([1, 1, 0]) - nd.array([1, 0, 0])  # pushed, maybe not yet run: [0, 1, 0]
    np.testing.assert_array_equal(nd.contrib.boolean_mask(data, index).asnumpy(), [[2, 3]])


def test_boolean_mask_out_must_have_the_value_given_shape():
    data, index = nd.array(np.arange(6).reshape(3, 2)), nd.array([1, 0, 1])
    out = nd.zeros((2, 2))
    nd.contrib.boolean_mask(data, index, out=out)
    np.testing.assert_array_equal(out.asnumpy(), [[0, 1], [4, 5]])
    with pytest.raises(InferenceError, match=r"\(3, 2\).*\(2, 2\)"):
        nd.contrib.boolean_mask(data, index, out=nd.zeros((3, 2)))


def test_boolean_mask_gradient_scatters_back():
    rng = seeded_rng(2)
    data = rng.uniform(-1, 1, (4, 3))
    index = nd.array([1, 0, 1, 1], dtype="float64")
    check_imperative_gradient(lambda d: nd.contrib.boolean_mask(d, index), [data])
    check_imperative_gradient(lambda d: nd.contrib.boolean_mask(d, nd.array([0, 1, 1]), axis=1), [data])
    x, idx = nd.array(data), nd.array([0, 1, 0, 1])
    x.attach_grad()
    idx.attach_grad()
    with mx.autograd.record():
        out = nd.contrib.boolean_mask(x, idx)
    out.backward(nd.ones_like(out) * 3)
    expected = np.zeros((4, 3))
    expected[[1, 3]] = 3
    assert_almost_equal(x.grad.asnumpy(), expected)
    np.testing.assert_array_equal(idx.grad.asnumpy(), np.zeros(4))


def test_boolean_mask_req():
    rng = seeded_rng(3)
    data = rng.uniform(-1, 1, (5, 2)).astype(np.float32)
    check_req("_contrib_boolean_mask", [data, np.array([1, 0, 1, 1, 0], np.float32)])
    check_req("_contrib_boolean_mask", [data, np.array([1, 1], np.int32)], axis=1)


def test_boolean_mask_inference_leaves_the_output_unknown():
    ins, outs, done = infer_shapes("_contrib_boolean_mask", {"axis": 1}, [(2, 5, 3), None])
    assert not done and ins[1] == (5,) and outs == [None]
    with pytest.raises(InferenceError, match="index"):
        infer_shapes("_contrib_boolean_mask", {}, [(2, 5), (5,)])
    with pytest.raises(InferenceError, match="index must be 1-D"):
        nd.contrib.boolean_mask(nd.ones((3, 2)), nd.ones((1, 3)))
    with pytest.raises(InferenceError, match="out of range"):
        nd.contrib.boolean_mask(nd.ones((3, 2)), nd.ones(3), axis=2)
    ins, outs = infer_types("_contrib_boolean_mask", {}, ["float16", "int32"])
    assert outs == ["float16"]
    _, outs = infer_types("_contrib_boolean_mask", {}, [None, "int32"], ["float64"])
    assert outs == ["float64"]
    with pytest.raises(OperatorParamError, match="'axis'"):
        nd.contrib.boolean_mask(nd.ones(3), nd.ones(3), axis="x")


def test_binding_a_graph_with_boolean_mask_names_the_operator():
    sym = mx.sym.contrib.boolean_mask(mx.sym.var("data"), mx.sym.var("index"), name="keep")
    assert sym.list_arguments() == ["data", "index"]
    assert sym.infer_shape_partial(data=(3, 4)) == ([(3, 4), (3,)], [()], [])  # as MXNet: unknown
    with pytest.raises(ExecutorError, match=r"keep \(_contrib_boolean_mask\) depends on the values"):
        sym.simple_bind(mx.cpu(), data=(3, 4))
    dense = mx.sym.FullyConnected(sym, num_hidden=2, name="fc")
    with pytest.raises(ExecutorError, match="depends on the values"):
        dense.simple_bind(mx.cpu(), data=(3, 4))


def test_a_cached_op_with_boolean_mask_runs_node_by_node_and_differentiates():
    data, index = mx.sym.var("data"), mx.sym.var("index")
    sym = mx.sym.sum(mx.sym.broadcast_mul(mx.sym.contrib.boolean_mask(data, index), mx.sym.sum(data)), axis=0)
    op = nd.CachedOp(sym)
    assert op.dynamic_shapes and not nd.CachedOp(data * 2).dynamic_shapes
    rng = seeded_rng(5)
    x = nd.array(rng.uniform(-1, 1, (4, 3)))
    for mask in ([1, 0, 1, 1], [0, 1, 0, 0]):  # two calls, two output lengths inside the graph
        x.attach_grad()
        with mx.autograd.record():
            out = op(x, nd.array(mask))
        out.backward(nd.ones(3))
        keep = np.array(mask) != 0
        xs = x.asnumpy()
        assert_almost_equal(out.asnumpy(), (xs[keep] * xs.sum()).sum(axis=0))
        expected = np.zeros_like(xs)
        expected[keep] = xs.sum()
        expected += xs[keep].sum()
        assert_almost_equal(x.grad.asnumpy(), expected)
    target = nd.zeros(3)
    op(x, nd.array([1, 1, 1, 1]), out=target)
    assert_almost_equal(target.asnumpy(), (x.asnumpy() * x.asnumpy().sum()).sum(axis=0))


def test_a_hybridized_block_with_boolean_mask_matches_the_imperative_one():
    class Masked(mx.gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.dense = mx.gluon.nn.Dense(3, in_units=2)

        def hybrid_forward(self, F, x, index):
            return self.dense(F.contrib.boolean_mask(x, index))

    block = Masked()
    block.initialize()
    x, index = nd.array(seeded_rng(6).uniform(-1, 1, (5, 2))), nd.array([0, 1, 1, 0, 1])
    expected = block(x, index).asnumpy()
    block.hybridize()
    assert_almost_equal(block(x, index).asnumpy(), expected)
    assert block(x, nd.array([1, 0, 0, 0, 0])).shape == (1, 3)


def test_op_hooks_see_the_node_by_node_run_of_a_graph_with_boolean_mask():
    data, index = mx.sym.var("data"), mx.sym.var("index")
    op = nd.CachedOp(mx.sym.relu(mx.sym.contrib.boolean_mask(data, index, name="mask"), name="act"))
    seen = []
    op.register_op_hook(lambda name, op_name, array: seen.append((name, op_name, array.shape)), monitor_all=True)
    x = nd.array(seeded_rng(7).uniform(-1, 1, (4, 3)))
    op(x, nd.array([1, 0, 1, 0]))
    assert seen == [
        ("mask_data", "_contrib_boolean_mask", (4, 3)),
        ("mask_index", "_contrib_boolean_mask", (4,)),
        ("mask_output", "_contrib_boolean_mask", (2, 3)),
        ("act_data", "relu", (2, 3)),
        ("act_output", "relu", (2, 3)),
    ]
