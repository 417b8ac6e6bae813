"""Neural-network layers: FullyConnected, activations, softmax family, Dropout, Embedding, LRN.

Each operator is checked against a NumPy reference over random shapes and float dtypes,
against finite differences (float64), for ``req`` add/null, for shape/type inference in
both directions, and for clear errors. Expectations marked "MXNet 1.9.1" were read off
the real MXNet (pip ``mxnet==1.9.1``) and are written here as plain numbers; the tests
never import MXNet.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from op_helpers import away_from_zero, infer_shapes, infer_types, seeded_rng, softmax_reference

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.operator.kernel import ADD, INPLACE, WRITE, OpContext
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req, rand_shape_nd

nd = mx.nd
FLOATS = ["float16", "float32", "float64"]


# ============================================================================ FullyConnected
def _fc_reference(x, w, b, flatten):
    x2 = x.reshape(x.shape[0], -1) if flatten else x.reshape(-1, x.shape[-1])
    out = x2 @ w.T + (0 if b is None else b)
    return out if flatten else out.reshape(*x.shape[:-1], w.shape[0])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ndim", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("flatten", [True, False])
@pytest.mark.parametrize("no_bias", [False, True])
def test_fully_connected_forward(dtype, ndim, flatten, no_bias):
    rng = seeded_rng(ndim)
    shape = rand_shape_nd(ndim, 4, rng=rng)
    hidden = 3
    features = math.prod(shape[1:]) if flatten else shape[-1]
    x = rng.uniform(-1, 1, shape).astype(dtype)
    w = rng.uniform(-1, 1, (hidden, features)).astype(dtype)
    b = rng.uniform(-1, 1, hidden).astype(dtype)
    args = [nd.array(x, dtype=x.dtype), nd.array(w, dtype=w.dtype)] + ([] if no_bias else [nd.array(b, dtype=b.dtype)])
    out = nd.FullyConnected(*args, num_hidden=hidden, flatten=flatten, no_bias=no_bias)
    ref = _fc_reference(x.astype(np.float64), w.astype(np.float64), None if no_bias else b.astype(np.float64), flatten)
    assert out.dtype == np.dtype(dtype)
    assert_almost_equal(out, ref.astype(dtype))


@pytest.mark.parametrize("flatten", [True, False])
def test_fully_connected_gradient(flatten):
    rng = seeded_rng(1)
    x = rng.uniform(-1, 1, (2, 3, 2))
    features = 6 if flatten else 2
    check_imperative_gradient(
        lambda d, w, b: nd.FullyConnected(d, w, b, num_hidden=3, flatten=flatten),
        [x, rng.uniform(-1, 1, (3, features)), rng.uniform(-1, 1, 3)],
    )
    check_imperative_gradient(
        lambda d, w: nd.FullyConnected(d, w, num_hidden=3, flatten=flatten, no_bias=True),
        [x, rng.uniform(-1, 1, (3, features))],
    )


def test_fully_connected_req():
    rng = seeded_rng(2)
    x = rng.uniform(-1, 1, (2, 3, 2)).astype(np.float32)
    check_req(
        "FullyConnected", [x, rng.uniform(-1, 1, (4, 6)).astype(np.float32), np.ones(4, np.float32)], num_hidden=4
    )
    check_req(
        "FullyConnected", [x, rng.uniform(-1, 1, (4, 2)).astype(np.float32)], num_hidden=4, no_bias=True, flatten=False
    )


def test_fully_connected_infers_parameter_shapes_like_mxnet():
    # MXNet 1.9.1: sym.FullyConnected(num_hidden=6).infer_shape(data=...)
    assert infer_shapes("FullyConnected", {"num_hidden": 6}, [(2, 3, 4), None, None])[:2] == (
        [(2, 3, 4), (6, 12), (6,)],
        [(2, 6)],
    )
    assert infer_shapes("FullyConnected", {"num_hidden": 6, "flatten": False}, [(2, 3, 4), None, None])[:2] == (
        [(2, 3, 4), (6, 4), (6,)],
        [(2, 3, 6)],
    )
    assert infer_shapes("FullyConnected", {"num_hidden": 6}, [(5,), None, None])[:2] == ([(5,), (6, 1), (6,)], [(5, 6)])
    assert infer_shapes("FullyConnected", {"num_hidden": 6, "flatten": False}, [(5,), None, None])[:2] == (
        [(5,), (6, 5), (6,)],
        [(6,)],
    )
    assert infer_shapes("FullyConnected", {"num_hidden": 6, "no_bias": True}, [(2, 3), None])[:2] == (
        [(2, 3), (6, 3)],
        [(2, 6)],
    )
    # a (num_hidden, 1) bias is accepted, as in MXNet
    assert infer_shapes("FullyConnected", {"num_hidden": 6}, [(2, 3), None, (6, 1)])[0][2] == (6, 1)
    # partial: unknown batch stays unknown, and comes back from the output
    ins, outs, done = infer_shapes("FullyConnected", {"num_hidden": 6}, [(0, 3), None, None])
    assert (ins, outs, done) == ([(0, 3), (6, 3), (6,)], [(0, 6)], False)
    ins, outs, done = infer_shapes("FullyConnected", {"num_hidden": 6}, [(0, 3), None, None], [(7, 6)])
    assert ins[0] == (7, 3) and done
    # the feature dimension comes from a known weight
    ins, _, _ = infer_shapes("FullyConnected", {"num_hidden": 6, "flatten": False}, [(2, 0), (6, 4), None])
    assert ins[0] == (2, 4)
    # unknown data: nothing to do yet
    assert infer_shapes("FullyConnected", {"num_hidden": 6}, [None, (6, 3), None])[2] is False


def test_fully_connected_input_names_depend_on_no_bias():
    op = mx.operator.get("FullyConnected")
    assert op.list_input_names(op.parse_attrs({"num_hidden": 2})) == ["data", "weight", "bias"]
    assert op.list_input_names(op.parse_attrs({"num_hidden": 2, "no_bias": True})) == ["data", "weight"]
    assert infer_types("FullyConnected", {"num_hidden": 2}, ["float16", None, None]) == (["float16"] * 3, ["float16"])


def test_fully_connected_errors():
    with pytest.raises(InferenceError, match=r"FullyConnected.*weight.*\(6, 12\).*\(6, 5\)"):
        infer_shapes("FullyConnected", {"num_hidden": 6}, [(2, 3, 4), (6, 5), None])
    with pytest.raises(InferenceError, match="FullyConnected.*bias"):
        infer_shapes("FullyConnected", {"num_hidden": 6}, [(2, 3), None, (5,)])
    with pytest.raises(OperatorParamError, match="FullyConnected.*num_hidden"):
        nd.FullyConnected(nd.ones((2, 3)), nd.ones((1, 3)), nd.ones(1), num_hidden=0)
    with pytest.raises(OperatorParamError, match="FullyConnected.*num_hidden"):
        mx.operator.get("FullyConnected").parse_attrs({})
    with pytest.raises(InferenceError, match="FullyConnected.*weight"):
        nd.FullyConnected(nd.ones((2, 3)), nd.ones((4, 2)), nd.ones(4), num_hidden=4)


# ============================================================================ Activation
ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "softrelu": lambda x: np.log1p(np.exp(x)),
    "softsign": lambda x: x / (1 + np.abs(x)),
}
POINTS = np.array([-2.0, -0.7, -0.1, 0.0, 0.3, 1.5])
# MXNet 1.9.1: nd.Activation / nd.LeakyReLU at POINTS (float64): forward values and gradients
MXNET_ACTIVATION = {
    "relu": ([0, 0, 0, 0, 0.3, 1.5], [0, 0, 0, 0, 1, 1]),
    "sigmoid": (
        [0.11920292, 0.33181223, 0.47502081, 0.5, 0.57444252, 0.81757448],
        [0.10499359, 0.22171287, 0.24937604, 0.25, 0.24445831, 0.14914645],
    ),
    "tanh": (
        [-0.96402758, -0.60436778, -0.09966799, 0, 0.29131261, 0.90514825],
        [0.07065082, 0.63473959, 0.99006629, 1, 0.91513696, 0.18070664],
    ),
    "softrelu": (
        [0.12692801, 0.40318605, 0.64439666, 0.69314718, 0.85435524, 1.70141328],
        [0.11920292, 0.33181223, 0.47502081, 0.5, 0.57444252, 0.81757448],
    ),
    "softsign": (
        [-0.66666667, -0.41176471, -0.09090909, 0, 0.23076923, 0.6],
        [0.11111111, 0.34602076, 0.82644628, 1, 0.59171598, 0.16],
    ),
}
MXNET_LEAKY = {
    ("leaky", 0.1): ([-0.2, -0.07, -0.01, 0, 0.3, 1.5], [0.1, 0.1, 0.1, 0.1, 1, 1]),
    ("elu", 0.7): (
        [-0.60526529, -0.35239028, -0.06661381, 0, 0.3, 1.5],
        [0.0947347, 0.34760971, 0.63338618, 0.7, 1, 1],
    ),
    # MXNet 1.9.1's selu gradient for x <= 0 is lambda * (out + alpha) = [0.16085888, 0.8281732, 1.58231152,
    # 1.75809935], which is not the derivative (out already includes lambda); MXLab returns the derivative
    # lambda * alpha * exp(x), which finite differences confirm.
    ("selu", 0.25): (
        [-1.52016647, -0.88505305, -0.16730527, 0, 0.31521031, 1.57605153],
        [*(1.0507009873554805 * 1.6732632423543772 * np.exp(POINTS[:4])), 1.05070102, 1.05070102],
    ),
    ("gelu", 0.25): (
        [-0.04550028, -0.16937456, -0.04601722, 0, 0.18537344, 1.39978933],
        [-0.0852318, 0.0233859, 0.42047691, 0.5, 0.73232782, 1.12746918],
    ),
}


def _value_and_grad(fn, x: np.ndarray):
    arr = nd.array(x, dtype="float64")
    arr.attach_grad()
    with mx.autograd.record():
        out = fn(arr)
    out.backward()
    return out.asnumpy(), arr.grad.asnumpy()


@pytest.mark.parametrize("act_type", sorted(ACTIVATIONS))
def test_activation_matches_mxnet_values(act_type):
    value, grad = _value_and_grad(lambda a: nd.Activation(a, act_type=act_type), POINTS)
    expected_value, expected_grad = MXNET_ACTIVATION[act_type]
    assert_almost_equal(value, np.array(expected_value), rtol=1e-6, atol=1e-7)
    assert_almost_equal(grad, np.array(expected_grad), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("act_type", sorted(ACTIVATIONS))
def test_activation_forward(dtype, act_type):
    rng = seeded_rng(3)
    for ndim in range(1, 6):
        x = rng.uniform(-3, 3, rand_shape_nd(ndim, 4, rng=rng)).astype(dtype)
        out = nd.Activation(nd.array(x, dtype=x.dtype), act_type=act_type)
        assert out.dtype == np.dtype(dtype) and out.shape == x.shape
        assert_almost_equal(out, ACTIVATIONS[act_type](x.astype(np.float64)).astype(dtype))


@pytest.mark.parametrize("act_type", sorted(ACTIVATIONS))
def test_activation_gradient_and_req(act_type):
    x = away_from_zero(seeded_rng(4).uniform(-2, 2, (2, 3, 2)))
    check_imperative_gradient(lambda a: nd.Activation(a, act_type=act_type), [x])
    check_req("Activation", [x.astype(np.float32)], act_type=act_type)


# the rules as written before the kernels learned to write into their outputs: the results must stay bit-identical
_ACTIVATION_RULES = {
    "relu": (lambda x: np.maximum(x, 0), lambda g, y, x: g * (y > 0)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), lambda g, y, x: g * y * (1 - y)),
    "tanh": (np.tanh, lambda g, y, x: g * (1 - y * y)),
    "softrelu": (lambda x: np.logaddexp(x, 0), lambda g, y, x: g * -np.expm1(-y)),
    "softsign": (lambda x: x / (1 + np.abs(x)), lambda g, y, x: g / np.square(1 + np.abs(x))),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("act_type", sorted(ACTIVATIONS))
def test_activation_kernels_write_outputs_exactly(dtype, act_type):
    """write and inplace (output = input) give the rule's exact numbers; float16 is computed in float32."""
    rng = seeded_rng(5)
    x = rng.uniform(-3, 3, (4, 7)).astype(dtype)
    grad = rng.uniform(-1, 1, x.shape).astype(dtype)
    work = np.float32 if dtype == "float16" else np.dtype(dtype)
    forward_rule, backward_rule = _ACTIVATION_RULES[act_type]
    y_expected = forward_rule(x.astype(work)).astype(dtype)
    dx_expected = backward_rule(grad.astype(work), y_expected.astype(work), x.astype(work)).astype(dtype)
    op, back = mx.operator.get("Activation"), mx.operator.get("_backward_Activation")
    attrs = op.parse_attrs({"act_type": act_type})
    ctx = OpContext(True, mx.cpu(), None, [])
    back_inputs = [grad, y_expected] + ([x] if act_type == "softsign" else [])
    for req in (WRITE, INPLACE):
        y = np.full_like(x, np.nan) if req is WRITE else x.copy()
        op.get_compute("cpu")(attrs, ctx, [x if req is WRITE else y], [req], [y])
        np.testing.assert_array_equal(y, y_expected)
        dx = np.full_like(x, np.nan) if req is WRITE else grad.copy()
        inputs = [a.copy() for a in back_inputs]
        if req is INPLACE:
            inputs[0] = dx
        back.get_compute("cpu")(attrs, ctx, inputs, [req], [dx])
        np.testing.assert_array_equal(dx, dx_expected)
    added, expected_added = np.ones_like(x), np.ones_like(x)
    expected_added += forward_rule(x.astype(work))  # add: the unrounded value onto the output
    op.get_compute("cpu")(attrs, ctx, [x], [ADD], [added])
    np.testing.assert_array_equal(added, expected_added)


def test_activation_errors_and_inference():
    with pytest.raises(OperatorParamError, match="Activation.*act_type.*relu"):
        nd.Activation(nd.ones(2), act_type="swish")
    with pytest.raises(OperatorParamError, match="Activation.*act_type"):
        mx.operator.get("Activation").parse_attrs({})
    assert infer_shapes("Activation", {"act_type": "relu"}, [None], [(2, 3)])[0] == [(2, 3)]
    with pytest.raises(InferenceError, match="relu|Activation"):
        infer_shapes("Activation", {"act_type": "relu"}, [(2, 3)], [(3, 2)])
    assert mx.operator.get("Activation").inplace_option(
        mx.operator.get("Activation").parse_attrs({"act_type": "relu"})
    ) == [(0, 0)]


# ============================================================================ LeakyReLU
def _leaky_reference(x, act_type, slope=0.25, gamma=None):
    if act_type == "leaky":
        return np.where(x > 0, x, slope * x)
    if act_type == "prelu":
        return np.where(x > 0, x, gamma * x)
    if act_type == "elu":
        return np.where(x > 0, x, slope * np.expm1(np.minimum(x, 0)))
    if act_type == "selu":
        alpha, lam = 1.6732632423543772, 1.0507009873554805
        return lam * np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))
    erf = np.vectorize(math.erf)  # reference only
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


@pytest.mark.parametrize(("act_type", "slope"), sorted(MXNET_LEAKY))
def test_leaky_relu_matches_mxnet_values(act_type, slope):
    value, grad = _value_and_grad(lambda a: nd.LeakyReLU(a, act_type=act_type, slope=slope), POINTS)
    expected_value, expected_grad = MXNET_LEAKY[(act_type, slope)]
    assert_almost_equal(value, np.array(expected_value), rtol=1e-6, atol=1e-7)
    assert_almost_equal(grad, np.array(expected_grad), rtol=1e-6, atol=1e-7)


def test_gelu_uses_exact_erf_far_into_the_tails():
    x = np.array([-9.0, -6.0, -3.5, -3.0, -2.999, 2.999, 3.0, 3.5, 6.0, 9.0])
    out = nd.LeakyReLU(nd.array(x, dtype="float64"), act_type="gelu").asnumpy()
    assert_almost_equal(out, _leaky_reference(x, "gelu"), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("act_type", ["leaky", "elu", "selu", "gelu", "prelu"])
def test_leaky_relu_forward(dtype, act_type):
    rng = seeded_rng(5)
    for ndim in range(2, 6):
        shape = rand_shape_nd(ndim, 4, rng=rng)
        x = rng.uniform(-3, 3, shape).astype(dtype)
        if act_type == "prelu":
            gamma = rng.uniform(0, 0.5, shape[1]).astype(dtype)
            out = nd.LeakyReLU(nd.array(x, dtype=x.dtype), nd.array(gamma, dtype=gamma.dtype), act_type="prelu")
            g = gamma.astype(np.float64).reshape([-1 if i == 1 else 1 for i in range(ndim)])
            ref = _leaky_reference(x.astype(np.float64), "prelu", gamma=g)
        else:
            out = nd.LeakyReLU(nd.array(x, dtype=x.dtype), act_type=act_type, slope=0.3)
            ref = _leaky_reference(x.astype(np.float64), act_type, slope=0.3)
        assert out.dtype == np.dtype(dtype)
        assert_almost_equal(out, ref.astype(dtype))


@pytest.mark.parametrize("act_type", ["leaky", "elu", "selu", "gelu"])
def test_leaky_relu_gradient_and_req(act_type):
    x = away_from_zero(seeded_rng(6).uniform(-2, 2, (2, 3, 2)))
    check_imperative_gradient(lambda a: nd.LeakyReLU(a, act_type=act_type, slope=0.3), [x])
    check_req("LeakyReLU", [x.astype(np.float32)], act_type=act_type)


@pytest.mark.parametrize("gamma_shape", [(3,), (1,), (2, 3, 2)])
def test_prelu_learns_gamma(gamma_shape):
    rng = seeded_rng(7)
    x = away_from_zero(rng.uniform(-2, 2, (2, 3, 2)))
    gamma = rng.uniform(0.1, 0.5, gamma_shape)
    check_imperative_gradient(lambda a, g: nd.LeakyReLU(a, g, act_type="prelu"), [x, gamma])
    check_req("LeakyReLU", [x.astype(np.float32), gamma.astype(np.float32)], act_type="prelu")
    # MXNet 1.9.1: gamma's gradient (head gradient 1) is the sum of x over its negative entries per channel
    xa, ga = nd.array(x, dtype=x.dtype), nd.array(gamma, dtype=gamma.dtype)
    ga.attach_grad()
    with mx.autograd.record():
        out = nd.LeakyReLU(xa, ga, act_type="prelu")
    out.backward()
    negative = np.where(x > 0, 0, x)
    expected = {(3,): negative.sum(axis=(0, 2)), (1,): negative.sum().reshape(1), (2, 3, 2): negative}[gamma_shape]
    assert_almost_equal(ga.grad, expected.astype(np.float32))


def test_prelu_inference_and_errors():
    op = mx.operator.get("LeakyReLU")
    attrs = op.parse_attrs({"act_type": "prelu"})
    assert op.list_input_names(attrs) == ["data", "gamma"]
    assert op.list_input_names(op.parse_attrs({})) == ["data"]
    # MXNet 1.9.1: gamma is inferred as (channels,)
    assert infer_shapes("LeakyReLU", {"act_type": "prelu"}, [(2, 3, 4), None])[:2] == ([(2, 3, 4), (3,)], [(2, 3, 4)])
    assert infer_shapes("LeakyReLU", {"act_type": "prelu"}, [(2, 3, 4), (1,)])[0][1] == (1,)
    assert infer_shapes("LeakyReLU", {"act_type": "prelu"}, [None, None], [(2, 5)])[0] == [(2, 5), (5,)]
    with pytest.raises(InferenceError, match="LeakyReLU.*gamma.*\\(4,\\).*\\(2, 3, 4\\)"):
        infer_shapes("LeakyReLU", {"act_type": "prelu"}, [(2, 3, 4), (4,)])
    with pytest.raises(InferenceError, match="LeakyReLU.*gamma.*2 dimensions"):
        infer_shapes("LeakyReLU", {"act_type": "prelu"}, [(5,), None])
    with pytest.raises(OperatorParamError, match="LeakyReLU.*act_type"):
        nd.LeakyReLU(nd.ones(2), act_type="swish")


def test_rrelu_draws_slopes_in_training_and_uses_their_mean_in_inference():
    x = -np.ones((4, 50))
    out = nd.LeakyReLU(nd.array(x, dtype=x.dtype), act_type="rrelu", lower_bound=0.1, upper_bound=0.3).asnumpy()
    assert_almost_equal(out, np.full(x.shape, -0.2, np.float32))
    with mx.autograd.train_mode():
        out = nd.LeakyReLU(nd.array(x, dtype=x.dtype), act_type="rrelu", lower_bound=0.1, upper_bound=0.3).asnumpy()
    slopes = -out
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03
    # backward reuses the drawn slopes (the hidden 'mask' output)
    xa = nd.array(x, dtype=x.dtype)
    xa.attach_grad()
    with mx.autograd.record():
        out = nd.LeakyReLU(xa, act_type="rrelu", lower_bound=0.1, upper_bound=0.3)
    out.backward()
    assert_almost_equal(xa.grad, -out.asnumpy())
    check_req("LeakyReLU", [x.astype(np.float32)], act_type="rrelu")

    def predict(a):
        with mx.autograd.predict_mode():
            return nd.LeakyReLU(a, act_type="rrelu")

    check_imperative_gradient(predict, [away_from_zero(seeded_rng(8).uniform(-2, 2, (2, 3)))])
    op = mx.operator.get("LeakyReLU")
    attrs = op.parse_attrs({"act_type": "rrelu"})
    assert op.get_num_outputs(attrs) == 2 and op.get_num_visible_outputs(attrs) == 1
    assert op.list_output_names(attrs) == ["output", "mask"]


# ============================================================================ softmax family
SOFTMAX_REFS = {
    "softmax": softmax_reference,
    "log_softmax": lambda x, axis, t=1.0: np.log(softmax_reference(x, axis, t)),
    "softmin": lambda x, axis, t=1.0: softmax_reference(-x, axis, t),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(SOFTMAX_REFS))
def test_softmax_family_forward(dtype, name):
    rng = seeded_rng(9)
    for ndim in range(1, 6):
        x = rng.uniform(-3, 3, rand_shape_nd(ndim, 4, rng=rng)).astype(dtype)
        axis = int(rng.integers(-ndim, ndim))
        for temperature in (None, 2.5):
            kwargs = {"axis": axis} if temperature is None else {"axis": axis, "temperature": temperature}
            out = getattr(nd, name)(nd.array(x, dtype=x.dtype), **kwargs)
            ref = SOFTMAX_REFS[name](x.astype(np.float64), axis, temperature or 1.0)
            assert out.dtype == np.dtype(dtype)
            assert_almost_equal(out, ref.astype(dtype))


def test_softmax_temperature_matches_mxnet():
    x = np.array([0.3, -1.2, 0.5])
    # MXNet 1.9.1 (float32): nd.softmax / nd.softmin(x, temperature=2.0)
    out = nd.softmax(nd.array(x, dtype=x.dtype), temperature=2.0)
    assert_almost_equal(out, np.array([0.38796717, 0.18326272, 0.42877004], np.float32), rtol=1e-5, atol=1e-6)
    out = nd.softmin(nd.array(x, dtype=x.dtype), temperature=2.0)
    assert_almost_equal(out, np.array([0.24864256, 0.52637631, 0.2249811], np.float32), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(SOFTMAX_REFS))
def test_softmax_family_gradient_and_req(name):
    x = seeded_rng(10).uniform(-2, 2, (2, 3, 2))
    check_imperative_gradient(lambda a: getattr(nd, name)(a, axis=1, temperature=1.5), [x])
    check_imperative_gradient(getattr(nd, name), [x])
    check_req(name, [x.astype(np.float32)], axis=1)


def test_softmax_dtype_parameter():
    x = seeded_rng(11).uniform(-2, 2, (2, 5)).astype(np.float16)
    out = nd.softmax(nd.array(x, dtype=x.dtype), dtype="float32")
    assert out.dtype == np.float32
    assert_almost_equal(out, softmax_reference(x.astype(np.float64), -1).astype(np.float32), rtol=1e-3, atol=1e-3)
    assert nd.log_softmax(nd.array(x, dtype=x.dtype), dtype="float64").dtype == np.float64
    assert nd.softmax(nd.array(x.astype(np.float32)), dtype="float16").dtype == np.float16
    assert infer_types("softmax", {"dtype": "float64"}, ["float16"]) == (["float16"], ["float64"])
    assert infer_types("softmax", {}, [None], ["float32"]) == (["float32"], ["float32"])
    xa = nd.array(x, dtype=x.dtype)
    xa.attach_grad()
    with mx.autograd.record():
        out = nd.softmax(xa, dtype="float32")
    out.backward()
    assert xa.grad.dtype == np.float16
    with pytest.raises(OperatorParamError, match="softmax.*dtype"):
        nd.softmax(nd.array(x, dtype=x.dtype), dtype="int32")


def test_softmax_use_length_matches_mxnet():
    x = np.array(
        [
            [[1.0, 0.5, -1.0, 2.0], [0.0, 0.2, 0.4, 0.6], [2.0, 1.0, 0.0, -1.0]],
            [[0.3, -0.3, 0.9, 0.1], [1.5, 0.5, 0.7, -0.2], [0.0, 0.0, 0.0, 0.0]],
        ]
    )
    length = np.array([[1, 2, 3, 4], [2, 3, 0, 1]], dtype=np.int32)
    out = nd.softmax(nd.array(x, dtype=x.dtype), nd.array(length, dtype="int32"), axis=1, use_length=True).asnumpy()
    for n in range(2):
        for col in range(4):
            k = length[n, col]
            expected = np.zeros(3)
            if k:
                expected[:k] = softmax_reference(x[n, :k, col], 0)
            assert_almost_equal(out[n, :, col], expected.astype(np.float32))
    # MXNet 1.9.1: a zero length gives an all-zero column
    assert not out[1, :, 2].any()
    op = mx.operator.get("softmax")
    attrs = op.parse_attrs({"use_length": True, "axis": 1})
    assert op.list_input_names(attrs) == ["data", "length"]
    assert infer_shapes("softmax", {"use_length": True, "axis": 1}, [(2, 3, 4), None])[0] == [(2, 3, 4), (2, 4)]
    assert infer_types("softmax", {"use_length": True}, ["float32", None])[0] == ["float32", "int32"]
    length_nd = nd.array(length, dtype="int32")
    check_imperative_gradient(lambda a: nd.softmax(a, length_nd, axis=1, use_length=True), [x])
    check_req("softmax", [x.astype(np.float32), length], axis=1, use_length=True)


def test_softmax_errors():
    with pytest.raises(InferenceError, match="softmax.*axis 2.*2 dimension"):
        nd.softmax(nd.ones((2, 3)), axis=2)
    with pytest.raises(InferenceError, match="log_softmax.*axis -3"):
        nd.log_softmax(nd.ones((2, 3)), axis=-3)
    with pytest.raises(InferenceError, match="softmax.*length"):
        infer_shapes("softmax", {"use_length": True}, [(2, 3), (3,)])
    with pytest.raises(InferenceError, match="softmax"):
        infer_shapes("softmax", {}, [(2, 3)], [(2, 4)])


def test_softmax_activation_modes_match_mxnet():
    rng = seeded_rng(12)
    x = rng.uniform(-2, 2, (2, 3, 4))
    # MXNet 1.9.1: mode='instance' normalises over the last axis, 'channel' over axis 1
    assert_almost_equal(nd.SoftmaxActivation(nd.array(x, dtype=x.dtype)), softmax_reference(x, -1).astype(np.float32))
    assert_almost_equal(
        nd.SoftmaxActivation(nd.array(x, dtype=x.dtype), mode="channel"), softmax_reference(x, 1).astype(np.float32)
    )
    assert_almost_equal(nd.SoftmaxActivation(nd.ones(3)), np.full(3, 1 / 3, np.float32))
    for dtype in FLOATS:
        for ndim in range(1, 6):
            y = rng.uniform(-2, 2, rand_shape_nd(ndim, 4, rng=rng)).astype(dtype)
            assert_almost_equal(
                nd.SoftmaxActivation(nd.array(y, dtype=y.dtype)),
                softmax_reference(y.astype(np.float64), -1).astype(dtype),
            )
    check_imperative_gradient(nd.SoftmaxActivation, [x])
    check_imperative_gradient(lambda a: nd.SoftmaxActivation(a, mode="channel"), [x])
    check_req("SoftmaxActivation", [x.astype(np.float32)], mode="channel")
    check_req("SoftmaxActivation", [x.astype(np.float32)])
    with pytest.raises(InferenceError, match="SoftmaxActivation.*channel.*3 dimensions"):
        nd.SoftmaxActivation(nd.ones((2, 3)), mode="channel")
    with pytest.raises(OperatorParamError, match="SoftmaxActivation.*mode"):
        nd.SoftmaxActivation(nd.ones((2, 3)), mode="spatial")


# ============================================================================ Dropout
def test_dropout_is_identity_in_inference():
    x = seeded_rng(13).uniform(-1, 1, (3, 4)).astype(np.float32)
    assert_almost_equal(nd.Dropout(nd.array(x, dtype=x.dtype), p=0.5), x)


@pytest.mark.parametrize("dtype", FLOATS)
def test_dropout_training_scales_survivors(dtype):
    rng = seeded_rng(14)
    for ndim in range(1, 6):
        shape = rand_shape_nd(ndim, 6, rng=rng)
        x = rng.uniform(0.5, 1.5, shape).astype(dtype)
        with mx.autograd.train_mode():
            out = nd.Dropout(nd.array(x, dtype=x.dtype), p=0.25).asnumpy()
        kept = out != 0
        assert_almost_equal(out[kept], (x[kept].astype(np.float64) / 0.75).astype(dtype))


def test_dropout_drops_about_p():
    with mx.autograd.train_mode():
        big = nd.Dropout(nd.ones((100, 100)), p=0.3).asnumpy()
    assert np.allclose(np.unique(big), [0.0, 1 / 0.7])
    assert abs((big == 0).mean() - 0.3) < 0.03


def test_dropout_axes_share_one_draw_and_always_mode():
    with mx.autograd.train_mode():
        out = nd.Dropout(nd.ones((4, 3, 5)), p=0.5, axes=(1,)).asnumpy()
    assert (out == out[:, :1, :]).all()  # MXNet 1.9.1: one draw along the listed axes
    out = nd.Dropout(nd.ones((50, 50)), p=0.5, mode="always").asnumpy()
    assert 0.3 < (out == 0).mean() < 0.7
    with mx.autograd.train_mode():
        assert_almost_equal(nd.Dropout(nd.ones((2, 3)), p=0.0), np.ones((2, 3), np.float32))
        assert not nd.Dropout(nd.ones((2, 3)), p=1.0).asnumpy().any()


def test_dropout_is_reproducible_with_a_seed():
    with mx.autograd.train_mode():
        mx.random.seed(42)
        first = nd.Dropout(nd.ones((8, 8))).asnumpy()
        mx.random.seed(42)
        second = nd.Dropout(nd.ones((8, 8))).asnumpy()
        third = nd.Dropout(nd.ones((8, 8))).asnumpy()
    assert (first == second).all() and not (first == third).all()


def test_dropout_backward_uses_the_saved_mask():
    x = seeded_rng(15).uniform(0.5, 1.5, (6, 7))
    xa = nd.array(x, dtype="float64")
    xa.attach_grad()
    head = seeded_rng(16).uniform(-1, 1, x.shape)
    with mx.autograd.record():
        out = nd.Dropout(xa, p=0.4)
    out.backward(nd.array(head, dtype="float64"))
    mask = out.asnumpy() / x
    assert_almost_equal(xa.grad, head * mask)
    assert (np.isclose(mask, 0) | np.isclose(mask, 1 / 0.6)).all()

    def predict(a):  # in inference dropout is the identity, and so is its gradient
        with mx.autograd.predict_mode():
            return nd.Dropout(a, p=0.4)

    check_imperative_gradient(predict, [x])


def test_dropout_req_inference_and_errors():
    x = seeded_rng(17).uniform(-1, 1, (3, 4)).astype(np.float32)
    check_req("Dropout", [x], p=0.3)
    check_req("Dropout", [x], p=0.3, axes=(0,))
    check_req("Dropout", [x], p=0.3, is_train=False)
    op = mx.operator.get("Dropout")
    attrs = op.parse_attrs({})
    assert (op.get_num_outputs(attrs), op.get_num_visible_outputs(attrs)) == (2, 1)
    assert op.list_output_names(attrs) == ["output", "mask"]
    assert [r.value for r in op.resource_request(attrs)] == ["random"]
    assert infer_shapes("Dropout", {}, [None], [(2, 3), None])[:2] == ([(2, 3)], [(2, 3), (2, 3)])
    with pytest.raises(OperatorParamError, match="Dropout.*'p'.*<= 1"):
        nd.Dropout(nd.ones(2), p=1.5)
    with pytest.raises(OperatorParamError, match="Dropout.*mode"):
        nd.Dropout(nd.ones(2), mode="sometimes")
    with pytest.raises(InferenceError, match="Dropout.*axis 3"):
        nd.Dropout(nd.ones((2, 3)), axes=(3,))


# ============================================================================ Embedding
@pytest.mark.parametrize("dtype", FLOATS)
def test_embedding_forward(dtype):
    rng = seeded_rng(18)
    weight = rng.uniform(-1, 1, (7, 3)).astype(dtype)
    for ndim in range(1, 5):
        idx = rng.integers(0, 7, rand_shape_nd(ndim, 4, rng=rng))
        out = nd.Embedding(
            nd.array(idx, dtype="int32"), nd.array(weight, dtype=weight.dtype), input_dim=7, output_dim=3, dtype=dtype
        )
        assert out.dtype == np.dtype(dtype) and out.shape == (*idx.shape, 3)
        assert_almost_equal(out, weight[idx])


def test_embedding_clips_and_truncates_indices_like_mxnet():
    weight = np.arange(15, dtype=np.float32).reshape(5, 3)
    idx = np.array([[0, 4, 7], [-1, 2.7, 2]])
    out = nd.Embedding(
        nd.array(idx, dtype=idx.dtype), nd.array(weight, dtype=weight.dtype), input_dim=5, output_dim=3
    ).asnumpy()
    # MXNet 1.9.1: 7 -> row 4, -1 -> row 0, 2.7 -> row 2
    assert_almost_equal(out, weight[[[0, 4, 4], [0, 2, 2]]])


def test_embedding_gradient_scatter_adds_repeated_indices():
    weight = seeded_rng(19).uniform(-1, 1, (5, 3))
    idx = nd.array(np.array([[0, 4, 4], [1, 0, 0]]))
    wa = nd.array(weight, dtype="float64")
    wa.attach_grad()
    with mx.autograd.record():
        out = nd.Embedding(idx, wa, input_dim=5, output_dim=3)
    out.backward(nd.ones((2, 3, 3), dtype="float64"))
    # MXNet 1.9.1: rows 0, 1, 4 receive 3, 1 and 2 contributions; rows 2, 3 none
    assert_almost_equal(wa.grad, np.array([[3.0] * 3, [1.0] * 3, [0.0] * 3, [0.0] * 3, [2.0] * 3]))
    check_imperative_gradient(lambda w: nd.Embedding(idx, w, input_dim=5, output_dim=3), [weight])
    check_req(
        "Embedding",
        [np.array([[0, 4, 4], [1, 0, 0]], np.float32), weight.astype(np.float32)],
        input_dim=5,
        output_dim=3,
    )


def test_embedding_inference_and_errors():
    # MXNet 1.9.1: weight (input_dim, output_dim), output data.shape + (output_dim,)
    assert infer_shapes("Embedding", {"input_dim": 5, "output_dim": 3}, [(2, 4), None])[:2] == (
        [(2, 4), (5, 3)],
        [(2, 4, 3)],
    )
    assert infer_shapes("Embedding", {"input_dim": 5, "output_dim": 3}, [None, None], [(6, 3)])[0] == [(6,), (5, 3)]
    # MXNet 1.9.1: dtype is the weight's type unless the weight's type is known
    params = {"input_dim": 5, "output_dim": 3, "dtype": "float16"}
    assert infer_types("Embedding", params, ["int32", None]) == (["int32", "float16"], ["float16"])
    assert infer_types("Embedding", params, ["int32", "float32"]) == (["int32", "float32"], ["float32"])
    assert infer_types("Embedding", {"input_dim": 5, "output_dim": 3}, ["int32", None]) == (
        ["int32", "float32"],
        ["float32"],
    )
    with pytest.raises(InferenceError, match=r"Embedding.*weight.*\(5, 3\).*\(4, 3\)"):
        nd.Embedding(nd.array([1, 2]), nd.ones((4, 3)), input_dim=5, output_dim=3)
    with pytest.raises(OperatorParamError, match="Embedding.*input_dim"):
        nd.Embedding(nd.array([1]), nd.ones((1, 3)), output_dim=3)
    with pytest.raises(InferenceError, match="Embedding.*output"):
        infer_shapes("Embedding", {"input_dim": 5, "output_dim": 3}, [(2,), None], [(2, 4)])


# ============================================================================ LRN
def _np_lrn(x, nsize, alpha, beta, knorm):
    half = (nsize - 1) // 2
    padded = np.pad(x * x, ((0, 0), (half, half), (0, 0), (0, 0)))
    total = sum(padded[:, i : i + x.shape[1]] for i in range(2 * half + 1))
    return x / (knorm + alpha / nsize * total) ** beta


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("nsize", [1, 2, 3, 5])
def test_lrn_forward(dtype, nsize):
    rng = seeded_rng(20)
    x = rng.uniform(-2, 2, (2, 6, 3, 2)).astype(dtype)
    out = nd.LRN(nd.array(x, dtype=x.dtype), nsize=nsize, alpha=0.2, beta=0.75, knorm=1.5)
    assert out.dtype == np.dtype(dtype)
    assert_almost_equal(out, _np_lrn(x.astype(np.float64), nsize, 0.2, 0.75, 1.5).astype(dtype))


# MXNet 1.9.1: LRN(alpha=0.3, beta=0.6, knorm=1.5) of _lrn_input(), head gradient linspace(-1, 1, 20)
MXNET_LRN = {
    3: (
        [
            -0.728347,
            -0.36240134,
            0.047024306,
            0.44975615,
            -0.69147491,
            -0.3445079,
            0.062674031,
            0.45809719,
            -0.68002248,
            -0.32986662,
            0.078308761,
            0.47181135,
            -0.6684323,
            -0.31513706,
            0.093921021,
            0.48540929,
            -0.67560101,
            -0.30193001,
            0.10961789,
            0.50781518,
        ],
        [
            -0.64994961,
            -0.67214769,
            -0.61845267,
            -0.5024178,
            -0.32456055,
            -0.34503868,
            -0.28827196,
            -0.1811897,
            -0.090573303,
            -0.038268372,
            0.041011877,
            0.10736529,
            0.1515408,
            0.2723881,
            0.36933649,
            0.39032888,
            0.46094379,
            0.60040784,
            0.69897568,
            0.71831983,
        ],
    ),
    4: (
        [
            -0.74127454,
            -0.36390188,
            0.047029011,
            0.45287549,
            -0.70874977,
            -0.34653771,
            0.062686548,
            0.46292695,
            -0.69641328,
            -0.33164629,
            0.078332841,
            0.47709718,
            -0.68396175,
            -0.31668702,
            0.093962252,
            0.49117586,
            -0.68630201,
            -0.30288056,
            0.10965507,
            0.51204383,
        ],
        [
            -0.67924958,
            -0.67927444,
            -0.61858672,
            -0.51051801,
            -0.35223824,
            -0.35140792,
            -0.28841922,
            -0.18714216,
            -0.097473085,
            -0.038980979,
            0.041075122,
            0.1111391,
            0.16358833,
            0.27639964,
            0.36984938,
            0.40514693,
            0.47777832,
            0.60494798,
            0.69961035,
            0.73376989,
        ],
    ),
}


def _lrn_input() -> np.ndarray:
    return ((np.arange(20, dtype=np.float32).reshape(1, 5, 2, 2) * 0.53) % 2.1 - 1).astype(np.float32)


@pytest.mark.parametrize("nsize", [3, 4])
def test_lrn_matches_mxnet(nsize):
    xa = nd.array(_lrn_input())
    xa.attach_grad()
    with mx.autograd.record():
        out = nd.LRN(xa, nsize=nsize, alpha=0.3, beta=0.6, knorm=1.5)
    out.backward(nd.array(np.linspace(-1, 1, 20).reshape(1, 5, 2, 2)))
    value, grad = MXNET_LRN[nsize]
    assert_almost_equal(out, np.array(value, np.float32).reshape(1, 5, 2, 2), rtol=1e-5, atol=1e-6)
    assert_almost_equal(xa.grad, np.array(grad, np.float32).reshape(1, 5, 2, 2), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("nsize", [1, 3, 5])
def test_lrn_gradient_and_req(nsize):
    x = seeded_rng(21).uniform(-2, 2, (2, 5, 2, 2))
    check_imperative_gradient(lambda a: nd.LRN(a, nsize=nsize, alpha=0.5, beta=0.75, knorm=1.0), [x])
    check_req("LRN", [x.astype(np.float32)], nsize=nsize, alpha=0.5)


def test_lrn_inference_and_errors():
    assert infer_shapes("LRN", {"nsize": 3}, [None], [(2, 3, 4, 4), None])[:2] == (
        [(2, 3, 4, 4)],
        [(2, 3, 4, 4), (2, 3, 4, 4)],
    )
    op = mx.operator.get("LRN")
    attrs = op.parse_attrs({"nsize": 3})
    assert op.get_num_visible_outputs(attrs) == 1 and op.list_output_names(attrs) == ["output", "tmp_norm"]
    with pytest.raises(InferenceError, match=r"LRN.*4-D.*\(2, 3, 4\)"):
        nd.LRN(nd.ones((2, 3, 4)), nsize=3)
    with pytest.raises(OperatorParamError, match="LRN.*nsize"):
        nd.LRN(nd.ones((1, 2, 2, 2)))
    with pytest.raises(OperatorParamError, match="LRN.*nsize.*>= 1"):
        nd.LRN(nd.ones((1, 2, 2, 2)), nsize=0)
