"""The registry: records, lookups, attribute functions, generated front-end functions."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import framework as mx
from framework.ndarray import imperative
from framework.operator import (
    OperatorError,
    Param,
    ParamSet,
    assign,
    elemwise_shape,
    elemwise_type,
    register_op,
    registry,
)
from framework.operator.infer import InferenceError


class ScaleParam(ParamSet):
    factor = Param(float, 2.0, "Multiplier.")


def _scale(attrs, op_ctx, inputs, req, outputs):
    assign(outputs[0], req[0], inputs[0] * attrs.parsed.factor)


@pytest.fixture(scope="module")
def scale_op():
    name = "_test_registry_scale"
    op = (
        register_op(name, override=True)
        .describe("Multiplies by a factor (test operator).")
        .set_params(ScaleParam)
        .set_num_inputs(1)
        .set_input_names(["data"])
        .set_infer_shape(elemwise_shape)
        .set_infer_type(elemwise_type)
        .set_compute(_scale, devices=("cpu",))
    )
    return op


def test_lookup_aliases_and_unknown_names(scale_op):
    assert registry.get("_test_registry_scale") is scale_op
    assert registry.get("reshape") is registry.get("Reshape")
    with pytest.raises(OperatorError, match="unknown operator 'reshpe'"):
        registry.get("reshpe")
    with pytest.raises(OperatorError, match="did you mean 'Reshape'"):
        registry.get("RESHAPE")
    with pytest.raises(OperatorError, match="already registered"):
        register_op("Reshape")


def test_generated_function_has_signature_docstring_and_runs(scale_op):
    fn = mx.nd.op._test_registry_scale
    assert list(inspect.signature(fn).parameters) == ["data", "factor", "out"]
    assert "Multiplies by a factor" in fn.__doc__ and "factor : float, optional, default=2.0" in fn.__doc__
    x = mx.nd.array([1.0, 2.0])
    assert fn(x, factor=3).asnumpy().tolist() == [3.0, 6.0]
    assert fn(data=x).asnumpy().tolist() == [2.0, 4.0]
    out = mx.nd.zeros((2,))
    assert fn(x, out=out) is out and out.asnumpy().tolist() == [2.0, 4.0]


def test_call_errors_name_the_operator(scale_op):
    fn = mx.nd.op._test_registry_scale
    x = mx.nd.array([1.0])
    with pytest.raises(mx.MXLabError, match="_test_registry_scale: missing input 'data'"):
        fn()
    with pytest.raises(mx.MXLabError, match="takes 1 input array"):
        fn(x, x)
    with pytest.raises(mx.operator.OperatorParamError, match="unknown parameter\\(s\\) 'factr'"):
        fn(x, factr=2)
    with pytest.raises(mx.MXLabError, match="input 'data' must be an NDArray, got list"):
        fn([1.0])
    with pytest.raises(mx.MXLabError, match="unexpected array argument\\(s\\) \\['other'\\]"):
        fn(x, other=x)
    with pytest.raises(OperatorError, match="no compute function for gpu"):
        scale_op.get_compute("gpu")


def test_mutual_shape_inference_fills_inputs_from_outputs():
    op = registry.get("Cast")
    attrs = op.parse_attrs({"dtype": "float16"})
    in_shapes, out_shapes = [(2, 0)], [(0, 3)]
    assert op.run_infer_shape(attrs, in_shapes, out_shapes) is True
    assert in_shapes == [(2, 3)] and out_shapes == [(2, 3)]
    with pytest.raises(InferenceError, match="Cast: shape inconsistent for output 0"):
        op.run_infer_shape(attrs, [(2, 3)], [(4, 3)])
    in_types, out_types = [None], [None]
    op.run_infer_type(attrs, in_types, out_types)
    assert out_types == ["float16"]


def test_namespaces_follow_mxnet_prefixes():
    assert "Reshape" in dir(mx.nd)
    assert callable(mx.nd._internal._zeros)
    with pytest.raises(AttributeError, match="has no attribute 'not_an_operator'"):
        mx.nd.not_an_operator  # noqa: B018


def test_parse_attrs_cache_tells_signed_zeros_apart():
    x = mx.nd.array([1.0, 2.0])
    assert not np.signbit((x * 0.0).asnumpy()).any()
    assert np.signbit((x * -0.0).asnumpy()).all()  # not the cached attributes of x * 0.0
    assert not np.signbit(mx.nd._internal._mul_scalar(x, scalar=0.0).asnumpy()).any()


def test_parse_attrs_cache_hits_nan_parameters_and_keeps_types_apart():
    op = mx.operator.get("_plus_scalar")
    first = imperative.parse_attrs(op, {"scalar": float("nan")})
    assert imperative.parse_attrs(op, {"scalar": float("nan")}) is first  # a NaN key finds itself
    assert imperative.parse_attrs(op, {"scalar": np.float32("nan")}) is not first  # another type
    assert imperative.parse_attrs(op, {"scalar": 1}) is not imperative.parse_attrs(op, {"scalar": 1.0})
    assert imperative.parse_attrs(op, {"scalar": 1.0}) is imperative.parse_attrs(op, {"scalar": 1.0})
    assert np.isnan(mx.nd._internal._plus_scalar(mx.nd.ones((2,)), scalar=float("nan")).asnumpy()).all()
    reshape = mx.operator.get("Reshape")
    assert imperative.parse_attrs(reshape, {"shape": [2, 3]}) is imperative.parse_attrs(reshape, {"shape": [2, 3]})


def test_parse_attrs_cache_does_not_mix_parameters():
    x = mx.nd.array(np.arange(6, dtype=np.float32))
    assert mx.nd.reshape(x, shape=(2, 3)).shape == (2, 3)
    assert mx.nd.reshape(x, shape=(3, 2)).shape == (3, 2)
    assert mx.nd.reshape(x, shape=(3, -1), reverse=True).shape == (3, 2)
