"""Positional arguments of generated mx.nd / mx.sym functions bind as MXNet 1.9.1's do.

MXNet's generated functions list every declared input of an operator, then its parameters
in declaration order: ``mx.sym.Deconvolution(x, w, b, ...)`` gives ``b`` to ``bias``
even though ``no_bias`` defaults to True there, and the legacy ``mx.nd.random_normal(loc,
scale, shape, ctx)`` takes the distribution's parameters first.
"""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework.operator import registry
from framework.operator.params import OperatorParamError
from framework.operator.signature import declared_input_names, default_input_names
from framework.symbol.symbol import SymbolError, SymbolTypeError

# (legacy name, positional distribution parameters, their keyword names)
LEGACY_RANDOM = [
    ("random_uniform", (2.0, 3.0), ("low", "high")),
    ("random_normal", (5.0, 0.001), ("loc", "scale")),
    ("random_gamma", (9.0, 0.5), ("alpha", "beta")),
    ("random_exponential", (4.0,), ("lam",)),
    ("random_poisson", (3.0,), ("lam",)),
    ("random_negative_binomial", (4, 0.5), ("k", "p")),
    ("random_generalized_negative_binomial", (2.0, 0.3), ("mu", "alpha")),
    ("random_randint", (3, 7), ("low", "high")),
]


@pytest.mark.parametrize(("name", "params", "keywords"), LEGACY_RANDOM)
def test_legacy_random_functions_bind_params_shape_and_ctx_positionally(name, params, keywords):
    function = getattr(mx.nd, name)
    mx.random.seed(11)
    positional = function(*params, (40, 50), mx.cpu(1))
    mx.random.seed(11)
    keyword = function(**dict(zip(keywords, params, strict=True)), shape=(40, 50), ctx=mx.cpu(1))
    assert positional.shape == (40, 50) and positional.context == mx.cpu(1)
    np.testing.assert_array_equal(positional.asnumpy(), keyword.asnumpy())


def test_legacy_random_positional_values_reach_the_distribution():
    sample = mx.nd.random_normal(5.0, 0.001, (200,), mx.cpu()).asnumpy()
    assert abs(sample.mean() - 5.0) < 0.01
    low_high = mx.nd.random_uniform(2.0, 3.0, (500,)).asnumpy()
    assert low_high.min() >= 2.0 and low_high.max() < 3.0
    assert mx.nd.random_normal(0, 1, (2, 2), mx.cpu(), "float64").dtype == np.float64


def test_the_op_parameters_are_declared_in_mxnets_order():
    assert list(registry.get("_random_normal").params.fields) == ["loc", "scale", "shape", "ctx", "dtype"]
    assert list(registry.get("_random_randint").params.fields) == ["low", "high", "shape", "ctx", "dtype"]


def test_a_positional_ctx_that_is_not_a_context_is_refused():
    with pytest.raises(mx.MXNetError, match=r"_random_normal: ctx must be a Context such as mx.cpu\(0\), got 'cpu'"):
        mx.nd.random_normal(0, 1, (2,), "cpu")
    with pytest.raises(mx.MXNetError, match="too many positional arguments"):
        mx.nd.random_normal(0, 1, (2,), mx.cpu(), "float32", 7)


def test_declared_inputs_are_every_input_the_operator_can_take():
    assert default_input_names(registry.get("Deconvolution")) == ["data", "weight"]
    assert declared_input_names(registry.get("Deconvolution")) == ["data", "weight", "bias"]
    assert declared_input_names(registry.get("RNN")) == ["data", "parameters", "state", "state_cell", "sequence_length"]
    assert declared_input_names(registry.get("LeakyReLU")) == ["data", "gamma"]
    assert declared_input_names(registry.get("elemwise_add")) == ["lhs", "rhs"]


def test_symbol_deconvolution_takes_bias_positionally():
    x, w, b = mx.sym.var("x"), mx.sym.var("w"), mx.sym.var("b")
    net = mx.sym.Deconvolution(x, w, b, kernel=(2, 2), num_filter=3, no_bias=False, name="up")
    assert net.list_arguments() == ["x", "w", "b"]
    # Parameters follow all three input slots, as in MXNet's generated signature.
    same = mx.sym.Deconvolution(x, w, b, (2, 2), num_filter=3, no_bias=False, name="up2")
    assert same.attr_dict()["up2"]["kernel"] == "(2, 2)"
    # With the default no_bias=True there is no bias input: MXNet refuses the third symbol too.
    with pytest.raises(SymbolError, match=r"'bias' is not an input; candidate inputs: data, weight"):
        mx.sym.Deconvolution(x, w, b, kernel=(2, 2), num_filter=3)
    with pytest.raises(SymbolTypeError, match=r"argument 'bias' must be a Symbol, got \(2, 2\)"):
        mx.sym.Deconvolution(x, w, (2, 2), num_filter=3)


def test_symbol_and_ndarray_positional_inputs_give_the_same_numbers():
    rng = np.random.default_rng(3)
    data = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    weight = rng.standard_normal((2, 3, 2, 2)).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    nd_out = mx.nd.Deconvolution(
        mx.nd.array(data), mx.nd.array(weight), mx.nd.array(bias), kernel=(2, 2), num_filter=3, no_bias=False
    )
    x, w, b = mx.sym.var("x"), mx.sym.var("w"), mx.sym.var("b")
    net = mx.sym.Deconvolution(x, w, b, kernel=(2, 2), num_filter=3, no_bias=False)
    sym_out = net.eval(ctx=mx.cpu(), x=mx.nd.array(data), w=mx.nd.array(weight), b=mx.nd.array(bias))[0]
    np.testing.assert_allclose(nd_out.asnumpy(), sym_out.asnumpy(), rtol=1e-5, atol=1e-5)
    no_bias = mx.nd.Deconvolution(mx.nd.array(data), mx.nd.array(weight), kernel=(2, 2), num_filter=3)
    np.testing.assert_allclose(nd_out.asnumpy() - bias.reshape(1, 3, 1, 1), no_bias.asnumpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(mx.MXNetError, match=r"Deconvolution: takes 2 input array\(s\) \(data, weight\), got 3"):
        mx.nd.Deconvolution(mx.nd.array(data), mx.nd.array(weight), mx.nd.array(bias), kernel=(2, 2), num_filter=3)


@pytest.mark.parametrize(
    ("build", "arguments"),
    [
        (lambda x, w, b: mx.sym.FullyConnected(x, w, b, 4), ["x", "w", "b"]),
        (lambda x, w, b: mx.sym.Convolution(x, w, b, (3, 3), num_filter=2), ["x", "w", "b"]),
        (lambda x, w, b: mx.sym.LeakyReLU(x, w, act_type="prelu"), ["x", "w"]),
        (lambda x, w, b: mx.sym.elemwise_add(x, w), ["x", "w"]),
        (lambda x, w, b: mx.sym.Pooling(x, (2, 2), "max"), ["x"]),
    ],
)
def test_symbol_positional_inputs_bind_to_the_operator_inputs(build, arguments):
    x, w, b = mx.sym.var("x"), mx.sym.var("w"), mx.sym.var("b")
    assert build(x, w, b).list_arguments() == arguments


def test_ndarray_positional_inputs_then_parameters():
    x = mx.nd.ones((2, 5))
    w = mx.nd.ones((4, 5))
    b = mx.nd.zeros((4,))
    assert mx.nd.FullyConnected(x, w, b, 4).shape == (2, 4)
    assert mx.nd.clip(mx.nd.array([-2.0, 0.5, 2.0]), -1, 1).asnumpy().tolist() == [-1.0, 0.5, 1.0]
    alpha = mx.nd.array([0.5])
    out = mx.nd.LeakyReLU(mx.nd.array([[-2.0, 2.0]]), alpha, act_type="prelu")
    assert out.asnumpy().tolist() == [[-1.0, 2.0]]
    with pytest.raises(OperatorParamError, match="num_hidden"):
        mx.nd.FullyConnected(x, w, b, "four")
