"""Higher-order gradients (``autograd.grad(..., create_graph=True)``), against MXNet 1.9.1.

The cases and the way each derivative is taken live in
tests/data/mxnet_1_9_1/autograd/higher_order.py, which wrote ``higher_order.json`` with real
MXNet; here the same function runs with MXLab. Where MXNet refuses (a backward operator without
a gradient) MXLab refuses too, with two kinds of exceptions listed below, and every second
derivative of the unary table is also checked against finite differences, which is how MXNet's
wrong sign for ``arcsinh`` and ``arccosh`` showed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import framework as mx
from framework.errors import MXNetError

DATA = Path(__file__).resolve().parent / "data" / "mxnet_1_9_1" / "autograd"
_spec = importlib.util.spec_from_file_location("higher_order_cases", DATA / "higher_order.py")
assert _spec is not None and _spec.loader is not None
CASES = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(CASES)
REFERENCE = json.loads((DATA / "higher_order.json").read_text())["cases"]

#: MXNet 1.9.1's second derivative of these has the wrong sign (its own finite differences
#: disagree with it); MXLab gives the right one (docs/differences.md).
SIGN_FIXED = {"arcsinh/2", "arccosh/2"}
#: MXNet stops here (its ``_backward_mul`` behind exp's gradient, ``_backward_sign``, have no
#: gradient); MXLab's formulas go on, so these are checked against their closed forms.
BEYOND_MXNET = {"exp/3": np.exp, "sign/2": np.zeros_like}


def _derivative(case: str) -> list:
    f, values, order = CASES.cases(mx)[case]
    return CASES.derivative(mx, f, values, order)


@pytest.mark.parametrize("case", sorted(REFERENCE))
def test_agrees_with_mxnet_1_9_1(case):
    expected = REFERENCE[case]
    if case in BEYOND_MXNET:
        assert expected == "error"
        _, values, _ = CASES.cases(mx)[case]
        np.testing.assert_allclose(_derivative(case), BEYOND_MXNET[case](np.array(values)), rtol=1e-5)
    elif expected == "error":
        with pytest.raises(MXNetError, match="has no gradient"):
            _derivative(case)
    else:
        sign = -1.0 if case in SIGN_FIXED else 1.0
        np.testing.assert_allclose(_derivative(case), sign * np.array(expected), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", [n for n in CASES.UNARY if REFERENCE[f"{n}/2"] != "error"])
def test_second_derivatives_match_finite_differences(name):
    """float64, central differences of the first derivative: independent of MXNet's numbers."""
    _, values, _ = CASES.cases(mx)[f"{name}/2"]
    f = getattr(mx.nd, name)

    def first(points: np.ndarray) -> np.ndarray:
        x = mx.nd.array(points, dtype="float64")
        x.attach_grad()
        with mx.autograd.record():
            y = f(x)
        y.backward()
        return x.grad.asnumpy()

    points = np.array(values, dtype=np.float64)
    step = 1e-6
    numeric = (first(points + step) - first(points - step)) / (2 * step)
    x = mx.nd.array(points, dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = f(x)
        g = mx.autograd.grad(y, [x], head_grads=mx.nd.ones_like(y), create_graph=True, retain_graph=True)[0]
    g.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), numeric, rtol=1e-5, atol=1e-6)


def test_a_second_derivative_feeds_a_gradient_penalty():
    """The use that asks for it: the norm of a gradient, minimised (WGAN-GP's penalty) through a dense layer."""
    weight = mx.nd.array(CASES.WEIGHT)
    weight.attach_grad()
    x = mx.nd.array(CASES.X)
    x.attach_grad()
    with mx.autograd.record():
        scores = mx.nd.tanh(mx.nd.FullyConnected(x, weight, no_bias=True, num_hidden=2))
        # the head of ones sums the scores (a sum node here would stop it: _backward_sum has no gradient, in MXNet too)
        (grad_x,) = mx.autograd.grad(scores, [x], head_grads=mx.nd.ones_like(scores), create_graph=True)
        penalty = mx.nd.sum(mx.nd.square(grad_x))
    penalty.backward()
    # the same penalty by hand: d score / dx = (1 - tanh(xW^T)^2) W, squared and summed, differentiated numerically
    w, points = np.array(CASES.WEIGHT), np.array(CASES.X)

    def penalty_of(wv: np.ndarray) -> float:
        return float(np.sum(((1 - np.tanh(points @ wv.T) ** 2) @ wv) ** 2))

    numeric = np.zeros_like(w)
    for index in np.ndindex(w.shape):
        bump = np.zeros_like(w)
        bump[index] = 1e-6
        numeric[index] = (penalty_of(w + bump) - penalty_of(w - bump)) / 2e-6
    np.testing.assert_allclose(weight.grad.asnumpy(), numeric, rtol=1e-3, atol=1e-5)


@pytest.mark.skipif(not os.environ.get("MXNET_PYTHON"), reason="set MXNET_PYTHON to an interpreter with MXNet 1.9.1")
def test_the_reference_file_is_what_mxnet_1_9_1_computes(tmp_path):
    target = tmp_path / "higher_order.json"
    subprocess.run([os.environ["MXNET_PYTHON"], str(DATA / "higher_order.py"), str(target)], check=True, timeout=300)
    live = json.loads(target.read_text())["cases"]
    assert live.keys() == REFERENCE.keys()
    for case, value in live.items():
        if value == "error" or REFERENCE[case] == "error":
            assert value == REFERENCE[case], case
        else:
            np.testing.assert_allclose(value, REFERENCE[case], rtol=1e-6, err_msg=case)
