#!/usr/bin/env python3
"""Peer workload: MXNet 1.9.1's FullyConnected, Convolution, Pooling, LayerNorm, gemm2, RNN forward+backward.

Run with an interpreter that has ``mxnet`` (see shared/anchors/README.md for the venv):

    mxvenv/bin/python benchmarks/peers/mxnet_layers.py [--reps 20] [--case TEXT]

Prints JSON lines with the same ``case`` names as benchmarks/operators.py and
benchmarks/operators_conv.py, so the ratios can be formed (``--mxnet-python`` there).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import mxnet as mx
import numpy as np

FC = {"lenet_fc1": (64, 800, 500), "lenet_fc2": (64, 500, 10), "mlp_fc": (128, 784, 512)}
CONV = {"conv1": ((64, 1, 28, 28), 20), "conv2": ((64, 20, 12, 12), 50)}
POOL = {"pool1": (64, 20, 24, 24), "pool2": (64, 50, 8, 8)}
GEMM2 = {"linalg_gemm2": (32, 64, 128, 64)}
LAYER_NORM = {"layernorm_lm": (32, 35, 256)}
#: fused RNN: mode, layers, hidden, sequence length, batch, input size
RNN = {"rnn_lstm": ("lstm", 2, 256, 35, 32, 256)}


def timed(step, reps: int) -> list[float]:
    step()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        step()
        samples.append((time.perf_counter() - start) * 1e3)
    return samples


def fc_case(batch: int, n_in: int, n_out: int):
    x, w, b = mx.nd.random.normal(shape=(batch, n_in)), mx.nd.random.normal(shape=(n_out, n_in)), mx.nd.zeros(n_out)
    dy = mx.nd.random.normal(shape=(batch, n_out))
    for a in (x, w, b):
        a.attach_grad()

    def step():
        with mx.autograd.record():
            y = mx.nd.FullyConnected(x, w, b, num_hidden=n_out)
        y.backward(dy)
        mx.nd.waitall()

    return step


def conv_case(shape: tuple, filters: int):
    x = mx.nd.random.normal(shape=shape)
    w = mx.nd.random.normal(shape=(filters, shape[1], 5, 5))
    b = mx.nd.zeros(filters)
    for a in (x, w, b):
        a.attach_grad()

    def step():
        with mx.autograd.record():
            y = mx.nd.Convolution(x, w, b, kernel=(5, 5), num_filter=filters)
        y.backward(mx.nd.ones_like(y))
        mx.nd.waitall()

    return step


def pool_case(shape: tuple):
    x = mx.nd.random.normal(shape=shape)
    x.attach_grad()

    def step():
        with mx.autograd.record():
            y = mx.nd.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max")
        y.backward(mx.nd.ones_like(y))
        mx.nd.waitall()

    return step


def layer_norm_case(shape: tuple):
    x, dy = mx.nd.random.normal(shape=shape), mx.nd.random.normal(shape=shape)
    g, b = mx.nd.random.uniform(0.5, 1.5, shape=shape[-1:]), mx.nd.zeros(shape[-1:])
    for a in (x, g, b):
        a.attach_grad()

    def step():
        with mx.autograd.record():
            y = mx.nd.LayerNorm(x, g, b, axis=-1, eps=1e-5)
        y.backward(dy)
        mx.nd.waitall()

    return step


def gemm2_case(batch: int, m: int, k: int, n: int):
    a, b = mx.nd.random.normal(shape=(batch, m, k)), mx.nd.random.normal(shape=(batch, k, n))
    dy = mx.nd.random.normal(shape=(batch, m, n))
    for x in (a, b):
        x.attach_grad()

    def step():
        with mx.autograd.record():
            y = mx.nd.linalg.gemm2(a, b)
        y.backward(dy)
        mx.nd.waitall()

    return step


def rnn_case(mode: str, layers: int, hidden: int, steps: int, batch: int, features: int):
    """The fused RNN operator on (steps, batch, features) data, every input differentiated."""
    sym = mx.sym.RNN(state_size=hidden, num_layers=layers, mode=mode, name="rnn")
    shapes, _, _ = sym.infer_shape(rnn_data=(steps, batch, features))
    inputs = [mx.nd.random.normal(scale=0.1, shape=shape) for shape in shapes]
    dy = mx.nd.random.normal(shape=(steps, batch, hidden))
    for a in inputs:
        a.attach_grad()

    def step():
        with mx.autograd.record():
            y = mx.nd.RNN(*inputs, state_size=hidden, num_layers=layers, mode=mode)
        y.backward(dy)
        mx.nd.waitall()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--case", default="", help="run only the cases whose name contains this text")
    args = parser.parse_args()
    cases = {name: fc_case(*shape) for name, shape in FC.items()}
    cases.update({name: conv_case(*spec) for name, spec in CONV.items()})
    cases.update({name: pool_case(shape) for name, shape in POOL.items()})
    cases.update({name: gemm2_case(*shape) for name, shape in GEMM2.items()})
    cases.update({name: layer_norm_case(shape) for name, shape in LAYER_NORM.items()})
    cases.update({name: rnn_case(*spec) for name, spec in RNN.items()})
    for name, step in cases.items():
        if args.case not in name:
            continue
        samples = timed(step, args.reps)
        print(
            json.dumps(
                {
                    "system": "mxnet",
                    "version": mx.__version__,
                    "case": name,
                    "unit": "ms",
                    "median": statistics.median(samples),
                    "min": min(samples),
                    "max": max(samples),
                }
            )
        )
        assert np.isfinite(samples[-1])


if __name__ == "__main__":
    main()
