"""check_symbolic_forward / backward, check_numeric_gradient and simple_forward on symbols.

The first test is seed 004's ``test_quadratic_function``, unchanged apart from imports;
the others show that the checks fail, in the learner's terms, when an operator is wrong.
"""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
import framework.symbol
from framework.operator import assign, elemwise_grad_use_in, elemwise_shape, elemwise_type, register_op
from framework.operator.params import Param, ParamSet
from framework.symbol_test_utils import (
    SymbolCheckError,
    check_numeric_gradient,
    check_symbolic_backward,
    check_symbolic_forward,
    simple_forward,
)
from framework.test_utils import assert_almost_equal, rand_shape_nd

sym = framework.symbol  # mx.sym once framework/__init__.py exports it


@pytest.fixture(autouse=True)
def seeded() -> None:
    np.random.seed(4)


# ----------------------------------------------------------------------------- seed 004
def test_quadratic_function():
    def f(x, a, b, c):
        return a * x**2 + b * x + c

    rng = np.random.default_rng(4)  # rand_shape_nd takes its generator explicitly
    a = np.random.random_sample()
    b = np.random.random_sample()
    c = np.random.random_sample()
    data = sym.Variable("data")
    quad_sym = sym.contrib.quadratic(data=data, a=a, b=b, c=c)
    for dtype in [np.float16, np.float32, np.float64]:
        for ndim in range(1, 6):
            shape = rand_shape_nd(ndim, 5, rng=rng)
            data_np = np.random.randn(*shape).astype(dtype)
            expected = f(data_np, a, b, c)
            backward_expected = 2 * a * data_np + b

            # check imperative forward
            output = mx.nd.contrib.quadratic(mx.nd.array(data_np), a=a, b=b, c=c)
            assert_almost_equal(
                output.asnumpy(),
                expected,
                rtol=1e-2 if dtype is np.float16 else 1e-5,
                atol=1e-2 if dtype is np.float16 else 1e-5,
            )
            # check forward
            check_symbolic_forward(
                quad_sym,
                [data_np],
                [expected],
                rtol=1e-2 if dtype is np.float16 else 1e-5,
                atol=1e-2 if dtype is np.float16 else 1e-5,
            )
            # check backward
            check_symbolic_backward(
                quad_sym,
                [data_np],
                [np.ones(expected.shape)],
                [backward_expected],
                rtol=1e-2 if dtype is np.float16 else 1e-5,
                atol=1e-2 if dtype is np.float16 else 1e-5,
            )
            # check backward using finite difference
            check_numeric_gradient(quad_sym, [data_np], atol=0.001)


# ----------------------------------------------------------------------------- deliberately wrong operators
class _BadParam(ParamSet):
    a = Param(float, 0.0, "Coefficient of the quadratic term.")
    b = Param(float, 0.0, "Coefficient of the linear term.")


def _bad_forward(attrs, op_ctx, inputs, req, outputs):
    p, x = attrs.parsed, inputs[0]
    assign(outputs[0], req[0], p.a * x * x + p.b * x)


def _forgets_b(attrs, op_ctx, inputs, req, outputs):
    out_grad, x = inputs
    assign(outputs[0], req[0], out_grad * (2 * attrs.parsed.a * x))  # the "+ b" is missing


def _ignores_req(attrs, op_ctx, inputs, req, outputs):
    out_grad, x = inputs
    outputs[0][...] = out_grad * (2 * attrs.parsed.a * x + attrs.parsed.b)  # always writes


def _register_pair(name: str, backward) -> None:
    (
        register_op(name, override=True)
        .set_params(_BadParam)
        .set_num_inputs(1)
        .set_num_outputs(1)
        .set_input_names(["data"])
        .set_infer_shape(elemwise_shape)
        .set_infer_type(elemwise_type)
        .set_compute(_bad_forward)
        .set_gradient(elemwise_grad_use_in(f"_backward{name}"))
    )
    (
        register_op(f"_backward{name}", override=True)
        .set_params(_BadParam)
        .set_num_inputs(2)
        .set_num_outputs(1)
        .set_infer_shape(elemwise_shape)
        .set_infer_type(elemwise_type)
        .set_compute(backward)
        .set_is_backward()
    )


_register_pair("_test_symutils_forgets_b", _forgets_b)
_register_pair("_test_symutils_ignores_req", _ignores_req)


def _quadratic(x: np.ndarray, a: float = 0.5, b: float = 2.0, c: float = 0.25) -> np.ndarray:
    return a * x * x + b * x + c


def _good(data: framework.symbol.Symbol | None = None) -> framework.symbol.Symbol:
    data = sym.Variable("data") if data is None else data
    return sym.contrib.quadratic(data=data, a=0.5, b=2.0, c=0.25, name="quad")


def _two_outputs() -> framework.symbol.Symbol:
    data = sym.Variable("data")
    return sym.Group([_good(data), data * 2])


def test_forward_fails_naming_the_output_index_and_both_values():
    x = np.arange(6.0).reshape(2, 3)
    wrong = _quadratic(x)
    wrong[1, 2] += 1.0
    with pytest.raises(AssertionError) as info:
        check_symbolic_forward(_good(), [x], [wrong])
    message = str(info.value)
    assert "check_symbolic_forward: output 0 ('quad_output') is wrong" in message
    assert "Location of maximum error: (1, 2), expected=23.75000000, got=22.75000000" in message


def test_forward_accepts_dicts_and_returns_the_outputs():
    x = np.random.randn(4, 2)
    outs = check_symbolic_forward(_good(), {"data": x}, {"quad_output": _quadratic(x)}, dtype=np.float64)
    assert outs[0].dtype == np.float64
    with pytest.raises(SymbolCheckError, match=r"symbol has \['data'\]; missing \['data'\], unknown \['x'\]"):
        check_symbolic_forward(_good(), {"x": x}, [_quadratic(x)])
    with pytest.raises(SymbolCheckError, match="location has 2 arrays, but the symbol has 1"):
        check_symbolic_forward(_good(), [x, x], [_quadratic(x)])
    with pytest.raises(SymbolCheckError, match="expected has 2 arrays"):
        check_symbolic_forward(_good(), [x], [_quadratic(x), x])
    with pytest.raises(TypeError, match="expected a Symbol, got function"):
        check_symbolic_forward(lambda x: x, [x], [x])


def test_forward_with_several_arguments_and_auxiliary_states():
    data = sym.Variable("data")
    net = sym.BatchNorm(data=data, name="bn", fix_gamma=False)
    x = np.random.randn(3, 2).astype(np.float32)
    gamma, beta = np.array([1.5, 0.5]), np.array([0.1, -0.2])
    mean, var = np.array([0.2, -0.1]), np.array([2.0, 0.5])
    expected = (x - mean) / np.sqrt(var + 1e-3) * gamma + beta
    check_symbolic_forward(net, [x, gamma, beta], [expected], aux_states=[mean, var])
    check_symbolic_forward(
        net,
        {"data": x, "bn_gamma": gamma, "bn_beta": beta},
        [expected],
        aux_states={"bn_moving_mean": mean, "bn_moving_var": var},
    )
    with pytest.raises(SymbolCheckError, match=r"auxiliary states \['bn_moving_mean', 'bn_moving_var'\]"):
        check_symbolic_forward(net, [x, gamma, beta], [expected])


def test_backward_write_add_and_null():
    x = np.random.randn(3, 4)
    ograd = np.random.rand(3, 4)
    want = ograd * (2 * 0.5 * x + 2.0)
    for req in ("write", "add", "null"):
        grads = check_symbolic_backward(_good(), [x], [ograd], [want], grad_req=req)
        assert set(grads) == {"data"}
    check_symbolic_backward(_good(), {"data": x}, {"quad_output": ograd}, {"data": want}, grad_req=["add"])


def test_backward_fails_naming_the_argument_and_the_request():
    x = np.random.randn(3, 4)
    bad = sym.Variable("data")
    bad = framework.symbol.symbol_function("_test_symutils_forgets_b")(data=bad, a=0.5, b=2.0, name="bad")
    with pytest.raises(AssertionError) as info:
        check_symbolic_backward(bad, [x], [np.ones(x.shape)], [2 * 0.5 * x + 2.0])
    message = str(info.value)
    assert "check_symbolic_backward: gradient of argument 'data' (grad_req='write') is wrong" in message
    assert "(mismatch 100.000000%: 12 of 12 elements" in message


def test_backward_catches_an_operator_that_ignores_add():
    x = np.random.randn(5)
    sloppy = framework.symbol.symbol_function("_test_symutils_ignores_req")(
        data=sym.Variable("data"), a=0.5, b=2.0, name="sloppy"
    )
    want = 2 * 0.5 * x + 2.0
    check_symbolic_backward(sloppy, [x], [np.ones(5)], [want], grad_req="write")
    with pytest.raises(AssertionError, match=r"gradient of argument 'data' \(grad_req='add'\) added the wrong amount"):
        check_symbolic_backward(sloppy, [x], [np.ones(5)], [want], grad_req="add")


def test_backward_rejects_bad_requests_and_sparse_storage():
    x = np.random.randn(2)
    with pytest.raises(SymbolCheckError, match="invalid grad_req 'sometimes' for argument 'data'"):
        check_symbolic_backward(_good(), [x], [np.ones(2)], [x], grad_req="sometimes")
    with pytest.raises(SymbolCheckError, match="storage type 'row_sparse'; MXLab has dense arrays only"):
        check_symbolic_backward(_good(), [x], [np.ones(2)], [x], grad_stype_dict={"data": "row_sparse"})
    with pytest.raises(SymbolCheckError, match=r"expected names \['weight'\], which are not arguments"):
        check_symbolic_backward(_good(), [x], [np.ones(2)], {"weight": x})


def test_backward_of_a_two_argument_symbol_checks_only_the_expected_ones():
    lhs, rhs = sym.Variable("lhs"), sym.Variable("rhs")
    net = sym.elemwise_mul(lhs, rhs)
    a, b = np.random.randn(2, 3), np.random.randn(2, 3)
    grads = check_symbolic_backward(net, [a, b], [np.ones((2, 3))], [b])  # only d/d lhs
    assert set(grads) == {"lhs"}
    check_symbolic_backward(net, [a, b], [np.ones((2, 3))], [b, a], grad_req={"lhs": "add", "rhs": "write"})


def test_numeric_gradient_of_a_network():
    data = sym.Variable("data")
    net = sym.FullyConnected(data=data, num_hidden=3, name="fc")
    net = sym.Activation(data=net, act_type="tanh", name="act")
    location = [np.random.randn(2, 4), np.random.randn(3, 4), np.random.randn(3)]
    check_numeric_gradient(net, location)
    check_numeric_gradient(net, location, grad_nodes=["fc_weight"])
    check_numeric_gradient(net, location, grad_nodes={"data": "add", "fc_weight": "null", "fc_bias": "write"})
    check_numeric_gradient(net, [v.astype(np.float32) for v in location], dtype=np.float32, rtol=1e-2, atol=1e-3)


def test_numeric_gradient_with_auxiliary_states():
    data = sym.Variable("data")
    net = sym.BatchNorm(data=data, name="bn", fix_gamma=False)
    location = [np.random.randn(4, 3), np.random.rand(3) + 0.5, np.random.randn(3)]
    aux = [np.zeros(3), np.ones(3)]
    check_numeric_gradient(net, location, aux_states=aux, rtol=1e-3, atol=1e-4)


def test_numeric_gradient_fails_naming_argument_index_and_values():
    bad = framework.symbol.symbol_function("_test_symutils_forgets_b")(data=sym.Variable("data"), a=0.5, b=2.0)
    x = np.random.randn(2, 3)
    with pytest.raises(AssertionError) as info:
        check_numeric_gradient(bad, [x], atol=0.001)
    message = str(info.value)
    assert "check_numeric_gradient: gradient of argument 'data' (grad_req='write') disagrees with finite" in message
    assert "finite differences=" in message and "backward=" in message and "Location of maximum error: (" in message


def test_numeric_gradient_catches_an_operator_that_ignores_add():
    sloppy = framework.symbol.symbol_function("_test_symutils_ignores_req")(data=sym.Variable("data"), a=0.5, b=2.0)
    x = np.random.randn(4)
    check_numeric_gradient(sloppy, [x])
    with pytest.raises(AssertionError, match=r"'data' \(grad_req='add'\) disagrees"):
        check_numeric_gradient(sloppy, [x], grad_nodes={"data": "add"})


def test_numeric_gradient_rejects_what_it_cannot_check():
    x = np.random.randn(3)
    with pytest.raises(TypeError, match="mx.test_utils.check_imperative_gradient"):
        check_numeric_gradient(lambda v: v, [x])
    with pytest.raises(SymbolCheckError, match="numeric_eps=1e-06 is too small for float32"):
        check_numeric_gradient(_good(), [x], numeric_eps=1e-6, dtype=np.float32)
    with pytest.raises(SymbolCheckError, match="grad_nodes names \\['weight'\\]"):
        check_numeric_gradient(_good(), [x], grad_nodes=["weight"])
    group = _two_outputs()
    with pytest.raises(SymbolCheckError, match="the symbol has 2 outputs"):
        check_numeric_gradient(group, [x])
    with pytest.raises(SymbolCheckError, match="dtype must be np.float16, np.float32 or np.float64, got 'asnumpy'"):
        check_numeric_gradient(_good(), [x], dtype="asnumpy")


def test_simple_forward():
    x = np.arange(4.0)
    out = simple_forward(_good(), data=x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, _quadratic(x), rtol=1e-6)
    group = _two_outputs()
    outs = simple_forward(group, data=x)
    assert isinstance(outs, list) and len(outs) == 2
    np.testing.assert_allclose(outs[1], 2 * x)
