"""Reductions (sum, mean, prod, max, min, nansum, nanprod, norm, argmax, argmin) against NumPy.

Expectations marked "MXNet 1.9.1" were read off the real MXNet (pip ``mxnet==1.9.1``) and
are written here as plain values; the tests never import MXNet.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from op_helpers import seeded_rng

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req, rand_shape_nd

FLOATS = ["float16", "float32", "float64"]

# name: (numpy reference, low, high)
REDUCERS = {
    "sum": (np.sum, -1, 1),
    "mean": (np.mean, -1, 1),
    "prod": (np.prod, 0.7, 1.3),
    "max": (np.max, -1, 1),
    "min": (np.min, -1, 1),
    "nansum": (np.nansum, -1, 1),
    "nanprod": (np.nanprod, 0.7, 1.3),
}


def _random_axis(rng: np.random.Generator, ndim: int):
    """None, an int (maybe negative) or a tuple of distinct axes."""
    kind = rng.integers(0, 3)
    if kind == 0:
        return None
    if kind == 1:
        return int(rng.integers(-ndim, ndim))
    count = int(rng.integers(1, ndim + 1))
    return tuple(int(a) for a in rng.choice(ndim, size=count, replace=False))


def _axes(axis, ndim: int, exclude: bool) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    chosen = {a % ndim for a in ((axis,) if isinstance(axis, int) else axis)}
    if exclude:
        chosen = set(range(ndim)) - chosen
    return tuple(sorted(chosen))


def _reference(fn, x: np.ndarray, axis, keepdims: bool, exclude: bool) -> np.ndarray:
    axes = _axes(axis, x.ndim, exclude)
    out = np.asarray(fn(x.astype(np.float64), axis=axes, keepdims=keepdims))
    return out.reshape((1,)) if out.ndim == 0 else out


def _separated(rng: np.random.Generator, shape: tuple[int, ...], low: float, high: float) -> np.ndarray:
    """Values in [low, high] at least (high - low) / (5 * size) apart: no near-ties for max/min,
    whose finite differences would straddle the switch between two maxima."""
    size = int(np.prod(shape))
    spaced = (rng.permutation(size) + rng.uniform(0.1, 0.9, size)) / size
    return (low + (high - low) * spaced).reshape(shape)


def _configs(rng: np.random.Generator, count: int = 6):
    for _ in range(count):
        ndim = int(rng.integers(1, 6))
        shape = rand_shape_nd(ndim, 4, rng=rng)
        yield shape, _random_axis(rng, ndim), bool(rng.integers(0, 2)), bool(rng.integers(0, 2))


# ----------------------------------------------------------------------------- forward


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(REDUCERS))
def test_reduce_forward_matches_numpy(name, dtype):
    fn, low, high = REDUCERS[name]
    rng = seeded_rng(zlib.crc32(name.encode()))
    for shape, axis, keepdims, exclude in _configs(rng):
        x = rng.uniform(low, high, size=shape).astype(dtype)
        if name.startswith("nan") and x.size > 1:
            x.reshape(-1)[0] = np.nan
        got = getattr(mx.nd, name)(mx.nd.array(x, dtype=dtype), axis=axis, keepdims=keepdims, exclude=exclude)
        expected = _reference(fn, x, axis, keepdims, exclude)
        assert got.dtype == np.dtype(dtype)
        assert_almost_equal(got, expected.astype(dtype))


def test_reduce_defaults_and_aliases():
    x = seeded_rng().uniform(-1, 1, size=(2, 3, 4)).astype(np.float32)
    a = mx.nd.array(x)
    # MXNet 1.9.1: reducing everything gives shape (1,), keepdims gives (1, 1, 1)
    assert mx.nd.sum(a).shape == (1,)
    assert mx.nd.sum(a, keepdims=True).shape == (1, 1, 1)
    assert mx.nd.sum(a, axis=()).shape == (1,)
    assert mx.nd.sum(a, axis=(), exclude=True).shape == (1,)
    assert mx.nd.sum(a, axis=1, exclude=True).shape == (3,)
    for alias, name in (("sum_axis", "sum"), ("max_axis", "max"), ("min_axis", "min")):
        assert_almost_equal(getattr(mx.nd, alias)(a, axis=1), getattr(mx.nd, name)(a, axis=1))
    assert_almost_equal(a.sum(axis=(0, 2)), x.sum(axis=(0, 2)))
    assert_almost_equal(a.max(axis=-1, keepdims=True), x.max(axis=-1, keepdims=True))


def test_reduce_integer_dtypes_keep_dtype():
    x = np.arange(24).reshape(2, 3, 4).astype(np.int32)
    a = mx.nd.array(x, dtype="int32")
    got = mx.nd.mean(a, axis=0)  # MXNet 1.9.1: int32 mean truncates, stays int32
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.asnumpy(), (x.sum(axis=0) // 2).astype(np.int32))
    assert mx.nd.prod(a).asnumpy()[0] == 0
    assert mx.nd.nansum(a).asnumpy()[0] == 276


def test_max_min_prod_forward_with_keepdims_exclude_all_ndims():
    rng = seeded_rng(3)
    for ndim in range(1, 6):
        x = rng.uniform(-1, 1, size=rand_shape_nd(ndim, 3, rng=rng))
        a = mx.nd.array(x, dtype="float64")
        assert_almost_equal(mx.nd.max(a, axis=0, exclude=True, keepdims=True), _reference(np.max, x, 0, True, True))
        assert_almost_equal(mx.nd.min(a, axis=-1), _reference(np.min, x, -1, False, False))


# ----------------------------------------------------------------------------- backward


@pytest.mark.parametrize("name", sorted(REDUCERS))
def test_reduce_gradient_matches_finite_differences(name):
    _, low, high = REDUCERS[name]
    rng = seeded_rng(zlib.crc32(name.encode()) + 1)
    for shape, axis, keepdims, exclude in _configs(rng, 4):
        x = _separated(rng, shape, low, high)
        op = getattr(mx.nd, name)
        check_imperative_gradient(lambda a: op(a, axis=axis, keepdims=keepdims, exclude=exclude), [x])


def test_max_gradient_flows_to_every_tied_element():
    x = mx.nd.array(np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]), dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.max(x, axis=1)
    y.backward()
    # MXNet 1.9.1 style: each element equal to the maximum gets the full gradient
    np.testing.assert_array_equal(x.grad.asnumpy(), [[0, 1, 1], [1, 1, 0]])
    with mx.autograd.record():
        y = mx.nd.min(x, axis=1)
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [[1, 0, 0], [0, 0, 1]])


def test_prod_and_nan_gradients_handle_zeros_and_nans():
    x = mx.nd.array(np.array([[0.0, 2.0, 3.0], [1.0, 0.0, 0.0]]), dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.prod(x, axis=1)
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [[6, 0, 0], [0, 0, 0]])

    z = mx.nd.array(np.array([[np.nan, 2.0, 3.0]]), dtype="float64")
    z.attach_grad()
    with mx.autograd.record():
        y = mx.nd.nansum(z)
    y.backward()
    np.testing.assert_array_equal(z.grad.asnumpy(), [[0, 1, 1]])
    with mx.autograd.record():
        y = mx.nd.nanprod(z)
    y.backward()
    np.testing.assert_array_equal(z.grad.asnumpy(), [[0, 3, 2]])


@pytest.mark.parametrize("name", sorted(REDUCERS))
def test_reduce_req(name):
    _, low, high = REDUCERS[name]
    x = seeded_rng(1).uniform(low, high, size=(2, 3, 4)).astype(np.float32)
    check_req(name, [x], axis=(0, 2))
    check_req(name, [x], axis=1, keepdims=True, exclude=True)


# ----------------------------------------------------------------------------- norm


@pytest.mark.parametrize("dtype", FLOATS)
def test_norm_forward(dtype):
    rng = seeded_rng(5)
    for shape, axis, keepdims, _ in _configs(rng):
        x = rng.uniform(-1, 1, size=shape).astype(dtype)
        a = mx.nd.array(x, dtype=dtype)
        for ord_, fn in ((1, lambda v, **k: np.sum(np.abs(v), **k)), (2, lambda v, **k: np.sqrt(np.sum(v * v, **k)))):
            got = mx.nd.norm(a, ord=ord_, axis=axis, keepdims=keepdims)
            assert got.dtype == np.dtype(dtype)
            assert_almost_equal(got, _reference(fn, x, axis, keepdims, False).astype(dtype))


def test_norm_defaults_out_dtype_and_gradient():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = mx.nd.array(x)
    assert_almost_equal(mx.nd.norm(a), np.array([65.75713], dtype=np.float32))  # MXNet 1.9.1
    assert_almost_equal(mx.nd.norm(a, ord=1, axis=(0, 1)), np.array([60.0, 66, 72, 78], dtype=np.float32))
    assert mx.nd.norm(a, out_dtype="float64").dtype == np.float64
    rng = seeded_rng(6)
    for ord_ in (1, 2):
        check_imperative_gradient(lambda v: mx.nd.norm(v, ord=ord_, axis=1), [rng.uniform(-1, 1, size=(3, 4, 2))])
        check_imperative_gradient(lambda v: mx.nd.norm(v, ord=ord_, keepdims=True), [rng.uniform(-1, 1, size=(5,))])
    # the 2-norm of an all-zero group has gradient 0, not NaN
    z = mx.nd.zeros((2, 3), dtype="float64")
    z.attach_grad()
    with mx.autograd.record():
        y = mx.nd.norm(z, axis=1)
    y.backward()
    np.testing.assert_array_equal(z.grad.asnumpy(), np.zeros((2, 3)))
    check_req("norm", [x], axis=1)
    check_req("norm", [x], ord=1, keepdims=True)


def test_norm_rejects_bad_ord():
    with pytest.raises(InferenceError, match=r"norm.*ord=1 and ord=2"):
        mx.nd.norm(mx.nd.ones((2, 3)), ord=3)
    with pytest.raises(OperatorParamError, match=r"norm.*out_dtype"):
        mx.nd.norm(mx.nd.ones((2, 3)), out_dtype="complex64")


# ----------------------------------------------------------------------------- argmax, argmin


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin_forward(name, dtype):
    rng = seeded_rng(7)
    fn = getattr(np, name)
    for ndim in range(1, 6):
        shape = rand_shape_nd(ndim, 4, rng=rng)
        x = rng.permutation(np.prod(shape)).reshape(shape).astype(dtype)  # distinct values: no ties
        a = mx.nd.array(x, dtype=dtype)
        axis = int(rng.integers(-ndim, ndim))
        got = getattr(mx.nd, name)(a, axis=axis)
        assert got.dtype == np.dtype(dtype)  # MXNet 1.9.1: indices in the input's dtype
        np.testing.assert_array_equal(got.asnumpy(), fn(x, axis=axis).astype(dtype))
        kept = getattr(mx.nd, name)(a, axis=axis, keepdims=True)
        np.testing.assert_array_equal(kept.asnumpy(), np.expand_dims(fn(x, axis=axis), axis).astype(dtype))
        flat = getattr(mx.nd, name)(a)
        assert flat.shape == (1,)
        assert flat.asnumpy()[0] == fn(x)
        assert getattr(mx.nd, name)(a, keepdims=True).shape == (1,) * ndim


def test_argmax_channel_and_zero_gradient():
    x = seeded_rng(8).uniform(-1, 1, size=(3, 4))
    a = mx.nd.array(x, dtype="float64")
    np.testing.assert_array_equal(mx.nd.argmax_channel(a).asnumpy(), x.argmax(axis=-1))
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.argmax(a, axis=1)
    y.backward()
    np.testing.assert_array_equal(a.grad.asnumpy(), np.zeros((3, 4)))
    check_req("argmax", [x.astype(np.float32)], axis=0)
    check_req("argmin", [x.astype(np.float32)], keepdims=True)


# ----------------------------------------------------------------------------- inference and errors


def test_reduce_shape_inference():
    op = mx.operator.get("sum")
    attrs = op.parse_attrs({"axis": "(1,)", "keepdims": "False"})
    outs = [None]
    assert op.run_infer_shape(attrs, [(2, 0, 3)], outs) is False  # partial input: partial answer
    assert outs == [(2, 3)]
    outs = [None]
    assert op.run_infer_shape(attrs, [None], outs) is False
    assert outs == [None]
    attrs = op.parse_attrs({"axis": "(1,)", "keepdims": "True", "exclude": "True"})
    outs = [None]
    assert op.run_infer_shape(attrs, [(2, 5, 3)], outs) is True
    assert outs == [(1, 5, 1)]
    with pytest.raises(InferenceError, match=r"sum: shape inconsistent"):
        op.run_infer_shape(attrs, [(2, 5, 3)], [(1, 4, 1)])
    argmax = mx.operator.get("argmax")
    outs = [None]
    argmax.run_infer_shape(argmax.parse_attrs({"axis": "-1"}), [(2, 5, 3)], outs)
    assert outs == [(2, 5)]
    types_in, types_out = ["float16"], [None]
    assert argmax.run_infer_type(argmax.parse_attrs({}), types_in, types_out)
    assert types_out == ["float16"]
    types_in = [None]
    assert op.run_infer_type(attrs, types_in, ["float64"])  # type flows back from the output
    assert types_in == ["float64"]


def test_reduce_errors_name_the_operator_and_problem():
    a = mx.nd.ones((2, 3, 4))
    with pytest.raises(InferenceError, match=r"sum: reduction axes have duplicates"):
        mx.nd.sum(a, axis=(0, 0))
    with pytest.raises(InferenceError, match=r"mean: reduction axis 5 exceeds the input dimensions \(2, 3, 4\)"):
        mx.nd.mean(a, axis=5)
    with pytest.raises(InferenceError, match=r"max: reduction axis -4 exceeds"):
        mx.nd.max(a, axis=-4)
    with pytest.raises(InferenceError, match=r"argmax: axis=3 is out of range"):
        mx.nd.argmax(a, axis=3)
    with pytest.raises(OperatorParamError, match=r"sum: parameter 'axis'"):
        mx.nd.sum(a, axis="rows")
    with pytest.raises(OperatorParamError, match=r"prod: parameter 'keepdims'"):
        mx.nd.prod(a, keepdims="maybe")
    with pytest.raises(OperatorParamError, match=r"argmin: parameter 'axis'"):
        mx.nd.argmin(a, axis=(0, 1))
    with pytest.raises(OperatorParamError, match=r"nansum: unknown parameter"):
        mx.nd.nansum(a, axes=1)
