#!/usr/bin/env python3
"""Python ``CustomOp`` per-call overhead, MXLab against MXNet 1.9.1's ``Custom`` with the same class.

Usage::

    python benchmarks/custom_op.py [--n 2000] [--reps 5] [--quick]
    python benchmarks/custom_op.py --mxnet-python /work/main/.peers/mxvenv/bin/python

The operator is the smallest useful one: ``y = 2 x`` on 16 float32 numbers, written once as a
``CustomOp``/``CustomOpProp`` pair against the ``mx`` name, so the very same class runs on
both systems (``--system mxnet`` imports ``mxnet`` instead of ``framework``; nothing else
changes). What is timed is therefore almost all overhead: the front end, parameter parsing,
inference, the engine, the hand-off to the custom-operator thread and back. Two cases:

* ``forward``: ``mx.nd.Custom(x, op_type=...)`` ``n`` times, then ``waitall``;
* ``forward+backward``: the same call under ``autograd.record()`` and ``y.backward()``.

One JSON line per case with the microseconds per call of every round. With
``--mxnet-python`` the script also runs itself under that interpreter, one round at a time,
alternating with MXLab's rounds so both see the same machine load, and reports MXNet's median
beside MXLab's (``peers.mxnet``; issue 19's target: MXLab at most MXNet).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

SYSTEMS = {"mxlab": "framework", "mxnet": "mxnet"}
CASES = ("forward", "forward+backward")
OP_TYPE = "bench_twice"


def register_twice(mx: Any) -> None:
    """Register ``y = 2 x`` (and its gradient ``2 dy``) as a Python custom operator."""

    class Twice(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * 2)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0] * 2)

    @mx.operator.register(OP_TYPE)
    class TwiceProp(mx.operator.CustomOpProp):
        def __init__(self) -> None:
            super().__init__(need_top_grad=True)

        def create_operator(self, ctx, shapes, dtypes):
            return Twice()


def loops(mx: Any) -> dict[str, Callable[[int], Any]]:
    """One loop per case: ``n`` calls on a 16-element array, the last result returned."""
    x = mx.nd.array(np.arange(16, dtype=np.float32))
    x_grad = mx.nd.array(np.arange(16, dtype=np.float32))
    x_grad.attach_grad()

    def forward(n: int) -> Any:
        for _ in range(n):
            y = mx.nd.Custom(x, op_type=OP_TYPE)
        return y

    def forward_backward(n: int) -> Any:
        for _ in range(n):
            with mx.autograd.record():
                y = mx.nd.Custom(x_grad, op_type=OP_TYPE)
            y.backward()
        return x_grad.grad

    return {"forward": forward, "forward+backward": forward_backward}


def one_round(mx: Any, loop: Callable[[int], Any], n: int) -> float:
    """Microseconds per call of ``n`` calls, ``waitall`` inside the clock."""
    mx.nd.waitall()
    start = time.perf_counter()
    last = loop(n)
    mx.nd.waitall()
    seconds = time.perf_counter() - start
    assert float(last.asnumpy()[1]) == 2.0  # the operator really ran: 2 * 1, or the gradient 2
    return 1e6 * seconds / n


_prepared: dict[str, tuple[Any, dict[str, Callable[[int], Any]]]] = {}


def measure_rounds(system: str, n: int, reps: int) -> dict[str, list[float]]:
    """``reps`` rounds of each case on ``system`` (registered and warmed up on the first call)."""
    if system not in _prepared:
        mx = importlib.import_module(SYSTEMS[system])
        register_twice(mx)
        cases = loops(mx)
        for loop in cases.values():
            one_round(mx, loop, max(n // 10, 10))
        _prepared[system] = mx, cases
    mx, cases = _prepared[system]
    return {case: [one_round(mx, cases[case], n) for _ in range(reps)] for case in CASES}


def peer_round(python: str, n: int) -> dict[str, float]:
    """One round of each case in a fresh MXNet process (this script, ``--system mxnet --reps 1``)."""
    command = [python, os.path.abspath(__file__), "--system", "mxnet", "--n", str(n), "--reps", "1", "--raw"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the MXNet peer failed: {done.stderr[-2000:]}")
    return {case: samples[0] for case, samples in json.loads(done.stdout.splitlines()[-1]).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", choices=sorted(SYSTEMS), default="mxlab")
    parser.add_argument("--n", type=int, default=2000, help="calls per round")
    parser.add_argument("--reps", type=int, default=5, help="rounds")
    parser.add_argument("--quick", action="store_true", help="n=300, reps=3")
    parser.add_argument("--mxnet-python", help="an interpreter with mxnet 1.9.1, to measure it in the same run")
    parser.add_argument("--raw", action="store_true", help=argparse.SUPPRESS)  # one JSON dict of rounds
    args = parser.parse_args()
    n, reps = (300, 3) if args.quick else (args.n, args.reps)
    if args.raw:
        print(json.dumps(measure_rounds(args.system, n, reps)), flush=True)
        return
    mine: dict[str, list[float]] = {case: [] for case in CASES}
    theirs: dict[str, list[float]] = {case: [] for case in CASES}
    for _ in range(reps):  # alternate MXLab's rounds with MXNet's, so load hits both alike
        for case, samples in measure_rounds(args.system, n, 1).items():
            mine[case] += samples
        if args.mxnet_python and args.system == "mxlab":
            for case, value in peer_round(args.mxnet_python, n).items():
                theirs[case].append(value)
    for case in CASES:
        median = statistics.median(mine[case])
        record: dict[str, Any] = {
            "workload": "CustomOp per call (16,) float32",
            "case": case,
            "system": args.system,
            "unit": "us/call",
            "n_calls": n,
            "median": median,
            "min": min(mine[case]),
            "max": max(mine[case]),
            "samples": mine[case],
            "ratios": {},
            "targets": {"ours_over_mxnet_at_most": 1.0},
        }
        if theirs[case]:
            record["peers"] = {"mxnet": statistics.median(theirs[case])}
            record["mxnet_samples"] = theirs[case]
            record["ratios"]["ours_over_mxnet"] = median / record["peers"]["mxnet"]
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
