"""Checks of the ``conv2d`` exercise (operator ``exercise_conv2d``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import framework as mx

from ..checker import Check, CheckFailure, compare, fmt_shape
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

OP = "exercise_conv2d"
PAD_HINT = "OH = (H + 2*pad - KH) // stride + 1: the padding is added on both sides"


def _windows(x: np.ndarray, kernel: tuple, stride: tuple, pad: tuple) -> np.ndarray:
    """(N, C, OH, OW, KH, KW) windows of the zero-padded input."""
    (ph, pw), (sh, sw) = pad, stride
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    return sliding_window_view(padded, kernel, axis=(2, 3))[:, :, ::sh, ::sw]


def reference(data: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, params: dict) -> np.ndarray:
    kernel, stride, pad = params["kernel"], params.get("stride", (1, 1)), params.get("pad", (0, 0))
    out = np.einsum("ncyxij,fcij->nfyx", _windows(data, kernel, stride, pad), weight.astype(np.float64))
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return out.astype(data.dtype)


def reference_grads(out_grad, data, weight, bias, params) -> list[np.ndarray]:
    kernel, stride, pad = params["kernel"], params.get("stride", (1, 1)), params.get("pad", (0, 0))
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, pad
    g = out_grad.astype(np.float64)
    d_weight = np.einsum("ncyxij,nfyx->fcij", _windows(data, kernel, stride, pad), g)
    n, c, h, w = data.shape
    oh, ow = g.shape[2:]
    padded = np.zeros((n, c, h + 2 * ph, w + 2 * pw))
    contribution = np.einsum("nfyx,fcij->ncijyx", g, weight.astype(np.float64))
    for i in range(kh):
        for j in range(kw):
            padded[:, :, i : i + sh * oh : sh, j : j + sw * ow : sw] += contribution[:, :, i, j]
    grads = [padded[:, :, ph : ph + h, pw : pw + w].astype(data.dtype), d_weight.astype(data.dtype)]
    if bias is not None:
        grads.append(g.sum(axis=(0, 2, 3)).astype(data.dtype))
    return grads


CONFIGS = [
    ((2, 3, 5, 5), 4, {"kernel": (3, 3)}),
    ((1, 2, 6, 7), 3, {"kernel": (3, 2), "pad": (1, 1)}),
    ((2, 2, 7, 6), 2, {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 0)}),
    ((1, 3, 4, 4), 2, {"kernel": (1, 1), "no_bias": True}),
]


def _cases():
    rng = np.random.default_rng(40)
    for dtype in (np.float32, np.float64):
        for shape, filters, config in CONFIGS:
            params = {**config, "num_filter": filters}
            data = rng.uniform(-1, 1, size=shape).astype(dtype)
            weight = rng.uniform(-1, 1, size=(filters, shape[1], *params["kernel"])).astype(dtype)
            bias = None if params.get("no_bias") else rng.uniform(-1, 1, size=(filters,)).astype(dtype)
            inputs = [data, weight] + ([] if bias is None else [bias])
            names = ["data", "weight"] + ([] if bias is None else ["bias"])
            yield inputs, names, params, bias


def reference_col(x: np.ndarray, kernel: tuple, stride: tuple, pad: tuple) -> np.ndarray:
    """(N, C*KH*KW, OH*OW), rows ordered (c, i, j) like weight.reshape(F, -1)'s columns."""
    windows = _windows(x, kernel, stride, pad)  # (N, C, OH, OW, KH, KW)
    n, c, oh, ow, kh, kw = windows.shape
    return windows.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * kh * kw, oh * ow).astype(x.dtype)


def check_im2col(attempt: Any) -> None:
    for name in ("conv_out_size", "im2col", "col2im"):
        if not callable(getattr(attempt, name, None)):
            raise CheckFailure(
                f"looking up {name} in your file",
                f"a function {name}",
                "nothing",
                "keep the function names of the stub",
            )
    for size, kernel, stride, pad in [(5, 3, 1, 0), (5, 3, 1, 1), (7, 3, 2, 1), (6, 2, 3, 0), (2, 3, 1, 1)]:
        expected = (size + 2 * pad - kernel) // stride + 1
        got = attempt.conv_out_size(size, kernel, stride, pad)
        if got != expected:
            raise CheckFailure(
                f"conv_out_size(size={size}, kernel={kernel}, stride={stride}, pad={pad})",
                str(expected),
                repr(got),
                PAD_HINT,
            )
    rng = np.random.default_rng(46)
    for shape, kernel, stride, pad in [((1, 1, 3, 3), (2, 2), (1, 1), (0, 0)), ((2, 3, 5, 4), (3, 2), (2, 1), (1, 1))]:
        x = rng.uniform(-1, 1, size=shape)
        call = f"im2col(np, x of shape {shape}, kernel={kernel}, stride={stride}, pad={pad})"
        col = attempt.im2col(np, x, kernel, stride, pad)
        compare(
            col,
            reference_col(x, kernel, stride, pad),
            call,
            "col",
            "col[n, (c*KH + i)*KW + j, y*OW + x] = padded[n, c, y*stride_h + i, x*stride_w + j]: one row per "
            "(channel, kernel position), one column per output position",
        )
        # col2im is im2col's transpose: <im2col(x), c> == <x, col2im(c)> for every x and c.
        c = rng.uniform(-1, 1, size=col.shape)
        back = attempt.col2im(np, c, shape, kernel, stride, pad)
        if np.shape(back) != shape:
            raise CheckFailure(
                f"col2im(np, col of shape {c.shape}, {shape}, kernel={kernel}, stride={stride}, pad={pad})",
                f"an array of shape {shape}",
                f"shape {np.shape(back)}",
                "col2im returns an array shaped like the input, with the padding cropped away",
            )
        lhs, rhs = float(np.sum(reference_col(x, kernel, stride, pad) * c)), float(np.sum(x * back))
        if not np.isclose(lhs, rhs, rtol=1e-9, atol=1e-9):
            raise CheckFailure(
                f"col2im(np, c, {shape}, kernel={kernel}, stride={stride}, pad={pad}) against im2col",
                f"col2im to be im2col's transpose: sum(im2col(x) * c) == sum(x * col2im(c)) = {lhs:.6g}",
                f"sum(x * col2im(c)) = {rhs:.6g}",
                "every column value must be *added* back onto the input position it was copied from (+=, so "
                "overlapping windows sum); values that came from the padding are dropped",
            )


def check_forward(attempt: Any) -> None:
    op = lookup(OP)
    for inputs, names, params, bias in _cases():
        expected = reference(inputs[0], inputs[1], bias, params)
        call = describe(OP, dict(zip(names, inputs, strict=True)), params, "write")
        (got,) = call_compute(op, parse(op, params), inputs, [(expected.shape, expected.dtype)], ["write"])
        compare(
            got,
            expected,
            call,
            "out",
            "out[n, f] = sum over c, i, j of weight[f, c, i, j] * padded data "
            "[n, c, y*stride + i, x*stride + j], plus bias[f]; check the padding and the stride of im2col",
        )


def check_forward_req_(attempt: Any) -> None:
    op = lookup(OP)
    rng = np.random.default_rng(41)
    for inputs, names, params, bias in list(_cases())[::3]:
        expected = reference(inputs[0], inputs[1], bias, params)
        check_forward_req(op, params, inputs, names, [expected], "conv(data, weight) + bias", rng)


def check_backward(attempt: Any) -> None:
    op = lookup(OP)
    rng = np.random.default_rng(42)
    hints = {
        "data": "d_data = col2im(weight^T @ d_out): every column goes back onto its window, overlaps add up, "
        "the padding is dropped",
        "weight": "d_weight = sum over the batch of d_out[n] @ col[n]^T, reshaped like the weight",
        "bias": "d_bias[f] = sum of out_grad over the batch and every output position",
    }
    for inputs, names, params, bias in _cases():
        expected_out = reference(inputs[0], inputs[1], bias, params)
        out_grad = rng.uniform(-1, 1, size=expected_out.shape).astype(expected_out.dtype)
        expected = reference_grads(out_grad, inputs[0], inputs[1], bias, params)
        got = run_backward(op, params, inputs, [out_grad], ["write"] * len(inputs))
        call = "backward of " + describe(OP, dict(zip(names, inputs, strict=True)), params)
        call += f" with out_grad of shape {fmt_shape(out_grad.shape)}"
        for name, g, e in zip(names, got, expected, strict=True):
            hint = hints[name]
            if g is not None and np.shape(g) == e.shape and np.allclose(g, -e, atol=1e-4) and np.abs(e).max() > 0:
                hint = "wrong sign: " + hint
            compare(g, e, call, f"grad of {name}", hint)


def check_backward_req_(attempt: Any) -> None:
    op = lookup(OP)
    rng = np.random.default_rng(43)
    for inputs, names, params, bias in list(_cases())[::3]:
        expected_out = reference(inputs[0], inputs[1], bias, params)
        out_grad = rng.uniform(-1, 1, size=expected_out.shape).astype(expected_out.dtype)
        expected = reference_grads(out_grad, inputs[0], inputs[1], bias, params)
        check_backward_req(op, params, inputs, names, [out_grad], expected, rng)


def check_infer_shape(attempt: Any) -> None:
    op = lookup(OP)
    cases = [
        ({"kernel": (3, 3), "num_filter": 4}, (2, 3, 5, 5), (2, 4, 3, 3)),
        ({"kernel": (3, 3), "num_filter": 4, "pad": (1, 1)}, (2, 3, 5, 5), (2, 4, 5, 5)),
        ({"kernel": (3, 3), "num_filter": 2, "pad": (1, 1), "stride": (2, 2)}, (1, 1, 7, 8), (1, 2, 4, 4)),
        ({"kernel": (2, 4), "num_filter": 5, "stride": (3, 1)}, (1, 2, 8, 6), (1, 5, 3, 3)),
    ]
    for params, data, out in cases:
        c, kernel, f = data[1], params["kernel"], params["num_filter"]
        want_in = [data, (f, c, *kernel), (f,)]
        got_in, got_out, complete = infer_shapes(op, params, [data, None, None], [None])
        if got_in != want_in or got_out != [out] or not complete:
            hint = (
                PAD_HINT
                if got_out and got_out[0] != out
                else ("the weight is (num_filter, C, KH, KW), the bias (num_filter,): both follow from the data")
            )
            raise CheckFailure(
                f"infer_shape(data={data}) with {params}",
                f"in={want_in}, out={[out]}, returning True",
                f"in={got_in}, out={got_out}, returning {complete}",
                hint,
            )
    params = {"kernel": (3, 3), "num_filter": 2}
    expect_inference_error(op, params, [(2, 3, 5), None, None], [None], "data must be 4-D (N, C, H, W)")
    expect_inference_error(op, params, [(1, 3, 5, 5), (2, 4, 3, 3), None], [None], "weight has 4 channels, data 3")
    expect_inference_error(op, params, [(1, 1, 2, 2), None, None], [None], "a 3x3 kernel does not fit a 2x2 input")


def check_numeric_gradient(attempt: Any) -> None:
    lookup(OP)
    rng = np.random.default_rng(44)
    params = {"kernel": (2, 2), "num_filter": 2, "pad": (1, 1), "stride": (2, 1)}
    data = rng.uniform(-1, 1, size=(1, 2, 3, 3))
    weight = rng.uniform(-1, 1, size=(2, 2, 2, 2))
    bias = rng.uniform(-1, 1, size=(2,))
    numeric_gradient_via_autograd(
        lambda d, w, b: mx.nd.exercise_conv2d(d, w, b, **params),
        [data, weight, bias],
        describe(OP, {"data": data, "weight": weight, "bias": bias}, params),
    )


def check_edge_cases(attempt: Any) -> None:
    op = lookup(OP)
    rng = np.random.default_rng(45)
    cases = [
        ((1, 2, 3, 3), {"kernel": (3, 3), "num_filter": 1}, "the kernel covers the whole input: a 1x1 output"),
        ((1, 1, 2, 2), {"kernel": (3, 3), "num_filter": 2, "pad": (1, 1)}, "a kernel larger than the input, padded"),
        ((2, 1, 5, 5), {"kernel": (2, 2), "num_filter": 1, "stride": (3, 3)}, "a stride that skips pixels"),
    ]
    for shape, params, why in cases:
        data = rng.uniform(-1, 1, size=shape)
        weight = rng.uniform(-1, 1, size=(params["num_filter"], shape[1], *params["kernel"]))
        bias = rng.uniform(-1, 1, size=(params["num_filter"],))
        expected = reference(data, weight, bias, params)
        call = describe(OP, {"data": data, "weight": weight, "bias": bias}, params) + f" [{why}]"
        (got,) = call_compute(op, parse(op, params), [data, weight, bias], [(expected.shape, data.dtype)], ["write"])
        compare(got, expected, "forward " + call, "out", PAD_HINT)
        out_grad = np.ones_like(expected)
        grads = run_backward(op, params, [data, weight, bias], [out_grad], ["write"] * 3)
        for name, g, e in zip(
            ("data", "weight", "bias"), grads, reference_grads(out_grad, data, weight, bias, params), strict=True
        ):
            compare(
                g,
                e,
                "backward " + call,
                f"grad of {name}",
                "windows that skip pixels leave those pixels a zero gradient; padding gets none",
            )
    expect_param_error(op, {"kernel": (3, 3), "num_filter": 0}, "num_filter must be at least 1")
    expect_param_error(op, {"num_filter": 2}, "kernel is required")


CHECKS = [
    Check("im2col", "conv_out_size, im2col against windows, col2im as its transpose", check_im2col),
    Check("forward", "forward against a sliding-window reference (padding, stride, no_bias)", check_forward),
    Check("forward_req", "forward honours req add and null", check_forward_req_),
    Check("backward", "gradients of data (col2im), weight and bias", check_backward),
    Check("backward_req", "backward honours req add and null", check_backward_req_),
    Check("infer_shape", "output size, weight and bias shapes, bad shapes", check_infer_shape),
    Check("numeric_gradient", "autograd against finite differences", check_numeric_gradient),
    Check("edge_cases", "whole-input kernels, padded tiny inputs, large strides, bad parameters", check_edge_cases),
]
