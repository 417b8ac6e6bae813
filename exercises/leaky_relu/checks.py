"""Checks of the ``leaky_relu`` exercise (operator ``exercise_leaky_relu``)."""

from __future__ import annotations

from typing import Any

import numpy as np

import framework as mx

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

OP = "exercise_leaky_relu"


def _gamma(x: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    return gamma.reshape(tuple(-1 if a == 1 else 1 for a in range(x.ndim)))


def reference(x: np.ndarray, params: dict, gamma: np.ndarray | None = None) -> np.ndarray:
    slope = _gamma(x, gamma) if params.get("act_type") == "prelu" else params.get("slope", 0.25)
    return np.where(x > 0, x, slope * x).astype(x.dtype)


def reference_grads(out_grad: np.ndarray, x: np.ndarray, params: dict, gamma: np.ndarray | None = None) -> list:
    if params.get("act_type") == "prelu":
        dx = out_grad * np.where(x > 0, 1, _gamma(x, gamma))
        axes = tuple(a for a in range(x.ndim) if a != 1)
        dgamma = (out_grad * np.where(x > 0, 0, x)).sum(axis=axes)
        return [dx.astype(x.dtype), dgamma.astype(x.dtype)]
    return [(out_grad * np.where(x > 0, 1, params.get("slope", 0.25))).astype(x.dtype)]


def _cases():
    """(inputs, names, params): leaky with two slopes, prelu on 2-D and 4-D data, two dtypes."""
    rng = np.random.default_rng(30)
    for dtype in (np.float32, np.float64):
        for shape in [(3, 4), (2, 3, 2, 2)]:
            x = rng.uniform(-2, 2, size=shape).astype(dtype)
            yield [x], ["data"], {"act_type": "leaky", "slope": 0.1}
            yield [x], ["data"], {"slope": 0.3}
            gamma = rng.uniform(0.05, 0.5, size=(shape[1],)).astype(dtype)
            yield [x, gamma], ["data", "gamma"], {"act_type": "prelu"}


def _expected(inputs: list, params: dict) -> np.ndarray:
    return reference(inputs[0], params, inputs[1] if len(inputs) > 1 else None)


def check_forward(attempt: Any) -> None:
    op = lookup(OP)
    for inputs, names, params in _cases():
        x = inputs[0]
        (got,) = call_compute(op, parse(op, params), inputs, [(x.shape, x.dtype)], ["write"])
        compare(
            got,
            _expected(inputs, params),
            describe(OP, dict(zip(names, inputs, strict=True)), params, "write"),
            "out",
            "x where x > 0, else slope * x (leaky) or gamma[c] * x with c the channel, axis 1 (prelu)",
            expected_text="out = x if x > 0 else slope*x (leaky) / gamma[channel]*x (prelu)",
        )


def check_forward_req_(attempt: Any) -> None:
    op = lookup(OP)
    rng = np.random.default_rng(31)
    for inputs, names, params in list(_cases())[::2]:
        check_forward_req(op, params, inputs, names, [_expected(inputs, params)], "leaky(x)", rng)


def check_backward(attempt: Any) -> None:
    op = lookup(OP)
    rng = np.random.default_rng(32)
    for inputs, names, params in _cases():
        x = inputs[0]
        out_grad = rng.uniform(-1, 1, size=x.shape).astype(x.dtype)
        expected = reference_grads(out_grad, x, params, inputs[1] if len(inputs) > 1 else None)
        got = run_backward(op, params, inputs, [out_grad], ["write"] * len(inputs))
        call = "backward of " + describe(OP, dict(zip(names, inputs, strict=True)), params)
        compare(
            got[0],
            expected[0],
            call,
            "grad of data",
            "grad of data = out_grad where x > 0, else out_grad times the negative slope (slope or gamma[c])",
        )
        if len(expected) > 1:
            hint = (
                "grad of gamma[c] = sum of out_grad * x over every element of channel c where x <= 0 "
                "(sum over all axes except axis 1)"
            )
            if got[1] is not None and np.shape(got[1]) == expected[1].shape and np.allclose(got[1], -expected[1]):
                hint = "the gamma gradient has the wrong sign: " + hint
            compare(got[1], expected[1], call, "grad of gamma", hint)


def check_backward_req_(attempt: Any) -> None:
    op = lookup(OP)
    rng = np.random.default_rng(33)
    for inputs, names, params in list(_cases())[::2]:
        x = inputs[0]
        out_grad = rng.uniform(-1, 1, size=x.shape).astype(x.dtype)
        expected = reference_grads(out_grad, x, params, inputs[1] if len(inputs) > 1 else None)
        check_backward_req(op, params, inputs, names, [out_grad], expected, rng)


def check_infer_shape(attempt: Any) -> None:
    op = lookup(OP)
    prelu = {"act_type": "prelu"}
    cases = [
        ({}, [(3, 4)], [None], [(3, 4)], [(3, 4)], "leaky: out from data"),
        ({}, [None], [(5, 2)], [(5, 2)], [(5, 2)], "leaky, mutual: data from out"),
        (prelu, [(2, 3, 4, 4), None], [None], [(2, 3, 4, 4), (3,)], [(2, 3, 4, 4)], "prelu: gamma = (channels,)"),
        (prelu, [None, None], [(6, 5)], [(6, 5), (5,)], [(6, 5)], "prelu, mutual: data and gamma from out"),
    ]
    for params, ins, outs, want_in, want_out, why in cases:
        got_in, got_out, complete = infer_shapes(op, params, ins, outs)
        if got_in != want_in or got_out != want_out or not complete:
            raise CheckFailure(
                f"infer_shape(in={ins}, out={outs}) with {params} [{why}]",
                f"in={want_in}, out={want_out}, returning True",
                f"in={got_in}, out={got_out}, returning {complete}",
                "out and data share one shape (assign both ways); for prelu, gamma is (data.shape[1],)",
            )
    expect_inference_error(op, prelu, [(2, 3), (4,)], [None], "gamma (4,) for 3 channels")
    expect_inference_error(op, prelu, [(5,), None], [None], "prelu needs a channel axis (data at least 2-D)")
    expect_inference_error(op, {}, [(2, 3)], [(3, 2)], "data (2, 3) but output (3, 2)")


def check_numeric_gradient(attempt: Any) -> None:
    lookup(OP)
    rng = np.random.default_rng(34)
    x = rng.uniform(-2, 2, size=(2, 3, 2))
    x[np.abs(x) < 0.05] = 0.3  # finite differences across the kink at 0 are meaningless
    gamma = rng.uniform(0.1, 0.5, size=(3,))
    numeric_gradient_via_autograd(
        lambda data, g: mx.nd.exercise_leaky_relu(data, g, act_type="prelu"),
        [x, gamma],
        describe(OP, {"data": x, "gamma": gamma}, {"act_type": "prelu"}),
    )
    numeric_gradient_via_autograd(
        lambda data: mx.nd.exercise_leaky_relu(data, slope=0.2), [x], describe(OP, {"data": x}, {"slope": 0.2})
    )


def check_edge_cases(attempt: Any) -> None:
    op = lookup(OP)
    zeros = np.zeros((2, 3), np.float64)
    gamma = np.array([0.1, 0.2, 0.3])
    out_grad = np.ones_like(zeros)
    grads = run_backward(op, {"act_type": "prelu"}, [zeros, gamma], [out_grad], ["write", "write"])
    compare(
        grads[0],
        np.broadcast_to(gamma, zeros.shape),
        "backward of " + describe(OP, {"data": zeros, "gamma": gamma}, {"act_type": "prelu"}) + " [x = 0 exactly]",
        "grad of data",
        "the test is x > 0 (strictly): at x = 0 the negative side's slope gamma applies, as in MXNet",
    )
    x = np.array([[-1.0, 2.0]], np.float32)
    (got,) = call_compute(op, parse(op, {"slope": 0.0}), [x], [(x.shape, x.dtype)], ["write"])
    compare(
        got,
        np.array([[0.0, 2.0]], np.float32),
        describe(OP, {"data": x}, {"slope": 0.0}, "write"),
        "out",
        "slope 0 is the plain ReLU",
    )
    empty = np.zeros((0, 3), np.float32)
    (got,) = call_compute(
        op, parse(op, {"act_type": "prelu"}), [empty, gamma.astype(np.float32)], [(empty.shape, empty.dtype)], ["write"]
    )
    compare(
        got,
        empty,
        describe(OP, {"data": empty, "gamma": gamma}, {"act_type": "prelu"}, "write"),
        "out",
        "an empty batch gives an empty output",
    )
    expect_param_error(op, {"act_type": "rrelu"}, "act_type is 'leaky' or 'prelu' in this exercise")


CHECKS = [
    Check("forward", "forward of leaky and prelu against NumPy", check_forward),
    Check("forward_req", "forward honours req add and null", check_forward_req_),
    Check("backward", "backward: the data gradient and prelu's gamma gradient", check_backward),
    Check("backward_req", "backward honours req add and null (gamma accumulates too)", check_backward_req_),
    Check("infer_shape", "shape inference both ways, gamma from the channels, bad shapes", check_infer_shape),
    Check("numeric_gradient", "autograd against finite differences (data and gamma)", check_numeric_gradient),
    Check("edge_cases", "x = 0 exactly, slope 0, an empty batch, bad act_type", check_edge_cases),
]
