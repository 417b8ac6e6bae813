"""Checks of the ``quadratic`` exercise (operator ``exercise_quadratic``)."""

from __future__ import annotations

from typing import Any

import numpy as np

import framework as mx
from framework.operator.infer import InferenceError

from ..checker import Check, CheckFailure, compare
from ..opcheck import (
    call_compute,
    check_backward_req,
    check_forward_req,
    describe,
    expect_inference_error,
    expect_param_error,
    infer_shapes,
    lookup,
    numeric_gradient_via_autograd,
    parse,
    run_backward,
)

OP = "exercise_quadratic"
SHAPES = [(2, 3), (5,), (2, 3, 4), (1, 1)]
DTYPES = [np.float32, np.float64]
COEFFS = [{"a": 1.0, "b": 2.0, "c": 3.0}, {"a": -0.5, "b": 0.25, "c": -2.0}]
FORMULA = "a*x^2 + b*x + c"


def reference(x: np.ndarray, a: float, b: float, c: float) -> np.ndarray:
    return (a * x * x + b * x + c).astype(x.dtype)


def reference_grad(out_grad: np.ndarray, x: np.ndarray, a: float, b: float) -> np.ndarray:
    return (out_grad * (2 * a * x + b)).astype(x.dtype)


def _cases():
    rng = np.random.default_rng(4)
    for shape in SHAPES:
        for dtype in DTYPES:
            for params in COEFFS:
                yield rng.uniform(-2, 2, size=shape).astype(dtype), params


def check_forward(attempt: Any) -> None:
    op = lookup(OP)
    for x, params in _cases():
        attrs = parse(op, params)
        expected = reference(x, **params)
        (got,) = call_compute(op, attrs, [x], [(x.shape, x.dtype)], ["write"])
        compare(
            got,
            expected,
            describe(OP, {"x": x}, params, "write"),
            "out",
            f"out must be {FORMULA} element-wise with a, b, c from attrs.parsed",
            expected_text=f"out = {FORMULA} = {np.array2string(expected, precision=4, threshold=8)}",
        )


def check_forward_req_(attempt: Any) -> None:
    op = lookup(OP)
    rng = np.random.default_rng(5)
    for x, params in list(_cases())[::3]:
        check_forward_req(op, params, [x], ["x"], [reference(x, **params)], FORMULA, rng)


def check_backward(attempt: Any) -> None:
    op = lookup(OP)
    rng = np.random.default_rng(6)
    for x, params in _cases():
        out_grad = rng.uniform(-1, 1, size=x.shape).astype(x.dtype)
        expected = reference_grad(out_grad, x, params["a"], params["b"])
        (got,) = run_backward(op, params, [x], [out_grad], ["write"])
        call = "backward of " + describe(OP, {"x": x}, params) + " with out_grad of the same shape"
        hint = "d/dx (a*x^2 + b*x + c) = 2*a*x + b; multiply it by out_grad (chain rule)"
        if got is not None and np.allclose(got, -expected, rtol=1e-4, atol=1e-5) and not np.allclose(expected, 0):
            hint = "the gradient has the wrong sign: " + hint
        compare(got, expected, call, "grad of x", hint, expected_text="grad of x = out_grad * (2*a*x + b)")


def check_backward_req_(attempt: Any) -> None:
    op = lookup(OP)
    rng = np.random.default_rng(7)
    for x, params in list(_cases())[::3]:
        out_grad = rng.uniform(-1, 1, size=x.shape).astype(x.dtype)
        expected = reference_grad(out_grad, x, params["a"], params["b"])
        check_backward_req(op, params, [x], ["x"], [out_grad], [expected], rng)


def check_infer_shape(attempt: Any) -> None:
    op = lookup(OP)
    cases = [
        ([(2, 3)], [None], (2, 3), "the output takes the input's shape"),
        ([None], [(4, 5)], (4, 5), "mutual inference: the input takes the output's shape"),
        ([(2, 0)], [(0, 3)], (2, 3), "partly known shapes merge (0 = unknown dimension)"),
    ]
    for ins, outs, want, why in cases:
        call = f"infer_shape(in={ins}, out={outs})"
        got_in, got_out, complete = infer_shapes(op, {}, ins, outs)
        if got_in[0] != want or got_out[0] != want or not complete:
            raise CheckFailure(
                call,
                f"in={[want]}, out={[want]}, returning True ({why})",
                f"in={got_in}, out={got_out}, returning {complete}",
                "assign the output from the input AND the input from the output (shape_assign both ways), "
                "then return whether the shape is completely known",
            )
    got_in, got_out, complete = infer_shapes(op, {}, [None], [None])
    if complete:
        raise CheckFailure(
            "infer_shape(in=[None], out=[None])",
            "False (nothing is known yet)",
            f"True with in={got_in}, out={got_out}",
            "return True only when the shape is completely known (shape_known)",
        )
    expect_inference_error(op, {}, [(2, 3)], [(3, 3)], "input (2, 3) and output (3, 3) cannot both hold")


def check_infer_type(attempt: Any) -> None:
    op = lookup(OP)
    attrs = parse(op, {})
    for ins, outs, want in ((["float32"], [None], "float32"), ([None], ["float64"], "float64")):
        got_in, got_out = list(ins), list(outs)
        complete = op.run_infer_type(attrs, got_in, got_out)
        if got_in != [want] or got_out != [want] or not complete:
            raise CheckFailure(
                f"infer_type(in={ins}, out={outs})",
                f"in=['{want}'], out=['{want}'], returning True",
                f"in={got_in}, out={got_out}, returning {complete}",
                "dtypes are inferred both ways too: type_assign the output from the input and the input "
                "from the output",
            )
    try:
        op.run_infer_type(attrs, ["float32"], ["float64"])
    except InferenceError:
        return
    raise CheckFailure(
        "infer_type(in=['float32'], out=['float64'])",
        "an InferenceError (the dtypes conflict)",
        "no error",
        "type_assign raises InferenceError on a conflict; use it for both directions",
    )


def check_numeric_gradient(attempt: Any) -> None:
    lookup(OP)
    rng = np.random.default_rng(8)
    for shape, params in (((3, 4), COEFFS[0]), ((2, 2, 3), COEFFS[1])):
        x = rng.uniform(-2, 2, size=shape)
        numeric_gradient_via_autograd(
            lambda data, params=params: mx.nd.exercise_quadratic(data, **params),
            [x],
            describe(OP, {"x": x}, params),
        )


def check_edge_cases(attempt: Any) -> None:
    op = lookup(OP)
    cases = [
        (np.zeros((3, 2), np.float32), {"a": 1.0, "b": 2.0, "c": 3.0}, "zeros: out is c everywhere"),
        (np.linspace(-3, 3, 7).astype(np.float64), {"a": 2.0}, "b and c default to 0"),
        (np.full((1,), -4.0, np.float32), {"a": 1.0, "b": 1.0, "c": 1.0}, "a single negative element"),
        (np.zeros((0, 3), np.float32), {"a": 1.0, "b": 1.0, "c": 1.0}, "an empty array (a dimension of size 0)"),
    ]
    for x, params, why in cases:
        full = {"a": 0.0, "b": 0.0, "c": 0.0, **params}
        (got,) = call_compute(op, parse(op, params), [x], [(x.shape, x.dtype)], ["write"])
        compare(
            got,
            reference(x, **full),
            describe(OP, {"x": x}, params, "write") + f" [{why}]",
            "out",
            "parameters you do not pass default to 0; an empty input gives an empty output",
        )
    expect_param_error(op, {"d": 1.0}, "'d' is not a parameter of quadratic")
    expect_param_error(op, {"a": "not a number"}, "a must be a float")


CHECKS = [
    Check("forward", "forward against NumPy over shapes and dtypes", check_forward),
    Check("forward_req", "forward honours req add and null", check_forward_req_),
    Check("backward", "backward against the analytic gradient", check_backward),
    Check("backward_req", "backward honours req add and null", check_backward_req_),
    Check("infer_shape", "mutual shape inference", check_infer_shape),
    Check("infer_type", "mutual type inference", check_infer_type),
    Check("numeric_gradient", "autograd against finite differences", check_numeric_gradient),
    Check("edge_cases", "zeros, defaults, size 1, empty, bad parameters", check_edge_cases),
]
