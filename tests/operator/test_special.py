"""Special functions (erf, erfinv, gamma, gammaln) and hard_sigmoid against SciPy/NumPy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp
from op_helpers import infer_shapes, infer_types, seeded_rng, to_nd

import framework as mx
from framework.operator import OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req, rand_shape_nd

nd = mx.nd
FLOATS = ["float16", "float32", "float64"]
# name, scipy reference, input range keeping finite differences away from poles and +-1
SPECIAL = [
    ("erf", sp.erf, (-2.0, 2.0)),
    ("erfinv", sp.erfinv, (-0.9, 0.9)),
    ("gamma", sp.gamma, (0.3, 4.0)),
    ("gammaln", sp.gammaln, (0.3, 4.0)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,reference,bounds", SPECIAL)
def test_special_forward_matches_scipy(name, reference, bounds, dtype):
    rng = seeded_rng(1)
    x = rng.uniform(*bounds, rand_shape_nd(3, 4, rng=rng)).astype(dtype)
    got = getattr(nd, name)(to_nd(x, dtype))
    assert got.dtype == np.dtype(dtype) and got.shape == x.shape
    assert_almost_equal(got, reference(x.astype(np.float64)).astype(dtype))


@pytest.mark.parametrize("name,reference,bounds", SPECIAL)
def test_special_gradient_and_req(name, reference, bounds):
    rng = seeded_rng(2)
    x = rng.uniform(*bounds, (2, 3))
    check_imperative_gradient(getattr(nd, name), [x])
    check_req(name, [x.astype(np.float32)])


def test_special_edge_values_follow_mxnet():
    # MXNet 1.9.1: erfinv(+-1) = +-inf, erfinv(2) = nan, gamma(0) = inf, gammaln(-0.5) = log|gamma(-0.5)|
    got = nd.erfinv(nd.array([-1.0, 1.0, 2.0])).asnumpy()
    assert got[0] == -np.inf and got[1] == np.inf and np.isnan(got[2])
    assert nd.gamma(nd.array([0.0])).asnumpy()[0] == np.inf
    assert_almost_equal(nd.gammaln(nd.array([-0.5])), np.array([1.2655121], np.float32))


def test_special_inference_both_directions():
    ins, _, done = infer_shapes("erf", {}, [None], [(2, 3)])
    assert ins == [(2, 3)] and done
    ins, _outs = infer_types("gammaln", {}, [None], ["float16"])
    assert ins == ["float16"]


@pytest.mark.parametrize("dtype", FLOATS)
def test_hard_sigmoid_forward(dtype):
    rng = seeded_rng(3)
    x = rng.uniform(-5, 5, rand_shape_nd(3, 5, rng=rng)).astype(dtype)
    got = nd.hard_sigmoid(to_nd(x, dtype), alpha=0.25, beta=0.4)
    expected = np.clip(0.25 * x.astype(np.float64) + 0.4, 0, 1)
    assert_almost_equal(got, expected.astype(dtype))
    assert_almost_equal(nd.hard_sigmoid(nd.array([-10.0, 0.0, 10.0])), np.array([0.0, 0.5, 1.0], np.float32))


def test_hard_sigmoid_gradient_req_and_params():
    rng = seeded_rng(4)
    x = rng.uniform(-4, 4, (3, 4))
    x = np.where(np.abs(np.abs(0.2 * x + 0.5) - 0.5) < 0.05, 0.1, x)  # away from the kinks
    check_imperative_gradient(nd.hard_sigmoid, [x])
    check_req("hard_sigmoid", [x.astype(np.float32)], alpha=0.3, beta=0.2)
    with pytest.raises(OperatorParamError, match="alpha"):
        nd.hard_sigmoid(nd.ones((2,)), alpha="steep")
