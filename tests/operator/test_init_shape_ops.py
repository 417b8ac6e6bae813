"""Creation operators and the shape operators the NDArray front end relies on."""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework.operator import registry
from framework.operator.infer import InferenceError
from framework.operator.params import OperatorParamError
from framework.operator.tensor.shape import reshape_shape
from framework.operator.tensor.slicing import decode_index, encode_index
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req


@pytest.mark.parametrize(
    ("name", "params", "expected"),
    [
        ("_zeros", {"shape": (2, 3)}, np.zeros((2, 3))),
        ("_ones", {"shape": (4,), "dtype": "int32"}, np.ones(4, dtype=np.int32)),
        ("_full", {"shape": (2,), "value": 2.5}, np.full(2, 2.5)),
        ("_arange", {"start": 2, "stop": 11, "step": 3}, np.arange(2, 11, 3)),
        ("_arange", {"start": 3, "repeat": 2}, np.repeat(np.arange(3), 2)),
    ],
)
def test_creation_operators(name, params, expected):
    result = getattr(mx.nd.op, name)(**params)
    assert_almost_equal(result, expected.astype(result.dtype))
    check_req(name, [], **params)


def test_creation_operators_reject_bad_parameters():
    with pytest.raises(OperatorParamError, match="_zeros: parameter 'shape' expects a tuple of integers"):
        mx.nd.op._zeros(shape="big")
    with pytest.raises(OperatorParamError, match="_arange: parameter 'repeat' expects a value >= 1"):
        mx.nd.arange(3, repeat=0)
    with pytest.raises(mx.MXLabError, match="ctx must be a Context"):
        mx.nd.op._zeros(shape=(1,), ctx="cpu")
    with pytest.raises(InferenceError, match="_zeros: shape dimensions must be >= 0, got \\(-1, 2\\)"):
        mx.nd.op._zeros(shape=(-1, 2))


@pytest.mark.parametrize("name", ["zeros_like", "ones_like"])
def test_like_operators(name):
    x = np.random.rand(3, 2)
    got = getattr(mx.nd, name)(mx.nd.array(x))
    assert_almost_equal(got, np.zeros_like(x) if name == "zeros_like" else np.ones_like(x))
    check_req(name, [x])


@pytest.mark.parametrize(
    ("src", "shape", "reverse"),
    [
        ((2, 3, 4), (4, -1), False),
        ((2, 3, 4), (0, -3), False),
        ((6, 4), (-4, 2, 3, 0), False),
        ((10, 5, 4), (-1, 0), True),
    ],
)
def test_reshape_forward_backward_and_req(src, shape, reverse):
    x = np.random.rand(*src)
    got = mx.nd.reshape(mx.nd.array(x), shape=shape, reverse=reverse)

    assert_almost_equal(got, x.reshape(reshape_shape(src, shape, reverse)))
    check_imperative_gradient(lambda a: mx.nd.reshape(a, shape=shape, reverse=reverse), [np.random.rand(*src)])
    check_req("Reshape", [x], shape=shape, reverse=reverse)


def test_reshape_infers_nothing_without_the_input_rank():
    op = registry.get("Reshape")
    attrs = op.parse_attrs({"shape": (-1,)})
    out = [None]
    assert op.run_infer_shape(attrs, [None], out) is False and out == [None]
    ins = [None]
    assert op.run_infer_shape(attrs, ins, [(12,)]) is False and ins == [None]
    with pytest.raises(InferenceError, match="Reshape: cannot reshape array of shape \\(2, 3\\) into \\(4, 2\\)"):
        op.run_infer_shape(op.parse_attrs({"shape": (4, 2)}), [(2, 3)], [None])


@pytest.mark.parametrize(
    ("src", "spec", "out", "filled"),
    [
        ((24, 0), (-1,), (96,), (24, 4)),  # a weight flattened for a fused RNN's parameter vector
        ((0, 3, 4), (0, -1), (5, 12), (5, 3, 4)),
        ((2, 0), (-1, 2), (3, 2), (2, 3)),
    ],
)
def test_reshape_fills_one_unknown_input_dimension_from_the_output(src, spec, out, filled):
    op = registry.get("Reshape")
    ins, outs = [src], [out]
    assert op.run_infer_shape(op.parse_attrs({"shape": spec}), ins, outs) is True
    assert ins == [filled] and outs == [out]


def test_reshape_reverse_inference_leaves_ambiguous_inputs_and_rejects_bad_sizes():
    op = registry.get("Reshape")
    attrs = op.parse_attrs({"shape": (-1,)})
    ins = [(0, 0)]
    assert op.run_infer_shape(attrs, ins, [(12,)]) is False and ins == [(0, 0)]
    with pytest.raises(InferenceError, match="Reshape: output \\(10,\\) has 10 elements, not a multiple of input"):
        op.run_infer_shape(attrs, [(3, 0)], [(10,)])
    with pytest.raises(InferenceError, match="Reshape"):  # filled in, the forward rule disagrees with the output
        op.run_infer_shape(op.parse_attrs({"shape": (0, -1)}), [(0, 3, 4)], [(6, 10)])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "uint8"])
def test_cast_forward_backward_and_req(dtype):
    x = np.random.rand(3, 4) * 10
    got = mx.nd.cast(mx.nd.array(x), dtype=dtype)
    assert got.dtype == np.dtype(dtype)
    assert_almost_equal(got, x.astype(dtype))
    check_req("Cast", [x], dtype=dtype)
    if dtype.startswith("float") and dtype != "float16":
        check_imperative_gradient(lambda a: mx.nd.cast(a, dtype=dtype), [np.random.rand(2, 3)])


@pytest.mark.parametrize(
    "key", [1, (slice(0, 2), 1), (Ellipsis, slice(None, None, 2)), (None, 0), (slice(-2, None), slice(1, 3))]
)
def test_basic_index_operator(key):
    x = np.random.rand(3, 4)
    encoded = encode_index(key)
    assert decode_index(encoded) == (key if isinstance(key, tuple) else (key,))
    assert_almost_equal(mx.nd.op._basic_index(mx.nd.array(x), key=encoded), x[key])
    check_imperative_gradient(lambda a: mx.nd.op._basic_index(a, key=encoded), [np.random.rand(3, 4)])
    check_req("_basic_index", [x], key=encoded)
    with pytest.raises(mx.MXLabError, match="malformed key"):
        decode_index("q7")
