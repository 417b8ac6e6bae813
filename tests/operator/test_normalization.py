"""LayerNorm, InstanceNorm, GroupNorm, L2Normalization and the v1 layers (BatchNorm_v1,
Convolution_v1, Pooling_v1): forward against NumPy, analytic gradients against finite
differences, req, inference in both directions, parameter errors.

Agreement with MXNet 1.9.1 itself is checked in test_mxnet_reference_normseq.py.
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


def _standardize(x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps), mean, np.sqrt(var + eps)


def _layer_norm_reference(x, gamma, beta, axis, eps):
    xhat, mean, std = _standardize(x.astype(np.float64), axis, eps)
    shape = [1] * x.ndim
    shape[axis] = -1
    return xhat * gamma.reshape(shape) + beta.reshape(shape), mean, std


def _group_norm_reference(x, gamma, beta, groups, eps):
    xg = x.astype(np.float64).reshape(x.shape[0], groups, -1)
    xhat, mean, std = _standardize(xg, 2, eps)
    out = xhat * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)
    return out.reshape(x.shape), mean.reshape(x.shape[0], groups), std.reshape(x.shape[0], groups)


# ---------------------------------------------------------------------------- LayerNorm
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_layer_norm_forward_matches_numpy(dtype, ndim):
    rng = seeded_rng(ndim)
    shape = rand_shape_nd(ndim, 5, rng=rng)
    axis = int(rng.integers(-ndim, ndim))
    channels = shape[axis]
    x = rng.uniform(-2, 2, shape).astype(dtype)
    gamma, beta = rng.uniform(0.5, 1.5, channels).astype(dtype), rng.uniform(-1, 1, channels).astype(dtype)
    out, mean, std = nd.LayerNorm(
        nd.array(x, dtype=x.dtype),
        nd.array(gamma, dtype=gamma.dtype),
        nd.array(beta, dtype=beta.dtype),
        axis=axis,
        output_mean_var=True,
    )
    ref, ref_mean, ref_std = _layer_norm_reference(x, gamma.astype(np.float64), beta.astype(np.float64), axis, 1e-5)
    rtol, atol = (1e-2, 2e-2) if dtype == "float16" else (1e-4, 1e-4)
    assert out.dtype == np.dtype(dtype)
    assert_almost_equal(out.asnumpy(), ref, rtol=rtol, atol=atol)
    assert_almost_equal(mean.asnumpy(), ref_mean, rtol=rtol, atol=atol)
    assert_almost_equal(std.asnumpy(), ref_std, rtol=rtol, atol=atol)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_layer_norm_gradient(axis):
    rng = seeded_rng(3)
    x = rng.uniform(-2, 2, (3, 4, 2))
    channels = x.shape[axis]

    def fn(d, g, b):
        return nd.LayerNorm(d, g, b, axis=axis, eps=1e-3)

    check_imperative_gradient(fn, [x, rng.uniform(0.5, 1.5, channels), rng.uniform(-1, 1, channels)])


def test_layer_norm_shapes_both_directions():
    ins, outs, done = infer_shapes("LayerNorm", {"axis": 1}, [(2, 5, 3), None, None])
    assert done and ins == [(2, 5, 3), (5,), (5,)] and outs == [(2, 5, 3), (2, 1, 3), (2, 1, 3)]
    # the normalised dimension from gamma, the others from the output
    ins, outs, done = infer_shapes("LayerNorm", {"axis": 1}, [(2, 0, 3), (7,), None])
    assert done and ins[0] == (2, 7, 3)
    ins, outs, done = infer_shapes("LayerNorm", {}, [None, None, None], [(4, 6), None, None])
    assert done and ins == [(4, 6), (6,), (6,)]
    ins, _, _ = infer_shapes("LayerNorm", {}, [(0, 6), None, None], [None, (3, 1), None])
    assert ins[0] == (3, 6)
    with pytest.raises(InferenceError, match=r"shape inconsistent for data: expected \(2, 5\), got \(2, 6\)"):
        infer_shapes("LayerNorm", {}, [(2, 6), (5,), None])
    with pytest.raises(InferenceError, match="axis=2 is out of range"):
        infer_shapes("LayerNorm", {"axis": 2}, [(2, 6), None, None])


def test_layer_norm_types_and_outputs():
    assert infer_types("LayerNorm", {}, [None, None, None], ["float64", None, None]) == (
        ["float64"] * 3,
        ["float64"] * 3,
    )
    with pytest.raises(InferenceError, match="float16, float32, float64"):
        infer_types("LayerNorm", {}, ["int32", None, None])
    op = mx.operator.get("LayerNorm")
    assert op.get_num_outputs(op.parse_attrs({})) == 3
    assert op.get_num_visible_outputs(op.parse_attrs({})) == 1
    assert op.get_num_visible_outputs(op.parse_attrs({"output_mean_var": True})) == 3
    sym = mx.sym.LayerNorm(mx.sym.var("data"), name="ln", output_mean_var=True)
    assert sym.list_arguments() == ["data", "ln_gamma", "ln_beta"]
    assert sym.list_outputs() == ["ln_output", "ln_mean", "ln_std"]


def test_layer_norm_parameter_errors():
    with pytest.raises(OperatorParamError, match="'eps'"):
        nd.LayerNorm(nd.ones((2, 3)), nd.ones(3), nd.zeros(3), eps=-1.0)
    with pytest.raises(OperatorParamError, match="'axis'"):
        nd.LayerNorm(nd.ones((2, 3)), nd.ones(3), nd.zeros(3), axis="last")
    with pytest.raises(OperatorParamError, match="unknown parameter"):
        nd.LayerNorm(nd.ones((2, 3)), nd.ones(3), nd.zeros(3), num_groups=2)


# ---------------------------------------------------------------------------- GroupNorm, InstanceNorm
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("groups", [1, 2, 4])
def test_group_norm_forward_matches_numpy(dtype, groups):
    rng = seeded_rng(groups)
    x = rng.uniform(-2, 2, (3, 4, 5, 2)).astype(dtype)
    gamma, beta = rng.uniform(0.5, 1.5, groups).astype(dtype), rng.uniform(-1, 1, groups).astype(dtype)
    out, mean, std = nd.GroupNorm(
        nd.array(x, dtype=x.dtype),
        nd.array(gamma, dtype=gamma.dtype),
        nd.array(beta, dtype=beta.dtype),
        num_groups=groups,
        eps=1e-4,
        output_mean_var=True,
    )
    ref = _group_norm_reference(x, gamma.astype(np.float64), beta.astype(np.float64), groups, 1e-4)
    rtol, atol = (1e-2, 2e-2) if dtype == "float16" else (1e-4, 1e-4)
    for got, want in zip((out, mean, std), ref, strict=True):
        assert_almost_equal(got.asnumpy(), want, rtol=rtol, atol=atol)


def test_group_norm_gradient():
    rng = seeded_rng(5)
    x = rng.uniform(-2, 2, (2, 4, 3))

    def fn(d, g, b):
        return nd.GroupNorm(d, g, b, num_groups=2, eps=1e-3)

    check_imperative_gradient(fn, [x, rng.uniform(0.5, 1.5, 2), rng.uniform(-1, 1, 2)])


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4), (2, 3, 2, 3)])
def test_instance_norm_forward_matches_numpy(shape):
    rng = seeded_rng(len(shape))
    x = rng.uniform(-2, 2, shape).astype(np.float32)
    gamma, beta = rng.uniform(0.5, 1.5, shape[1]), rng.uniform(-1, 1, shape[1])
    out = nd.InstanceNorm(nd.array(x, dtype=x.dtype), nd.array(gamma, dtype="float32"), nd.array(beta, dtype="float32"))
    # instance norm = group norm with one group per channel (and per-channel parameters)
    ref, _, _ = _group_norm_reference(x, gamma, beta, shape[1], 1e-3)
    assert_almost_equal(out.asnumpy(), ref, rtol=1e-4, atol=1e-4)


def test_instance_norm_gradient_and_hidden_variance():
    rng = seeded_rng(6)
    x = rng.uniform(-2, 2, (2, 3, 4))

    def fn(d, g, b):
        return nd.InstanceNorm(d, g, b, eps=0.01)

    check_imperative_gradient(fn, [x, rng.uniform(0.5, 1.5, 3), rng.uniform(-1, 1, 3)])
    op = mx.operator.get("InstanceNorm")
    attrs = op.parse_attrs({"eps": 0.01})
    assert op.list_output_names(attrs) == ["output", "mean", "var"]
    outputs = [np.zeros(x.shape), np.zeros((2, 3)), np.zeros((2, 3))]
    op.get_compute("cpu")(
        attrs,
        mx.operator.OpContext(False, mx.cpu()),
        [x, np.ones(3), np.zeros(3)],
        [mx.operator.WRITE] * 3,
        outputs,
    )
    assert_almost_equal(outputs[1], x.mean(axis=2))
    assert_almost_equal(outputs[2], x.var(axis=2), rtol=1e-10, atol=1e-12)


def test_grouped_norm_inference_and_errors():
    ins, outs, done = infer_shapes("GroupNorm", {"num_groups": 2}, [(3, 4, 5), None, None])
    assert done and ins[1:] == [(2,), (2,)] and outs == [(3, 4, 5), (3, 2), (3, 2)]
    ins, outs, done = infer_shapes("InstanceNorm", {}, [None, None, None], [(3, 4, 5), None, None])
    assert done and ins == [(3, 4, 5), (4,), (4,)] and outs[1:] == [(3, 4), (3, 4)]
    with pytest.raises(InferenceError, match="not divisible by num_groups=3"):
        infer_shapes("GroupNorm", {"num_groups": 3}, [(3, 4, 5), None, None])
    with pytest.raises(InferenceError, match="at least 3 dimensions"):
        infer_shapes("GroupNorm", {}, [(3, 4), None, None])
    with pytest.raises(OperatorParamError, match="'num_groups'"):
        nd.GroupNorm(nd.ones((2, 2, 2)), nd.ones(1), nd.zeros(1), num_groups=0)
    with pytest.raises(OperatorParamError, match="'eps'"):
        nd.InstanceNorm(nd.ones((2, 2, 2)), nd.ones(2), nd.zeros(2), eps="small")
    assert infer_types("GroupNorm", {}, ["float16", None, None])[1] == ["float16"] * 3


def test_stats_norms_honour_req():
    rng = seeded_rng(7)
    x = rng.uniform(-2, 2, (2, 4, 3)).astype(np.float32)
    check_req("LayerNorm", [x, rng.uniform(0.5, 1.5, 3).astype(np.float32), np.zeros(3, np.float32)])
    check_req("LayerNorm", [x, np.ones(4, np.float32), np.zeros(4, np.float32)], axis=1, output_mean_var=True)
    check_req("GroupNorm", [x, rng.uniform(0.5, 1.5, 2).astype(np.float32), np.zeros(2, np.float32)], num_groups=2)
    check_req("InstanceNorm", [x, rng.uniform(0.5, 1.5, 4).astype(np.float32), np.zeros(4, np.float32)])


# ---------------------------------------------------------------------------- L2Normalization
@pytest.mark.parametrize("mode", ["instance", "channel", "spatial"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_l2_normalization_matches_numpy(mode, dtype):
    rng = seeded_rng(8)
    x = rng.uniform(-2, 2, (3, 4, 2, 3)).astype(dtype)
    axes = {"instance": (1, 2, 3), "channel": (1,), "spatial": (2, 3)}[mode]
    norm = np.sqrt((x.astype(np.float64) ** 2).sum(axis=axes, keepdims=True) + 1e-10)
    out = nd.L2Normalization(nd.array(x, dtype=x.dtype), mode=mode)
    rtol, atol = (1e-2, 1e-2) if dtype == "float16" else (1e-5, 1e-6)
    assert_almost_equal(out.asnumpy(), x / norm, rtol=rtol, atol=atol)
    _, outs, _ = infer_shapes("L2Normalization", {"mode": mode}, [x.shape])
    assert outs[1] == np.squeeze(norm, axis=axes).shape


@pytest.mark.parametrize("mode", ["instance", "channel", "spatial"])
def test_l2_normalization_gradient_and_req(mode):
    rng = seeded_rng(9)
    x = rng.uniform(-2, 2, (2, 3, 4))
    check_imperative_gradient(lambda d: nd.L2Normalization(d, mode=mode, eps=1e-3), [x])
    check_req("L2Normalization", [x.astype(np.float32)], mode=mode)


def test_l2_normalization_errors():
    with pytest.raises(OperatorParamError, match="'mode'"):
        nd.L2Normalization(nd.ones((2, 3)), mode="row")
    with pytest.raises(InferenceError, match="mode='spatial' needs data with at least 3 dimensions"):
        infer_shapes("L2Normalization", {"mode": "spatial"}, [(2, 3)])
    ins, outs, done = infer_shapes("L2Normalization", {}, [None], [(2, 3), None])
    assert done and ins == [(2, 3)] and outs[1] == (2,)


# ---------------------------------------------------------------------------- v1 layers
def _v1_batch_norm(x, gamma, beta, is_train, **params):
    sym = mx.sym.BatchNorm_v1(mx.sym.var("data"), name="bn", **params)
    args = {
        "data": nd.array(x, dtype=x.dtype),
        "bn_gamma": nd.array(gamma, dtype=gamma.dtype),
        "bn_beta": nd.array(beta, dtype=beta.dtype),
    }
    aux = {"bn_moving_mean": nd.zeros(x.shape[1]), "bn_moving_var": nd.ones(x.shape[1])}
    ex = sym.bind(mx.cpu(), args, args_grad={k: nd.zeros_like(v) for k, v in args.items()}, aux_states=aux)
    return ex, ex.forward(is_train=is_train), aux


def test_batch_norm_v1_matches_batch_norm_and_outputs_the_variance():
    rng = seeded_rng(10)
    x = rng.uniform(-2, 2, (4, 3, 2, 2)).astype(np.float32)
    gamma, beta = rng.uniform(0.5, 1.5, 3).astype(np.float32), rng.uniform(-1, 1, 3).astype(np.float32)
    ex, (out, mean, var), aux = _v1_batch_norm(x, gamma, beta, True, fix_gamma=False, output_mean_var=True)
    xhat = (x - x.mean(axis=(0, 2, 3), keepdims=True)) / np.sqrt(x.var(axis=(0, 2, 3), keepdims=True) + 1e-3)
    assert_almost_equal(out.asnumpy(), xhat * gamma.reshape(1, 3, 1, 1) + beta.reshape(1, 3, 1, 1), atol=1e-4)
    assert_almost_equal(mean.asnumpy(), x.mean(axis=(0, 2, 3)), atol=1e-5)
    assert_almost_equal(var.asnumpy(), x.var(axis=(0, 2, 3)), atol=1e-4)
    assert_almost_equal(aux["bn_moving_mean"].asnumpy(), 0.1 * x.mean(axis=(0, 2, 3)), atol=1e-5)
    ex.backward([nd.ones(x.shape), nd.zeros(3), nd.zeros(3)])
    assert_almost_equal(ex.grad_dict["bn_beta"].asnumpy(), np.full(3, 16.0))


def test_batch_norm_v1_gradient_and_req():
    rng = seeded_rng(11)
    x = rng.uniform(-2, 2, (3, 2, 2))

    def fn(d, g, b):
        with mx.autograd.train_mode():
            mm, mv = nd.zeros(2, dtype="float64"), nd.ones(2, dtype="float64")
            return nd.BatchNorm_v1(d, g, b, mm, mv, fix_gamma=False)

    check_imperative_gradient(fn, [x, rng.uniform(0.5, 1.5, 2), rng.uniform(-1, 1, 2)])
    params = [np.ones(2, np.float32), np.zeros(2, np.float32), np.zeros(2, np.float32), np.ones(2, np.float32)]
    check_req("BatchNorm_v1", [x.astype(np.float32), *params], is_train=False, fix_gamma=False)
    check_req("BatchNorm_v1", [x.astype(np.float32), *params], use_global_stats=True)


def test_batch_norm_v1_parameter_set_is_the_v1_one():
    with pytest.raises(OperatorParamError, match="unknown parameter.*'axis'"):
        mx.sym.BatchNorm_v1(mx.sym.var("data"), axis=2)
    op = mx.operator.get("BatchNorm_v1")
    assert list(op.params.fields) == ["eps", "momentum", "fix_gamma", "use_global_stats", "output_mean_var"]
    assert op.list_output_names(op.parse_attrs({})) == ["output", "mean", "var"]
    ins, _, _ = infer_shapes("BatchNorm_v1", {}, [(2, 3, 4), None, None, None, None])
    assert ins[1:] == [(3,)] * 4
    assert infer_types("BatchNorm_v1", {}, ["float16", None, None, None, None])[0][1:] == ["float32"] * 4


def test_convolution_v1_matches_convolution():
    rng = seeded_rng(12)
    x = rng.uniform(-1, 1, (2, 3, 6, 5))
    w, b = rng.uniform(-1, 1, (4, 3, 3, 3)), rng.uniform(-1, 1, 4)
    kw = {"kernel": (3, 3), "num_filter": 4, "pad": (1, 1), "stride": (2, 1)}
    got = nd.Convolution_v1(
        nd.array(x, dtype=x.dtype), nd.array(w, dtype=w.dtype), nd.array(b, dtype=b.dtype), **kw
    ).asnumpy()
    want = nd.Convolution(
        nd.array(x, dtype=x.dtype), nd.array(w, dtype=w.dtype), nd.array(b, dtype=b.dtype), **kw
    ).asnumpy()
    assert_almost_equal(got, want, rtol=1e-12, atol=1e-12)
    small = {"kernel": (2, 2), "num_filter": 2, "no_bias": True}
    check_imperative_gradient(
        lambda d, k: nd.Convolution_v1(d, k, **small), [x[:1, :2, :3, :3], rng.uniform(-1, 1, (2, 2, 2, 2))]
    )
    check_req("Convolution_v1", [x.astype(np.float32), w.astype(np.float32), b.astype(np.float32)], **kw)
    ins, outs, done = infer_shapes("Convolution_v1", kw, [(2, 3, 6, 5), None, None])
    assert done and ins[1:] == [(4, 3, 3, 3), (4,)] and outs == [(2, 4, 3, 5)]
    with pytest.raises(OperatorParamError, match="2-D and 3-D kernels only"):
        infer_shapes("Convolution_v1", {"kernel": (3,), "num_filter": 2}, [(2, 3, 6), None, None])
    with pytest.raises(OperatorParamError, match="'num_filter'"):
        mx.sym.Convolution_v1(mx.sym.var("data"), kernel=(3, 3))
    with pytest.raises(OperatorParamError, match="Convolution_v1: parameter 'num_group'"):
        mx.sym.Convolution_v1(mx.sym.var("data"), kernel=(3, 3), num_filter=2, num_group=0)
    assert "dilate" in mx.operator.get("Convolution_v1").params.fields


@pytest.mark.parametrize(
    "kw",
    [
        {"kernel": (3, 3), "pool_type": "avg", "pad": (1, 1), "stride": (2, 2)},
        {"kernel": (2, 2), "pool_type": "max", "pooling_convention": "full", "stride": (2, 2)},
        {"kernel": (2, 2), "pool_type": "sum"},
        {"global_pool": True, "pool_type": "avg"},
    ],
)
def test_pooling_v1_matches_pooling(kw):
    rng = seeded_rng(13)
    x = rng.uniform(-1, 1, (2, 3, 5, 5))
    got = nd.Pooling_v1(nd.array(x, dtype=x.dtype), **kw).asnumpy()
    assert_almost_equal(got, nd.Pooling(nd.array(x, dtype=x.dtype), **kw).asnumpy(), rtol=1e-12, atol=1e-12)
    check_imperative_gradient(lambda d: nd.Pooling_v1(d, **kw), [x[:1, :2]])
    check_req("Pooling_v1", [x.astype(np.float32)], **kw)


def test_pooling_v1_parameter_set_and_rank():
    with pytest.raises(OperatorParamError, match="'pool_type'"):
        nd.Pooling_v1(nd.ones((1, 1, 4, 4)), kernel=(2, 2), pool_type="lp")
    with pytest.raises(OperatorParamError, match="unknown parameter.*'p_value'"):
        nd.Pooling_v1(nd.ones((1, 1, 4, 4)), kernel=(2, 2), p_value=2)
    with pytest.raises(InferenceError, match="4-D or 5-D"):
        infer_shapes("Pooling_v1", {"kernel": (2, 2)}, [(2, 3, 6)])
    _, outs, _ = infer_shapes("Pooling_v1", {"kernel": (2, 2), "stride": (2, 2)}, [(2, 3, 6, 6)])
    assert outs == [(2, 3, 3, 3)]
    assert infer_types("Pooling_v1", {"kernel": (2, 2)}, ["float64"]) == (["float64"], ["float64"])
