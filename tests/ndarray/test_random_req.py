"""Every sampler honours req (write/add/null) when its generator is reseeded identically."""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req

DATA = np.ones((3, 4), dtype=np.float32)
RATE = np.array([0.5, 2.0], dtype=np.float32)
SECOND = np.array([1.5, 3.0], dtype=np.float32)
PROBABILITY = np.array([0.3, 0.6], dtype=np.float32)

CASES = [
    ("_random_negative_binomial", [], {"k": 3, "p": 0.4, "shape": (5,)}),
    ("_random_generalized_negative_binomial", [], {"mu": 2.0, "alpha": 0.5, "shape": (5,)}),
    ("_random_uniform_like", [DATA], {"low": -1.0, "high": 1.0}),
    ("_random_normal_like", [DATA], {"loc": 0.0, "scale": 2.0}),
    ("_random_exponential_like", [DATA], {"lam": 2.0}),
    ("_random_gamma_like", [DATA], {"alpha": 2.0, "beta": 1.0}),
    ("_random_poisson_like", [DATA], {"lam": 3.0}),
    ("_random_negative_binomial_like", [DATA], {"k": 2, "p": 0.5}),
    ("_random_generalized_negative_binomial_like", [DATA], {"mu": 1.0, "alpha": 0.3}),
    ("_sample_uniform", [RATE - 1, RATE], {"shape": (3,)}),
    ("_sample_normal", [RATE, SECOND], {"shape": (3,)}),
    ("_sample_exponential", [RATE], {"shape": (3,)}),
    ("_sample_gamma", [RATE, SECOND], {"shape": (3,)}),
    ("_sample_poisson", [RATE], {"shape": (3,)}),
    ("_sample_negative_binomial", [SECOND, PROBABILITY], {"shape": (3,)}),
    ("_sample_generalized_negative_binomial", [RATE, SECOND], {"shape": (3,)}),
]


@pytest.mark.parametrize(("name", "inputs", "params"), CASES, ids=[c[0] for c in CASES])
def test_sampler_honours_req_and_is_reproducible(name, inputs, params):
    check_req(name, inputs, **params)
    arrays = [mx.nd.array(x) for x in inputs]
    mx.random.seed(11)
    first = getattr(mx.nd.op, name)(*arrays, **params).asnumpy()
    mx.random.seed(11)
    second = getattr(mx.nd.op, name)(*arrays, **params).asnumpy()
    assert np.array_equal(first, second)


def test_grad_add_forward_gradient_and_req():
    lhs, rhs = np.random.rand(2, 3), np.random.rand(2, 3)
    assert_almost_equal(mx.nd.op._grad_add(mx.nd.array(lhs), mx.nd.array(rhs)), lhs + rhs)
    check_req("_grad_add", [lhs, rhs])
    check_imperative_gradient(mx.nd.op._grad_add, [lhs, rhs])
