"""_contrib_SyncBatchNorm and _contrib_BatchNormWithReLU: BatchNorm's compute with a twist.

The agreement with MXNet 1.9.1 itself is in test_misc17_mxnet.py; here the operators are
checked against NumPy and against BatchNorm.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng

import framework as mx
from framework.operator import OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req

nd = mx.nd
FLOATS = ["float16", "float32", "float64"]


def _inputs(rng, shape, dtype):
    stats = "float32" if dtype == "float16" else dtype
    c = shape[1]
    return (
        rng.uniform(-2, 2, shape).astype(dtype),
        rng.uniform(0.5, 1.5, c).astype(stats),
        rng.uniform(-1, 1, c).astype(stats),
        rng.uniform(-1, 1, c).astype(stats),
        rng.uniform(0.5, 2, c).astype(stats),
    )


def _nd(arrays):
    return [nd.array(a, dtype=a.dtype) for a in arrays]


def _reference(x, gamma, beta, mean, var, eps):
    shape = [1] * x.ndim
    shape[1] = -1
    x = x.astype(np.float64)
    return (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * gamma.reshape(shape) + beta.reshape(shape)


@pytest.mark.parametrize("dtype", FLOATS)
def test_sync_batch_norm_training_is_batch_norm_with_the_variance_output(dtype):
    rng = seeded_rng(1)
    x, gamma, beta, mm, mv = _inputs(rng, (4, 3, 2, 5), dtype)
    moving = _nd([mm, mv])
    with mx.autograd.train_mode():
        out, mean, var = nd.contrib.SyncBatchNorm(
            *_nd([x, gamma, beta]), *moving, key="bn0", ndev=1, fix_gamma=False, output_mean_var=True, momentum=0.8
        )
    axes = (0, 2, 3)
    bmean, bvar = x.astype(np.float64).mean(axes), x.astype(np.float64).var(axes)
    tol = 2e-2 if dtype == "float16" else 1e-5
    assert out.dtype == np.dtype(dtype)
    assert_almost_equal(out.asnumpy(), _reference(x, gamma, beta, bmean, bvar, 1e-3), rtol=tol, atol=tol)
    assert_almost_equal(mean.asnumpy(), bmean, rtol=tol, atol=tol)
    assert_almost_equal(var.asnumpy(), bvar, rtol=tol, atol=tol)  # the variance, not BatchNorm's 1/std
    assert_almost_equal(moving[0].asnumpy(), 0.8 * mm + 0.2 * bmean, rtol=tol, atol=tol)
    assert_almost_equal(moving[1].asnumpy(), 0.8 * mv + 0.2 * bvar, rtol=tol, atol=tol)


def test_sync_batch_norm_inference_uses_the_moving_statistics():
    rng = seeded_rng(2)
    x, gamma, beta, mm, mv = _inputs(rng, (2, 4, 3), "float64")
    out, _, var = nd.contrib.SyncBatchNorm(*_nd([x, gamma, beta, mm, mv]), key="k", output_mean_var=True)
    assert_almost_equal(out.asnumpy(), _reference(x, np.ones_like(gamma), beta, mm, mv, 1e-3))
    assert_almost_equal(var.asnumpy(), mv)


def test_sync_batch_norm_gradients_equal_batch_norm_gradients():
    rng = seeded_rng(3)
    x, gamma, beta, mm, mv = _inputs(rng, (3, 2, 4), "float64")
    head = rng.uniform(-1, 1, x.shape)
    grads = {}
    for name, fn, extra in (
        ("sync", nd.contrib.SyncBatchNorm, {"key": "k"}),
        ("plain", nd.BatchNorm, {}),
    ):
        arrays = _nd([x, gamma, beta])
        for a in arrays:
            a.attach_grad()
        with mx.autograd.record():
            out = fn(*arrays, *_nd([mm, mv]), fix_gamma=False, **extra)
        out.backward(nd.array(head, dtype="float64"))
        grads[name] = [a.grad.asnumpy() for a in arrays]
    for got, want in zip(grads["sync"], grads["plain"], strict=True):
        assert_almost_equal(got, want)


def test_sync_batch_norm_numeric_gradient():
    rng = seeded_rng(4)
    x, gamma, beta, _, _ = _inputs(rng, (3, 2, 2), "float64")

    def fn(d, g, b):
        with mx.autograd.train_mode():
            return nd.contrib.SyncBatchNorm(
                d, g, b, nd.zeros(2, dtype="float64"), nd.ones(2, dtype="float64"), key="k", fix_gamma=False
            )

    check_imperative_gradient(fn, [x, gamma, beta])


def test_sync_batch_norm_params_and_inference():
    with pytest.raises(OperatorParamError, match="'key'"):
        nd.contrib.SyncBatchNorm(*_nd(_inputs(seeded_rng(5), (2, 3, 2), "float32")))
    with pytest.raises(OperatorParamError, match="'ndev'"):
        mx.operator.get("_contrib_SyncBatchNorm").parse_attrs({"key": "k", "ndev": 0})
    with pytest.raises(OperatorParamError, match="axis"):
        mx.operator.get("_contrib_SyncBatchNorm").parse_attrs({"key": "k", "axis": 1})
    params = {"key": "k"}
    ins, outs, done = infer_shapes("_contrib_SyncBatchNorm", params, [(2, 3, 4), None, None, None, None])
    assert done and ins[1:] == [(3,)] * 4 and outs == [(2, 3, 4), (3,), (3,)]
    ins, outs, done = infer_shapes("_contrib_SyncBatchNorm", params, [None] * 5, [(2, 3, 4), None, None])
    assert ins[0] == (2, 3, 4) and outs[1] == (3,)
    ins, outs = infer_types("_contrib_SyncBatchNorm", params, ["float16", None, None, None, None])
    assert ins[1:] == ["float32"] * 4 and outs == ["float16", "float32", "float32"]
    sym = mx.sym.contrib.SyncBatchNorm(mx.sym.var("data"), key="k", name="bn", output_mean_var=True)
    assert sym.list_arguments() == ["data", "bn_gamma", "bn_beta"]
    assert sym.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert sym.list_outputs() == ["bn_output", "bn_mean", "bn_var"]


def test_sync_batch_norm_req():
    rng = seeded_rng(6)
    arrays = _inputs(rng, (3, 2, 2), "float32")
    check_req("_contrib_SyncBatchNorm", list(arrays), key="k", fix_gamma=False)
    check_req("_contrib_SyncBatchNorm", list(arrays), key="k", is_train=False)


# ----------------------------------------------------------------------------- BatchNormWithReLU
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_with_relu_is_relu_of_batch_norm(dtype, train):
    rng = seeded_rng(7)
    x, gamma, beta, mm, mv = _inputs(rng, (3, 4, 5), dtype)
    with mx.autograd.train_mode() if train else mx.autograd.predict_mode():
        fused = nd.contrib.BatchNormWithReLU(*_nd([x, gamma, beta, mm, mv]), fix_gamma=False, output_mean_var=True)
        plain = nd.BatchNorm(*_nd([x, gamma, beta, mm, mv]), fix_gamma=False, output_mean_var=True)
    assert len(fused) == 3
    assert_almost_equal(fused[0].asnumpy(), np.maximum(plain[0].asnumpy(), 0))
    assert_almost_equal(fused[1].asnumpy(), plain[1].asnumpy())
    assert_almost_equal(fused[2].asnumpy(), plain[2].asnumpy())  # BatchNorm's inverse std


def test_batch_norm_with_relu_numeric_gradient():
    rng = seeded_rng(8)
    x, gamma, beta, _, _ = _inputs(rng, (4, 2, 3), "float64")

    def fn(d, g, b):
        with mx.autograd.train_mode():
            return nd.contrib.BatchNormWithReLU(
                d, g, b, nd.zeros(2, dtype="float64"), nd.ones(2, dtype="float64"), fix_gamma=False
            )

    check_imperative_gradient(fn, [x, gamma, beta])


def test_batch_norm_with_relu_hidden_workspace_and_inference():
    op = mx.operator.get("_contrib_BatchNormWithReLU")
    attrs = op.parse_attrs({})
    assert op.list_output_names(attrs) == ["output", "mean", "var", "workspace"]
    assert op.get_num_visible_outputs(attrs) == 1
    ins, outs, done = infer_shapes("_contrib_BatchNormWithReLU", {"axis": -1}, [(2, 5, 3), None, None, None, None])
    assert done and outs == [(2, 5, 3), (3,), (3,), (2, 5, 3)] and ins[3] == (3,)
    ins, outs, done = infer_shapes("_contrib_BatchNormWithReLU", {}, [None] * 5, [None, None, None, (2, 3)])
    assert ins[0] == (2, 3) and outs[0] == (2, 3)
    _, outs = infer_types("_contrib_BatchNormWithReLU", {}, ["float16", None, None, None, None])
    assert outs == ["float16", "float32", "float32", "float32"]
    with pytest.raises(OperatorParamError, match="'eps'"):
        op.parse_attrs({"eps": -1})
    sym = mx.sym.contrib.BatchNormWithReLU(mx.sym.var("data"), name="bn")
    assert sym.list_outputs() == ["bn_output"]
    assert sym.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]


def test_batch_norm_with_relu_req():
    rng = seeded_rng(9)
    arrays = _inputs(rng, (3, 2, 2), "float32")
    check_req("_contrib_BatchNormWithReLU", list(arrays), fix_gamma=False)
    check_req("_contrib_BatchNormWithReLU", list(arrays), is_train=False)
