"""Checks of the ``softmax_ce`` exercise (operator ``exercise_softmax_ce``)."""

from __future__ import annotations

from typing import Any

import numpy as np

import framework as mx
from framework import autograd

from ..checker import Check, CheckFailure, compare, fmt_value, mismatch
from ..opcheck import (
    call_compute,
    check_backward_req,
    check_forward_req,
    describe,
    expect_inference_error,
    expect_param_error,
    infer_shapes,
    lookup,
    parse,
    run_backward,
)

OP = "exercise_softmax_ce"


def softmax(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(x.dtype)


def loss(x: np.ndarray, label: np.ndarray, grad_scale: float, normalization: str) -> float:
    p = softmax(x.astype(np.float64))
    picked = p[np.arange(x.shape[0]), label.astype(np.int64)]
    n = x.shape[0] if normalization == "batch" else 1
    return float(grad_scale / n * -np.log(picked).sum())


def reference_grad(x: np.ndarray, label: np.ndarray, grad_scale: float, normalization: str) -> np.ndarray:
    p = softmax(x.astype(np.float64))
    p[np.arange(x.shape[0]), label.astype(np.int64)] -= 1
    n = x.shape[0] if normalization == "batch" else 1
    return (p * grad_scale / n).astype(x.dtype)


def _cases():
    rng = np.random.default_rng(20)
    for n, c in [(4, 3), (1, 5), (6, 10)]:
        for dtype in (np.float32, np.float64):
            for params in ({}, {"grad_scale": 0.5, "normalization": "batch"}):
                x = rng.normal(0, 2, size=(n, c)).astype(dtype)
                label = rng.integers(0, c, size=n).astype(dtype)
                yield x, label, params


def _full(params: dict) -> tuple[float, str]:
    return params.get("grad_scale", 1.0), params.get("normalization", "null")


def check_forward(attempt: Any) -> None:
    op = lookup(OP)
    for x, label, params in _cases():
        (got,) = call_compute(op, parse(op, params), [x, label], [(x.shape, x.dtype)], ["write"])
        compare(
            got,
            softmax(x),
            describe(OP, {"data": x, "label": label}, params, "write"),
            "out",
            "softmax over each row (axis 1): exp(x - rowmax) / sum(exp(x - rowmax)); the label plays no part "
            "in forward",
            expected_text="out = row-wise softmax(data)",
        )


def check_forward_req_(attempt: Any) -> None:
    op = lookup(OP)
    rng = np.random.default_rng(21)
    for x, label, params in list(_cases())[::4]:
        check_forward_req(op, params, [x, label], ["data", "label"], [softmax(x)], "softmax(data)", rng)


def check_backward(attempt: Any) -> None:
    op = lookup(OP)
    for x, label, params in _cases():
        expected = reference_grad(x, label, *_full(params))
        got_data, got_label = run_backward(
            op, params, [x, label], [np.ones_like(x)], ["write", "write"], forward_outputs=[softmax(x)]
        )
        call = "backward of " + describe(OP, {"data": x, "label": label}, params)
        hint = "the gradient of cross-entropy through softmax is (softmax - onehot(label)) * grad_scale / n"
        if got_data is not None and np.allclose(got_data, -expected, atol=1e-5):
            hint = "the gradient has the wrong sign: it is softmax - onehot, not onehot - softmax; " + hint
        elif (
            params and got_data is not None and np.allclose(got_data, reference_grad(x, label, 1.0, "null"), atol=1e-5)
        ):
            hint = "grad_scale and normalization='batch' (divide by N) were ignored; " + hint
        compare(
            got_data,
            expected,
            call,
            "grad of data",
            hint,
            expected_text="grad of data = (out - onehot(label)) * grad_scale / n",
        )
        compare(
            got_label,
            np.zeros_like(label),
            call,
            "grad of label",
            "labels get no gradient: assign 0 to outputs[1] (through assign, so req is honoured)",
        )


def check_backward_req_(attempt: Any) -> None:
    op = lookup(OP)
    rng = np.random.default_rng(22)
    for x, label, params in list(_cases())[::4]:
        expected = [reference_grad(x, label, *_full(params)), np.zeros_like(label)]
        check_backward_req(
            op, params, [x, label], ["data", "label"], [np.ones_like(x)], expected, rng, forward_outputs=[softmax(x)]
        )


def check_infer_shape(attempt: Any) -> None:
    op = lookup(OP)
    cases = [
        ([(4, 3), None], [None], [(4, 3), (4,)], [(4, 3)], "from the data"),
        ([None, None], [(5, 2)], [(5, 2), (5,)], [(5, 2)], "mutual: from the output"),
        ([(4, 3), (4,)], [None], [(4, 3), (4,)], [(4, 3)], "everything given"),
    ]
    for ins, outs, want_in, want_out, why in cases:
        got_in, got_out, complete = infer_shapes(op, {}, ins, outs)
        if got_in != want_in or got_out != want_out or not complete:
            raise CheckFailure(
                f"infer_shape(in={ins}, out={outs}) [{why}]",
                f"in={want_in}, out={want_out}, returning True",
                f"in={got_in}, out={got_out}, returning {complete}",
                "out and data share one shape (assign both ways); the label is (N,) with N = data.shape[0]",
            )
    _, _, complete = infer_shapes(op, {}, [None, (4,)], [None])
    if complete:
        raise CheckFailure(
            "infer_shape(in=[None, (4,)], out=[None])",
            "False: the number of classes is unknown",
            "True",
            "return True only when every shape is completely known",
        )
    expect_inference_error(op, {}, [(6,), None], [None], "data must be 2-D (batch, classes)")
    expect_inference_error(op, {}, [(4, 3), (5,)], [None], "4 rows of data but 5 labels")
    expect_inference_error(op, {}, [(4, 3), None], [(4, 2)], "data (4, 3) but output (4, 2)")


def check_numeric_gradient(attempt: Any) -> None:
    lookup(OP)
    rng = np.random.default_rng(23)
    for params in ({}, {"grad_scale": 2.0, "normalization": "batch"}):
        x = rng.normal(0, 1.5, size=(3, 4))
        label = rng.integers(0, 4, size=3).astype(np.float64)
        eps = 1e-6
        numeric = np.zeros_like(x)
        for index in np.ndindex(x.shape):
            plus, minus = x.copy(), x.copy()
            plus[index] += eps
            minus[index] -= eps
            numeric[index] = (loss(plus, label, *_full(params)) - loss(minus, label, *_full(params))) / (2 * eps)
        data = mx.nd.array(x, dtype="float64")
        data.attach_grad()
        with autograd.record():
            out = mx.nd.exercise_softmax_ce(data, mx.nd.array(label, dtype="float64"), **params)
        out.backward()
        got = data.grad.asnumpy()
        diff = mismatch(numeric, got, 1e-4, 1e-6)
        if diff is not None:
            raise CheckFailure(
                "autograd of " + describe(OP, {"data": x, "label": label}, params),
                "the data gradient to match finite differences of the loss "
                "grad_scale / n * sum_i -log(softmax(data)[i, label[i]])",
                f"grad of data = {fmt_value(got)}",
                "backward is the gradient of the cross-entropy *loss*, not of softmax's output: "
                "(out - onehot(label)) * grad_scale / n",
                diff,
            )


def check_edge_cases(attempt: Any) -> None:
    op = lookup(OP)
    cases = [
        (
            np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1000.0, -999.0]], np.float32),
            np.array([1.0, 2.0], np.float32),
            "huge logits: exp overflows unless each row's maximum is subtracted first",
        ),
        (np.array([[0.3], [-2.0]], np.float64), np.array([0.0, 0.0]), "a single class: softmax is 1, gradient 0"),
        (np.zeros((1, 4), np.float64), np.array([3.0]), "a batch of one, all logits equal"),
    ]
    for x, label, why in cases:
        call = describe(OP, {"data": x, "label": label}, {}) + f" [{why}]"
        (got,) = call_compute(op, parse(op, {}), [x, label], [(x.shape, x.dtype)], ["write"])
        if not np.isfinite(got).all():
            raise CheckFailure(
                "forward " + call,
                "finite probabilities",
                f"out = {fmt_value(got)}",
                "subtract each row's maximum before exp: softmax(x) = softmax(x - max(x))",
            )
        compare(got, softmax(x), "forward " + call, "out", "a numerically stable softmax survives these rows")
        grad, _ = run_backward(op, {}, [x, label], [np.ones_like(x)], ["write", "write"], forward_outputs=[softmax(x)])
        compare(
            grad,
            reference_grad(x, label, 1.0, "null"),
            "backward " + call,
            "grad of data",
            "labels arrive as floats: convert them to integer class indices before building the one-hot",
        )
    expect_param_error(op, {"normalization": "valid"}, "normalization is 'null' or 'batch'")


CHECKS = [
    Check("forward", "forward softmax against NumPy", check_forward),
    Check("forward_req", "forward honours req add and null", check_forward_req_),
    Check(
        "backward", "backward: the cross-entropy gradient, grad_scale, normalization, no label gradient", check_backward
    ),
    Check("backward_req", "backward honours req add and null", check_backward_req_),
    Check("infer_shape", "shape inference both ways, bad ranks and labels", check_infer_shape),
    Check("numeric_gradient", "autograd against finite differences of the loss", check_numeric_gradient),
    Check("edge_cases", "huge logits, one class, a batch of one, bad parameters", check_edge_cases),
]
