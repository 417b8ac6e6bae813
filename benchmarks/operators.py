#!/usr/bin/env python3
"""FullyConnected and LayerNorm forward+backward, against plain NumPy (and MXNet 1.9.1).

Usage::

    python benchmarks/operators.py [--reps 30] [--quick] [--cases layernorm_lm,lenet_fc1]

MXLab's side is the whole framework path a user takes: ``mx.nd.FullyConnected`` inside
``autograd.record()``, then ``backward()``, then ``waitall()``: parameter parsing, shape
inference, engine pushes, the gradient pass, and the compute functions. The baseline is
hand-written NumPy doing the same math (``x @ w.T + b`` and its three gradients) in the
same process, alternated rep by rep. Target (issue 3): within 1.2x of NumPy. With
``--mxnet-python mxvenv/bin/python`` MXNet 1.9.1 runs the same layers (peers/mxnet_layers.py)
and the ratio is reported. Convolution and pooling have their own benchmark
(``benchmarks/operators_conv.py``).

LayerNorm (issue 17) runs on a language model's activations, (batch 32, sequence 35, hidden
256) normalised along the last axis, against NumPy doing the same forward pass and analytic
backward pass; its target is at most 1.5x MXNet's time. ``--cases`` runs only the named cases.
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
LAYER_NORMS = {"layernorm_lm": (32, 35, 256)}


def mxnet_figures(python: str | None, reps: int, cases: list[str] | None = None) -> dict[str, float]:
    """Medians (ms) from MXNet 1.9.1 itself, run by ``benchmarks/peers/mxnet_layers.py``."""
    if not python:
        return {}
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers", "mxnet_layers.py")
    command = [python, script, "--reps", str(reps)] + (["--cases", ",".join(cases)] if cases else [])
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise SystemExit(f"the MXNet peer failed: {result.stderr[-2000:]}")
    return {row["case"]: row["median"] for row in map(json.loads, result.stdout.splitlines())}


def run(reps: int, mxnet_python: str | None = None, cases: list[str] | None = None) -> None:
    known = [*LAYERS, *LAYER_NORMS]
    unknown = sorted(set(cases or []) - set(known))
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}; this script measures {known}")
    rng = np.random.default_rng(0)
    peers = mxnet_figures(mxnet_python, reps, cases)
    for name, (batch, n_in, n_out) in LAYERS.items():
        if not cases or name in cases:
            measure(rng, name, batch, n_in, n_out, reps, peers.get(name))
    for name, shape in LAYER_NORMS.items():
        if not cases or name in cases:
            measure_layer_norm(rng, name, shape, reps, peers.get(name))


def paired(ours, baseline, reps: int) -> tuple[list[float], list[float]]:
    """Times (ms) of the two functions, alternated rep by rep after one warm-up call each."""
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

    mine, base = paired(ours, numpy_same_math, reps)
    print(
        json.dumps(
            {
                "workload": "LayerNorm forward+backward",
                "case": name,
                "shape": {"data": list(shape), "axis": -1},
                "unit": "ms",
                "median": statistics.median(mine),
                "min": min(mine),
                "max": max(mine),
                "numpy_median": statistics.median(base),
                "mxnet_median": mxnet_ms,
                "ratios": {
                    "ours_over_numpy_paired_median": statistics.median(m / n for m, n in zip(mine, base, strict=True)),
                    "ours_over_mxnet": None if mxnet_ms is None else statistics.median(mine) / mxnet_ms,
                },
                "targets": {"ours_over_mxnet_at_most": 1.5},
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

    ours()
    numpy_same_math()
    mine, base = [], []
    for _ in range(reps):
        start = time.perf_counter()
        ours()
        mine.append((time.perf_counter() - start) * 1e3)
        start = time.perf_counter()
        numpy_same_math()
        base.append((time.perf_counter() - start) * 1e3)
    ratio = statistics.median(m / n for m, n in zip(mine, base, strict=True))
    print(
        json.dumps(
            {
                "workload": "FullyConnected forward+backward",
                "case": name,
                "shape": {"batch": batch, "in": n_in, "out": n_out},
                "unit": "ms",
                "median": statistics.median(mine),
                "min": min(mine),
                "max": max(mine),
                "numpy_median": statistics.median(base),
                "mxnet_median": mxnet_ms,
                "ratios": {
                    "ours_over_numpy_paired_median": ratio,
                    "ours_over_mxnet": None if mxnet_ms is None else statistics.median(mine) / mxnet_ms,
                },
                "targets": {"ours_over_numpy_at_most": 1.2},
            }
        ),
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="3 reps")
    parser.add_argument("--mxnet-python", help="an interpreter with mxnet 1.9.1, to measure it in the same run")
    parser.add_argument("--cases", help="comma-separated case names to run (default: all)")
    args = parser.parse_args()
    cases = [c.strip() for c in args.cases.split(",") if c.strip()] if args.cases else None
    run(3 if args.quick else args.reps, args.mxnet_python, cases)


if __name__ == "__main__":
    main()
