"""khatri_rao and _histogram against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng, to_nd

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_req

nd = mx.nd


def _khatri_rao_reference(*mats: np.ndarray) -> np.ndarray:
    k = mats[0].shape[1]
    columns = []
    for j in range(k):
        col = np.ones(1)
        for m in mats:
            col = np.kron(col, m[:, j])
        columns.append(col)
    return np.stack(columns, axis=1)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
def test_khatri_rao(dtype):
    rng = seeded_rng(1)
    mats = [rng.uniform(-3, 3, (r, 4)).astype(dtype) for r in (2, 3, 1)]
    got = nd.khatri_rao(*[to_nd(m, dtype) for m in mats])
    assert got.dtype == np.dtype(dtype) and got.shape == (6, 4)
    assert_almost_equal(got, _khatri_rao_reference(*mats).astype(dtype))
    assert_almost_equal(nd.khatri_rao(to_nd(mats[0], dtype)), mats[0])  # one input: itself (MXNet 1.9.1)


def test_khatri_rao_req_inference_and_errors():
    check_req("khatri_rao", [np.ones((2, 3), np.float32), np.ones((4, 3), np.float32)], num_args=2)
    assert infer_shapes("khatri_rao", {"num_args": 2}, [(2, 3), (5, 3)])[1] == [(10, 3)]
    with pytest.raises(InferenceError, match="same number of columns"):
        nd.khatri_rao(nd.ones((2, 3)), nd.ones((2, 4)))
    with pytest.raises(InferenceError, match="matrix"):
        nd.khatri_rao(nd.ones((2, 3, 1)), nd.ones((2, 3)))
    with pytest.raises(OperatorParamError, match="num_args"):
        mx.operator.get("khatri_rao").parse_attrs({"num_args": 0})


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histogram_with_count_and_range(dtype):
    rng = seeded_rng(2)
    x = rng.uniform(-1, 3, (4, 5)).astype(dtype)
    counts, edges = nd._internal._histogram(to_nd(x, dtype), bin_cnt=4, range=(0.0, 2.0))
    expected_counts, expected_edges = np.histogram(x, bins=4, range=(0.0, 2.0))
    assert counts.dtype == np.int64 and edges.dtype == np.dtype(dtype)
    assert counts.asnumpy().tolist() == expected_counts.tolist()
    assert_almost_equal(edges, expected_edges.astype(dtype))
    # the last bin includes its right edge; values outside are not counted (MXNet 1.9.1)
    counts, _ = nd._internal._histogram(nd.array([0, 1, 1.5, 2, 5, 6, 7, -1]), bin_cnt=3, range=(0, 6))
    assert counts.asnumpy().tolist() == [3, 1, 2]


def test_histogram_with_bin_edges():
    data, bins = nd.array([0, 1, 1.5, 2, 5, 6, 7, -1]), nd.array([0, 1, 2, 7])
    counts, edges = nd._internal._histogram(data, bins)
    assert counts.asnumpy().tolist() == [1, 2, 4] and edges.asnumpy().tolist() == [0, 1, 2, 7]
    check_req("_histogram", [np.arange(6, dtype=np.float32), np.array([0, 2, 6], np.float32)])
    check_req("_histogram", [np.arange(6, dtype=np.float32)], bin_cnt=3, range=(0.0, 6.0))
    assert infer_shapes("_histogram", {}, [(8,), (5,)])[1] == [(4,), (5,)]
    assert infer_types("_histogram", {"bin_cnt": 2, "range": (0, 1)}, ["float16"])[1] == ["int64", "float16"]


def test_histogram_errors():
    data = nd.ones((4,))
    with pytest.raises(InferenceError, match="bin_cnt and range together"):
        nd._internal._histogram(data, bin_cnt=3)
    with pytest.raises(OperatorParamError, match="range"):
        nd._internal._histogram(data, bin_cnt=3, range=(2.0, 1.0))
    with pytest.raises(OperatorParamError, match="bin_cnt"):
        nd._internal._histogram(data, bin_cnt=0, range=(0.0, 1.0))
    with pytest.raises(InferenceError, match="at least 2 edges"):
        nd._internal._histogram(data, nd.ones((1,)))
