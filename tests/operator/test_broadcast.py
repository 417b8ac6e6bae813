"""Broadcasting operators, ``clip`` and ``where`` against NumPy and MXNet 1.9's rules.

Expectations marked "MXNet 1.9.1" were read off the real MXNet (pip ``mxnet==1.9.1``) and
are written here as plain values; the tests never import MXNet.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import away_from_zero, mod_reference, seeded_rng

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.operator.tensor.broadcast import broadcast_shape, sum_to
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req, rand_shape_nd

FLOATS = ["float16", "float32", "float64"]


def _broadcast_pair(rng: np.random.Generator, ndim: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes that broadcast: random dims set to 1 on either side, rhs maybe shorter."""
    full = rand_shape_nd(ndim, 3, rng=rng)
    lhs = tuple(1 if rng.uniform() < 0.3 else d for d in full)
    rhs = tuple(1 if rng.uniform() < 0.3 else d for d in full)
    drop = int(rng.integers(0, ndim))  # MXNet pads the shorter shape with leading 1s
    return lhs, rhs[drop:]


def _away(gap):
    return lambda rng, shape: away_from_zero(rng.uniform(-2, 2, size=shape), gap)


def _uniform(low, high):
    return lambda rng, shape: rng.uniform(low, high, size=shape)


# name: (reference, lhs sampler, rhs sampler, differentiable)
BROADCAST = {
    "broadcast_add": (np.add, _uniform(-2, 2), _uniform(-2, 2), True),
    "broadcast_sub": (np.subtract, _uniform(-2, 2), _uniform(-2, 2), True),
    "broadcast_mul": (np.multiply, _uniform(-2, 2), _uniform(-2, 2), True),
    "broadcast_div": (np.divide, _uniform(-2, 2), _away(0.5), True),
    "broadcast_power": (np.power, _uniform(0.5, 2), _uniform(-2, 2), True),
    "broadcast_maximum": (np.maximum, _uniform(-2, 2), _uniform(-2, 2), True),
    "broadcast_minimum": (np.minimum, _uniform(-2, 2), _uniform(-2, 2), True),
    "broadcast_hypot": (np.hypot, _away(0.2), _away(0.2), True),
    "broadcast_mod": (mod_reference, _uniform(-5, 5), _away(0.5), True),
    "broadcast_equal": (np.equal, None, None, False),
    "broadcast_not_equal": (np.not_equal, None, None, False),
    "broadcast_greater": (np.greater, None, None, False),
    "broadcast_greater_equal": (np.greater_equal, None, None, False),
    "broadcast_lesser": (np.less, None, None, False),
    "broadcast_lesser_equal": (np.less_equal, None, None, False),
    "broadcast_logical_and": (lambda a, b: np.logical_and(a != 0, b != 0), None, None, False),
    "broadcast_logical_or": (lambda a, b: np.logical_or(a != 0, b != 0), None, None, False),
    "broadcast_logical_xor": (lambda a, b: np.logical_xor(a != 0, b != 0), None, None, False),
}


def _samples(name, rng, lhs_shape, rhs_shape):
    _, left, right, _ = BROADCAST[name]
    if left is None:  # comparisons: small integers give ties and zeros
        return (
            rng.integers(0, 3, size=lhs_shape).astype(np.float64),
            rng.integers(0, 3, size=rhs_shape).astype(np.float64),
        )
    return left(rng, lhs_shape), right(rng, rhs_shape)


@pytest.mark.parametrize("name", sorted(BROADCAST))
def test_broadcast_binary_forward(name):
    ref = BROADCAST[name][0]
    rng = seeded_rng(1)
    for dtype in FLOATS:
        for ndim in range(1, 6):
            lhs_shape, rhs_shape = _broadcast_pair(rng, ndim)
            if ndim % 2:
                lhs_shape, rhs_shape = rhs_shape, lhs_shape
            a, b = (v.astype(dtype) for v in _samples(name, rng, lhs_shape, rhs_shape))
            y = getattr(mx.nd.op, name)(mx.nd.array(a, dtype=a.dtype), mx.nd.array(b, dtype=b.dtype))
            expected = ref(a.astype(np.float64), b.astype(np.float64))
            assert y.dtype == np.dtype(dtype) and y.shape == expected.shape
            assert_almost_equal(y, expected.astype(np.float64))


@pytest.mark.parametrize("name", sorted(BROADCAST))
def test_broadcast_binary_backward_and_req(name):
    rng = seeded_rng(2)
    lhs_shape, rhs_shape = (2, 1, 3), (4, 1)
    a, b = _samples(name, rng, lhs_shape, rhs_shape)
    fn = getattr(mx.nd, name)
    if BROADCAST[name][3]:
        if name == "broadcast_mod":  # a / b away from integers, where mod jumps
            a = rng.integers(-3, 3, size=lhs_shape) + 0.5
            b = np.where(rng.uniform(size=rhs_shape) < 0.5, -2.2, 2.2)
        if name in ("broadcast_maximum", "broadcast_minimum"):  # avoid ties
            b = np.round(b) + 0.5
            a = np.round(a)
        check_imperative_gradient(fn, [a, b])
    else:
        x, z = mx.nd.array(a, dtype=a.dtype), mx.nd.array(b, dtype=b.dtype)
        x.attach_grad()
        z.attach_grad()
        with mx.autograd.record():
            y = fn(x, z) * 2 + mx.nd.broadcast_mul(x, z)
        y.backward()
        assert_almost_equal(x.grad, np.broadcast_to(b, (2, 4, 3)).sum(axis=1, keepdims=True))
        assert_almost_equal(z.grad, np.broadcast_to(a, (2, 4, 3)).sum(axis=(0, 2)).reshape(rhs_shape))
    check_req(name, [a.astype(np.float32), b.astype(np.float32)])


def test_broadcast_aliases():
    assert mx.operator.get("broadcast_plus") is mx.operator.get("broadcast_add")
    assert mx.operator.get("broadcast_minus") is mx.operator.get("broadcast_sub")
    assert mx.operator.get("broadcast_axes") is mx.operator.get("broadcast_axis")


def test_broadcast_rules_match_mxnet():
    # MXNet 1.9.1: (2, 3) + (3,) -> (2, 3); (4, 2, 3) == (3,) -> (4, 2, 3); (2, 1) + (1, 3) -> (2, 3)
    assert mx.nd.broadcast_add(mx.nd.ones((2, 3)), mx.nd.ones((3,))).asnumpy().tolist() == [[2.0] * 3] * 2
    assert mx.nd.broadcast_equal(mx.nd.ones((4, 2, 3)), mx.nd.ones((3,))).shape == (4, 2, 3)
    assert mx.nd.broadcast_add(mx.nd.ones((2, 1)), mx.nd.ones((1, 3))).shape == (2, 3)
    # MXNet 1.9.1: "operands could not be broadcast together with shapes [2,3] [2,4]"
    with pytest.raises(InferenceError, match=r"broadcast_add: operands could not be broadcast.*\(2, 3\) \(2, 4\)"):
        mx.nd.broadcast_add(mx.nd.ones((2, 3)), mx.nd.ones((2, 4)))
    with pytest.raises(InferenceError, match=r"broadcast_mul: operands could not be broadcast.*\(2, 3\) \(3, 2\)"):
        mx.nd.broadcast_mul(mx.nd.ones((2, 3)), mx.nd.ones((3, 2)))
    # same dtype required (MXNet 1.9.1: "expected float32, got float64")
    with pytest.raises(InferenceError, match=r"broadcast_add.*type inconsistent.*float"):
        mx.nd.broadcast_add(mx.nd.ones((2,)), mx.nd.ones((2,), dtype="float64"))
    # broadcast mod gradient: MXNet 1.9.1 gives d/dlhs = [[2, 2]], d/drhs = [[1], [1]]
    a, b = mx.nd.array([[5.0, -5.0]]), mx.nd.array([[3.0], [-2.0]])
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = mx.nd.broadcast_mod(a, b)
    y.backward()
    assert y.asnumpy().tolist() == [[2, 1], [-1, -1]]
    assert a.grad.asnumpy().tolist() == [[2, 2]] and b.grad.asnumpy().tolist() == [[1], [1]]


def test_ndarray_operators_broadcast():
    a = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = mx.nd.array(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    expected = np.arange(6).reshape(2, 3)
    assert_almost_equal(a + b, expected + np.array([1, 2, 3]))
    assert_almost_equal(b - a, np.array([1, 2, 3]) - expected)
    assert_almost_equal(a * b, expected * np.array([1, 2, 3]))
    assert_almost_equal(a / b, expected / np.array([1, 2, 3]))
    assert_almost_equal(a == b, (expected == np.array([1, 2, 3])).astype(np.float32))
    c = a.copy()
    c += b
    c *= b
    assert_almost_equal(c, (expected + np.array([1, 2, 3])) * np.array([1, 2, 3]))


def test_broadcast_binary_inference():
    op = mx.operator.get("broadcast_add")
    attrs = op.parse_attrs({})
    outs = [None]
    assert op.run_infer_shape(attrs, [(2, 1, 3), (4, 1)], outs) and outs == [(2, 4, 3)]
    outs = [None]
    assert not op.run_infer_shape(attrs, [(2, 0), (1, 3)], outs) and outs == [(2, 3)]
    outs = [None]
    assert not op.run_infer_shape(attrs, [(0, 3), (1, 3)], outs) and outs == [(0, 3)]
    outs = [(5, 0)]
    assert not op.run_infer_shape(attrs, [None, (1, 3)], outs) and outs == [(5, 0)]
    with pytest.raises(InferenceError, match="broadcast_add: shape inconsistent"):
        op.run_infer_shape(attrs, [(2, 3), (1, 3)], [(4, 3)])
    assert broadcast_shape("x", (0, 1), (5, 0)) == (5, 0)
    back = mx.operator.get("_backward_broadcast_add")
    ins, outs = [(2, 4, 3), (2, 1, 3), (4, 1)], [None, None]
    assert back.run_infer_shape(attrs, ins, outs) and outs == [(2, 1, 3), (4, 1)]


def test_sum_to():
    g = np.arange(24.0).reshape(2, 4, 3)
    assert_almost_equal(sum_to(np, g, (2, 1, 3)), g.sum(axis=1, keepdims=True))
    assert_almost_equal(sum_to(np, g, (4, 1)), g.sum(axis=(0, 2)).reshape(4, 1))
    assert_almost_equal(sum_to(np, g, ()), np.array(g.sum()))
    assert sum_to(np, g, (2, 4, 3)) is g
    half = sum_to(np, np.full((2048, 2), 0.1, dtype=np.float16), (1, 2))
    assert half.dtype == np.float16 and abs(float(half[0, 0]) - 204.8) < 0.5  # accumulated in float32


# ---------------------------------------------------------------------------- broadcast_to / axis / like
def test_broadcast_to_forward_backward_req():
    rng = seeded_rng(3)
    for dtype in FLOATS:
        for ndim in range(1, 6):
            target = rand_shape_nd(ndim, 3, rng=rng)
            src = tuple(1 if rng.uniform() < 0.5 else d for d in target)
            spec = tuple(0 if (s == d and rng.uniform() < 0.5) else d for s, d in zip(src, target, strict=True))
            x = rng.uniform(-1, 1, size=src).astype(dtype)
            y = mx.nd.broadcast_to(mx.nd.array(x, dtype=x.dtype), shape=spec)
            assert y.dtype == np.dtype(dtype)
            assert_almost_equal(y, np.broadcast_to(x, target))
    x = rng.uniform(-1, 1, size=(2, 1, 3))
    check_imperative_gradient(lambda a: mx.nd.broadcast_to(a, shape=(0, 4, 3)), [x])
    check_req("broadcast_to", [x.astype(np.float32)], shape=(2, 4, 3))
    assert mx.nd.ones((1, 3)).broadcast_to(shape=(2, 3)).shape == (2, 3)


def test_broadcast_to_matches_mxnet():
    # MXNet 1.9.1: shape=(0, 3) keeps dim 0; rank must match; size-2 cannot stretch; () fails.
    assert mx.nd.broadcast_to(mx.nd.ones((1, 3)), shape=(0, 3)).shape == (1, 3)
    with pytest.raises(InferenceError, match=r"broadcast_to: operand of shape \(3,\) cannot be broadcast to \(2, 3\)"):
        mx.nd.broadcast_to(mx.nd.ones((3,)), shape=(2, 3))
    with pytest.raises(InferenceError, match=r"broadcast_to: array cannot be broadcast from \(2, 3\) to \(4, 3\)"):
        mx.nd.broadcast_to(mx.nd.ones((2, 3)), shape=(4, 3))
    with pytest.raises(InferenceError, match=r"broadcast_to: operand of shape \(2, 3\) cannot be broadcast to \(\)"):
        mx.nd.broadcast_to(mx.nd.ones((2, 3)))
    with pytest.raises(InferenceError, match=r"broadcast_to: shape=\(-1, 3\) has a negative dimension"):
        mx.nd.broadcast_to(mx.nd.ones((1, 3)), shape=(-1, 3))
    with pytest.raises(OperatorParamError, match=r"broadcast_to: parameter 'shape' expects a tuple"):
        mx.nd.broadcast_to(mx.nd.ones((1, 3)), shape="abc")


def test_broadcast_to_inference():
    op = mx.operator.get("broadcast_to")
    attrs = op.parse_attrs({"shape": (0, 4, 3)})
    ins, outs = [None], [None]
    assert not op.run_infer_shape(attrs, ins, outs) and outs == [(0, 4, 3)]
    ins, outs = [None], [(2, 4, 3)]
    assert not op.run_infer_shape(attrs, ins, outs) and ins == [(2, 0, 0)]  # only the kept dim is known
    ins, outs = [(2, 1, 3)], [None]
    assert op.run_infer_shape(attrs, ins, outs) and outs == [(2, 4, 3)]
    ins, outs = [(0, 1, 3)], [(2, 0, 0)]
    assert op.run_infer_shape(attrs, ins, outs) and ins == [(2, 1, 3)] and outs == [(2, 4, 3)]
    types_in, types_out = [None], ["float16"]
    assert op.run_infer_type(attrs, types_in, types_out) and types_in == ["float16"]


def test_broadcast_axis():
    rng = seeded_rng(4)
    x = rng.uniform(-1, 1, size=(1, 3, 1))
    for dtype in FLOATS:
        y = mx.nd.broadcast_axis(mx.nd.array(x, dtype=dtype), axis=(0, 2), size=(2, 4))
        assert y.dtype == np.dtype(dtype)
        assert_almost_equal(y, np.broadcast_to(x.astype(dtype), (2, 3, 4)))
    assert mx.nd.broadcast_axes(mx.nd.ones((3, 1)), axis=1, size=5).shape == (3, 5)
    assert mx.nd.broadcast_axis(mx.nd.ones((1, 3))).shape == (1, 3)  # MXNet 1.9.1: no axes = copy
    check_imperative_gradient(lambda a: mx.nd.broadcast_axis(a, axis=(0, 2), size=(2, 4)), [x])
    check_req("broadcast_axis", [x.astype(np.float32)], axis=(0, 2), size=(2, 4))
    op = mx.operator.get("broadcast_axis")
    attrs = op.parse_attrs({"axis": (0, 2), "size": (2, 4)})
    ins, outs = [None], [(2, 3, 4)]
    assert op.run_infer_shape(attrs, ins, outs) and ins == [(1, 3, 1)]  # fully inferred backwards
    # MXNet 1.9.1 errors: non-1 axis, length mismatch, negative axis, repeated axis
    with pytest.raises(InferenceError, match=r"broadcast_axis: broadcasting axis 0 must have size 1.*size 2"):
        mx.nd.broadcast_axis(mx.nd.ones((2, 3)), axis=0, size=4)
    with pytest.raises(
        InferenceError, match=r"broadcast_axis: axis=\(0, 1\) and size=\(4,\) must have the same length"
    ):
        mx.nd.broadcast_axis(mx.nd.ones((1, 3)), axis=(0, 1), size=(4,))
    with pytest.raises(InferenceError, match=r"broadcast_axis: axis -1 is out of range"):
        mx.nd.broadcast_axis(mx.nd.ones((1, 3, 1)), axis=-1, size=4)
    with pytest.raises(InferenceError, match=r"broadcast_axis: broadcasting axis 0 must have size 1"):
        mx.nd.broadcast_axis(mx.nd.ones((1, 3)), axis=(0, 0), size=(2, 4))


def test_broadcast_like():
    rng = seeded_rng(5)
    x, other = rng.uniform(-1, 1, size=(1, 3)), rng.uniform(-1, 1, size=(4, 3))
    for dtype in FLOATS:
        y = mx.nd.broadcast_like(mx.nd.array(x, dtype=dtype), mx.nd.array(other, dtype=dtype))
        assert_almost_equal(y, np.broadcast_to(x.astype(dtype), (4, 3)))
    check_imperative_gradient(mx.nd.broadcast_like, [x, other])  # rhs gradient is 0
    check_req("broadcast_like", [x.astype(np.float32), other.astype(np.float32)])
    # MXNet 1.9.1: lhs_axes/rhs_axes copy sizes axis by axis, negative axes allowed
    lhs, rhs = mx.nd.array([[1.0, 2.0]]), mx.nd.ones((2, 3, 4))
    lhs.attach_grad()
    with mx.autograd.record():
        y = mx.nd.broadcast_like(lhs, rhs, lhs_axes=(0,), rhs_axes=(1,))
    y.backward()
    assert y.asnumpy().tolist() == [[1, 2]] * 3
    assert lhs.grad.asnumpy().tolist() == [[3, 3]]
    assert mx.nd.broadcast_like(mx.nd.ones((1, 2)), rhs, lhs_axes=(-2,), rhs_axes=(-1,)).shape == (4, 2)
    with pytest.raises(InferenceError, match=r"broadcast_like: lhs axis 0 of shape \(2, 2\) has size 2"):
        mx.nd.broadcast_like(mx.nd.ones((2, 2)), rhs, lhs_axes=(0,), rhs_axes=(1,))
    with pytest.raises(InferenceError, match=r"broadcast_like: lhs axis 1 of shape \(1, 2\) has size 2"):
        mx.nd.broadcast_like(mx.nd.ones((1, 2)), mx.nd.ones((2, 2, 4)), lhs_axes=(1,), rhs_axes=(1,))
    with pytest.raises(InferenceError, match=r"broadcast_like: lhs_axes=\(0, 1\) and rhs_axes=\(1,\) must have"):
        mx.nd.broadcast_like(mx.nd.ones((1, 2)), rhs, lhs_axes=(0, 1), rhs_axes=(1,))
    with pytest.raises(InferenceError, match=r"broadcast_like: array cannot be broadcast from \(2, 3\) to \(4, 3\)"):
        mx.nd.broadcast_like(mx.nd.ones((2, 3)), mx.nd.ones((4, 3)))
    with pytest.raises(InferenceError, match=r"broadcast_like: .*\(3,\).*\(4, 3\).*number of dimensions"):
        mx.nd.broadcast_like(mx.nd.ones((3,)), mx.nd.ones((4, 3)))


# ---------------------------------------------------------------------------- clip
def test_clip_forward_backward_req():
    rng = seeded_rng(6)
    for dtype in FLOATS:
        for ndim in range(1, 6):
            x = rng.uniform(-2, 2, size=rand_shape_nd(ndim, 3, rng=rng)).astype(dtype)
            y = mx.nd.clip(mx.nd.array(x, dtype=x.dtype), a_min=-0.5, a_max=1.0)
            assert y.dtype == np.dtype(dtype)
            assert_almost_equal(y, np.clip(x.astype(np.float64), -0.5, 1.0))
    x = rng.uniform(-2, 2, size=(2, 3))
    x = np.where(np.abs(x + 0.5) < 0.1, x + 0.3, x)
    x = np.where(np.abs(x - 1.0) < 0.1, x + 0.3, x)
    check_imperative_gradient(lambda a: mx.nd.clip(a, a_min=-0.5, a_max=1.0), [x])
    check_req("clip", [x.astype(np.float32)], a_min=-0.5, a_max=1.0)
    z = mx.nd.array([[-3.0, 0.0], [3.0, 0.5]])
    z.clip(a_min=0.0, a_max=1.0, out=z)  # in place
    assert z.asnumpy().tolist() == [[0, 0], [1, 0.5]]


def test_clip_matches_mxnet():
    # MXNet 1.9.1: the gradient passes at both ends; a_min > a_max tests a_max first; NaN stays.
    x = mx.nd.array([0.0, 1.0, 1.5, 2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.clip(x, a_min=1.0, a_max=2.0)
    y.backward()
    assert x.grad.asnumpy().tolist() == [0, 1, 1, 1, 0]
    assert mx.nd.clip(mx.nd.ones((2,)), a_min=2.0, a_max=1.0).asnumpy().tolist() == [2, 2]
    assert mx.nd.clip(mx.nd.array([3.0, 0.0]), a_min=2.0, a_max=1.0).asnumpy().tolist() == [1, 2]
    got = mx.nd.clip(mx.nd.array([np.nan, 5.0]), a_min=0.0, a_max=1.0).asnumpy()
    assert np.isnan(got[0]) and got[1] == 1
    with pytest.raises(OperatorParamError, match=r"clip: required parameter 'a_min' is missing"):
        mx.nd.clip(mx.nd.ones((2,)), a_max=1.0)
    with pytest.raises(OperatorParamError, match=r"clip: parameter 'a_max' expects a number"):
        mx.nd.clip(mx.nd.ones((2,)), a_min=0.0, a_max="big")


# ---------------------------------------------------------------------------- where
def test_where_forward_backward_req():
    rng = seeded_rng(7)
    for dtype in FLOATS:
        for ndim in range(1, 6):
            shape = rand_shape_nd(ndim, 3, rng=rng)
            cond = rng.integers(0, 2, size=shape).astype(dtype)
            x, y = (rng.uniform(-1, 1, size=shape).astype(dtype) for _ in range(2))
            out = mx.nd.where(
                mx.nd.array(cond, dtype=cond.dtype), mx.nd.array(x, dtype=x.dtype), mx.nd.array(y, dtype=y.dtype)
            )
            assert out.dtype == np.dtype(dtype)
            assert_almost_equal(out, np.where(cond != 0, x, y))
    cond = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, -1.0]])
    x, y = rng.uniform(-1, 1, size=(2, 3)), rng.uniform(-1, 1, size=(2, 3))
    check_imperative_gradient(mx.nd.where, [cond, x, y], grad_nodes=[1, 2])
    check_req("where", [cond.astype(np.float32), x.astype(np.float32), y.astype(np.float32)])


def test_where_matches_mxnet():
    # MXNet 1.9.1: a 1-D condition selects rows; the condition gets a zero gradient;
    # the condition's dtype may differ from x's.
    c = mx.nd.array([1.0, 0.0])
    x, y = mx.nd.array([[1.0, 2.0], [3.0, 4.0]]), mx.nd.array([[5.0, 6.0], [7.0, 8.0]])
    for a in (c, x, y):
        a.attach_grad()
    with mx.autograd.record():
        out = mx.nd.where(c, x, y)
    out.backward()
    assert out.asnumpy().tolist() == [[1, 2], [7, 8]]
    assert c.grad.asnumpy().tolist() == [0, 0]
    assert x.grad.asnumpy().tolist() == [[1, 1], [0, 0]] and y.grad.asnumpy().tolist() == [[0, 0], [1, 1]]
    mixed = mx.nd.where(mx.nd.ones((2, 3), dtype="int32"), mx.nd.ones((2, 3)), mx.nd.zeros((2, 3)))
    assert mixed.dtype == np.float32 and mixed.asnumpy().sum() == 6
    assert mx.nd.where(
        mx.nd.array([0.5, 0.0]), mx.nd.array([1.0, 2.0]), mx.nd.array([3.0, 4.0])
    ).asnumpy().tolist() == [
        1,
        4,
    ]
    with pytest.raises(InferenceError, match=r"where: a 1-D condition of shape \(3,\) must have x.shape\[0\] = 2"):
        mx.nd.where(mx.nd.ones((3,)), mx.nd.ones((2, 3)), mx.nd.ones((2, 3)))
    with pytest.raises(InferenceError, match=r"where: x, y and the output must have one shape"):
        mx.nd.where(mx.nd.ones((2, 3)), mx.nd.ones((2, 3)), mx.nd.zeros((3, 2)))
    with pytest.raises(InferenceError, match=r"where: condition of shape \(3, 2\) must have the shape of x"):
        mx.nd.where(mx.nd.ones((3, 2)), mx.nd.ones((2, 3, 1)), mx.nd.ones((2, 3, 1)))
    with pytest.raises(InferenceError, match=r"where.*shape inconsistent.*condition"):
        mx.nd.where(mx.nd.ones((3, 2)), mx.nd.ones((2, 3)), mx.nd.ones((2, 3)))


def test_where_inference():
    op = mx.operator.get("where")
    attrs = op.parse_attrs({})
    ins, outs = [None, (2, 0), None], [(0, 3)]
    assert not op.run_infer_shape(attrs, ins, outs) and ins[1:] == [(2, 3), (2, 3)] and outs == [(2, 3)]
    ins, outs = [(0, 0), (2, 3), None], [None]
    assert op.run_infer_shape(attrs, ins, outs) and ins[0] == (2, 3)
    ins, outs = [(2,), None, None], [(2, 3)]
    assert op.run_infer_shape(attrs, ins, outs) and ins == [(2,), (2, 3), (2, 3)]
    types_in, types_out = ["int32", None, None], ["float16"]
    assert op.run_infer_type(attrs, types_in, types_out) and types_in == ["int32", "float16", "float16"]
