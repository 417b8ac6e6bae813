"""_split_v2 and the pattern creation operators _eye, _linspace, _zeros_without_dtype."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng, to_nd

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req

nd = mx.nd
split_v2 = nd._internal._split_v2


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
def test_split_v2_forward(dtype):
    rng = seeded_rng(1)
    x = rng.uniform(0, 9, (2, 7, 3)).astype(dtype)
    pieces = split_v2(to_nd(x, dtype), indices=(0, 2, 3), axis=1)
    for got, expected in zip(pieces, np.split(x, [2, 3], axis=1), strict=True):
        assert_almost_equal(got, expected)
    equal = split_v2(to_nd(x, dtype), indices=(), sections=3, axis=-1)
    for got, expected in zip(equal, np.split(x, 3, axis=-1), strict=True):
        assert_almost_equal(got, expected)
    squeezed = split_v2(to_nd(x, dtype), indices=(0, 1), axis=0, squeeze_axis=True)
    assert [p.shape for p in squeezed] == [(7, 3), (7, 3)]


def test_split_v2_gradient_req_and_errors():
    rng = seeded_rng(2)
    x = rng.uniform(-1, 1, (2, 5))
    check_imperative_gradient(lambda a: split_v2(a, indices=(0, 1, 3), axis=1), [x])
    check_imperative_gradient(lambda a: split_v2(a, indices=(0, 1), axis=0, squeeze_axis=True), [x])
    check_req("_split_v2", [x.astype(np.float32)], indices=(0, 2), axis=1)
    _, outs, done = infer_shapes("_split_v2", {"indices": (), "sections": 2, "axis": 0}, [(4, 3)])
    assert outs == [(2, 3), (2, 3)] and done
    with pytest.raises(InferenceError, match="not divisible"):
        split_v2(nd.ones((3, 4)), indices=(), sections=2, axis=0)
    with pytest.raises(InferenceError, match="in order"):
        split_v2(nd.ones((3, 4)), indices=(0, 5), axis=1)
    with pytest.raises(InferenceError, match="length 1"):
        split_v2(nd.ones((3, 4)), indices=(0, 2), axis=1, squeeze_axis=True)
    with pytest.raises(OperatorParamError, match="sections"):
        split_v2(nd.ones((3, 4)), indices=(), sections=-1)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "uint8"])
def test_eye(dtype):
    for n, m, k in ((3, 0, 0), (3, 5, 1), (4, 2, -1), (2, 3, 5)):
        got = nd._internal._eye(N=n, M=m, k=k, dtype=dtype)
        assert got.dtype == np.dtype(dtype)
        assert_almost_equal(got, np.eye(n, m or n, k=k, dtype=dtype))
    check_req("_eye", [], N=3, M=4, k=1)
    with pytest.raises(OperatorParamError, match="N"):
        nd._internal._eye(N=-1)
    with pytest.raises(OperatorParamError, match="N"):
        nd._internal._eye()


def test_linspace():
    for start, stop, num, endpoint in ((0.0, 1.0, 5, True), (-2.0, 3.0, 7, False), (1.0, 1.0, 1, True)):
        got = nd._internal._linspace(start=start, stop=stop, num=num, endpoint=endpoint)
        assert got.dtype == np.float32
        assert_almost_equal(got, np.linspace(start, stop, num, endpoint=endpoint).astype(np.float32))
    # MXNet 1.9.1 truncates after computing in floating point
    assert nd._internal._linspace(start=0, stop=5, num=4, dtype="int32").asnumpy().tolist() == [0, 1, 3, 5]
    check_req("_linspace", [], start=0.0, stop=2.0, num=3)
    with pytest.raises(OperatorParamError, match="num"):
        nd._internal._linspace(start=0, stop=1, num=-2)


def test_zeros_without_dtype():
    assert nd._internal._zeros_without_dtype(shape=(2, 3)).dtype == np.float32
    got = nd._internal._zeros_without_dtype(shape=(2,), dtype=1)
    assert got.dtype == np.float64 and got.asnumpy().tolist() == [0, 0]
    assert infer_types("_zeros_without_dtype", {"shape": (2,)}, [], ["float16"])[1] == ["float16"]
    check_req("_zeros_without_dtype", [], shape=(2, 2))
    with pytest.raises(OperatorParamError, match="dtype"):
        nd._internal._zeros_without_dtype(shape=(2,), dtype=9)


def test_front_ends_over_internal_operators():
    """mx.nd / mx.sym linspace, eye, histogram and split_v2, as MXNet 1.9.1 writes them in Python."""
    assert_almost_equal(nd.linspace(2.0, 3.0, 5), np.linspace(2, 3, 5).astype(np.float32))
    assert_almost_equal(nd.linspace(2.0, 3.0, 5, endpoint=False), np.array([2, 2.2, 2.4, 2.6, 2.8], np.float32))
    assert nd.eye(2, 3, 1, dtype="int32").asnumpy().tolist() == [[0, 1, 0], [0, 0, 1]]
    data = nd.array([0.0, 1.0, 2.0, 3.0])
    counts, edges = nd.histogram(data, bins=2)  # no range: the data's (min, max), as NumPy
    assert counts.asnumpy().tolist() == [2, 2] and edges.asnumpy().tolist() == [0, 1.5, 3]
    counts, _ = nd.histogram(data, bins=nd.array([0.0, 1.0, 3.0]))
    assert counts.asnumpy().tolist() == [1, 3]
    assert [p.shape for p in nd.split_v2(nd.ones((2, 6)), 3, axis=1)] == [(2, 2)] * 3
    assert [p.shape for p in nd.split_v2(nd.ones((2, 6)), (1, 4), axis=1)] == [(2, 1), (2, 3), (2, 2)]
    with pytest.raises(OperatorParamError, match="indices_or_sections"):
        nd.split_v2(nd.ones((2, 6)), 1.5)
    pieces = mx.sym.split_v2(mx.sym.var("x"), (1, 4), axis=1)
    assert pieces.infer_shape(x=(2, 6))[1] == [(2, 1), (2, 3), (2, 2)]
    assert mx.sym.eye(3, 4).infer_shape()[1] == [(3, 4)]
    assert mx.sym.linspace(0, 1, 7).infer_shape()[1] == [(7,)]
    hist = mx.sym.histogram(mx.sym.var("a"), bins=3, range=(0, 1))
    assert hist.list_arguments() == ["a"] and hist.infer_shape(a=(10,))[1] == [(3,), (4,)]
