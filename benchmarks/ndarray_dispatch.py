#!/usr/bin/env python3
"""Imperative dispatch cost: ``a += 1`` and ``b = a + 1`` on 16 float32 elements. Prints JSON lines.

Usage::

    python benchmarks/ndarray_dispatch.py [--n 20000] [--reps 7] [--quick]

Same workload as ``shared/anchors/w1_dispatch.py`` (W1): one warm-up round, then ``reps``
rounds of ``n`` operations followed by ``mx.nd.waitall()``; microseconds per operation,
median of the rounds. Plain NumPy runs the same loop in the same process as the
in-run baseline; MXNet 1.9.1 and PyTorch figures come from anchors/RESULTS.md (measured on
this kind of machine): MXNet 40 us, PyTorch 6 us.

Targets (issue 3): at most half of MXNet's cost; stretch: within 2x of PyTorch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

import framework as mx

# anchors/RESULTS.md, W1 (us/op, medians of alternating-process rounds)
ANCHORS = {
    "inplace_a+=1": {"mxnet": 36.0, "torch": 6.96},
    "outofplace_b=a+1": {"mxnet": 41.1, "torch": 7.54},
}


def timed_rounds(loop, wait, n: int, reps: int) -> list[float]:
    loop(n)
    wait()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        loop(n)
        wait()
        samples.append((time.perf_counter() - start) / n * 1e6)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="n=2000, reps=3")
    args = parser.parse_args()
    n, reps = (2000, 3) if args.quick else (args.n, args.reps)

    a = mx.nd.zeros((16,), dtype="float32")
    na = np.zeros(16, dtype=np.float32)

    def mx_inplace(count: int) -> None:
        nonlocal a
        for _ in range(count):
            a += 1

    def mx_outofplace(count: int) -> None:
        for _ in range(count):
            b = a + 1  # noqa: F841 - the allocation and release are part of the cost

    def np_inplace(count: int) -> None:
        for _ in range(count):
            na.__iadd__(1)

    def np_outofplace(count: int) -> None:
        for _ in range(count):
            nb = na + 1  # noqa: F841

    cases = {
        "inplace_a+=1": (mx_inplace, np_inplace),
        "outofplace_b=a+1": (mx_outofplace, np_outofplace),
    }
    for case, (ours, numpy_loop) in cases.items():
        mine = timed_rounds(ours, mx.nd.waitall, n, reps)
        base = timed_rounds(numpy_loop, lambda: None, n, reps)
        median = statistics.median(mine)
        anchors = ANCHORS[case]
        print(
            json.dumps(
                {
                    "workload": "W1 imperative dispatch (16,) float32",
                    "case": case,
                    "unit": "us/op",
                    "engine": type(mx.engine.Engine.get()).__name__,
                    "n_ops": n,
                    "median": median,
                    "min": min(mine),
                    "max": max(mine),
                    "samples": mine,
                    "numpy_median_same_run": statistics.median(base),
                    "anchors_us": anchors,
                    "ratios": {
                        "ours_over_mxnet": median / anchors["mxnet"],
                        "ours_over_torch": median / anchors["torch"],
                        "ours_over_numpy_same_run": median / statistics.median(base),
                    },
                    "targets": {"ours_over_mxnet_at_most": 0.5, "stretch_ours_over_torch_at_most": 2.0},
                }
            ),
            flush=True,
        )
    assert float(a.asnumpy()[0]) > 0


if __name__ == "__main__":
    main()
