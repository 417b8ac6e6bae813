"""BatchNorm: batch statistics in training, moving statistics in inference, auxiliary states.

Expectations marked "MXNet 1.9.1" were read off the real MXNet (pip ``mxnet==1.9.1``) and
are written here as plain numbers; the tests never import MXNet.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req, rand_shape_nd

nd = mx.nd
FLOATS = ["float16", "float32", "float64"]


def _reference(x, gamma, beta, mean, var, axis, eps):
    shape = [1] * x.ndim
    shape[axis] = -1
    return (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * gamma.reshape(shape) + beta.reshape(shape)


def _batch_stats(x, axis):
    axes = tuple(i for i in range(x.ndim) if i != axis)
    return x.mean(axis=axes), x.var(axis=axes)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ndim", [1, 2, 3, 4, 5])
def test_batch_norm_training_forward(dtype, ndim):
    rng = seeded_rng(ndim)
    shape = (5,) if ndim == 1 else (rng.integers(2, 5), *rand_shape_nd(ndim - 1, 4, rng=rng))
    axis = int(rng.integers(-ndim, ndim)) % ndim if ndim > 1 else 0
    channels = shape[axis]
    x = rng.uniform(-2, 2, shape).astype(dtype)
    stats = "float32" if dtype == "float16" else dtype
    gamma = rng.uniform(0.5, 1.5, channels).astype(stats)
    beta = rng.uniform(-1, 1, channels).astype(stats)
    mm, mv = rng.uniform(-1, 1, channels).astype(stats), rng.uniform(0.5, 2, channels).astype(stats)
    moving_mean, moving_var = nd.array(mm, dtype=mm.dtype), nd.array(mv, dtype=mv.dtype)
    with mx.autograd.train_mode():
        out, mean, invstd = nd.BatchNorm(
            nd.array(x, dtype=x.dtype),
            nd.array(gamma, dtype=gamma.dtype),
            nd.array(beta, dtype=beta.dtype),
            moving_mean,
            moving_var,
            axis=axis,
            fix_gamma=False,
            output_mean_var=True,
            momentum=0.7,
            eps=1e-3,
        )
    x64 = x.astype(np.float64)
    bmean, bvar = _batch_stats(x64, axis)
    assert out.dtype == np.dtype(dtype) and mean.dtype == np.dtype(stats)
    assert_almost_equal(
        out, _reference(x64, gamma.astype(np.float64), beta.astype(np.float64), bmean, bvar, axis, 1e-3).astype(dtype)
    )
    assert_almost_equal(mean, bmean.astype(stats))
    # MXNet 1.9.1: the 'var' output holds the inverse standard deviation
    assert_almost_equal(invstd, (1 / np.sqrt(bvar + 1e-3)).astype(stats))
    # the auxiliary states were updated in place, with the biased batch variance
    assert_almost_equal(moving_mean, (0.7 * mm + 0.3 * bmean).astype(stats))
    assert_almost_equal(moving_var, (0.7 * mv + 0.3 * bvar).astype(stats))


@pytest.mark.parametrize("dtype", FLOATS)
def test_batch_norm_inference_uses_moving_stats(dtype):
    rng = seeded_rng(10)
    x = rng.uniform(-2, 2, (3, 4, 2)).astype(dtype)
    stats = "float32" if dtype == "float16" else dtype
    gamma, beta = rng.uniform(0.5, 1.5, 4).astype(stats), rng.uniform(-1, 1, 4).astype(stats)
    mm, mv = rng.uniform(-1, 1, 4).astype(stats), rng.uniform(0.5, 2, 4).astype(stats)
    moving_mean, moving_var = nd.array(mm, dtype=mm.dtype), nd.array(mv, dtype=mv.dtype)
    for kwargs in ({}, {"use_global_stats": True}):
        scope = mx.autograd.train_mode() if kwargs else mx.autograd.predict_mode()
        with scope:
            out, mean, invstd = nd.BatchNorm(
                nd.array(x, dtype=x.dtype),
                nd.array(gamma, dtype=gamma.dtype),
                nd.array(beta, dtype=beta.dtype),
                moving_mean,
                moving_var,
                fix_gamma=False,
                output_mean_var=True,
                **kwargs,
            )
        ref = _reference(
            x.astype(np.float64),
            gamma.astype(np.float64),
            beta.astype(np.float64),
            mm.astype(np.float64),
            mv.astype(np.float64),
            1,
            1e-3,
        )
        assert_almost_equal(out, ref.astype(dtype))
        assert_almost_equal(mean, mm)
        assert_almost_equal(invstd, (1 / np.sqrt(mv.astype(np.float64) + 1e-3)).astype(stats))
        assert_almost_equal(moving_mean, mm)  # untouched
        assert_almost_equal(moving_var, mv)


def test_batch_norm_fix_gamma_ignores_gamma():
    rng = seeded_rng(11)
    x = rng.uniform(-2, 2, (4, 3, 2))
    gamma = nd.array(np.array([5.0, -2.0, 0.1]), dtype="float64")
    gamma.attach_grad()
    xa = nd.array(x, dtype="float64")
    with mx.autograd.record():
        out = nd.BatchNorm(
            xa, gamma, nd.zeros(3, dtype="float64"), nd.zeros(3, dtype="float64"), nd.ones(3, dtype="float64")
        )  # fix_gamma=True is the default
    out.backward()
    mean, var = _batch_stats(x, 1)
    assert_almost_equal(out, _reference(x, np.ones(3), np.zeros(3), mean, var, 1, 1e-3))
    assert not gamma.grad.asnumpy().any()  # MXNet 1.9.1: zero gradient for a fixed gamma
    assert_almost_equal(gamma, np.array([5.0, -2.0, 0.1]))  # MXLab leaves the array alone


# MXNet 1.9.1: one training step of BatchNorm(fix_gamma=False, eps=1e-3, momentum=0.8) on BN_X
BN_X = (np.arange(24, dtype=np.float64).reshape(2, 3, 2, 2) * 0.61) % 1.7 - 0.5
BN_GAMMA, BN_BETA = np.array([0.5, 1.0, 2.0]), np.array([0.1, -0.2, 0.3])
MXNET_OUT = [
    -0.51143731,
    0.18247294,
    0.87638319,
    -0.3635548,
    -0.4559505,
    0.93187,
    -1.548006,
    -0.16018548,
    2.3692919,
    -1.9269523,
    0.47736788,
    2.881688,
    0.080092739,
    0.77400299,
    -0.465935,
    0.22797525,
    0.7271096,
    -1.7527664,
    -0.36494588,
    1.0228746,
    -2.281688,
    0.12263212,
    2.5269523,
    -1.7692919,
]
MXNET_DX = [
    -0.65829109,
    -0.65424297,
    -0.65019486,
    -0.38175507,
    -1.448778,
    -1.4406818,
    -0.90380221,
    -0.89570597,
    -1.9660369,
    -2.8783792,
    -1.8332539,
    -0.78812864,
    0.44785299,
    0.4519011,
    0.72034089,
    0.72438901,
    0.76351014,
    1.3003897,
    1.3084859,
    1.3165822,
    0.78812864,
    1.8332539,
    2.8783792,
    1.9660369,
]
MXNET_DGAMMA, MXNET_DBETA = [0.48074181, 0.48074181, -1.1858799], [-2.7826087, 0.0, 2.7826087]
MXNET_MOVING_MEAN, MXNET_MOVING_VAR = [0.0875, 0.2305, 0.331], [0.83843876, 1.6384388, 0.451295]
# ... followed by inference with the updated moving statistics
MXNET_INFER_OUT = [
    -0.22061465,
    0.11227886,
    0.44517237,
    -0.14967013,
    -0.19258048,
    0.28383102,
    -0.56746165,
    -0.091050156,
    2.2300288,
    -1.011468,
    0.8025807,
    2.6166294,
    0.063163423,
    0.39605693,
    -0.19878557,
    0.13410794,
    0.2135408,
    -0.63775187,
    -0.16134038,
    0.31507112,
    -1.2791145,
    0.53493418,
    2.3489829,
    -0.89251396,
]
MXNET_INFER_INVSTD = [1.0914541, 0.78100246, 1.4869251]


def test_batch_norm_training_step_matches_mxnet():
    xa, ga, ba = (nd.array(v, dtype="float64") for v in (BN_X, BN_GAMMA, BN_BETA))
    moving_mean = nd.array(np.array([0.1, 0.2, 0.3]), dtype="float64")
    moving_var = nd.array(np.array([1.0, 2.0, 0.5]), dtype="float64")
    for a in (xa, ga, ba):
        a.attach_grad()
    with mx.autograd.record():
        out = nd.BatchNorm(xa, ga, ba, moving_mean, moving_var, fix_gamma=False, eps=1e-3, momentum=0.8)
    out.backward(nd.array(np.linspace(-1, 1, 24).reshape(BN_X.shape), dtype="float64"))
    tol = {"rtol": 1e-6, "atol": 1e-6}
    assert_almost_equal(out, np.array(MXNET_OUT).reshape(BN_X.shape), **tol)
    assert_almost_equal(xa.grad, np.array(MXNET_DX).reshape(BN_X.shape), **tol)
    assert_almost_equal(ga.grad, np.array(MXNET_DGAMMA), **tol)
    assert_almost_equal(ba.grad, np.array(MXNET_DBETA), **tol)
    assert_almost_equal(moving_mean, np.array(MXNET_MOVING_MEAN), **tol)
    assert_almost_equal(moving_var, np.array(MXNET_MOVING_VAR), **tol)
    out, mean, invstd = nd.BatchNorm(xa, ga, ba, moving_mean, moving_var, fix_gamma=False, output_mean_var=True)
    assert_almost_equal(out, np.array(MXNET_INFER_OUT).reshape(BN_X.shape), **tol)
    assert_almost_equal(mean, np.array(MXNET_MOVING_MEAN), **tol)
    assert_almost_equal(invstd, np.array(MXNET_INFER_INVSTD), **tol)


@pytest.mark.parametrize("axis", [1, -1, 0])
def test_batch_norm_gradient_with_batch_stats(axis):
    rng = seeded_rng(12)
    x = rng.uniform(-2, 2, (3, 2, 4))
    channels = x.shape[axis]

    def fn(d, g, b):
        with mx.autograd.train_mode():
            return nd.BatchNorm(
                d,
                g,
                b,
                nd.zeros(channels, dtype="float64"),
                nd.ones(channels, dtype="float64"),
                fix_gamma=False,
                axis=axis,
            )

    check_imperative_gradient(fn, [x, rng.uniform(0.5, 1.5, channels), rng.uniform(-1, 1, channels)])


def test_batch_norm_gradient_with_global_stats():
    rng = seeded_rng(13)
    x = rng.uniform(-2, 2, (3, 2, 2))
    mm, mv = nd.array(rng.uniform(-1, 1, 2), dtype="float64"), nd.array(rng.uniform(0.5, 2, 2), dtype="float64")

    def fn(d, g, b):
        with mx.autograd.train_mode():
            return nd.BatchNorm(d, g, b, mm, mv, fix_gamma=False, use_global_stats=True)

    check_imperative_gradient(fn, [x, rng.uniform(0.5, 1.5, 2), rng.uniform(-1, 1, 2)])


def test_batch_norm_req():
    rng = seeded_rng(14)
    x = rng.uniform(-2, 2, (3, 2, 2)).astype(np.float32)
    params = [np.ones(2, np.float32), np.zeros(2, np.float32), np.zeros(2, np.float32), np.ones(2, np.float32)]
    check_req("BatchNorm", [x, *params], fix_gamma=False)
    check_req("BatchNorm", [x, *params], is_train=False)
    check_req("BatchNorm", [x, *params], use_global_stats=True, axis=2)


def test_batch_norm_declares_auxiliary_states_and_outputs():
    op = mx.operator.get("BatchNorm")
    attrs = op.parse_attrs({})
    assert op.list_input_names(attrs) == ["data", "gamma", "beta", "moving_mean", "moving_var"]
    assert op.mutate_inputs(attrs) == [3, 4]
    assert op.get_num_outputs(attrs) == 3 and op.get_num_visible_outputs(attrs) == 1
    assert op.get_num_visible_outputs(op.parse_attrs({"output_mean_var": True})) == 3
    assert op.list_output_names(attrs) == ["output", "mean", "var"]
    defaults = attrs.parsed
    assert (defaults.eps, defaults.momentum, defaults.fix_gamma, defaults.use_global_stats, defaults.axis) == (
        1e-3,
        0.9,
        True,
        False,
        1,
    )
    assert isinstance(nd.BatchNorm(nd.ones((2, 2)), nd.ones(2), nd.ones(2), nd.zeros(2), nd.ones(2)), nd.NDArray)


def test_batch_norm_shape_and_type_inference():
    assert infer_shapes("BatchNorm", {}, [(2, 3, 4, 4), None, None, None, None])[:2] == (
        [(2, 3, 4, 4), (3,), (3,), (3,), (3,)],
        [(2, 3, 4, 4), (3,), (3,)],
    )
    assert infer_shapes("BatchNorm", {"axis": -1}, [(2, 3, 5), None, None, None, None])[0][1:] == [(5,)] * 4
    # the channel count can come back from a parameter, and the data from the output
    ins, outs, done = infer_shapes("BatchNorm", {}, [None, None, (6,), None, None], [(2, 0, 3), None, None])
    assert ins == [(2, 6, 3), (6,), (6,), (6,), (6,)] and outs[0] == (2, 6, 3) and done
    assert infer_shapes("BatchNorm", {}, [None] * 5)[2] is False
    assert infer_types("BatchNorm", {}, ["float16", None, None, None, None]) == (
        ["float16"] + ["float32"] * 4,
        ["float16", "float32", "float32"],
    )
    assert infer_types("BatchNorm", {}, ["float64", None, None, None, None])[0] == ["float64"] * 5


def test_batch_norm_errors():
    with pytest.raises(InferenceError, match=r"BatchNorm.*gamma.*\(3,\).*\(4,\)"):
        infer_shapes("BatchNorm", {}, [(2, 3, 4), (4,), None, None, None])
    with pytest.raises(InferenceError, match="BatchNorm.*axis 3.*3 dimension"):
        nd.BatchNorm(nd.ones((2, 3, 4)), nd.ones(3), nd.ones(3), nd.zeros(3), nd.ones(3), axis=3)
    with pytest.raises(InferenceError, match=r"BatchNorm.*1-D.*\(3, 1\)"):
        infer_shapes("BatchNorm", {}, [None, (3, 1), None, None, None])
    with pytest.raises(InferenceError, match="BatchNorm.*moving_var"):
        nd.BatchNorm(nd.ones((2, 3)), nd.ones(3), nd.ones(3), nd.zeros(3), nd.ones(2))
    with pytest.raises(InferenceError, match="BatchNorm.*type.*float32.*float64"):
        infer_types("BatchNorm", {}, ["float32", "float64", None, None, None])
    with pytest.raises(OperatorParamError, match="BatchNorm.*eps"):
        nd.BatchNorm(nd.ones((2, 3)), nd.ones(3), nd.ones(3), nd.zeros(3), nd.ones(3), eps=-1.0)
    with pytest.raises(OperatorParamError, match="BatchNorm.*unknown parameter.*'epsilon'"):
        nd.BatchNorm(nd.ones((2, 3)), nd.ones(3), nd.ones(3), nd.zeros(3), nd.ones(3), epsilon=1.0)
