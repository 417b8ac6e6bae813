"""``mx.nd``'s hand-written functions (moveaxis, concatenate, linspace, eye, histogram, DLPack...)
and the operators behind them (``_linspace``, ``_eye``, ``_histogram``, ``_contrib_isnan``...)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import framework as mx
from framework.test_utils import assert_almost_equal, check_req


def test_moveaxis_matches_numpy():
    x = np.arange(24).reshape(2, 3, 4)
    for source, destination in [(0, -1), (-1, 0), ([0, 1], [-1, -2]), (1, 1)]:
        got = mx.nd.moveaxis(mx.nd.array(x), source, destination)
        assert_almost_equal(got, np.moveaxis(x, source, destination).astype(np.float32))
    with pytest.raises(mx.MXNetError, match="source axis 3 is out of range"):
        mx.nd.moveaxis(mx.nd.array(x), 3, 0)
    with pytest.raises(mx.MXNetError, match="as many axes"):
        mx.nd.moveaxis(mx.nd.array(x), [0, 1], [0])


def test_concatenate_joins_and_copies_unless_told_not_to():
    a, b = mx.nd.ones((2, 2)), mx.nd.zeros((1, 2))
    assert_almost_equal(mx.nd.concatenate([a, b]), np.concatenate([np.ones((2, 2)), np.zeros((1, 2))]))
    assert mx.nd.concatenate([a, mx.nd.zeros((2, 3))], axis=1).shape == (2, 5)
    assert mx.nd.concatenate([a], always_copy=False) is a
    assert mx.nd.concatenate([a]) is not a
    with pytest.raises(mx.MXNetError, match="non-empty list of NDArrays"):
        mx.nd.concatenate([])


def test_split_v2_by_sections_and_by_indices():
    x = mx.nd.array(np.arange(12).reshape(6, 2))
    assert [p.shape for p in mx.nd.split_v2(x, 3)] == [(2, 2)] * 3
    parts = mx.nd.split_v2(x, (1, 3))
    assert [p.shape for p in parts] == [(1, 2), (2, 2), (3, 2)]
    assert_almost_equal(parts[1], np.arange(12).reshape(6, 2)[1:3].astype(np.float32))
    assert [p.shape for p in mx.nd.split_v2(x, 2, axis=1, squeeze_axis=True)] == [(6,), (6,)]
    assert x.split_v2(2).__class__ is list  # the fluent method calls the same function
    with pytest.raises(mx.MXNetError, match="axis length 6 is not divisible into sections=4"):
        mx.nd.split_v2(x, 4)


def test_onehot_encode_writes_into_out():
    out = mx.nd.zeros((2, 3))
    result = mx.nd.onehot_encode(mx.nd.array([0, 2]), out)
    assert result is out
    assert out.asnumpy().tolist() == [[1, 0, 0], [0, 0, 1]]


def test_linspace_and_eye_match_numpy():
    assert_almost_equal(mx.nd.linspace(0, 1, 5), np.linspace(0, 1, 5).astype(np.float32))
    assert_almost_equal(mx.nd.linspace(0, 1, 5, endpoint=False), np.linspace(0, 1, 5, endpoint=False))
    assert mx.nd.linspace(0, 10, 3, dtype="int32").asnumpy().tolist() == [0, 5, 10]
    assert mx.nd.eye(3, 4, 1).asnumpy().tolist() == np.eye(3, 4, 1).tolist()
    assert mx.nd.eye(2).dtype == np.float32 and mx.nd.eye(2, dtype="float64").dtype == np.float64
    assert mx.nd.eye(3, k=-1).asnumpy().tolist() == np.eye(3, k=-1).tolist()
    check_req("_linspace", [], start=0.0, stop=1.0, num=4)
    check_req("_eye", [], N=3, M=2, k=0)


def test_histogram_equal_bins_and_given_edges():
    data = mx.nd.array([0, 1, 1, 2, 5])
    counts, edges = mx.nd.histogram(data, bins=3, range=(0, 6))
    assert counts.dtype == np.int64 and counts.asnumpy().tolist() == [3, 1, 1]
    assert edges.asnumpy().tolist() == [0, 2, 4, 6]
    counts, _ = mx.nd.histogram(data, bins=mx.nd.array([0, 2, 4, 6]))
    assert counts.asnumpy().tolist() == [3, 1, 1]
    counts, edges = mx.nd.histogram(data, bins=2)  # the data's min and max
    assert counts.asnumpy().tolist() == np.histogram([0, 1, 1, 2, 5], bins=2)[0].tolist()
    with pytest.raises(mx.MXNetError, match="bins must be an int or an NDArray"):
        mx.nd.histogram(data, bins="auto")
    with pytest.raises(mx.MXNetError, match="'range' expects two numbers \\(low, high\\) with low < high"):
        mx.nd.histogram(data, bins=2, range=(3, 1))
    check_req("_histogram", [np.array([0.0, 1.0, 1.5, 3.0])], bin_cnt=2, range=(0, 4))


@pytest.mark.parametrize(
    ("op_name", "test"),
    [("_contrib_isnan", np.isnan), ("_contrib_isinf", np.isinf), ("_contrib_isfinite", np.isfinite)],
)
def test_contrib_float_checks(op_name, test):
    name = op_name.removeprefix("_contrib_")
    values = np.array([1.0, np.nan, np.inf, -np.inf, 0.0], dtype=np.float32)
    got = getattr(mx.nd.contrib, name)(mx.nd.array(values))
    assert got.dtype == np.float32
    assert got.asnumpy().tolist() == test(values).astype(np.float32).tolist()
    check_req(op_name, [values])


def test_logical_helpers_and_power():
    a = mx.nd.array([0, 1, 2])
    assert mx.nd.logical_and(a, 1).asnumpy().tolist() == [0, 1, 1]
    assert mx.nd.logical_or(a, mx.nd.array([1, 0, 0])).asnumpy().tolist() == [1, 1, 1]
    assert mx.nd.logical_xor(a, 1).asnumpy().tolist() == [1, 0, 0]
    assert mx.nd.logical_and(1, 0) == 0.0
    assert mx.nd.power(a, 2).asnumpy().tolist() == [0, 1, 4]
    assert mx.nd.power(base=2, exp=a).asnumpy().tolist() == [1, 2, 4]


def test_from_numpy_keeps_the_dtype_and_copies():
    source = np.arange(4, dtype=np.float64)
    x = mx.nd.from_numpy(source)
    assert x.dtype == np.float64 and x.asnumpy().tolist() == [0, 1, 2, 3]
    source[0] = 99  # MXLab copies (documented): the array does not see later writes
    assert x.asnumpy()[0] == 0
    with pytest.raises(mx.MXNetError, match="expected a numpy.ndarray"):
        mx.nd.from_numpy([1, 2])


def test_dlpack_round_trip_shares_memory_with_numpy():
    x = mx.nd.array([1, 2, 3], dtype="int32")
    view = np.from_dlpack(x.to_dlpack_for_read())
    assert view.dtype == np.int32 and view.tolist() == [1, 2, 3]
    writable = np.from_dlpack(mx.nd.to_dlpack_for_write(x))
    x[:] = 7
    x.wait_to_read()
    assert writable.tolist() == [7, 7, 7]  # the same memory, not a copy
    back = mx.nd.from_dlpack(x.to_dlpack_for_read())
    assert back.dtype == np.int32 and back.asnumpy().tolist() == [7, 7, 7]
    assert mx.nd.from_dlpack(np.arange(3.0)).dtype == np.float64
    with pytest.raises(mx.MXNetError, match="cannot read a DLPack tensor from list"):
        mx.nd.from_dlpack([1, 2])


def test_histogram_float_range_round_trips_through_symbol_json():
    x = mx.sym.Variable("x")
    sym = mx.sym.histogram(x, bins=2, range=(0.5, 2.5))
    text = sym.tojson()
    assert '"range": "(0.5, 2.5)"' in text
    loaded = mx.sym.load_json(text)
    data = mx.nd.array([0.0, 1.0, 1.0, 2.0, 3.0])
    assert loaded.eval(x=data)[0].asnumpy().tolist() == sym.eval(x=data)[0].asnumpy().tolist() == [2, 1]
    with pytest.raises(mx.MXNetError, match="'range' expects two numbers"):
        mx.nd.histogram(mx.nd.ones(3), bins=2, range=("a", "b"))


def test_dlpack_consumers_keep_the_memory_out_of_the_pool():
    x = mx.nd.array(np.arange(256), dtype="float32")
    consumer = np.from_dlpack(x.to_dlpack_for_read())
    del x
    gc.collect()
    mx.nd.waitall()
    others = [mx.nd.full((256,), -1.0) for _ in range(4)]  # would reuse a returned block
    mx.nd.waitall()
    assert consumer.tolist() == list(range(256))
    assert all(o.asnumpy()[0] == -1 for o in others)
