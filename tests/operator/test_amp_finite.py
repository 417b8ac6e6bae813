"""amp_cast, amp_multicast, cast_storage and the multi-array checks all_finite,
multi_all_finite, multi_sum_sq, reset_arrays."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng, to_nd

import framework as mx
from framework import autograd
from framework.operator import OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req

nd = mx.nd


@pytest.mark.parametrize("src,dst", [("float32", "float16"), ("float16", "float32"), ("float64", "float32")])
def test_amp_cast_floats(src, dst):
    rng = seeded_rng(1)
    x = rng.uniform(-2, 2, (3, 4)).astype(src)
    got = nd.amp_cast(to_nd(x, src), dtype=dst)
    assert got.dtype == np.dtype(dst)
    assert_almost_equal(got, x.astype(dst))


def test_amp_cast_leaves_integers_and_casts_gradients_back():
    ints = nd.array(np.arange(6).reshape(2, 3), dtype="int32")
    assert nd.amp_cast(ints, dtype="float16").dtype == np.int32  # MXNet 1.9.1
    x = nd.ones((2, 3), dtype="float32")
    x.attach_grad()
    with autograd.record():
        y = nd.amp_cast(x, dtype="float16")
    y.backward(nd.ones((2, 3), dtype="float16") * 3)
    assert x.grad.dtype == np.float32 and (x.grad.asnumpy() == 3).all()
    rng = seeded_rng(2)
    check_imperative_gradient(lambda a: nd.amp_cast(a, dtype="float64"), [rng.uniform(-1, 1, (2, 3))])
    check_req("amp_cast", [rng.uniform(-1, 1, (2, 3)).astype(np.float32)], dtype="float64")
    assert infer_types("amp_cast", {"dtype": "float16"}, ["int64"])[1] == ["int64"]
    with pytest.raises(OperatorParamError, match="dtype"):
        nd.amp_cast(x)
    with pytest.raises(OperatorParamError, match="dtype"):
        nd.amp_cast(x, dtype="bfloat16")


def test_amp_multicast():
    a32, a16 = nd.ones((2,), dtype="float32"), nd.ones((3,), dtype="float16")
    ints = nd.ones((2,), dtype="int32")
    wide = nd.amp_multicast(a32, a16, ints, num_outputs=3)
    assert [o.dtype for o in wide] == [np.float32, np.float32, np.int32]
    assert [o.shape for o in wide] == [(2,), (3,), (2,)]
    narrow = nd.amp_multicast(a32, a16, num_outputs=2, cast_narrow=True)
    assert [o.dtype for o in narrow] == [np.float16, np.float16]
    rng = seeded_rng(3)
    x, y = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (3,))
    check_imperative_gradient(lambda p, q: nd.amp_multicast(p, q, num_outputs=2), [x, y])
    check_req("amp_multicast", [x.astype(np.float32), y.astype(np.float16)], num_outputs=2)
    ins, outs, done = infer_shapes("amp_multicast", {"num_outputs": 2}, [None, (4,)], [(2, 2), None])
    assert ins == [(2, 2), (4,)] and outs == [(2, 2), (4,)] and done
    with pytest.raises(OperatorParamError, match="num_outputs"):
        nd.amp_multicast(a32, num_outputs=0)


def test_cast_storage_dense_only():
    rng = seeded_rng(4)
    x = rng.uniform(-1, 1, (3, 4))
    assert_almost_equal(nd.cast_storage(to_nd(x), stype="default"), x)
    check_imperative_gradient(lambda a: nd.cast_storage(a, stype="default"), [x])
    check_req("cast_storage", [x.astype(np.float32)], stype="default")
    for stype in ("csr", "row_sparse"):
        with pytest.raises(OperatorParamError, match="sparse storage .* is not part of MXLab"):
            nd.cast_storage(to_nd(x), stype=stype)
    with pytest.raises(OperatorParamError, match="stype"):
        nd.cast_storage(to_nd(x), stype="dense")


def test_all_finite_and_multi_all_finite():
    good, bad = nd.ones((3, 4)), nd.array([1.0, np.nan])
    for got, expected in (
        (nd.all_finite(good), 1),
        (nd.all_finite(nd.array([np.inf])), 0),
        (nd.multi_all_finite(good, good, num_arrays=2), 1),
        (nd.multi_all_finite(good, bad, num_arrays=2), 0),
    ):
        assert got.shape == (1,) and got.dtype == np.float32 and got.asnumpy()[0] == expected
    assert nd.all_finite(nd.ones((2,), dtype="float16")).dtype == np.float32
    # init_output=False only ever clears the flag, so several checks AND into one output
    flag = nd.ones((1,))
    nd.all_finite(good, init_output=False, out=flag)
    assert flag.asnumpy()[0] == 1
    nd.multi_all_finite(bad, good, num_arrays=2, init_output=False, out=flag)
    nd.all_finite(good, init_output=False, out=flag)
    assert flag.asnumpy()[0] == 0
    check_req("all_finite", [np.ones((2, 3), np.float32)])
    check_req("multi_all_finite", [np.ones((2,), np.float32), np.ones((3,), np.float32)], num_arrays=2)
    with pytest.raises(OperatorParamError, match="num_arrays"):
        nd.multi_all_finite(good, num_arrays=0)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_multi_sum_sq(dtype):
    rng = seeded_rng(5)
    arrays = [rng.uniform(-1, 1, s).astype(dtype) for s in ((3, 4), (5,), (2, 2, 2))]
    got = nd.multi_sum_sq(*[to_nd(a, dtype) for a in arrays], num_arrays=3)
    assert got.dtype == np.float32 and got.shape == (3,)
    assert_almost_equal(got, np.array([np.square(a.astype(np.float64)).sum() for a in arrays], np.float32), rtol=1e-3)
    check_req("multi_sum_sq", [a.astype(np.float32) for a in arrays], num_arrays=3)
    assert infer_shapes("multi_sum_sq", {"num_arrays": 2}, [(2,), (3, 3)])[1] == [(2,)]


def test_reset_arrays_zeroes_inputs_in_place():
    rng = seeded_rng(6)
    a, b = to_nd(rng.uniform(1, 2, (2, 3))), to_nd(rng.uniform(1, 2, (4,)), "float16")
    assert nd.reset_arrays(a, b, num_arrays=2) == []
    assert (a.asnumpy() == 0).all() and (b.asnumpy() == 0).all() and b.dtype == np.float16
    check_req("reset_arrays", [np.ones((2,), np.float32)], num_arrays=1)
    with pytest.raises(OperatorParamError, match="num_arrays"):
        nd.reset_arrays(a, num_arrays=0)
