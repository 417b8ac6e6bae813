"""Checks of the ``smooth_l1`` exercise (SimpleOp ``exercise_smooth_l1``)."""

from __future__ import annotations

from typing import Any

import numpy as np

import framework as mx

from ..checker import Check, compare
from ..opcheck import (
    call_compute,
    check_backward_req,
    check_forward_req,
    describe,
    expect_param_error,
    lookup,
    numeric_gradient_via_autograd,
    parse,
    run_backward,
)

OP = "exercise_smooth_l1"
SIGMAS = [1.0, 0.5, 2.0, 3.0]
FORMULA = "f(x) = 0.5*(sigma*x)^2 if |x| < 1/sigma^2 else |x| - 0.5/sigma^2"


def reference(x: np.ndarray, sigma: float) -> np.ndarray:
    s2 = sigma * sigma
    if s2 == 0:
        return np.zeros_like(x)
    ax = np.abs(x.astype(np.float64))
    return np.where(ax < 1 / s2, 0.5 * s2 * x.astype(np.float64) ** 2, ax - 0.5 / s2).astype(x.dtype)


def reference_grad(out_grad: np.ndarray, x: np.ndarray, sigma: float) -> np.ndarray:
    s2 = sigma * sigma
    if s2 == 0:
        return np.zeros_like(x)
    x64 = x.astype(np.float64)
    return (out_grad * np.where(np.abs(x64) < 1 / s2, s2 * x64, np.sign(x64))).astype(x.dtype)


def _cases():
    rng = np.random.default_rng(10)
    for shape in [(2, 3), (7,), (2, 2, 3)]:
        for dtype in (np.float32, np.float64):
            for sigma in SIGMAS:
                # Values on both sides of every threshold, away from the kinks themselves.
                yield rng.uniform(-3, 3, size=shape).astype(dtype), {"scalar": sigma}


def check_forward(attempt: Any) -> None:
    op = lookup(OP)
    for x, params in _cases():
        (got,) = call_compute(op, parse(op, params), [x], [(x.shape, x.dtype)], ["write"])
        compare(
            got,
            reference(x, params["scalar"]),
            describe(OP, {"x": x}, params, "write"),
            "out",
            "quadratic inside |x| < 1/sigma^2, linear outside; sigma is env.scalar",
            expected_text=FORMULA,
        )


def check_forward_req_(attempt: Any) -> None:
    op = lookup(OP)
    rng = np.random.default_rng(11)
    for x, params in list(_cases())[::5]:
        check_forward_req(op, params, [x], ["x"], [reference(x, params["scalar"])], "f(x)", rng)


def check_backward(attempt: Any) -> None:
    op = lookup(OP)
    rng = np.random.default_rng(12)
    for x, params in _cases():
        out_grad = rng.uniform(-1, 1, size=x.shape).astype(x.dtype)
        expected = reference_grad(out_grad, x, params["scalar"])
        (got,) = run_backward(op, params, [x], [out_grad], ["write"])
        hint = "f'(x) = sigma^2 * x inside |x| < 1/sigma^2, sign(x) outside; multiply by out_grad"
        if got is not None and np.allclose(got, -expected, atol=1e-6) and not np.allclose(expected, 0):
            hint = "the gradient has the wrong sign: " + hint
        compare(
            got,
            expected,
            "backward of " + describe(OP, {"x": x}, params),
            "grad of x",
            hint,
            expected_text="grad of x = out_grad * f'(x)",
        )


def check_backward_req_(attempt: Any) -> None:
    op = lookup(OP)
    rng = np.random.default_rng(13)
    for x, params in list(_cases())[::5]:
        out_grad = rng.uniform(-1, 1, size=x.shape).astype(x.dtype)
        check_backward_req(op, params, [x], ["x"], [out_grad], [reference_grad(out_grad, x, params["scalar"])], rng)


def check_numeric_gradient(attempt: Any) -> None:
    lookup(OP)
    rng = np.random.default_rng(14)
    for sigma in (1.0, 2.0):
        x = rng.uniform(-2, 2, size=(3, 4))
        x[np.abs(np.abs(x) - 1 / sigma**2) < 0.05] += 0.1  # finite differences across a kink are meaningless
        numeric_gradient_via_autograd(
            lambda data, sigma=sigma: mx.nd.exercise_smooth_l1(data, scalar=sigma),
            [x],
            describe(OP, {"x": x}, {"scalar": sigma}),
        )


def check_edge_cases(attempt: Any) -> None:
    op = lookup(OP)
    cases = [
        (np.zeros((2, 3), np.float32), 1.0, "zeros: f(0) = 0 and f'(0) = 0"),
        (np.array([-1.0, 1.0, -0.25, 0.25, 2.0], np.float64), 1.0, "exactly at the threshold 1/sigma^2"),
        (np.array([-0.25, 0.25, 0.5, -3.0], np.float64), 2.0, "at the threshold for sigma = 2"),
        (np.array([-3.0, 0.5, 4.0], np.float64), 0.0, "sigma = 0: the quadratic piece covers every x, all 0"),
        (np.zeros((0, 4), np.float32), 1.0, "an empty array"),
    ]
    for x, sigma, why in cases:
        params = {"scalar": sigma}
        call = describe(OP, {"x": x}, params) + f" [{why}]"
        (got,) = call_compute(op, parse(op, params), [x], [(x.shape, x.dtype)], ["write"])
        compare(
            got,
            reference(x, sigma),
            "forward " + call,
            "out",
            "at |x| = 1/sigma^2 both pieces agree; for sigma = 0 the threshold is infinite "
            "(guard the division: 1/0 raises in Python)",
        )
        out_grad = np.ones_like(x)
        (grad,) = run_backward(op, params, [x], [out_grad], ["write"])
        compare(
            grad,
            reference_grad(out_grad, x, sigma),
            "backward " + call,
            "grad of x",
            "use the same condition as forward (|x| < 1/sigma^2 is quadratic); f'(x) is 0 everywhere for sigma = 0",
        )
    expect_param_error(op, {}, "scalar (sigma) is required")


CHECKS = [
    Check("forward", "forward against NumPy for several sigmas and dtypes", check_forward),
    Check("forward_req", "forward honours req add and null", check_forward_req_),
    Check("backward", "backward against f'(x) * out_grad", check_backward),
    Check("backward_req", "backward honours req add and null", check_backward_req_),
    Check("numeric_gradient", "autograd against finite differences", check_numeric_gradient),
    Check("edge_cases", "zeros, the thresholds, sigma = 0, empty arrays", check_edge_cases),
]
