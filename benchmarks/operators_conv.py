#!/usr/bin/env python3
"""Convolution and pooling benchmark on LeNet's layer shapes (batch 64). Prints JSON lines.

Usage::

    python benchmarks/operators_conv.py            # 40 reps per case (about half a minute)
    python benchmarks/operators_conv.py --quick    # 5 reps, a few seconds
    python benchmarks/operators_conv.py --clock cpu   # process CPU time: steadier on a busy machine
    python benchmarks/operators_conv.py --layers --clock cpu   # per layer, forward and backward apart

Each case times one forward + backward pass (all input gradients: data, weight, bias) of
one LeNet layer in two ways, alternating rep by rep in the same process:

* ``mxlab``: ``mx.nd.Convolution`` / ``mx.nd.Pooling`` under ``autograd.record()``, then
  ``backward`` and ``waitall``: the whole framework path (parameter parsing, shape
  inference, engine push, autograd graph, backward operators);
* ``numpy``: a hand-written NumPy im2col implementation of the same math, the textbook way
  (column matrix (C*K, N*L) from a strided window view, one GEMM, the forward's ``col``
  cached for backward, col2im as one strided add per kernel position; max pooling by
  argmax over the window view and one scatter per kernel position).

Figures to judge: ``ratios.mxlab_over_numpy`` (the target is <= 1.2) per layer and for
the whole stack (``case: lenet_total``). ``mxlab_kernels`` times MXLab's compute functions
called directly on NumPy arrays (no engine, no autograd) to show what the framework path
itself costs. Every line: ``workload``, ``engine``, ``case``, ``unit`` (ms), ``median``,
``min``, ``max``, ``samples`` and ``ratios``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from threadpoolctl import threadpool_limits

import framework as mx
from framework.operator import registry
from framework.operator.kernel import NULL, WRITE, OpContext
from framework.resource import ResourceManager

BATCH = 64
# (case, kind, data shape, parameters) for LeNet's convolution and pooling layers
LAYERS: list[tuple[str, str, tuple[int, ...], dict[str, Any]]] = [
    ("conv1", "conv", (BATCH, 1, 28, 28), {"kernel": (5, 5), "num_filter": 20}),
    ("pool1", "pool", (BATCH, 20, 24, 24), {"kernel": (2, 2), "stride": (2, 2), "pool_type": "max"}),
    ("conv2", "conv", (BATCH, 20, 12, 12), {"kernel": (5, 5), "num_filter": 50}),
    ("pool2", "pool", (BATCH, 50, 8, 8), {"kernel": (2, 2), "stride": (2, 2), "pool_type": "max"}),
]


# ----------------------------------------------------------------------------- the NumPy baseline
def numpy_conv(x: np.ndarray, w: np.ndarray, b: np.ndarray, dy: np.ndarray) -> tuple[np.ndarray, ...]:
    """Forward + backward of a stride-1, unpadded 2-D convolution, textbook im2col."""
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    oh, ow = h - kh + 1, wd - kw + 1
    windows = sliding_window_view(x, (kh, kw), axis=(2, 3))  # (N, C, oh, ow, kh, kw), a view
    col = windows.transpose(1, 4, 5, 0, 2, 3).reshape(c * kh * kw, n * oh * ow)  # the im2col copy
    w2 = w.reshape(f, -1)
    y = np.ascontiguousarray((w2 @ col).reshape(f, n, oh, ow).transpose(1, 0, 2, 3))
    y += b[None, :, None, None]
    dy2 = dy.transpose(1, 0, 2, 3).reshape(f, -1)
    db = dy2.sum(axis=1)
    dw = (dy2 @ col.T).reshape(w.shape)
    dcol = (w2.T @ dy2).reshape(c, kh, kw, n, oh, ow)
    dx = np.zeros_like(x)
    for i in range(kh):  # col2im: one strided add per kernel position
        for j in range(kw):
            dx[:, :, i : i + oh, j : j + ow] += dcol[:, i, j].transpose(1, 0, 2, 3)
    return y, dx, dw, db


def numpy_max_pool(x: np.ndarray, dy: np.ndarray, k: int = 2, s: int = 2) -> tuple[np.ndarray, ...]:
    """Forward + backward of k x k max pooling with stride s (first maximum wins)."""
    windows = sliding_window_view(x, (k, k), axis=(2, 3))[:, :, ::s, ::s]
    oh, ow = windows.shape[2:4]
    flat = windows.reshape(*windows.shape[:4], k * k)
    arg = flat.argmax(axis=-1)
    y = np.take_along_axis(flat, arg[..., None], axis=-1)[..., 0]
    dx = np.zeros_like(x)
    for i in range(k):
        for j in range(k):
            dx[:, :, i : i + s * (oh - 1) + 1 : s, j : j + s * (ow - 1) + 1 : s] += np.where(arg == i * k + j, dy, 0)
    return y, dx


# ----------------------------------------------------------------------------- the MXLab paths
def mxlab_step(kind: str, params: dict[str, Any], arrays: list[mx.nd.NDArray], dy: mx.nd.NDArray) -> Callable:
    op = mx.nd.Convolution if kind == "conv" else mx.nd.Pooling

    def step() -> None:
        with mx.autograd.record():
            y = op(*arrays, **params)
        y.backward(dy)
        mx.nd.waitall()

    return step


def kernel_pair(
    kind: str, params: dict[str, Any], arrays: list[np.ndarray], dy: np.ndarray, data_grad: bool = True
) -> tuple[Callable[[], None], Callable[[], None]]:
    """MXLab's forward and backward compute functions called directly (no engine, no autograd).

    ``data_grad=False`` asks for no data gradient (req null), as training does for a first layer.
    """
    name = "Convolution" if kind == "conv" else "Pooling"
    fwd, bwd = registry.get(name), registry.get("_backward_" + name)
    attrs, battrs = fwd.parse_attrs(params), bwd.parse_attrs(params)
    ctx = mx.cpu(0)
    temp = [ResourceManager.get().request(ctx, r) for r in fwd.resource_request(attrs)]
    op_ctx = OpContext(True, ctx, None, temp)
    out = np.empty(dy.shape, np.float32)
    grads = [np.empty_like(a) for a in arrays]
    reqs = [WRITE if data_grad else NULL] + [WRITE] * (len(grads) - 1)

    def forward() -> None:
        fwd.get_compute("cpu")(attrs, op_ctx, arrays, [WRITE], [out])

    def backward() -> None:
        inputs = [dy, arrays[0], arrays[1]] if kind == "conv" else [dy, arrays[0], out]
        bwd.get_compute("cpu")(battrs, op_ctx, inputs, reqs, grads)

    forward()  # the backward pass of pooling reads the forward's output
    return forward, backward


def kernels_step(kind: str, params: dict[str, Any], arrays: list[np.ndarray], dy: np.ndarray) -> Callable:
    """Forward then backward of :func:`kernel_pair`, every gradient requested."""
    forward, backward = kernel_pair(kind, params, arrays, dy)

    def step() -> None:
        forward()
        backward()

    return step


# ----------------------------------------------------------------------------- timing
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def alternate(fns: dict[str, Callable[[], Any]], reps: int, clock: str = "wall") -> dict[str, list[float]]:
    """Milliseconds per call for each function, alternating them rep by rep (after a warm-up).

    ``clock='cpu'`` counts the CPU time of the whole process (the engine's threads included)
    instead of wall time: other jobs on a shared machine then slow it far less.
    """
    now = CLOCKS[clock]
    for fn in fns.values():
        fn()
        fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            start = now()
            fn()
            samples[name].append((now() - start) * 1e3)
    return samples


def record(case: str, engine: str, samples: list[float], ratios: dict[str, float], **extra: Any) -> dict[str, Any]:
    return {
        "workload": "conv_pool",
        "engine": engine,
        "case": case,
        "unit": "ms",
        "median": round(statistics.median(samples), 4),
        "min": round(min(samples), 4),
        "max": round(max(samples), 4),
        "samples": [round(s, 4) for s in samples],
        "ratios": ratios,
        **extra,
    }


def check_same_math(kind: str, arrays: list[np.ndarray], params: dict[str, Any], dy: np.ndarray) -> float:
    """Largest relative difference between MXLab's and the baseline's outputs and gradients."""
    nds = [mx.nd.array(a) for a in arrays]
    for a in nds:
        a.attach_grad()
    with mx.autograd.record():
        y = (mx.nd.Convolution if kind == "conv" else mx.nd.Pooling)(*nds, **params)
    y.backward(mx.nd.array(dy))
    ours = [y.asnumpy()] + [a.grad.asnumpy() for a in nds]
    theirs = numpy_conv(*arrays, dy) if kind == "conv" else numpy_max_pool(arrays[0], dy)
    return max(float(np.abs(a - b).max() / (1 + np.abs(b).max())) for a, b in zip(ours, theirs, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 reps per case instead of 40")
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument(
        "--blas-threads", type=int, default=1, help="BLAS threads for both sides (default 1: stable on a busy machine)"
    )
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall", help="wall time or process CPU time")
    parser.add_argument(
        "--layers", action="store_true", help="only MXLab's kernels, forward and backward timed apart, as in training"
    )
    args = parser.parse_args()
    reps = args.reps or (5 if args.quick else 40)

    with threadpool_limits(limits=args.blas_threads):
        (layer_table if args.layers else run)(reps, args.blas_threads, args.clock)


def layer_arrays(rng: np.random.Generator, kind: str, shape: tuple[int, ...], params: dict[str, Any]) -> tuple:
    """Random inputs (data[, weight, bias]) and output gradient for one of ``LAYERS``."""
    x = rng.standard_normal(shape, dtype=np.float32)
    if kind == "conv":
        f, k = params["num_filter"], params["kernel"]
        arrays = [
            x,
            rng.standard_normal((f, shape[1], *k), dtype=np.float32) * 0.1,
            rng.standard_normal(f, dtype=np.float32),
        ]
        out_shape = (shape[0], f, shape[2] - k[0] + 1, shape[3] - k[1] + 1)
    else:
        arrays = [x]
        out_shape = (shape[0], shape[1], shape[2] // 2, shape[3] // 2)
    return arrays, rng.standard_normal(out_shape, dtype=np.float32)


def layer_table(reps: int, blas_threads: int, clock: str = "wall") -> None:
    """Each layer's forward and backward kernel apart, with the gradient requests of training.

    The first layer computes no data gradient (the executor asks for none: ``data`` needs
    no gradient), so ``conv1.backward`` is the weight and bias gradients alone.
    """
    rng = np.random.default_rng(0)
    for index, (case, kind, shape, params) in enumerate(LAYERS):
        arrays, dy = layer_arrays(rng, kind, shape, params)
        forward, backward = kernel_pair(kind, params, arrays, dy, data_grad=index > 0)
        samples = alternate({"forward": forward, "backward": backward}, reps, clock)
        for part, values in samples.items():
            line = record(f"{case}.{part}", "mxlab_kernels", values, {}, blas_threads=blas_threads, clock=clock)
            print(json.dumps(line))


def run(reps: int, blas_threads: int, clock: str = "wall") -> None:
    rng = np.random.default_rng(0)
    totals: dict[str, list[float]] = {"mxlab": [0.0] * reps, "numpy": [0.0] * reps, "mxlab_kernels": [0.0] * reps}
    for case, kind, shape, params in LAYERS:
        arrays, dy = layer_arrays(rng, kind, shape, params)
        difference = check_same_math(kind, arrays, params, dy)
        nds = [mx.nd.array(a) for a in arrays]
        for a in nds:
            a.attach_grad()
        fns = {
            "mxlab": mxlab_step(kind, params, nds, mx.nd.array(dy)),
            "numpy": (lambda a=arrays, d=dy: numpy_conv(*a, d))
            if kind == "conv"
            else (lambda a=arrays, d=dy: numpy_max_pool(a[0], d)),
            "mxlab_kernels": kernels_step(kind, params, arrays, dy),
        }
        samples = alternate(fns, reps, clock)
        base = statistics.median(samples["numpy"])
        for engine, values in samples.items():
            for i, v in enumerate(values):
                totals[engine][i] += v
            ratio = {"mxlab_over_numpy": round(statistics.median(values) / base, 3)}
            print(
                json.dumps(
                    record(
                        case,
                        engine,
                        values,
                        ratio,
                        shape=list(shape),
                        params={k: str(v) for k, v in params.items()},
                        max_rel_difference=difference,
                    )
                )
            )
    base = statistics.median(totals["numpy"])
    for engine, values in totals.items():
        ratio = {"mxlab_over_numpy": round(statistics.median(values) / base, 3)}
        print(json.dumps(record("lenet_total", engine, values, ratio, blas_threads=blas_threads, clock=clock)))


if __name__ == "__main__":
    main()
