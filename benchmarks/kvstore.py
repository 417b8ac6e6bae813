#!/usr/bin/env python3
"""KVStore benchmark: push/pull of many 4 MiB keys from two contexts. Prints JSON lines.

Usage::

    python benchmarks/kvstore.py            # 100 keys, 7 reps (about half a minute)
    python benchmarks/kvstore.py --quick    # 20 keys, 3 reps (a few seconds)

The workload is W6 of /work/shared/anchors (w6_kvstore.py): ``N`` keys, each a (1024, 1024)
float32 array. One iteration is

    kv.push(keys, [[v_cpu0, v_cpu1] per key])     # sum two "devices" per key
    kv.pull(keys, out=[[o_cpu0, o_cpu1] per key])  # broadcast the sum back
    mx.nd.waitall()

with no updater (the store keeps the sum). ``median`` is milliseconds per iteration over the
reps (each rep = ``iters`` iterations), after two warm-up iterations. Every line carries
``workload``, ``engine``, ``case``, ``unit``, ``median``, ``min``, ``max``, ``samples`` and
``ratios``: our time divided by MXNet 1.9.1's anchor (anchors/RESULTS.md W6: local 314 ms,
device 236 ms per iteration for 100 keys) and by the NumPy equivalent (add + 2 copies per key,
one thread) measured in this same run, which is the fairer yardstick on another machine.
With ``--quick`` the anchors are scaled to the number of keys (they are linear in it).
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

import framework as mx
from framework.engine import Engine
from framework.kvstore import create

SHAPE = (1024, 1024)
BYTES_PER_KEY = SHAPE[0] * SHAPE[1] * 4
ANCHOR_KEYS = 100
# MXNet 1.9.1, /work/shared/anchors/RESULTS.md W6 (ms per iteration, 100 keys, median of 7).
MXNET_MS = {"local": 314.0, "device": 236.1}
NUMPY_ANCHOR_MS = 245.5


def summarize(samples: list[float]) -> dict[str, Any]:
    """Median, min, max and the samples (ms)."""
    return {
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "samples": [round(s, 3) for s in samples],
    }


def timed(iteration: Callable[[], None], reps: int, iters: int) -> list[float]:
    """Milliseconds per iteration for each rep, after two warm-up iterations."""
    for _ in range(2):
        iteration()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(iters):
            iteration()
        samples.append((time.perf_counter() - start) / iters * 1e3)
    return samples


def bench_store(kv_type: str, nkeys: int, reps: int, iters: int) -> tuple[list[float], bool, dict[str, float]]:
    """Time one store type; return the samples, whether the pulled sums are right, push/pull-only ms."""
    kv = create(kv_type)
    keys = list(range(nkeys))
    ctxs = [mx.cpu(0), mx.cpu(1)]
    kv.init(keys, [mx.nd.zeros(SHAPE, ctx=ctxs[0]) for _ in keys])
    vals = [[mx.nd.full(SHAPE, float(k % 7 + 1) * (d + 1), ctx=c) for d, c in enumerate(ctxs)] for k in keys]
    outs = [[mx.nd.zeros(SHAPE, ctx=c) for c in ctxs] for _ in keys]
    mx.nd.waitall()

    def iteration() -> None:
        kv.push(keys, vals)
        kv.pull(keys, out=outs)
        mx.nd.waitall()

    samples = timed(iteration, reps, iters)
    correct = all(
        np.allclose(outs[k][d].asnumpy()[:2, :2], 3.0 * (k % 7 + 1))
        for k in {0, 1, nkeys // 2, nkeys - 1}
        for d in (0, 1)
    )
    start = time.perf_counter()
    kv.push(keys, vals)
    mx.nd.waitall()
    middle = time.perf_counter()
    kv.pull(keys, out=outs)
    mx.nd.waitall()
    split = {"push_only_ms": (middle - start) * 1e3, "pull_only_ms": (time.perf_counter() - middle) * 1e3}
    return samples, correct, split


def bench_numpy(nkeys: int, reps: int, iters: int) -> list[float]:
    """The same bytes moved directly in NumPy on one thread: add, then two copies, per key."""
    store = [np.zeros(SHAPE, np.float32) for _ in range(nkeys)]
    vals = [[np.full(SHAPE, float(k % 7 + 1) * (d + 1), np.float32) for d in range(2)] for k in range(nkeys)]
    outs = [[np.zeros(SHAPE, np.float32) for _ in range(2)] for _ in range(nkeys)]

    def iteration() -> None:
        for k in range(nkeys):
            np.add(vals[k][0], vals[k][1], out=store[k])
            np.copyto(outs[k][0], store[k])
            np.copyto(outs[k][1], store[k])

    return timed(iteration, reps, iters)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 keys, 3 reps of 1 iteration")
    parser.add_argument("--keys", type=int, default=None, help="number of 4 MiB keys (default 100, quick 20)")
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--iters", type=int, default=None)
    args = parser.parse_args(argv)
    nkeys = args.keys or (20 if args.quick else ANCHOR_KEYS)
    reps = args.reps or (3 if args.quick else 7)
    iters = args.iters or (1 if args.quick else 3)
    scale = nkeys / ANCHOR_KEYS
    moved = 2 * nkeys * BYTES_PER_KEY * 2  # bytes pushed + bytes pulled
    engine_name = Engine.get().type_name if hasattr(Engine.get(), "type_name") else type(Engine.get()).__name__
    numpy_stats = summarize(bench_numpy(nkeys, reps, iters))
    common = {"workload": "kvstore", "unit": "ms/iteration", "keys": nkeys, "reps": reps, "iters_per_rep": iters}
    print(
        json.dumps(
            {
                **common,
                "engine": "numpy",
                "case": "numpy-equivalent",
                **numpy_stats,
                "effective_GBps": moved / (numpy_stats["median"] / 1e3) / 1e9,
                "ratios": {"vs_numpy_anchor": numpy_stats["median"] / (NUMPY_ANCHOR_MS * scale)},
            }
        ),
        flush=True,
    )
    for kv_type in ("local", "device"):
        samples, correct, split = bench_store(kv_type, nkeys, reps, iters)
        stats = summarize(samples)
        record = {
            **common,
            "engine": engine_name,
            "case": kv_type,
            **stats,
            "effective_GBps": moved / (stats["median"] / 1e3) / 1e9,
            "correct": correct,
            **{k: round(v, 3) for k, v in split.items()},
            "mxnet_anchor_ms": round(MXNET_MS[kv_type] * scale, 3),
            "ratios": {
                "vs_mxnet": stats["median"] / (MXNET_MS[kv_type] * scale),
                "vs_numpy_this_run": stats["median"] / numpy_stats["median"],
            },
        }
        print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
