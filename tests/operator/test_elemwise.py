"""Element-wise unary, binary, scalar operators and ElementWiseSum against NumPy and MXNet 1.9.

Expectations marked "MXNet 1.9.1" were read off the real MXNet (pip ``mxnet==1.9.1``) and
are written here as plain values; the tests never import MXNet.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import away_from_zero, mod_reference, seeded_rng

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req, rand_shape_nd

FLOATS = ["float16", "float32", "float64"]


def _op(name: str):
    return getattr(mx.nd.op, name)


def _sample(rng: np.random.Generator, shape: tuple[int, ...], low: float, high: float, gap: float = 0.0) -> np.ndarray:
    """Uniform in [low, high]; with ``gap`` > 0, at least ``gap`` away from 0 (kinks of abs/relu)."""
    x = rng.uniform(low, high, size=shape)
    return away_from_zero(x, gap) if gap else x


def _off_grid(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Values 0.1..0.4 past an integer: far from every jump of floor/ceil/round/rint/fix/sign."""
    return rng.integers(-3, 3, size=shape) + rng.uniform(0.1, 0.4, size=shape)


def _round_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _rint_floor_ties(x: np.ndarray) -> np.ndarray:
    lo, hi = np.floor(x), np.ceil(x)
    return np.where(x - lo <= hi - x, lo, hi)


# name: (numpy reference, low, high, gap away from 0, differentiable)
UNARY = {
    "abs": (np.abs, -2, 2, 0.1, True),
    "sign": (np.sign, -2, 2, 0.1, False),
    "exp": (np.exp, -2, 2, 0, True),
    "log": (np.log, 0.5, 3, 0, True),
    "log2": (np.log2, 0.5, 3, 0, True),
    "log10": (np.log10, 0.5, 3, 0, True),
    "log1p": (np.log1p, -0.5, 2, 0, True),
    "expm1": (np.expm1, -1, 1, 0, True),
    "sqrt": (np.sqrt, 0.5, 3, 0, True),
    "rsqrt": (lambda x: 1 / np.sqrt(x), 0.5, 3, 0, True),
    "cbrt": (np.cbrt, 0.5, 3, 0, True),
    "rcbrt": (lambda x: 1 / np.cbrt(x), 0.5, 3, 0, True),
    "square": (np.square, -2, 2, 0, True),
    "reciprocal": (np.reciprocal, 0.5, 2, 0, True),
    "negative": (np.negative, -2, 2, 0, True),
    "sin": (np.sin, -2, 2, 0, True),
    "cos": (np.cos, -2, 2, 0, True),
    "tan": (np.tan, -1, 1, 0, True),
    "arcsin": (np.arcsin, -0.8, 0.8, 0, True),
    "arccos": (np.arccos, -0.8, 0.8, 0, True),
    "arctan": (np.arctan, -2, 2, 0, True),
    "sinh": (np.sinh, -2, 2, 0, True),
    "cosh": (np.cosh, -2, 2, 0, True),
    "tanh": (np.tanh, -2, 2, 0, True),
    "arcsinh": (np.arcsinh, -2, 2, 0, True),
    "arccosh": (np.arccosh, 1.5, 3, 0, True),
    "arctanh": (np.arctanh, -0.8, 0.8, 0, True),
    "degrees": (np.degrees, -2, 2, 0, True),
    "radians": (np.radians, -90, 90, 0, True),
    "floor": (np.floor, -3, 3, 0, False),
    "ceil": (np.ceil, -3, 3, 0, False),
    "round": (_round_away, -3, 3, 0, False),
    "rint": (_rint_floor_ties, -3, 3, 0, False),
    "fix": (np.trunc, -3, 3, 0, False),
    "trunc": (np.trunc, -3, 3, 0, False),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), -3, 3, 0, True),
    "relu": (lambda x: np.maximum(x, 0), -2, 2, 0.1, True),
    "softsign": (lambda x: x / (1 + np.abs(x)), -2, 2, 0, True),
    "logical_not": (lambda x: (x == 0).astype(x.dtype), -1, 1, 0, False),
    "_copy": (lambda x: x, -2, 2, 0, True),
    "identity": (lambda x: x, -2, 2, 0, True),
    "BlockGrad": (lambda x: x, -2, 2, 0, False),
    "stop_gradient": (lambda x: x, -2, 2, 0, False),
}


# ---------------------------------------------------------------------------- unary
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_forward_matches_numpy(name):
    ref, low, high, gap, _ = UNARY[name]
    rng = seeded_rng(1)
    for dtype in FLOATS:
        for ndim in range(1, 6):
            x = _sample(rng, rand_shape_nd(ndim, 3, rng=rng), low, high, gap).astype(dtype)
            y = _op(name)(mx.nd.array(x, dtype=x.dtype))
            assert y.dtype == np.dtype(dtype) and y.shape == x.shape
            assert_almost_equal(y, ref(x.astype(np.float64)))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_backward(name):
    _ref, low, high, gap, differentiable = UNARY[name]
    rng = seeded_rng(2)
    if differentiable:
        x = _sample(rng, (2, 3), low, high, gap)
        check_imperative_gradient(_op(name), [x])
    else:
        x = mx.nd.array(_off_grid(rng, (2, 3)) if low < 0 else _sample(rng, (2, 3), low, high))
        x.attach_grad()
        with mx.autograd.record():
            y = _op(name)(x) * 3 + x
        y.backward()
        assert_almost_equal(x.grad, np.ones((2, 3)))  # only the "+ x" path contributes


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_req(name):
    _, low, high, gap, _ = UNARY[name]
    check_req(name, [_sample(seeded_rng(3), (3, 4), low, high, gap).astype(np.float32)])


def test_unary_in_place_and_methods():
    x = mx.nd.array([[-1.0, 4.0], [9.0, -16.0]])
    mx.nd.abs(x, out=x)
    mx.nd.sqrt(x, out=x)
    assert_almost_equal(x, np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert_almost_equal(x.exp(), np.exp([[1.0, 2.0], [3.0, 4.0]]))
    assert_almost_equal(-x, -np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert_almost_equal(abs(-x), np.array([[1.0, 2.0], [3.0, 4.0]]))


def test_unary_dependencies_for_memory_planning():
    """Backward inputs as MXNet declares them: relu/exp/tanh/sigmoid keep the output, log the input."""
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        outs = {name: _op(name)(x) for name in ("relu", "exp", "tanh", "sigmoid", "sqrt", "log", "square")}
    for name, y in outs.items():
        node = y._entry.node
        backward = node.op.gradient(node, [y._entry])[0].node
        kept = backward.inputs[1]
        uses_output = name in ("relu", "exp", "tanh", "sigmoid", "sqrt")
        assert (kept.node is node) == uses_output, name
        assert mx.operator.get(name).inplace_option(node.attrs) == [(0, 0)]


def test_rounding_matches_mxnet():
    # MXNet 1.9.1: round halves away from zero, rint halves towards -inf, fix towards zero.
    x = mx.nd.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])
    assert mx.nd.round(x).asnumpy().tolist() == [-3, -2, -1, 1, 2, 3]
    assert mx.nd.rint(x).asnumpy().tolist() == [-3, -2, -1, 0, 1, 2]
    assert mx.nd.fix(x).asnumpy().tolist() == [-2, -1, -0, 0, 1, 2]
    assert mx.nd.round(mx.nd.array([0.5, 1.5, 2.5], dtype="float16")).asnumpy().tolist() == [1, 2, 3]


def test_kink_gradients_match_mxnet():
    # MXNet 1.9.1: relu'(0) = 0, abs'(0) = 0, sign' = 0; softsign'(0) = 1.
    x = mx.nd.array([-1.0, 0.0, 1.0])
    x.attach_grad()
    for name, expected in (
        ("relu", [0, 0, 1]),
        ("abs", [-1, 0, 1]),
        ("sign", [0, 0, 0]),
        ("softsign", [0.25, 1, 0.25]),
    ):
        with mx.autograd.record():
            y = _op(name)(x)
        y.backward()
        assert_almost_equal(x.grad, np.array(expected, dtype=np.float32))


def test_integer_unary_keeps_dtype():
    # MXNet 1.9.1: sqrt of int32 [4, 9] is int32 [2, 3]; relu of int32 [-1, 2] is [0, 2].
    assert mx.nd.sqrt(mx.nd.array([4, 9], dtype="int32")).asnumpy().tolist() == [2, 3]
    r = mx.nd.relu(mx.nd.array([-1, 2], dtype="int32"))
    assert r.dtype == np.int32 and r.asnumpy().tolist() == [0, 2]


def test_block_grad_stops_gradient():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.stop_gradient(x * x) + mx.nd.BlockGrad(x) + mx.nd.identity(x) * 2
    y.backward()
    assert_almost_equal(x.grad, np.array([2.0, 2.0]))


def test_unary_shape_and_type_inference():
    op = mx.operator.get("exp")
    attrs = op.parse_attrs({})
    ins, outs = [None], [(2, 3)]
    assert op.run_infer_shape(attrs, ins, outs) and ins == [(2, 3)]
    ins, outs = [(2, 0)], [(0, 3)]
    assert op.run_infer_shape(attrs, ins, outs) and ins == [(2, 3)] and outs == [(2, 3)]
    ins, outs = [None], [None]
    assert not op.run_infer_shape(attrs, ins, outs)
    types_in, types_out = [None], ["float16"]
    assert op.run_infer_type(attrs, types_in, types_out) and types_in == ["float16"]
    with pytest.raises(InferenceError, match=r"exp.*shape inconsistent"):
        op.run_infer_shape(attrs, [(2, 3)], [(3, 2)])
    back = mx.operator.get("_backward_exp")
    ins, outs = [(4,), None], [None]
    assert back.run_infer_shape(back.parse_attrs({}), ins, outs) and outs == [(4,)]


def test_unary_bad_inputs():
    x = mx.nd.ones((2, 3))
    with pytest.raises(OperatorParamError, match=r"exp: unknown parameter.*'foo'"):
        mx.nd.exp(x, foo=1)
    with pytest.raises(InferenceError, match=r"sqrt.*shape inconsistent.*\(2, 3\)"):
        mx.nd.sqrt(x, out=mx.nd.zeros((3, 2)))
    with pytest.raises(InferenceError, match=r"relu.*type inconsistent"):
        mx.nd.relu(x, out=mx.nd.zeros((2, 3), dtype="float64"))


# ---------------------------------------------------------------------------- binary, same shape
# name: (reference, lhs sampler, rhs sampler) with samplers (rng, shape) -> float64 array
def _u(low, high, gap=0.0):
    return lambda rng, shape: _sample(rng, shape, low, high, gap)


BINARY = {
    "elemwise_add": (np.add, _u(-2, 2), _u(-2, 2)),
    "elemwise_sub": (np.subtract, _u(-2, 2), _u(-2, 2)),
    "elemwise_mul": (np.multiply, _u(-2, 2), _u(-2, 2)),
    "elemwise_div": (np.divide, _u(-2, 2), _u(-2, 2, 0.5)),
    "_power": (np.power, _u(0.5, 2), _u(-2, 2)),
    "_maximum": (np.maximum, _u(-2, 2), _u(-2, 2)),
    "_minimum": (np.minimum, _u(-2, 2), _u(-2, 2)),
    "_hypot": (np.hypot, _u(-2, 2, 0.2), _u(-2, 2, 0.2)),
    "_mod": (mod_reference, _u(-5, 5), _u(-2, 2, 0.5)),
}
COMPARE = {
    "_equal": np.equal,
    "_not_equal": np.not_equal,
    "_greater": np.greater,
    "_greater_equal": np.greater_equal,
    "_lesser": np.less,
    "_lesser_equal": np.less_equal,
    "_logical_and": lambda a, b: np.logical_and(a != 0, b != 0),
    "_logical_or": lambda a, b: np.logical_or(a != 0, b != 0),
    "_logical_xor": lambda a, b: np.logical_xor(a != 0, b != 0),
}
ALIASES = {
    "_plus": "elemwise_add",
    "_Plus": "elemwise_add",
    "_add": "elemwise_add",
    "_minus": "elemwise_sub",
    "_Minus": "elemwise_sub",
    "_sub": "elemwise_sub",
    "_mul": "elemwise_mul",
    "_Mul": "elemwise_mul",
    "_div": "elemwise_div",
    "_Div": "elemwise_div",
    "_Power": "_power",
    "_Maximum": "_maximum",
    "_Minimum": "_minimum",
    "_Mod": "_mod",
    "_Hypot": "_hypot",
    "_Equal": "_equal",
    "_Not_Equal": "_not_equal",
    "_Greater": "_greater",
    "_Greater_Equal": "_greater_equal",
    "_Lesser": "_lesser",
    "_Lesser_Equal": "_lesser_equal",
    "ElementWiseSum": "add_n",
    "_ElementWiseSum": "add_n",
    "identity": "_copy",
    "stop_gradient": "BlockGrad",
    "_PlusScalar": "_plus_scalar",
    "_RMinusScalar": "_rminus_scalar",
    "_RPowerScalar": "_rpower_scalar",
    "_LesserEqualScalar": "_lesser_equal_scalar",
}


@pytest.mark.parametrize(("alias", "target"), sorted(ALIASES.items()))
def test_aliases(alias, target):
    assert mx.operator.get(alias) is mx.operator.get(target)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_forward(name):
    ref, left, right = BINARY[name]
    rng = seeded_rng(4)
    for dtype in FLOATS:
        for ndim in range(1, 6):
            shape = rand_shape_nd(ndim, 3, rng=rng)
            a, b = left(rng, shape).astype(dtype), right(rng, shape).astype(dtype)
            y = _op(name)(mx.nd.array(a, dtype=a.dtype), mx.nd.array(b, dtype=b.dtype))
            assert y.dtype == np.dtype(dtype)
            assert_almost_equal(y, ref(a.astype(np.float64), b.astype(np.float64)))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_backward_and_req(name):
    _, left, right = BINARY[name]
    rng = seeded_rng(5)
    a, b = left(rng, (2, 3)), right(rng, (2, 3))
    if name == "_mod":  # keep a / b away from integers, where mod jumps
        a = b * (rng.integers(-2, 2, size=(2, 3)) + rng.uniform(0.2, 0.8, size=(2, 3)))
    if name in ("_maximum", "_minimum"):  # no ties
        b = a + np.where(rng.uniform(size=(2, 3)) < 0.5, -0.5, 0.5)
    check_imperative_gradient(_op(name), [a, b])
    check_req(name, [a.astype(np.float32), b.astype(np.float32)])


@pytest.mark.parametrize("name", sorted(COMPARE))
def test_comparisons(name):
    rng = seeded_rng(6)
    for dtype in FLOATS:
        a = rng.integers(0, 3, size=(3, 4)).astype(dtype)  # small integers: plenty of ties and zeros
        b = rng.integers(0, 3, size=(3, 4)).astype(dtype)
        y = _op(name)(mx.nd.array(a, dtype=a.dtype), mx.nd.array(b, dtype=b.dtype))
        assert y.dtype == np.dtype(dtype)  # 1/0 in the input dtype, as MXNet
        assert_almost_equal(y, COMPARE[name](a, b).astype(dtype))
    x, z = mx.nd.array(a, dtype=a.dtype), mx.nd.array(b, dtype=b.dtype)
    x.attach_grad()
    z.attach_grad()
    with mx.autograd.record():
        y = _op(name)(x, z) + x * z
    y.backward()
    assert_almost_equal(x.grad, b)
    assert_almost_equal(z.grad, a)
    check_req(name, [a, b])


def test_max_min_tie_gradients_match_mxnet():
    # MXNet 1.9.1: _maximum([1,2,3], [2,2,2]) gives d/dlhs = [0,1,1], d/drhs = [1,0,0];
    # _minimum gives d/dlhs = [1,1,0], d/drhs = [0,0,1].
    for name, dl, dr in (("_maximum", [0, 1, 1], [1, 0, 0]), ("_minimum", [1, 1, 0], [0, 0, 1])):
        a, b = mx.nd.array([1.0, 2.0, 3.0]), mx.nd.array([2.0, 2.0, 2.0])
        a.attach_grad()
        b.attach_grad()
        with mx.autograd.record():
            y = _op(name)(a, b)
        y.backward()
        assert a.grad.asnumpy().tolist() == dl and b.grad.asnumpy().tolist() == dr


def test_mod_matches_mxnet():
    # MXNet 1.9.1: divisor's sign; x mod 0 = 0; d/drhs = -floor(lhs / rhs).
    a, b = mx.nd.array([5.0, -5.0, 7.0, 3.0]), mx.nd.array([3.0, 3.0, -2.0, 0.0])
    assert mx.nd.op._mod(a, b).asnumpy().tolist() == [2, 1, -1, 0]
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = mx.nd.op._mod(a[0:3], b[0:3])
    y.backward()
    assert b.grad.asnumpy().tolist()[:3] == [-1, 2, 4]


def test_binary_inference_and_errors():
    op = mx.operator.get("elemwise_mul")
    attrs = op.parse_attrs({})
    ins, outs = [None, (2, 0)], [(0, 3)]
    assert op.run_infer_shape(attrs, ins, outs) and ins == [(2, 3), (2, 3)] and outs == [(2, 3)]
    types_in, types_out = [None, None], ["float64"]
    assert op.run_infer_type(attrs, types_in, types_out) and types_in == ["float64", "float64"]
    with pytest.raises(InferenceError, match=r"elemwise_add.*\(2, 3\).*\(2, 4\).*broadcast"):
        mx.nd.elemwise_add(mx.nd.ones((2, 3)), mx.nd.ones((2, 4)))
    with pytest.raises(InferenceError, match=r"elemwise_add.*type inconsistent.*float"):
        mx.nd.elemwise_add(mx.nd.ones((2,)), mx.nd.ones((2,), dtype="float64"))
    with pytest.raises(mx.MXLabError, match=r"_maximum: expected 2 input"):
        mx.nd.invoke("_maximum", [mx.nd.ones((2,))])


# ---------------------------------------------------------------------------- scalar ops
def _scalar_cases(s: float):
    return {
        "_plus_scalar": lambda x: x + s,
        "_minus_scalar": lambda x: x - s,
        "_rminus_scalar": lambda x: s - x,
        "_mul_scalar": lambda x: x * s,
        "_div_scalar": lambda x: x / s,
        "_rdiv_scalar": lambda x: s / x,
        "_mod_scalar": lambda x: np.mod(x, s),
        "_rmod_scalar": lambda x: np.mod(s, x),
        "_power_scalar": lambda x: x**s,
        "_rpower_scalar": lambda x: s**x,
        "_maximum_scalar": lambda x: np.maximum(x, s),
        "_minimum_scalar": lambda x: np.minimum(x, s),
        "_hypot_scalar": lambda x: np.hypot(x, s),
        "_equal_scalar": lambda x: (x == s).astype(x.dtype),
        "_not_equal_scalar": lambda x: (x != s).astype(x.dtype),
        "_greater_scalar": lambda x: (x > s).astype(x.dtype),
        "_greater_equal_scalar": lambda x: (x >= s).astype(x.dtype),
        "_lesser_scalar": lambda x: (x < s).astype(x.dtype),
        "_lesser_equal_scalar": lambda x: (x <= s).astype(x.dtype),
        "_logical_and_scalar": lambda x: ((x != 0) & (s != 0)).astype(x.dtype),
        "_logical_or_scalar": lambda x: ((x != 0) | (s != 0)).astype(x.dtype),
        "_logical_xor_scalar": lambda x: ((x != 0) ^ (s != 0)).astype(x.dtype),
    }


SCALAR_NAMES = sorted(_scalar_cases(1.0))
SCALAR_ZERO_GRAD = {n for n in SCALAR_NAMES if "equal" in n or "greater" in n or "lesser" in n or "logical" in n}


@pytest.mark.parametrize("name", SCALAR_NAMES)
def test_scalar_forward(name):
    rng = seeded_rng(7)
    s = 1.5
    ref = _scalar_cases(s)[name]
    for dtype in FLOATS:
        for ndim in range(1, 6):
            x = _sample(rng, rand_shape_nd(ndim, 3, rng=rng), 0.5, 2.5).astype(dtype)
            if name in SCALAR_ZERO_GRAD:
                x = np.round(x * 2) / 2  # hits the scalar exactly sometimes
            y = _op(name)(mx.nd.array(x, dtype=x.dtype), scalar=s)
            assert y.dtype == np.dtype(dtype)
            assert_almost_equal(y, ref(x.astype(np.float64)))


@pytest.mark.parametrize("name", SCALAR_NAMES)
def test_scalar_backward_and_req(name):
    rng = seeded_rng(8)
    s = 1.7
    x = _sample(rng, (2, 3), 0.5, 2.5)
    if name in ("_maximum_scalar", "_minimum_scalar"):
        x = np.where(np.abs(x - s) < 0.2, x + 0.5, x)
    if name == "_rmod_scalar":  # s / x away from integers
        x = s / (rng.integers(1, 3, size=(2, 3)) + rng.uniform(0.2, 0.8, size=(2, 3)))
    if name in SCALAR_ZERO_GRAD:
        a = mx.nd.array(x, dtype=x.dtype)
        a.attach_grad()
        with mx.autograd.record():
            y = _op(name)(a, scalar=s) * 5 + a
        y.backward()
        assert_almost_equal(a.grad, np.ones((2, 3)))
    else:
        check_imperative_gradient(lambda a: _op(name)(a, scalar=s), [x])
    check_req(name, [x.astype(np.float32)], scalar=s)


def test_python_operators_use_scalar_ops():
    base = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)
    a = mx.nd.array(base, dtype=base.dtype)
    cases = {
        "a + 1": (a + 1, base + 1),
        "1 + a": (1 + a, 1 + base),
        "1 - a": (1 - a, 1 - base),
        "a - 1": (a - 1, base - 1),
        "2 * a": (2 * a, 2 * base),
        "a / 2": (a / 2, base / 2),
        "2 / a": (2 / a, 2 / base),
        "a ** 2": (a**2, base**2),
        "2 ** a": (2**a, 2**base),
        "a % 4": (a % 4, base % 4),
        "7 % a": (7 % a, 7 % base),
        "a == 1": (a == 1, (base == 1).astype(np.float32)),
        "a != 1": (a != 1, (base != 1).astype(np.float32)),
        "a > 3": (a > 3, (base > 3).astype(np.float32)),
        "a >= 3": (a >= 3, (base >= 3).astype(np.float32)),
        "a < 3": (a < 3, (base < 3).astype(np.float32)),
        "a <= 3": (a <= 3, (base <= 3).astype(np.float32)),
        "np.float32(2) * a": (np.float32(2) * a, 2 * base),
    }
    for text, (got, expected) in cases.items():
        assert got.dtype == np.float32, text
        assert_almost_equal(got, expected, names=(text, "numpy"))
    b = a.copy()
    b += 1
    b -= 0.5
    b *= 4
    b /= 2
    assert_almost_equal(b, (base + 0.5) * 2)
    c = mx.nd.ones((16,))
    for _ in range(10):
        c += 1
    assert c.asnumpy().tolist() == [11.0] * 16


def test_scalar_semantics_match_mxnet():
    # MXNet 1.9.1 casts the scalar to the array's dtype first: int32 * 1.5 multiplies by 1,
    # int32 + 1.5 adds 1; integer division truncates towards zero; x mod 0 is 0.
    i = mx.nd.array([1, 2, 3], dtype="int32")
    assert (i * 1.5).asnumpy().tolist() == [1, 2, 3] and (i * 1.5).dtype == np.int32
    assert (i + 1.5).asnumpy().tolist() == [2, 3, 4]
    assert (mx.nd.array([-3, 3], dtype="int32") / 2).asnumpy().tolist() == [-1, 1]
    assert (mx.nd.array([5, -5], dtype="int32") % 3).asnumpy().tolist() == [2, 1]
    assert (mx.nd.array([5.0, -5.0]) % 0).asnumpy().tolist() == [0, 0]
    assert (5 % mx.nd.array([0.0, 2.0])).asnumpy().tolist() == [0, 1]
    assert (mx.nd.array([1.0, 2.0, 3.0]) == 2).dtype == np.float32
    # ties of the scalar max/min send the gradient through (x >= s, x <= s)
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    for name, expected in (("_maximum_scalar", [0, 1, 1]), ("_minimum_scalar", [1, 1, 0])):
        with mx.autograd.record():
            y = _op(name)(x, scalar=2.0)
        y.backward()
        assert x.grad.asnumpy().tolist() == expected
    # d(2 ** x) = 2 ** x * log 2 (uses the output), d(7 mod x) = -floor(7 / x)
    with mx.autograd.record():
        y = 7 % x
    y.backward()
    assert x.grad.asnumpy().tolist() == [-7, -3, -2]


def test_scalar_params():
    op = mx.operator.get("_plus_scalar")
    assert op.parse_attrs({}).parsed.scalar == 1.0  # MXNet's default
    assert op.parse_attrs({"scalar": "2.5", "is_int": "False"}).parsed.scalar == 2.5
    with pytest.raises(OperatorParamError, match=r"_plus_scalar: parameter 'scalar' expects a number"):
        mx.nd.op._plus_scalar(mx.nd.ones((2,)), scalar="abc")
    with pytest.raises(OperatorParamError, match=r"_mul_scalar: unknown parameter.*'scale'"):
        mx.nd.op._mul_scalar(mx.nd.ones((2,)), scale=2.0)


# ---------------------------------------------------------------------------- ElementWiseSum
def test_add_n_forward_dtypes_and_arity():
    rng = seeded_rng(9)
    for dtype in FLOATS:
        for n in range(1, 6):
            shape = rand_shape_nd(rng.integers(1, 6), 3, rng=rng)
            arrays = [rng.uniform(-1, 1, size=shape).astype(dtype) for _ in range(n)]
            y = mx.nd.add_n(*[mx.nd.array(a, dtype=a.dtype) for a in arrays])
            assert y.dtype == np.dtype(dtype)
            assert_almost_equal(y, np.sum([a.astype(np.float64) for a in arrays], axis=0))
    y = mx.nd.ElementWiseSum(mx.nd.ones((2,)), mx.nd.ones((2,)), num_args=2)
    assert y.asnumpy().tolist() == [2, 2]


def test_add_n_out_aliasing_inputs():
    a, b, c = (mx.nd.array(np.full((3,), v, dtype=np.float32)) for v in (1.0, 2.0, 4.0))
    mx.nd.add_n(a, b, c, out=c)  # the output is the last input: must not be clobbered early
    assert c.asnumpy().tolist() == [7, 7, 7]
    mx.nd.add_n(a, b, c, out=a)
    assert a.asnumpy().tolist() == [10, 10, 10]
    mx.nd.add_n(b, b, out=b)
    assert b.asnumpy().tolist() == [4, 4, 4]


def test_add_n_gradient_and_req():
    rng = seeded_rng(10)
    location = [rng.uniform(-1, 1, size=(2, 3)) for _ in range(3)]
    check_imperative_gradient(lambda a, b, c: mx.nd.add_n(a, b, c) * a, location)
    check_req("ElementWiseSum", [x.astype(np.float32) for x in location], num_args=3)
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():  # x feeds three operators: the gradient pass sums with ElementWiseSum
        y = mx.nd.exp(x) + x * x + mx.nd.sin(x)
    y.backward()
    assert_almost_equal(x.grad, np.exp([1.0, 2.0]) + 2 * np.array([1.0, 2.0]) + np.cos([1.0, 2.0]))


def test_add_n_inference_and_errors():
    op = mx.operator.get("add_n")
    attrs = op.parse_attrs({"num_args": 3})
    assert op.list_input_names(attrs) == ["arg0", "arg1", "arg2"]
    assert op.get_num_inputs(attrs) == 3
    ins, outs = [None, (0, 4), None], [(3, 0)]
    assert op.run_infer_shape(attrs, ins, outs) and ins == [(3, 4)] * 3
    with pytest.raises(OperatorParamError, match=r"add_n: parameter 'num_args' expects a value >= 1"):
        op.parse_attrs({"num_args": 0})
    with pytest.raises(OperatorParamError, match=r"add_n: required parameter 'num_args'"):
        op.parse_attrs({})
    with pytest.raises(InferenceError, match=r"add_n.*shape inconsistent.*\(2,\).*\(3,\)"):
        mx.nd.add_n(mx.nd.ones((2,)), mx.nd.ones((3,)))
