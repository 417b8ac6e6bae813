"""Pooling: forward against an independent NumPy reference, gradients against finite
differences (and MXNet's tie-breaking), req handling, shape inference and clear errors.

The reference pads with NaN, takes strided window views and reduces them with nan-aware
NumPy reductions; it was checked against MXNet 1.9.1 (float64 native CPU and float32
MKL-DNN) for max/avg/sum/lp, 1-D/2-D/3-D, 'valid' and 'full' conventions,
count_include_pad both ways, padding as large as the kernel, and global pooling. The
``MXNET_*`` constants are MXNet 1.9.1 outputs baked in so these tests need no MXNet.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from op_helpers import infer_shapes

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.operator import get as get_op
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req, rand_shape_nd

RNG = np.random.default_rng(7)
LOWEST64 = float(np.finfo(np.float64).min)


def ref_pool(
    x,
    kernel=(),
    stride=(),
    pad=(),
    pool_type="max",
    pooling_convention="valid",
    global_pool=False,
    count_include_pad=True,
    p_value=None,
    lowest=LOWEST64,
):
    """Pooling by definition: NaN marks padding, nan-reductions skip it.

    A max window lying wholly in the padding gives ``lowest`` (MXNet: the dtype's lowest value).
    """
    nd = x.ndim - 2
    spatial = x.shape[2:]
    if global_pool:
        kernel, stride, pad = spatial, (1,) * nd, (0,) * nd
    stride = stride or (1,) * nd
    pad = pad or (0,) * nd
    full = pooling_convention == "full"
    out = [
        1 + (-(-(s + 2 * p - k) // st) if full else (s + 2 * p - k) // st)
        for s, k, st, p in zip(spatial, kernel, stride, pad, strict=True)
    ]
    extent = [max((o - 1) * st + k, s + p) for o, st, k, s, p in zip(out, stride, kernel, spatial, pad, strict=True)]
    xp = np.full(x.shape[:2] + tuple(extent), np.nan)
    inside = (slice(None), slice(None), *(slice(p, p + s) for p, s in zip(pad, spatial, strict=True)))
    xp[inside] = x
    # positions inside [-pad, size + pad): what count_include_pad counts
    padded_region = np.zeros(extent)
    padded_region[tuple(slice(0, s + 2 * p) for s, p in zip(spatial, pad, strict=True))] = 1

    def windows(a, axes):
        view = np.lib.stride_tricks.sliding_window_view(a, kernel, axis=axes)
        view = view[
            (slice(None),) * (a.ndim - nd)
            + tuple(slice(0, (o - 1) * st + 1, st) for o, st in zip(out, stride, strict=True))
        ]
        return view.reshape(view.shape[: a.ndim] + (-1,))

    win = windows(xp, tuple(range(2, 2 + nd)))
    if pool_type == "max":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN windows
            result = np.nanmax(win, axis=-1)
        return np.where(np.isnan(result), lowest, result)
    if pool_type == "sum":
        return np.nansum(win, axis=-1)
    if pool_type == "lp":
        total = np.nansum(win**p_value, axis=-1)
        return total if p_value == 1 else np.sqrt(total) if p_value == 2 else np.cbrt(total)
    counts = windows(padded_region, tuple(range(nd))).sum(-1) if count_include_pad else (~np.isnan(win)).sum(-1)
    total = np.nansum(win, axis=-1)
    return np.divide(total, counts, out=np.zeros_like(total), where=counts > 0)  # empty windows: 0, as MXNet


def nd_(a, dtype=None):
    return mx.nd.array(a, dtype=dtype or a.dtype)


CASES = [
    dict(shape=(2, 3, 8, 8), kernel=(2, 2), stride=(2, 2), pool_type="max"),
    dict(shape=(2, 3, 7, 8), kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max", pooling_convention="full"),
    dict(shape=(2, 3, 7, 8), kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg", pooling_convention="full"),
    dict(
        shape=(2, 3, 7, 8),
        kernel=(3, 2),
        stride=(2, 3),
        pad=(1, 1),
        pool_type="avg",
        pooling_convention="full",
        count_include_pad=False,
    ),
    dict(shape=(2, 3, 9), kernel=(3,), stride=(2,), pad=(1,), pool_type="sum"),
    dict(shape=(2, 3, 8), kernel=(3,), stride=(2,), pool_type="avg", pooling_convention="full"),
    dict(shape=(2, 2, 5, 5), kernel=(2, 2), pool_type="lp", p_value=2),
    dict(shape=(2, 2, 5, 5), kernel=(2, 2), pool_type="lp", p_value=3),
    dict(shape=(2, 2, 5, 5), kernel=(2, 3), stride=(1, 2), pool_type="lp", p_value=1),
    dict(shape=(2, 3, 5, 6), pool_type="avg", global_pool=True),
    dict(shape=(2, 3, 5, 6), pool_type="max", global_pool=True, kernel=(2, 2)),
    dict(shape=(1, 2, 5, 5, 5), kernel=(2, 2, 2), stride=(2, 2, 2), pool_type="max", pooling_convention="full"),
    dict(shape=(1, 2, 4, 5, 3), kernel=(2, 3, 2), stride=(1, 2, 1), pad=(1, 1, 0), pool_type="avg"),
    dict(shape=(1, 2, 5, 7), kernel=(3, 3), pad=(3, 3), pool_type="max"),
    dict(shape=(1, 2, 5, 7), kernel=(3, 3), pad=(2, 2), stride=(2, 3), pool_type="avg", count_include_pad=False),
    dict(shape=(2, 2, 6, 7), kernel=(2, 2), stride=(3, 3), pool_type="max", pooling_convention="full"),
]


def case_id(case):
    return "-".join(f"{k}={v}" for k, v in case.items() if k != "shape")


@pytest.mark.parametrize("case", CASES, ids=case_id)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_pooling_forward_matches_reference(case, dtype):
    params = dict(case)
    shape = params.pop("shape")
    x = RNG.standard_normal(shape).astype(dtype)
    if params.get("p_value") == 3:
        x = x.astype(np.float64) + 2.5  # keep sum x^3 away from 0, where the cube root is ill-conditioned
        x = x.astype(dtype)
    y = mx.nd.Pooling(nd_(x), **params)
    expected = ref_pool(x.astype(np.float64), lowest=np.finfo(dtype).min, **params)
    assert y.dtype == np.dtype(dtype) and y.shape == expected.shape
    assert_almost_equal(y, expected.astype(dtype))


@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
def test_pooling_random_shapes(ndim, pool_type):
    for _ in range(3):
        kernel = rand_shape_nd(ndim, 3, rng=RNG)
        stride = rand_shape_nd(ndim, 3, rng=RNG)
        pad = tuple(int(RNG.integers(0, k)) for k in kernel)
        shape = rand_shape_nd(2, 3, rng=RNG) + tuple(k + int(RNG.integers(0, 4)) for k in kernel)
        x = RNG.standard_normal(shape).astype(np.float32)
        for convention in ("valid", "full"):
            params = dict(kernel=kernel, stride=stride, pad=pad, pool_type=pool_type, pooling_convention=convention)
            expected = ref_pool(x.astype(np.float64), lowest=np.finfo(np.float32).min, **params)
            assert_almost_equal(mx.nd.Pooling(nd_(x), **params), expected)


# MXNet 1.9.1, float64, out_grad = ones.
MXNET_AVG_X = np.arange(20.0).reshape(1, 1, 4, 5)  # kernel 3, stride 2, pad 1, 'full'
MXNET_AVG_INCLUDE_PAD_Y = [[[[4 / 3, 3.0, 8 / 3], [7.0, 12.0, 9.0], [31 / 6, 8.5, 37 / 6]]]]
MXNET_AVG_INCLUDE_PAD_DX = [
    [
        [
            [1 / 9, 2 / 9, 1 / 9, 2 / 9, 1 / 9],
            [2 / 9, 4 / 9, 2 / 9, 4 / 9, 2 / 9],
            [1 / 9, 2 / 9, 1 / 9, 2 / 9, 1 / 9],
            [5 / 18, 5 / 9, 5 / 18, 5 / 9, 5 / 18],
        ]
    ]
]
MXNET_AVG_EXCLUDE_PAD_Y = [[[[3.0, 4.5, 6.0], [10.5, 12.0, 13.5], [15.5, 17.0, 18.5]]]]
MXNET_AVG_EXCLUDE_PAD_DX = [
    [
        [
            [1 / 4, 5 / 12, 1 / 6, 5 / 12, 1 / 4],
            [5 / 12, 25 / 36, 5 / 18, 25 / 36, 5 / 12],
            [1 / 6, 5 / 18, 1 / 9, 5 / 18, 1 / 6],
            [2 / 3, 10 / 9, 4 / 9, 10 / 9, 2 / 3],
        ]
    ]
]
MXNET_TIE_X = np.array([[3, 1, 3, 0], [3, 3, 2, 2], [0, 1, 2, 2], [1, 1, 0, 2]], dtype=np.float64).reshape(1, 1, 4, 4)
MXNET_TIE_K2_DX = [[[[1.0, 0.0, 2.0, 0.0], [1.0, 1.0, 1.0, 0.0], [0.0, 1.0, 2.0, 0.0], [0.0, 0.0, 0.0, 0.0]]]]
MXNET_TIE_FULL_Y = [[[[3.0, 3.0, 2.0], [3.0, 3.0, 2.0], [1.0, 2.0, 2.0]]]]  # kernel 3, stride 2, pad 1, 'full'
MXNET_TIE_FULL_DX = [[[[1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 2.0]]]]


def forward_backward(x, **params):
    a = nd_(x)
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Pooling(a, **params)
    y.backward()
    return y, a.grad


@pytest.mark.parametrize(
    "include, y_expected, dx_expected",
    [
        (True, MXNET_AVG_INCLUDE_PAD_Y, MXNET_AVG_INCLUDE_PAD_DX),
        (False, MXNET_AVG_EXCLUDE_PAD_Y, MXNET_AVG_EXCLUDE_PAD_DX),
    ],
)
def test_avg_full_convention_matches_mxnet(include, y_expected, dx_expected):
    y, dx = forward_backward(
        MXNET_AVG_X,
        kernel=(3, 3),
        stride=(2, 2),
        pad=(1, 1),
        pool_type="avg",
        pooling_convention="full",
        count_include_pad=include,
    )
    assert_almost_equal(y, np.array(y_expected))
    assert_almost_equal(dx, np.array(dx_expected))


def test_max_gradient_goes_to_the_first_maximum_like_mxnet():
    y, dx = forward_backward(MXNET_TIE_X, kernel=(2, 2), pool_type="max")
    assert_almost_equal(dx, np.array(MXNET_TIE_K2_DX))
    y, dx = forward_backward(
        MXNET_TIE_X, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max", pooling_convention="full"
    )
    assert_almost_equal(y, np.array(MXNET_TIE_FULL_Y))
    assert_almost_equal(dx, np.array(MXNET_TIE_FULL_DX))


# MXNet 1.9.1, float64: x = arange(16).reshape(1, 1, 2, 8), kernel (1, 2), stride (1, 3), pad (0, 1),
# 'full': the last window lies wholly past the input; avg/sum give 0 there, max the lowest float64.
MXNET_EMPTY_WINDOW = {
    ("avg", True): [[[[0.0, 2.5, 5.5, 0.0], [4.0, 10.5, 13.5, 0.0]]]],
    ("avg", False): [[[[0.0, 2.5, 5.5, 0.0], [8.0, 10.5, 13.5, 0.0]]]],
    ("sum", True): [[[[0.0, 5.0, 11.0, 0.0], [8.0, 21.0, 27.0, 0.0]]]],
    ("max", True): [[[[0.0, 3.0, 6.0, np.finfo(np.float64).min], [8.0, 11.0, 14.0, np.finfo(np.float64).min]]]],
}


@pytest.mark.parametrize("key", list(MXNET_EMPTY_WINDOW), ids=str)
def test_windows_past_the_input_match_mxnet(key):
    pool_type, include = key
    x = nd_(np.arange(16.0).reshape(1, 1, 2, 8))
    y = mx.nd.Pooling(
        x,
        kernel=(1, 2),
        stride=(1, 3),
        pad=(0, 1),
        pool_type=pool_type,
        pooling_convention="full",
        count_include_pad=include,
    )
    assert_almost_equal(y, np.array(MXNET_EMPTY_WINDOW[key]))


def test_max_gradient_with_non_finite_out_grad_only_reaches_the_maximum():
    x = nd_(np.array([[[1.0, 5.0, 2.0, 0.0]]]))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Pooling(x, kernel=(2,), stride=(2,), pool_type="max")
    y.backward(nd_(np.array([[[np.inf, 2.0]]])))
    assert_almost_equal(x.grad, np.array([[[0.0, np.inf, 2.0, 0.0]]]))


@pytest.mark.parametrize(
    "shape, params",
    [
        ((2, 2, 5, 6), dict(kernel=(3, 2), stride=(2, 2), pad=(1, 1), pool_type="max", pooling_convention="full")),
        ((2, 2, 5, 6), dict(kernel=(3, 3), stride=(2, 1), pad=(1, 1), pool_type="avg", count_include_pad=False)),
        ((2, 2, 5, 6), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg", pooling_convention="full")),
        ((2, 3, 7), dict(kernel=(3,), stride=(2,), pad=(1,), pool_type="sum")),
        ((1, 2, 3, 4, 3), dict(kernel=(2, 2, 2), stride=(1, 2, 1), pool_type="max")),
        ((2, 2, 4, 4), dict(kernel=(2, 2), pool_type="lp", p_value=1)),
        ((2, 2, 4, 4), dict(kernel=(2, 2), pool_type="lp", p_value=2)),
        ((2, 2, 4, 4), dict(kernel=(2, 2), pool_type="lp", p_value=3)),
        ((2, 3, 4, 5), dict(pool_type="avg", global_pool=True)),
    ],
    ids=lambda v: str(v) if isinstance(v, tuple) else v["pool_type"],
)
def test_pooling_gradient(shape, params):
    x = RNG.standard_normal(shape)
    if params["pool_type"] == "lp":
        x = np.abs(x) + 0.5  # away from zero outputs, where the Lp gradient is singular
    # max/avg/sum are piecewise linear: finite differences are exact up to rounding; lp is not
    tolerance = {} if params["pool_type"] == "lp" else dict(rtol=1e-6, atol=1e-8)
    check_imperative_gradient(lambda a: mx.nd.Pooling(a, **params), [x], **tolerance)


def test_pooling_req_write_add_null():
    x = RNG.standard_normal((2, 3, 6, 7)).astype(np.float32)
    check_req("Pooling", [x], kernel=(2, 2), stride=(2, 2), pool_type="max")  # no padding: accumulates in place
    check_req("Pooling", [x], kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max", pooling_convention="full")
    check_req("Pooling", [x], kernel=(3, 2), stride=(1, 2), pool_type="avg", count_include_pad=False, pad=(1, 1))
    check_req("Pooling", [x], kernel=(2, 2), pool_type="lp", p_value=2)
    check_req("Pooling", [x[:, :, 0]], kernel=(3,), pool_type="sum", stride=(2,))


# ----------------------------------------------------------------------------- shape inference
def test_pooling_shape_inference():
    assert infer_shapes("Pooling", {"kernel": (2, 2), "stride": (2, 2)}, [(64, 20, 24, 24)])[1] == [(64, 20, 12, 12)]
    assert infer_shapes(
        "Pooling", {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pooling_convention": "full"}, [(1, 1, 7, 8)]
    )[1] == [(1, 1, 4, 5)]
    assert infer_shapes("Pooling", {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)}, [(1, 1, 7, 8)])[1] == [
        (1, 1, 4, 4)
    ]
    assert infer_shapes("Pooling", {"kernel": (3,)}, [(2, 3, 9)])[1] == [(2, 3, 7)]  # stride defaults to 1
    assert infer_shapes("Pooling", {"global_pool": True, "pool_type": "avg"}, [(2, 3, 4, 5, 6)])[1] == [(2, 3, 1, 1, 1)]
    # batch and channels flow back from the output; spatial sizes stay unknown
    ins, outs, done = infer_shapes("Pooling", {"kernel": (2, 2), "stride": (2, 2)}, [None], [(4, 6, 3, 3)])
    assert not done and ins[0] == (4, 6, 0, 0)
    ins, outs, done = infer_shapes("Pooling", {"kernel": (2, 2), "stride": (2, 2)}, [(4, 0, 8, 8)], [(0, 6, 0, 0)])
    assert done and ins[0] == (4, 6, 8, 8) and outs[0] == (4, 6, 4, 4)
    op = get_op("_backward_Pooling")
    outs = [None]
    assert op.run_infer_shape(op.parse_attrs(dict(kernel=(2, 2))), [(1, 1, 2, 2), (1, 1, 3, 3), (1, 1, 2, 2)], outs)
    assert outs == [(1, 1, 3, 3)]


@pytest.mark.parametrize(
    "shape, params, error, match",
    [
        (
            (1, 1, 5, 5),
            dict(kernel=(6, 6)),
            InferenceError,
            r"Pooling: kernel size \(6\) exceeds input \(5 padded to 5\)",
        ),
        ((1, 1, 5, 5), dict(kernel=(2,)), InferenceError, r"Pooling: data should be 3-D"),
        (
            (1, 1, 5, 5),
            dict(kernel=(2, 2), stride=(2,)),
            OperatorParamError,
            r"Pooling: stride must have the same number of dimensions as kernel",
        ),
        ((1, 1, 5, 5), dict(kernel=(2, 2), stride=(0, 1)), OperatorParamError, r"Pooling: stride must be >= 1"),
        (
            (1, 1, 5, 5),
            dict(),
            OperatorParamError,
            r"Pooling: kernel must have 1, 2 or 3 dimensions unless global_pool",
        ),
        (
            (1, 1, 5, 5),
            dict(kernel=(2, 2), pool_type="lp"),
            OperatorParamError,
            r"Pooling: pool_type='lp' needs p_value",
        ),
        ((1, 1, 5, 5), dict(kernel=(2, 2), pool_type="lp", p_value=4), OperatorParamError, r"p_value 1, 2 or 3"),
        ((1, 1, 5), dict(kernel=(2,), pooling_convention="same"), OperatorParamError, r"'same' is not supported"),
        (
            (1, 1, 5, 5),
            dict(kernel=(2, 2), layout="NHWC"),
            OperatorParamError,
            r"Pooling: layout 'NHWC' is not supported",
        ),
        ((1, 1, 5, 5, 5, 5), dict(global_pool=True), InferenceError, r"Pooling: data should be 3-D, 4-D or 5-D"),
    ],
)
def test_pooling_bad_inputs(shape, params, error, match):
    with pytest.raises(error, match=match):
        infer_shapes("Pooling", params, [shape])


def test_pooling_parameter_parsing_and_types():
    with pytest.raises(OperatorParamError, match="Pooling: parameter 'pool_type'"):
        mx.nd.Pooling(mx.nd.ones((1, 1, 4, 4)), kernel=(2, 2), pool_type="median")
    op = get_op("Pooling")
    parsed = op.parse_attrs({}).parsed
    assert (parsed.pool_type, parsed.pooling_convention, parsed.count_include_pad) == ("max", "valid", None)
    with pytest.raises(InferenceError, match="Pooling.*int32"):
        op.run_infer_type(op.parse_attrs(dict(kernel=(2, 2))), ["int32"], [None])
    # accepted for compatibility: cudnn_off and the matching layout
    y = mx.nd.Pooling(mx.nd.ones((1, 1, 4, 4)), kernel=(2, 2), cudnn_off=True, layout="NCHW", pool_type="sum")
    assert_almost_equal(y, np.full((1, 1, 3, 3), 4.0, np.float32))


# ----------------------------------------------------------------------------- max with ties, all paths
def ref_max_gradient(x, dy, kernel, stride, pad):
    """Brute force: each window's gradient goes to its first maximum in row-major order."""
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(p, p) for p in pad], constant_values=-np.inf)
    grad = np.zeros(padded.shape)
    for n, c, *pos in np.ndindex(*dy.shape):
        corner = [o * s for o, s in zip(pos, stride, strict=True)]
        window = padded[(n, c, *(slice(a, a + k) for a, k in zip(corner, kernel, strict=True)))]
        first = np.unravel_index(np.argmax(window), kernel)  # argmax: the first maximum
        grad[(n, c, *(a + f for a, f in zip(corner, first, strict=True)))] += dy[(n, c, *pos)]
    return grad[(slice(None), slice(None), *(slice(p, p + s) for p, s in zip(pad, x.shape[2:], strict=True)))]


@pytest.mark.parametrize(
    "shape, kernel, stride, pad",
    [
        ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0)),  # disjoint windows covering the input (LeNet's)
        ((2, 3, 7, 9), (3, 3), (3, 3), (0, 0)),  # disjoint, the last rows and columns in no window
        ((2, 2, 9), (2,), (3,), (0,)),  # stride > kernel
        ((1, 2, 4, 6, 6), (2, 2, 2), (2, 2, 2), (0, 0, 0)),
        ((2, 3, 7, 8), (2, 2), (2, 2), (1, 1)),  # disjoint but padded: the general path
        ((2, 3, 6, 7), (3, 2), (2, 1), (0, 1)),  # overlapping windows
    ],
    ids=str,
)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_max_pooling_with_many_ties_matches_brute_force_on_every_path(shape, kernel, stride, pad, dtype):
    # values in {0, 1, 2}: most windows hold several maxima, and the first one must win
    x = RNG.integers(0, 3, shape).astype(dtype)
    params = dict(kernel=kernel, stride=stride, pad=pad, pool_type="max")
    a = nd_(x)
    a.attach_grad(grad_req="add")
    for _ in range(2):  # req add: the second pass adds the same gradient again
        with mx.autograd.record():
            y = mx.nd.Pooling(a, **params)
        dy = np.linspace(-1, 2, y.size).reshape(y.shape).astype(dtype)
        y.backward(nd_(dy))
    assert_almost_equal(y, ref_pool(x.astype(np.float64), **params).astype(dtype))
    expected = ref_max_gradient(x, dy.astype(np.float64), kernel, stride, pad)
    assert_almost_equal(a.grad, (2 * expected).astype(dtype))
    _, written = forward_backward(x, **params)  # req write, out_grad of ones
    assert_almost_equal(written, ref_max_gradient(x, np.ones(y.shape), kernel, stride, pad).astype(dtype))
    check_req("Pooling", [x], **params)
