"""Convolution and Deconvolution: forward against independent NumPy references, gradients
against finite differences, req handling, shape inference both ways, and clear errors.

The references compute the definitions directly (a strided window view contracted with
``einsum`` for convolution; one scatter per kernel position for the transposed
convolution), not the im2col/GEMM/col2im path the operators use. They were checked against
MXNet 1.9.1 (float64, native CPU path, and float32 MKL-DNN path) on 1-D/2-D/3-D cases with
stride, padding, dilation, groups, ``adj`` and ``target_shape``: all agree to 1e-15,
except that MXNet's *native* float64 Deconvolution forward is wrong whenever ``dilate > 1``
(its gradients and its MKL-DNN float32 forward agree with the definition and with MXLab).
The ``MXNET_*`` constants below are MXNet 1.9.1 outputs, baked in so these tests need no
MXNet.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from op_helpers import infer_shapes

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.operator import get as get_op
from framework.operator.nn import conv_gemm
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req, rand_shape_nd

RNG = np.random.default_rng(20240601)
# convolutions are linear in each input: central differences are exact up to rounding
EXACT = dict(rtol=1e-6, atol=1e-8)


# ----------------------------------------------------------------------------- references
def ref_conv(x, w, b, stride, pad, dilate, groups):
    """Direct convolution: windows of the padded input contracted with the weight per group."""
    nd = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    extent = [dilate[i] * (w.shape[2 + i] - 1) + 1 for i in range(nd)]
    win = np.lib.stride_tricks.sliding_window_view(xp, extent, axis=tuple(range(2, 2 + nd)))
    win = win[
        (slice(None), slice(None), *(slice(None, None, s) for s in stride), *(slice(None, None, d) for d in dilate))
    ]
    c, f = x.shape[1], w.shape[0]
    sp, kk = "dhw"[-nd:], "uvz"[-nd:]
    outs = [
        np.einsum(
            f"nc{sp}{kk},fc{kk}->nf{sp}",
            win[:, g * c // groups : (g + 1) * c // groups],
            w[g * f // groups : (g + 1) * f // groups],
        )
        for g in range(groups)
    ]
    y = np.concatenate(outs, axis=1)
    return y if b is None else y + b.reshape((1, -1) + (1,) * nd)


def ref_deconv(x, w, b, stride, pad, dilate, adj, groups):
    """Direct transposed convolution: every input value adds weight * value to a patch."""
    nd = x.ndim - 2
    n, cin, sin = x.shape[0], x.shape[1], x.shape[2:]
    fg = w.shape[1]
    full = [stride[i] * (sin[i] - 1) + dilate[i] * (w.shape[2 + i] - 1) + 1 + adj[i] for i in range(nd)]
    out = np.zeros((n, fg * groups, *full))
    for kpos in itertools.product(*(range(k) for k in w.shape[2:])):
        index = tuple(
            slice(kpos[i] * dilate[i], kpos[i] * dilate[i] + stride[i] * (sin[i] - 1) + 1, stride[i]) for i in range(nd)
        )
        for g in range(groups):
            rows = slice(g * cin // groups, (g + 1) * cin // groups)
            contribution = np.einsum("nc...,cf->nf...", x[:, rows], w[rows][(slice(None), slice(None), *kpos)])
            out[(slice(None), slice(g * fg, (g + 1) * fg), *index)] += contribution
    out = out[(slice(None), slice(None), *(slice(pad[i], full[i] - pad[i]) for i in range(nd)))]
    return out if b is None else out + b.reshape((1, -1) + (1,) * nd)


def deconv_pad_adj(sin, kernel, stride, dilate, target):
    """MXNet's padding and adj for a target shape."""
    pad, adj = [], []
    for i in range(len(kernel)):
        total = stride[i] * (sin[i] - 1) + dilate[i] * (kernel[i] - 1) + 1 - target[i]
        adj.append(total % 2)
        pad.append((total + 1) // 2)
    return pad, adj


def nd_(a, dtype=None):
    return mx.nd.array(a, dtype=dtype or a.dtype)


# ----------------------------------------------------------------------------- forward
CONV_CASES = [
    # (data shape, num_filter, kernel, stride, pad, dilate, groups, no_bias)
    ((2, 3, 9), 4, (3,), (1,), (0,), (1,), 1, False),
    ((3, 6, 11), 4, (3,), (2,), (1,), (2,), 2, False),
    ((2, 4, 7, 7), 6, (3, 3), (1, 1), (0, 0), (1, 1), 1, False),
    ((2, 4, 9, 8), 6, (3, 2), (2, 1), (1, 2), (2, 1), 2, False),
    ((2, 4, 6, 6), 4, (3, 3), (1, 1), (1, 1), (1, 1), 4, True),  # depthwise
    ((2, 3, 8, 8), 2, (3, 3), (3, 3), (2, 2), (1, 1), 1, False),  # stride > kernel - pad
    ((2, 2, 5, 6, 7), 4, (2, 3, 2), (1, 2, 1), (1, 0, 1), (1, 1, 2), 2, False),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"{len(c[2])}d-s{c[3]}-p{c[4]}-d{c[5]}-g{c[6]}")
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_convolution_forward_matches_reference(case, dtype):
    shape, f, kernel, stride, pad, dilate, groups, no_bias = case
    x = RNG.standard_normal(shape)
    w = RNG.standard_normal((f, shape[1] // groups, *kernel)) * 0.5
    b = None if no_bias else RNG.standard_normal(f)
    arrays = [x, w] + ([] if no_bias else [b])
    y = mx.nd.Convolution(
        *[nd_(a.astype(dtype)) for a in arrays],
        kernel=kernel,
        stride=stride,
        pad=pad,
        dilate=dilate,
        num_filter=f,
        num_group=groups,
        no_bias=no_bias,
    )
    expected = ref_conv(
        *[a.astype(dtype).astype(np.float64) for a in (x, w)],
        None if no_bias else b.astype(dtype).astype(np.float64),
        stride,
        pad,
        dilate,
        groups,
    )
    assert y.dtype == np.dtype(dtype)
    assert_almost_equal(y, expected.astype(dtype))


@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_convolution_random_shapes_default_params(ndim):
    for _ in range(3):
        n, c = rand_shape_nd(2, 3, rng=RNG)
        kernel = rand_shape_nd(ndim, 3, rng=RNG)
        spatial = tuple(k + int(RNG.integers(0, 4)) for k in kernel)
        x = RNG.standard_normal((n, c, *spatial)).astype(np.float32)
        w = RNG.standard_normal((2, c, *kernel)).astype(np.float32)
        b = RNG.standard_normal(2).astype(np.float32)
        y = mx.nd.Convolution(nd_(x), nd_(w), nd_(b), kernel=kernel, num_filter=2)
        ones = (1,) * ndim
        assert_almost_equal(y, ref_conv(x, w, b, ones, (0,) * ndim, ones, 1))


# MXNet 1.9.1, float64: x = (arange(100) % 7 - 3).reshape(1, 4, 5, 5) / 4,
# w = (arange(36) % 5 - 2).reshape(2, 2, 3, 3) / 3, b = [0.5, -0.25], out_grad = ones;
# kernel (3, 3), num_filter 2, num_group 2, stride (2, 1), pad (1, 1), dilate (1, 2).
MXNET_CONV_Y = [
    [
        [[-1 / 3, -1 / 3, -1 / 3], [-0.5833333333, 1.0, 0.1666666667], [0.5, 1.3333333333, 1.25]],
        [[-0.1666666667, 1.6666666667, -0.25], [-2 / 3, -1.25, -1.25], [-1.1666666667, -0.9166666667, 0.0833333333]],
    ]
]
MXNET_CONV_DW = [
    [
        [[0.5, -0.5, 0.0], [-1.0, -0.75, 0.0], [0.5, -0.5, 0.0]],
        [[1.0, 0.25, 0.5], [-0.25, 1.25, -1.0], [1.0, 0.25, 0.5]],
    ],
    [
        [[-0.25, -0.75, 1.0], [-1.25, -0.25, -0.25], [-0.25, -0.75, 1.0]],
        [[0.25, 0.0, -0.25], [1.25, 0.0, -1.25], [0.25, 0.0, -0.25]],
    ],
]
MXNET_CONV_DX_SUM = [[-2 / 3, 0.0, 2 / 3, 1.0, 1 / 3], [1 / 3, 0.0, -1 / 3, -4 / 3, -1.0]] * 2 + [
    [-2 / 3, 0.0, 2 / 3, 1.0, 1 / 3]
]


def test_convolution_matches_mxnet_outputs():
    x = nd_((np.arange(100) % 7 - 3).reshape(1, 4, 5, 5) / 4)
    w = nd_((np.arange(36) % 5 - 2).reshape(2, 2, 3, 3) / 3)
    b = nd_(np.array([0.5, -0.25]))
    for a in (x, w, b):
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Convolution(
            x, w, b, kernel=(3, 3), num_filter=2, num_group=2, stride=(2, 1), pad=(1, 1), dilate=(1, 2)
        )
    y.backward()
    assert_almost_equal(y, np.array(MXNET_CONV_Y), atol=1e-9)
    assert_almost_equal(w.grad, np.array(MXNET_CONV_DW), atol=1e-9)
    assert_almost_equal(x.grad.asnumpy().sum(axis=(0, 1)), np.array(MXNET_CONV_DX_SUM), atol=1e-9)
    assert_almost_equal(b.grad, np.array([9.0, 9.0]))


DECONV_CASES = [
    # (data shape, num_filter, kernel, stride, pad, dilate, adj, target_shape, groups, no_bias)
    ((2, 4, 7), 3, (3,), (3,), (0,), (2,), (2,), (), 1, True),
    ((2, 4, 5, 5), 3, (3, 3), (1, 1), (0, 0), (1, 1), (0, 0), (), 1, True),
    ((2, 4, 5, 6), 6, (3, 4), (2, 2), (1, 1), (1, 1), (1, 1), (), 2, False),
    ((2, 4, 5, 5), 3, (3, 3), (2, 2), (0, 0), (1, 1), (0, 0), (9, 8), 1, False),
    ((2, 3, 4, 4), 2, (3, 3), (2, 2), (2, 2), (2, 1), (0, 0), (), 1, True),
    ((1, 2, 3, 4, 3), 2, (2, 2, 2), (2, 2, 2), (0, 1, 0), (1, 1, 1), (1, 0, 0), (), 1, False),
]


@pytest.mark.parametrize(
    "case", DECONV_CASES, ids=lambda c: f"{len(c[2])}d-s{c[3]}-p{c[4]}-d{c[5]}-a{c[6]}-t{c[7]}-g{c[8]}"
)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_deconvolution_forward_matches_reference(case, dtype):
    shape, f, kernel, stride, pad, dilate, adj, target, groups, no_bias = case
    x = RNG.standard_normal(shape)
    w = RNG.standard_normal((shape[1], f // groups, *kernel)) * 0.5
    b = None if no_bias else RNG.standard_normal(f)
    params = dict(
        kernel=kernel,
        stride=stride,
        pad=pad,
        dilate=dilate,
        adj=adj,
        num_filter=f,
        num_group=groups,
        no_bias=no_bias,
        target_shape=target,
    )
    arrays = [x, w] + ([] if no_bias else [b])
    y = mx.nd.Deconvolution(*[nd_(a.astype(dtype)) for a in arrays], **params)
    if target:
        pad, adj = deconv_pad_adj(shape[2:], kernel, stride, dilate, target)
    expected = ref_deconv(
        *[a.astype(dtype).astype(np.float64) for a in (x, w)],
        None if no_bias else b.astype(dtype).astype(np.float64),
        stride,
        pad,
        dilate,
        adj,
        groups,
    )
    if target:
        assert y.shape[2:] == target
    assert_almost_equal(y, expected.astype(dtype))


# MXNet 1.9.1, float64: x = (arange(18) % 5 - 2).reshape(1, 2, 3, 3) / 2,
# w = (arange(18) % 4 - 1.5).reshape(2, 1, 3, 3); kernel (3, 3), num_filter 1, stride (2, 2),
# target_shape (6, 6) (so pad 1 and adj 1), out_grad = ones.
MXNET_DECONV_Y = [
    [
        [
            [1.0, 1.75, 1.25, 0.5, 0.25, -0.25],
            [-3.25, -2.25, 0.5, 2.75, 1.75, 1.25],
            [-0.75, 0.5, -1.75, -3.25, 1.0, 1.0],
            [0.5, -1.0, 0.5, -2.25, -3.25, 1.25],
            [1.25, 0.5, 0.25, 0.5, -0.75, -0.25],
            [0.75, 0.5, 0.75, 0.5, 0.75, -0.75],
        ]
    ]
]
MXNET_DECONV_DW = [
    [[[0.5, 0.5, 0.5], [0.0, -1.0, -1.0], [0.0, -1.0, -1.0]]],
    [[[1.0, 0.0, 0.0], [-0.5, -0.5, -0.5], [-0.5, -0.5, -0.5]]],
]


def test_deconvolution_matches_mxnet_outputs():
    x = nd_((np.arange(18) % 5 - 2).reshape(1, 2, 3, 3) / 2)
    w = nd_((np.arange(18) % 4 - 1.5).reshape(2, 1, 3, 3))
    w.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Deconvolution(x, w, kernel=(3, 3), num_filter=1, stride=(2, 2), target_shape=(6, 6))
    y.backward()
    assert_almost_equal(y, np.array(MXNET_DECONV_Y), atol=1e-9)
    assert_almost_equal(w.grad, np.array(MXNET_DECONV_DW), atol=1e-9)


def test_deconvolution_is_the_data_gradient_of_convolution():
    x = RNG.standard_normal((2, 4, 9, 8))
    w = RNG.standard_normal((6, 2, 3, 3))
    params = dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), dilate=(1, 2), num_group=2)
    xa = nd_(x)
    xa.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Convolution(xa, nd_(w), num_filter=6, no_bias=True, **params)
    dy = RNG.standard_normal(y.shape)
    y.backward(nd_(dy))
    # the deconvolution of dy with the same weight, sized back to x: adj makes up the floor
    adj = (0, 1)
    z = mx.nd.Deconvolution(nd_(dy), nd_(w), num_filter=4, adj=adj, **params)
    assert z.shape == x.shape
    assert_almost_equal(z, xa.grad)


# ----------------------------------------------------------------------------- gradients
@pytest.mark.parametrize(
    "shape, f, params",
    [
        ((2, 4, 7), 4, dict(kernel=(3,), stride=(2,), pad=(1,), dilate=(2,), num_group=2)),
        ((2, 2, 5, 6), 3, dict(kernel=(3, 2), stride=(2, 1), pad=(1, 1), dilate=(1, 2))),
        ((1, 2, 3, 4, 3), 2, dict(kernel=(2, 2, 2), pad=(1, 0, 1), stride=(1, 2, 1))),
    ],
)
def test_convolution_gradient(shape, f, params):
    groups = params.get("num_group", 1)
    x = RNG.standard_normal(shape)
    w = RNG.standard_normal((f, shape[1] // groups, *params["kernel"]))
    b = RNG.standard_normal(f)
    check_imperative_gradient(lambda x, w, b: mx.nd.Convolution(x, w, b, num_filter=f, **params), [x, w, b], **EXACT)
    check_imperative_gradient(
        lambda x, w: mx.nd.Convolution(x, w, num_filter=f, no_bias=True, **params), [x, w], **EXACT
    )


@pytest.mark.parametrize(
    "shape, f, params",
    [
        ((2, 2, 4), 4, dict(kernel=(3,), stride=(3,), dilate=(2,), adj=(2,), num_group=2)),
        ((2, 2, 3, 3), 2, dict(kernel=(3, 2), stride=(2, 2), pad=(1, 0), adj=(1, 0))),
        ((1, 2, 3, 3), 2, dict(kernel=(3, 3), stride=(2, 2), target_shape=(6, 5))),
    ],
)
def test_deconvolution_gradient(shape, f, params):
    groups = params.get("num_group", 1)
    x = RNG.standard_normal(shape)
    w = RNG.standard_normal((shape[1], f // groups, *params["kernel"]))
    b = RNG.standard_normal(f)
    check_imperative_gradient(
        lambda x, w, b: mx.nd.Deconvolution(x, w, b, num_filter=f, no_bias=False, **params), [x, w, b], **EXACT
    )
    check_imperative_gradient(lambda x, w: mx.nd.Deconvolution(x, w, num_filter=f, **params), [x, w], **EXACT)


def test_gradient_requests_write_add_null():
    x = RNG.standard_normal((2, 4, 6, 5)).astype(np.float32)
    w = RNG.standard_normal((6, 2, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(6).astype(np.float32)
    common = dict(kernel=(3, 3), stride=(2, 1), pad=(1, 1), num_group=2)
    check_req("Convolution", [x, w, b], num_filter=6, **common)
    check_req("Convolution", [x, w], num_filter=6, no_bias=True, dilate=(1, 2), **common)
    wd = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    check_req("Deconvolution", [x, wd, b], num_filter=6, no_bias=False, adj=(1, 0), **common)
    check_req("Deconvolution", [x, wd], num_filter=6, target_shape=(12, 7), **common)


def test_autograd_grad_req_add_accumulates():
    x = nd_(RNG.standard_normal((1, 2, 5, 5)))
    w = nd_(RNG.standard_normal((3, 2, 3, 3)))
    w.attach_grad(grad_req="add")
    for _ in range(2):
        with mx.autograd.record():
            y = mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=3, no_bias=True)
        y.backward()
    once = np.lib.stride_tricks.sliding_window_view(x.asnumpy(), (3, 3), axis=(2, 3)).sum(axis=(0, 2, 3))
    assert_almost_equal(w.grad, np.broadcast_to(2 * once, (3, 2, 3, 3)))


# ----------------------------------------------------------------------------- shape inference
def test_convolution_infers_weight_bias_and_output():
    ins, outs, done = infer_shapes(
        "Convolution",
        {"kernel": (5, 4), "num_filter": 21, "num_group": 3, "stride": (2, 1), "pad": (1, 0), "dilate": (1, 2)},
        [(8, 6, 28, 27), None, None],
    )
    assert done and ins[1] == (21, 2, 5, 4) and ins[2] == (21,)
    assert outs[0] == (8, 21, (28 + 2 - 5) // 2 + 1, 27 - 7 + 1)
    ins, outs, done = infer_shapes(
        "Convolution", {"kernel": (3,), "num_filter": 5, "no_bias": True}, [(4, 3, 10), None]
    )
    assert done and ins[1] == (5, 3, 3) and outs[0] == (4, 5, 8)


def test_convolution_infers_data_backwards():
    # channels from the weight, batch from the output, spatial from the output (stride 1 only)
    ins, outs, done = infer_shapes(
        "Convolution",
        {"kernel": (5, 5), "num_filter": 20, "pad": (1, 0)},
        [None, (20, 3, 5, 5), None],
        [(8, 20, 24, 0)],
    )
    assert not done and ins[0] == (8, 3, 26, 0) and outs[0] == (8, 20, 24, 0)
    ins, outs, done = infer_shapes(
        "Convolution", {"kernel": (5, 5), "num_filter": 50}, [(0, 0, 12, 12), (50, 20, 5, 5), None], [(64, 50, 8, 8)]
    )
    assert done and ins[0] == (64, 20, 12, 12)
    # with stride 2 the input size is ambiguous and stays unknown
    ins, _, done = infer_shapes(
        "Convolution", {"kernel": (3, 3), "num_filter": 4, "stride": (2, 2)}, [None, None, None], [(2, 4, 5, 5)]
    )
    assert not done and ins[0] == (2, 0, 0, 0) and ins[1] == (4, 0, 3, 3)


def test_deconvolution_infers_shapes():
    ins, outs, done = infer_shapes(
        "Deconvolution",
        {
            "kernel": (3, 4),
            "num_filter": 6,
            "num_group": 2,
            "stride": (2, 2),
            "pad": (1, 1),
            "adj": (1, 1),
            "no_bias": False,
        },
        [(2, 4, 5, 6), None, None],
    )
    assert done and ins[1] == (4, 3, 3, 4) and ins[2] == (6,) and outs[0] == (2, 6, 10, 13)
    ins, outs, done = infer_shapes(
        "Deconvolution",
        {"kernel": (3, 3), "num_filter": 3, "stride": (2, 2), "target_shape": (10, 9)},
        [(2, 4, 5, 5), None],
    )
    assert done and outs[0] == (2, 3, 10, 9)
    ins, outs, done = infer_shapes(
        "Deconvolution", {"kernel": (3, 3), "num_filter": 3}, [None, (4, 3, 3, 3)], [(2, 3, 9, 9)]
    )
    assert done and ins[0] == (2, 4, 7, 7)


def test_backward_operators_infer_gradient_shapes():
    _, outs, done = infer_shapes(
        "_backward_Convolution",
        {"kernel": (3, 3), "num_filter": 6},
        [(2, 6, 5, 5), (2, 4, 7, 7), (6, 4, 3, 3)],
        [None, None, None],
    )
    assert done and outs == [(2, 4, 7, 7), (6, 4, 3, 3), (6,)]


def test_types_must_agree_and_be_floating_point():
    op = get_op("Convolution")
    attrs = op.parse_attrs(dict(kernel=(3, 3), num_filter=2))
    types = [None, "float16", None]
    outs = [None]
    assert op.run_infer_type(attrs, types, outs) and types == ["float16"] * 3 and outs == ["float16"]
    with pytest.raises(InferenceError, match="Convolution.*type inconsistent"):
        op.run_infer_type(attrs, ["float32", "float64", None], [None])
    with pytest.raises(InferenceError, match="Convolution.*float16, float32, float64 only, got int32"):
        op.run_infer_type(attrs, ["int32", None, None], [None])


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "shapes, params, error, match",
    [
        (
            [(2, 4, 7, 7), None, None],
            dict(kernel=(3,), num_filter=2),
            InferenceError,
            r"Convolution: data should be 3-D",
        ),
        (
            [(2, 4, 7, 7), None, None],
            dict(kernel=(3, 3), num_filter=5, num_group=2),
            InferenceError,
            r"num_filter \(5\) must be divisible by num_group \(2\)",
        ),
        (
            [(2, 5, 7, 7), None, None],
            dict(kernel=(3, 3), num_filter=4, num_group=2),
            InferenceError,
            r"5 channels, not divisible by num_group \(2\)",
        ),
        (
            [(2, 4, 7, 7), None, None],
            dict(kernel=(3, 3), num_filter=4, dilate=(4, 4)),
            InferenceError,
            r"Convolution: kernel size exceeds input: dilated kernel 9 > input 7",
        ),
        (
            [(2, 4, 7, 7), (6, 4, 9, 9), None],
            dict(kernel=(3, 3), num_filter=6),
            InferenceError,
            r"Convolution: shape inconsistent for weight",
        ),
        (
            [(2, 4, 7, 7), None, (7,)],
            dict(kernel=(3, 3), num_filter=6),
            InferenceError,
            r"Convolution: shape inconsistent for bias",
        ),
        (
            [(2, 4, 7, 7), None, None],
            dict(kernel=(3, 3), num_filter=6, stride=(2,)),
            OperatorParamError,
            r"Convolution: stride must have the same number of dimensions as kernel",
        ),
        (
            [(2, 4, 7, 7), None, None],
            dict(kernel=(3, 3), num_filter=6, stride=(0, 1)),
            OperatorParamError,
            r"Convolution: stride must be >= 1",
        ),
        (
            [(2, 4, 7, 7), None, None],
            dict(kernel=(3, 3), num_filter=6, layout="NHWC"),
            OperatorParamError,
            r"Convolution: layout 'NHWC' is not supported.*NCHW",
        ),
        ([(2, 4, 7)], dict(kernel=(3,), num_filter=6, layout="NCHW"), OperatorParamError, r"layout 'NCHW'"),
        (
            [(2, 4, 7, 7, 7, 7), None, None],
            dict(kernel=(3, 3, 3, 3), num_filter=2),
            OperatorParamError,
            r"kernel must have 1, 2 or 3 dimensions",
        ),
    ],
)
def test_convolution_bad_inputs(shapes, params, error, match):
    op = get_op("Convolution")
    with pytest.raises(error, match=match):
        attrs = op.parse_attrs(params)
        shapes = shapes + [None] * (op.get_num_inputs(attrs) - len(shapes))
        op.run_infer_shape(attrs, shapes, [None])


def test_convolution_parameter_errors_name_operator_and_parameter():
    x, w = mx.nd.ones((1, 1, 5, 5)), mx.nd.ones((1, 1, 3, 3))
    with pytest.raises(OperatorParamError, match="Convolution: parameter 'num_filter'"):
        mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=0, no_bias=True)
    with pytest.raises(OperatorParamError, match="Convolution: required parameter 'kernel'"):
        mx.nd.Convolution(x, w, num_filter=1, no_bias=True)
    with pytest.raises(OperatorParamError, match="cudnn_tune"):
        mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=1, no_bias=True, cudnn_tune="slowest")
    # accepted for compatibility, no effect
    y = mx.nd.Convolution(
        x,
        w,
        kernel=(3, 3),
        num_filter=1,
        no_bias=True,
        cudnn_tune="fastest",
        cudnn_off=True,
        workspace=16,
        layout="NCHW",
    )
    assert_almost_equal(y, np.full((1, 1, 3, 3), 9.0, np.float32))


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(adj=(2, 2), stride=(2, 2)), r"Deconvolution: adj must be smaller than stride"),
        (dict(adj=(1, 1)), r"adj must be smaller than stride"),
        (dict(stride=(2, 2), target_shape=(16, 16)), r"Deconvolution: target_shape \(16, 16\) is too big"),
        (dict(target_shape=(8, 8)), r"adj must be smaller than stride.*derived from target_shape"),
        (dict(stride=(2, 2), target_shape=(14,)), r"target_shape must have the same number of dimensions"),
        (dict(stride=(2, 2), pad=(9, 9)), r"Deconvolution: output size along spatial axis 0 would be -3"),
    ],
)
def test_deconvolution_bad_parameters(params, match):
    op = get_op("Deconvolution")
    attrs = op.parse_attrs(dict(kernel=(3, 3), num_filter=3, **params))
    with pytest.raises((InferenceError, OperatorParamError), match=match):
        op.run_infer_shape(attrs, [(2, 4, 7, 7), None], [None])


def test_deconvolution_defaults_match_mxnet():
    params = get_op("Deconvolution").parse_attrs(dict(kernel=(2, 2), num_filter=1)).parsed
    assert params.no_bias is True and params.workspace == 512
    params = get_op("Convolution").parse_attrs(dict(kernel=(2, 2), num_filter=1)).parsed
    assert params.no_bias is False and params.workspace == 1024 and params.num_group == 1
    assert get_op("Deconvolution").list_input_names(
        get_op("Deconvolution").parse_attrs(dict(kernel=(2, 2), num_filter=1, no_bias=False))
    ) == ["data", "weight", "bias"]


@pytest.mark.parametrize("name", ["Convolution", "Deconvolution"])
def test_small_workspace_processes_the_batch_in_chunks_with_equal_results(name):
    # workspace=0 MB forces one sample per chunk: every output and gradient must be unchanged
    x = RNG.standard_normal((5, 4, 6, 7))
    w = RNG.standard_normal((6, 2, 3, 3) if name == "Convolution" else (4, 3, 3, 3))
    b = RNG.standard_normal(6)
    params = dict(kernel=(3, 3), stride=(2, 1), pad=(1, 1), num_filter=6, num_group=2, no_bias=False)
    results = []
    for workspace in (1024, 0):
        arrays = [nd_(a) for a in (x, w, b)]
        for a in arrays:
            a.attach_grad()
        with mx.autograd.record():
            y = getattr(mx.nd, name)(*arrays, workspace=workspace, **params)
        y.backward(nd_(np.linspace(-1, 1, y.size).reshape(y.shape)))
        results.append([y.asnumpy()] + [a.grad.asnumpy() for a in arrays])
    for big, small in zip(*results, strict=True):
        assert_almost_equal(small, big)
    check_req(name, [a.astype(np.float32) for a in (x, w, b)], workspace=0, **params)


# ----------------------------------------------------------------------------- layouts and chunks
LAYOUT_CASES = [
    # (data shape, num_filter, parameters): padding, stride, dilation, groups, 1-D and 3-D, pointwise
    ((5, 4, 6, 7), 6, dict(kernel=(3, 3), stride=(2, 1), pad=(1, 1), num_group=2)),
    ((3, 2, 9), 4, dict(kernel=(3,), dilate=(2,), pad=(2,))),
    ((3, 2, 4, 5, 4), 4, dict(kernel=(2, 3, 2), stride=(1, 2, 1), pad=(1, 0, 1), num_group=2)),
    ((4, 6, 5, 5), 4, dict(kernel=(1, 1), num_group=2)),  # pointwise: the input is the column matrix
]


def _conv_and_grads(name, x, w, b, params, data_grad=True):
    """Output and the gradients (data, weight, bias) for a fixed output gradient."""
    arrays = [nd_(a) for a in (x, w, b)]
    for a in arrays[0 if data_grad else 1 :]:
        a.attach_grad()
    with mx.autograd.record():
        y = getattr(mx.nd, name)(*arrays, no_bias=False, **params)
    y.backward(nd_(np.linspace(-1, 1, y.size).reshape(y.shape).astype(x.dtype)))
    return [y.asnumpy()] + [a.grad.asnumpy() for a in arrays[0 if data_grad else 1 :]]


@pytest.mark.parametrize("case", LAYOUT_CASES, ids=lambda c: f"{len(c[2]['kernel'])}d-k{c[2]['kernel']}")
@pytest.mark.parametrize("name", ["Convolution", "Deconvolution"])
def test_both_layouts_and_any_chunking_give_the_same_results(name, case, monkeypatch):
    # conv_gemm picks sample-major or batch-last per layer and cache-sized chunks: force each
    # layout, with one chunk and with one sample per chunk; all results must agree
    shape, f, params = case
    params = dict(params, num_filter=f)
    groups, kernel = params.get("num_group", 1), params["kernel"]
    x = RNG.standard_normal(shape)
    w = RNG.standard_normal(
        (f, shape[1] // groups, *kernel) if name == "Convolution" else (shape[1], f // groups, *kernel)
    )
    b = RNG.standard_normal(f)
    runs = {}
    for batch_last, cache in itertools.product((False, True), (conv_gemm.CACHE_BYTES, 1)):
        monkeypatch.setattr(conv_gemm, "prefers_batch_last", lambda *shapes, choice=batch_last: choice)
        monkeypatch.setattr(conv_gemm, "CACHE_BYTES", cache)
        runs[(batch_last, cache)] = _conv_and_grads(name, x, w, b, params)
        y, _, d_w, d_b = runs[(batch_last, cache)]
        for got, want in zip(_conv_and_grads(name, x, w, b, params, data_grad=False), [y, d_w, d_b], strict=True):
            assert_almost_equal(got, want)
        half = _conv_and_grads(name, *(a.astype(np.float16) for a in (x, w, b)), params)
        for got, want in zip(half, runs[(batch_last, cache)], strict=True):
            assert_almost_equal(got.astype(np.float64), want, rtol=2e-2, atol=2e-2)
        check_req(name, [a.astype(np.float32) for a in (x, w, b)], no_bias=False, **params)
    first = next(iter(runs.values()))
    if name == "Convolution":
        stride, pad, dilate = (
            params.get(key, (default,) * len(kernel)) for key, default in (("stride", 1), ("pad", 0), ("dilate", 1))
        )
        assert_almost_equal(first[0], ref_conv(x, w, b, stride, pad, dilate, groups))
    for results in runs.values():
        for got, want in zip(results, first, strict=True):
            assert_almost_equal(got, want)


@mx.util.use_np_shape  # a zero-size batch needs NumPy shape semantics, as in MXNet
def test_empty_batch():
    x, w, b = mx.nd.ones((0, 2, 5, 5)), mx.nd.ones((3, 2, 3, 3)), mx.nd.ones((3,))
    for a in (x, w, b):
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Convolution(x, w, b, kernel=(3, 3), num_filter=3)
    y.backward()
    assert y.asnumpy().shape == (0, 3, 3, 3) and x.grad.shape == (0, 2, 5, 5)
    assert_almost_equal(w.grad, np.zeros((3, 2, 3, 3), np.float32))
    assert_almost_equal(b.grad, np.zeros(3, np.float32))
