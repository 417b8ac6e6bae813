#!/usr/bin/env python3
"""Peer workload: MXNet 1.9.1's imperative dispatch, ``a += 1`` and ``b = a + 1`` on 16 float32 elements.

Run with an interpreter that has ``mxnet`` (see shared/anchors/README.md for the venv):

    mxvenv/bin/python benchmarks/peers/mxnet_dispatch.py [--n 20000] [--reps 1]

The loop is benchmarks/ndarray_dispatch.py's (one warm-up round, then ``reps`` rounds of ``n``
operations followed by ``mx.nd.waitall()``). Prints one JSON line per case with the
microseconds per operation of every round; ndarray_dispatch.py (``--mxnet-python``) calls it
once per round, alternating with its own rounds.
"""

from __future__ import annotations

import argparse
import json
import time

import mxnet as mx


def rounds(loop, n: int, reps: int) -> list[float]:
    loop(n)
    mx.nd.waitall()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        loop(n)
        mx.nd.waitall()
        samples.append((time.perf_counter() - start) / n * 1e6)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--reps", type=int, default=1)
    args = parser.parse_args()
    a = mx.nd.zeros((16,), dtype="float32")

    def inplace(count: int) -> None:
        nonlocal a
        for _ in range(count):
            a += 1

    def outofplace(count: int) -> None:
        for _ in range(count):
            b = a + 1  # noqa: F841 - the allocation and release are part of the cost

    for case, loop in (("inplace_a+=1", inplace), ("outofplace_b=a+1", outofplace)):
        print(json.dumps({"case": case, "samples": rounds(loop, args.n, args.reps), "mxnet": mx.__version__}))


if __name__ == "__main__":
    main()
