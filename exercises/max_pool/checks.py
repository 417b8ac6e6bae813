"""Checks of the ``max_pool`` exercise (operator ``exercise_max_pool``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

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

OP = "exercise_max_pool"
ROUTE_HINT = (
    "each out_grad goes to the position of its window that holds the maximum (the first one in row-major order "
    "on ties); where windows overlap, a position that wins several of them receives the sum"
)


def _geometry(params: dict) -> tuple:
    return params["kernel"], params.get("stride", (1, 1)), params.get("pad", (0, 0))


def _windows(x: np.ndarray, params: dict) -> np.ndarray:
    kernel, (sh, sw), (ph, pw) = _geometry(params)
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=-np.inf)
    return sliding_window_view(padded, kernel, axis=(2, 3))[:, :, ::sh, ::sw]


def reference(x: np.ndarray, params: dict) -> np.ndarray:
    return _windows(x, params).max(axis=(4, 5)).astype(x.dtype)


def reference_grad(out_grad: np.ndarray, x: np.ndarray, params: dict) -> np.ndarray:
    (kh, kw), (sh, sw), (ph, pw) = _geometry(params)
    windows = _windows(x, params)
    n, c, oh, ow = windows.shape[:4]
    flat = windows.reshape(n, c, oh, ow, kh * kw).argmax(axis=-1)  # first maximum in row-major order
    grad = np.zeros((n, c, x.shape[2] + 2 * ph, x.shape[3] + 2 * pw))
    for y in range(oh):
        for z in range(ow):
            i, j = np.divmod(flat[:, :, y, z], kw)
            rows, cols = y * sh + i, z * sw + j
            nn, cc = np.meshgrid(np.arange(n), np.arange(c), indexing="ij")
            np.add.at(grad, (nn, cc, rows, cols), out_grad[:, :, y, z])
    return grad[:, :, ph : ph + x.shape[2], pw : pw + x.shape[3]].astype(x.dtype)


CONFIGS = [
    ((2, 3, 4, 4), {"kernel": (2, 2), "stride": (2, 2)}),
    ((1, 2, 5, 6), {"kernel": (3, 3)}),  # stride 1: windows overlap
    ((2, 1, 5, 5), {"kernel": (3, 2), "stride": (2, 1), "pad": (1, 1)}),
]


def _cases():
    rng = np.random.default_rng(50)
    for dtype in (np.float32, np.float64):
        for shape, params in CONFIGS:
            x = rng.permutation(np.prod(shape)).reshape(shape).astype(dtype) / 7 - 3  # distinct values
            yield x, params


def check_forward(attempt: Any) -> None:
    op = lookup(OP)
    for x, params in _cases():
        expected = reference(x, params)
        (got,) = call_compute(op, parse(op, params), [x], [(expected.shape, x.dtype)], ["write"])
        compare(
            got,
            expected,
            describe(OP, {"data": x}, params, "write"),
            "out",
            "out[n, c, y, x] is the maximum of the window starting at (y*stride - pad, x*stride - pad)",
        )


def check_forward_req_(attempt: Any) -> None:
    op = lookup(OP)
    rng = np.random.default_rng(51)
    for x, params in list(_cases())[::2]:
        check_forward_req(op, params, [x], ["data"], [reference(x, params)], "maxpool(data)", rng)


def check_backward(attempt: Any) -> None:
    op = lookup(OP)
    rng = np.random.default_rng(52)
    for x, params in _cases():
        out = reference(x, params)
        out_grad = rng.uniform(-1, 1, size=out.shape).astype(x.dtype)
        expected = reference_grad(out_grad, x, params)
        (got,) = run_backward(op, params, [x], [out_grad], ["write"], forward_outputs=[out])
        hint = ROUTE_HINT
        if got is not None and np.shape(got) == expected.shape and np.allclose(got, -expected):
            hint = "wrong sign: " + hint
        compare(got, expected, "backward of " + describe(OP, {"data": x}, params), "grad of data", hint)


def check_backward_req_(attempt: Any) -> None:
    op = lookup(OP)
    rng = np.random.default_rng(53)
    for x, params in list(_cases())[::2]:
        out = reference(x, params)
        out_grad = rng.uniform(-1, 1, size=out.shape).astype(x.dtype)
        check_backward_req(
            op, params, [x], ["data"], [out_grad], [reference_grad(out_grad, x, params)], rng, forward_outputs=[out]
        )


def check_infer_shape(attempt: Any) -> None:
    op = lookup(OP)
    cases = [
        ({"kernel": (2, 2), "stride": (2, 2)}, (2, 3, 4, 4), (2, 3, 2, 2)),
        ({"kernel": (3, 3)}, (1, 2, 5, 6), (1, 2, 3, 4)),
        ({"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)}, (1, 1, 7, 8), (1, 1, 4, 4)),
    ]
    for params, data, out in cases:
        got_in, got_out, complete = infer_shapes(op, params, [data], [None])
        if got_out != [out] or got_in != [data] or not complete:
            raise CheckFailure(
                f"infer_shape(data={data}) with {params}",
                f"out={[out]}, returning True",
                f"in={got_in}, out={got_out}, returning {complete}",
                "OH = (H + 2*pad - KH) // stride + 1; the channels and the batch are kept",
            )
    expect_inference_error(op, {"kernel": (2, 2)}, [(3, 4, 4)], [None], "data must be 4-D (N, C, H, W)")
    expect_inference_error(op, {"kernel": (3, 3)}, [(1, 1, 2, 2)], [None], "a 3x3 window does not fit a 2x2 input")


def check_numeric_gradient(attempt: Any) -> None:
    lookup(OP)
    rng = np.random.default_rng(54)
    x = rng.permutation(2 * 3 * 4 * 5).reshape(2, 3, 4, 5) / 10.0  # distinct values: the max is stable under eps
    params = {"kernel": (2, 3), "stride": (1, 2), "pad": (1, 0)}
    numeric_gradient_via_autograd(
        lambda d: mx.nd.exercise_max_pool(d, **params), [x], describe(OP, {"data": x}, params)
    )


def check_edge_cases(attempt: Any) -> None:
    op = lookup(OP)
    cases = [
        (
            -np.arange(1, 17, dtype=np.float64).reshape(1, 1, 4, 4),
            {"kernel": (2, 2), "pad": (1, 1)},
            "all inputs negative with padding: the padding must never win (pad with -inf, not 0)",
        ),
        (np.ones((1, 2, 3, 3), np.float32), {"kernel": (2, 2)}, "all values equal: ties go to the first position"),
        (
            np.array([[[[1.0, 5.0, 2.0], [0.0, 3.0, 5.0]]]]),
            {"kernel": (2, 2), "stride": (1, 1)},
            "one value wins two overlapping windows: its gradient is the sum",
        ),
        (np.arange(6.0).reshape(1, 1, 2, 3), {"kernel": (2, 3)}, "the window covers the whole input"),
    ]
    for x, params, why in cases:
        expected = reference(x, params)
        call = describe(OP, {"data": x}, params) + f" [{why}]"
        (got,) = call_compute(op, parse(op, params), [x], [(expected.shape, x.dtype)], ["write"])
        compare(got, expected, "forward " + call, "out", "pad with -inf (np.pad(..., constant_values=-np.inf))")
        out_grad = np.arange(1, expected.size + 1, dtype=x.dtype).reshape(expected.shape)
        (grad,) = run_backward(op, params, [x], [out_grad], ["write"], forward_outputs=[expected])
        compare(grad, reference_grad(out_grad, x, params), "backward " + call, "grad of data", ROUTE_HINT)
    expect_param_error(op, {}, "kernel is required")


CHECKS = [
    Check("forward", "forward against a sliding-window reference", check_forward),
    Check("forward_req", "forward honours req add and null", check_forward_req_),
    Check("backward", "gradients routed to the window maxima, overlaps summed", check_backward),
    Check("backward_req", "backward honours req add and null", check_backward_req_),
    Check("infer_shape", "output shape, bad shapes", check_infer_shape),
    Check("numeric_gradient", "autograd against finite differences", check_numeric_gradient),
    Check("edge_cases", "negative inputs with padding, ties, shared winners, whole-input windows", check_edge_cases),
]
