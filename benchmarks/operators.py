#!/usr/bin/env python3
"""FullyConnected, LayerNorm, linalg gemm2 and the fused RNN forward+backward, against plain NumPy (and MXNet 1.9.1).

Usage::

    python benchmarks/operators.py [--reps 30] [--quick] [--case layernorm]

MXLab's side is the whole framework path a user takes: ``mx.nd.FullyConnected`` inside
``autograd.record()``, then ``backward()``, then ``waitall()``: parameter parsing, shape
inference, engine pushes, the gradient pass, and the compute functions. The baseline is
hand-written NumPy doing the same math (``x @ w.T + b`` and its three gradients) in the
same process, alternated rep by rep. Target (issue 3): within 1.2x of NumPy. With
``--mxnet-python mxvenv/bin/python`` MXNet 1.9.1 runs the same layers (peers/mxnet_layers.py)
and the ratio is reported (issue 17's target: at most 1.5x MXNet's time on CPU). The
``linalg_gemm2`` case is a batch of matrix products, ``mx.nd.linalg.gemm2`` and its two
gradients; the ``layernorm_lm`` case is LayerNorm on a language model's activations (batch 32,
sequence 35, hidden 256) along the last axis, against the same forward and analytic backward in
NumPy. The ``rnn_lstm`` case is the fused ``RNN`` operator (LSTM, 2 layers, hidden 256, sequence
35, batch 32, input 256, gradients of every input); its baseline is the same operator's compute
functions called directly on NumPy arrays (so the ratio is the framework's overhead: inference,
engine, gradient graph), since the math itself is an LSTM's BPTT. ``--case`` runs only the
cases whose name contains the given text. Convolution
and pooling have their own benchmark (``benchmarks/operators_conv.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

import framework as mx

LAYERS = {"lenet_fc1": (64, 800, 500), "lenet_fc2": (64, 500, 10), "mlp_fc": (128, 784, 512)}
#: batch, rows of A, inner size, columns of B
GEMM2 = {"linalg_gemm2": (32, 64, 128, 64)}


#: LayerNorm data shapes (normalised along the last axis)
LAYER_NORMS = {"layernorm_lm": (32, 35, 256)}
#: fused RNN: mode, layers, hidden, sequence length, batch, input size
RNNS = {"rnn_lstm": ("lstm", 2, 256, 35, 32, 256)}


def mxnet_figures(python: str | None, reps: int, case: str = "") -> dict[str, float]:
    """Medians (ms) from MXNet 1.9.1 itself, run by ``benchmarks/peers/mxnet_layers.py``."""
    if not python:
        return {}
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers", "mxnet_layers.py")
    command = [python, script, "--reps", str(reps), "--case", case]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise SystemExit(f"the MXNet peer failed: {result.stderr[-2000:]}")
    return {row["case"]: row["median"] for row in map(json.loads, result.stdout.splitlines())}


def run(reps: int, mxnet_python: str | None = None, case: str = "") -> None:
    rng = np.random.default_rng(0)
    peers = mxnet_figures(mxnet_python, reps, case)
    for name, (batch, n_in, n_out) in LAYERS.items():
        if case in name:
            measure(rng, name, batch, n_in, n_out, reps, peers.get(name))
    for name, shape in GEMM2.items():
        if case in name:
            measure_gemm2(rng, name, shape, reps, peers.get(name))
    for name, shape in LAYER_NORMS.items():
        if case in name:
            measure_layer_norm(rng, name, shape, reps, peers.get(name))
    for name, spec in RNNS.items():
        if case in name:
            measure_rnn(rng, name, spec, reps, peers.get(name))


def time_pair(ours, baseline, reps: int) -> tuple[list[float], list[float]]:
    """Milliseconds of ``ours`` and ``baseline``, alternated rep by rep after one warm-up each."""
    ours()
    baseline()
    mine, base = [], []
    for _ in range(reps):
        start = time.perf_counter()
        ours()
        mine.append((time.perf_counter() - start) * 1e3)
        start = time.perf_counter()
        baseline()
        base.append((time.perf_counter() - start) * 1e3)
    return mine, base


def measure_layer_norm(
    rng: np.random.Generator, name: str, shape: tuple[int, ...], reps: int, mxnet_ms: float | None
) -> None:
    """LayerNorm along the last axis: ``mx.nd.LayerNorm`` under autograd against the same math in NumPy."""
    hidden, eps = shape[-1], 1e-5
    x_np = rng.standard_normal(shape, dtype=np.float32)
    g_np = rng.uniform(0.5, 1.5, hidden).astype(np.float32)
    b_np = np.zeros(hidden, dtype=np.float32)
    dy_np = rng.standard_normal(shape, dtype=np.float32)
    x, g, b, dy = (mx.nd.array(a) for a in (x_np, g_np, b_np, dy_np))
    for array in (x, g, b):
        array.attach_grad()

    def ours() -> None:
        with mx.autograd.record():
            y = mx.nd.LayerNorm(x, g, b, axis=-1, eps=eps)
        y.backward(dy)
        mx.nd.waitall()

    def numpy_same_math() -> None:
        mean = x_np.mean(axis=-1, keepdims=True)
        std = np.sqrt(np.square(x_np - mean).mean(axis=-1, keepdims=True) + eps)
        xhat = (x_np - mean) / std
        y = xhat * g_np + b_np  # noqa: F841 - forward, as the framework computes it
        dxhat = dy_np * g_np
        dx = (dxhat - dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True)) / std  # noqa: F841
        dgamma = (dy_np * xhat).reshape(-1, hidden).sum(axis=0)  # noqa: F841
        dbeta = dy_np.reshape(-1, hidden).sum(axis=0)  # noqa: F841

    mine, base = time_pair(ours, numpy_same_math, reps)
    report("LayerNorm forward+backward", name, {"data": list(shape), "axis": -1}, mine, base, mxnet_ms)


def measure_rnn(rng: np.random.Generator, name: str, spec: tuple, reps: int, mxnet_ms: float | None) -> None:
    """``mx.nd.RNN`` under autograd, then backward, against its compute functions called directly."""
    mode, layers, hidden, steps, batch, features = spec
    params = {"state_size": hidden, "num_layers": layers, "mode": mode}
    sym = mx.sym.RNN(name="rnn", **params)
    shapes, out_shapes, _ = sym.infer_shape(rnn_data=(steps, batch, features))
    arrays = [(rng.standard_normal(shape) * 0.1).astype(np.float32) for shape in shapes]
    dy_np = rng.standard_normal(out_shapes[0], dtype=np.float32)
    inputs, dy = [mx.nd.array(a) for a in arrays], mx.nd.array(dy_np)
    for array in inputs:
        array.attach_grad()

    def ours() -> None:
        with mx.autograd.record():
            y = mx.nd.RNN(*inputs, **params)
        y.backward(dy)
        mx.nd.waitall()

    forward_op, backward_op = mx.operator.get("RNN"), mx.operator.get("_backward_RNN")
    attrs, backward_attrs = forward_op.parse_attrs(params), backward_op.parse_attrs(params)
    op_shapes = list(shapes), [None, None]
    forward_op.run_infer_shape(attrs, *op_shapes)
    outputs = [np.empty(shape, np.float32) for shape in op_shapes[1]]
    grads = [np.empty_like(a) for a in arrays]
    op_ctx = mx.operator.OpContext(True, mx.cpu())
    write = mx.operator.WRITE

    def numpy_same_math() -> None:
        forward_op.get_compute("cpu")(attrs, op_ctx, arrays, [write] * 2, outputs)
        backward_op.get_compute("cpu")(backward_attrs, op_ctx, [dy_np, *arrays, outputs[1]], [write] * 4, grads)

    mine, base = time_pair(ours, numpy_same_math, reps)
    shape = {"mode": mode, "layers": layers, "hidden": hidden, "steps": steps, "batch": batch, "input": features}
    report("RNN forward+backward", name, shape, mine, base, mxnet_ms)


def report(workload: str, name: str, shape: dict, mine: list, base: list, mxnet_ms: float | None) -> None:
    """One JSON line: our times, the NumPy baseline's and MXNet's, and the ratios."""
    ratio = statistics.median(m / n for m, n in zip(mine, base, strict=True))
    print(
        json.dumps(
            {
                "workload": workload,
                "case": name,
                "shape": shape,
                "unit": "ms",
                "median": statistics.median(mine),
                "min": min(mine),
                "max": max(mine),
                "numpy_median": statistics.median(base),
                "mxnet_median": mxnet_ms,
                "peers": {"numpy": statistics.median(base), **({"mxnet": mxnet_ms} if mxnet_ms is not None else {})},
                "ratios": {
                    "ours_over_numpy_paired_median": ratio,
                    "ours_over_mxnet": None if mxnet_ms is None else statistics.median(mine) / mxnet_ms,
                },
                "targets": {"ours_over_numpy_at_most": 1.2, "ours_over_mxnet_at_most": 1.5},
            }
        ),
        flush=True,
    )


def measure(
    rng: np.random.Generator, name: str, batch: int, n_in: int, n_out: int, reps: int, mxnet_ms: float | None
) -> None:
    """One layer: the framework path and the NumPy baseline, alternated rep by rep."""
    x_np = rng.standard_normal((batch, n_in), dtype=np.float32)
    w_np = rng.standard_normal((n_out, n_in), dtype=np.float32) * 0.01
    b_np = np.zeros(n_out, dtype=np.float32)
    dy_np = rng.standard_normal((batch, n_out), dtype=np.float32)
    x, w, b, dy = (mx.nd.array(a) for a in (x_np, w_np, b_np, dy_np))
    for array in (x, w, b):
        array.attach_grad()

    def ours() -> None:
        with mx.autograd.record():
            y = mx.nd.FullyConnected(x, w, b, num_hidden=n_out)
        y.backward(dy)
        mx.nd.waitall()

    def numpy_same_math() -> None:
        y = x_np @ w_np.T + b_np  # noqa: F841 - forward, as the framework computes it
        dx = dy_np @ w_np  # noqa: F841
        dw = dy_np.T @ x_np  # noqa: F841
        db = dy_np.sum(axis=0)  # noqa: F841

    mine, base = time_pair(ours, numpy_same_math, reps)
    report("FullyConnected forward+backward", name, {"batch": batch, "in": n_in, "out": n_out}, mine, base, mxnet_ms)


def measure_gemm2(rng: np.random.Generator, name: str, shape: tuple, reps: int, mxnet_ms: float | None) -> None:
    """A batch of products ``A B`` and the gradients ``dA = dY B^T``, ``dB = A^T dY``."""
    batch, m, k, n = shape
    a_np = rng.standard_normal((batch, m, k), dtype=np.float32)
    b_np = rng.standard_normal((batch, k, n), dtype=np.float32)
    dy_np = rng.standard_normal((batch, m, n), dtype=np.float32)
    a, b, dy = (mx.nd.array(v) for v in (a_np, b_np, dy_np))
    for array in (a, b):
        array.attach_grad()

    def ours() -> None:
        with mx.autograd.record():
            y = mx.nd.linalg.gemm2(a, b)
        y.backward(dy)
        mx.nd.waitall()

    def numpy_same_math() -> None:
        y = a_np @ b_np  # noqa: F841
        da = dy_np @ b_np.swapaxes(-1, -2)  # noqa: F841
        db = a_np.swapaxes(-1, -2) @ dy_np  # noqa: F841

    mine, base = time_pair(ours, numpy_same_math, reps)
    report("linalg gemm2 forward+backward", name, {"batch": batch, "m": m, "k": k, "n": n}, mine, base, mxnet_ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="3 reps")
    parser.add_argument("--mxnet-python", help="an interpreter with mxnet 1.9.1, to measure it in the same run")
    parser.add_argument("--case", default="", help="run only the cases whose name contains this text")
    args = parser.parse_args()
    run(3 if args.quick else args.reps, args.mxnet_python, args.case)


if __name__ == "__main__":
    main()
