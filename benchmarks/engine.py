#!/usr/bin/env python3
"""Engine benchmarks: dispatch cost, parallel speedup, pooled allocation. Prints JSON lines.

Usage::

    python benchmarks/engine.py            # the full run (about a minute and a half)
    python benchmarks/engine.py --quick    # smaller sizes, a few seconds (what the test runs)
    python benchmarks/engine.py --only dispatch,parallel

Every line is one measurement: ``workload``, ``engine``, ``case``, ``unit``, ``median``,
``min``, ``max``, ``samples`` and ``ratios`` (plus details). Following DESIGN.md, the
figures to judge are ratios measured in the same run, not absolute times:

1. ``dispatch``: microseconds per operation for tiny Python functions pushed through each
   engine type (push loop + ``wait_for_all``), 20,000 operations on 4 variables: ``chain``
   (each op reads the previous variable and writes the next: one serial chain), ``rr``
   (round robin writes: 4 independent chains), and both inside ``engine.bulk(64)``.
   Compared with MXNet 1.9.1 on this kind of machine (anchors/RESULTS.md, W2).
2. ``parallel``: two independent chains of 20 matmuls of 1024x1024 float32 pushed through
   ThreadedEnginePerDevice with 2 workers versus 1, BLAS held to one thread; and, paired in
   the same reps, the same 40 matmuls in plain NumPy on 2 Python threads versus 1: the
   machine's own limit (anchors W3). Configurations alternate rep by rep.
3. ``storage``: one training step's allocations (the activations and gradients of an MLP,
   allocated in order, freed in reverse), repeated; the pooled allocator
   (``framework.storage``) against ``numpy.empty`` of the same sizes, with the pool's hit rate.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np
from threadpoolctl import threadpool_limits

import framework as mx
from framework import storage
from framework.engine import ENGINE_TYPES, create

WAIT_TIMEOUT_S = 300.0  # a hang becomes an error line instead of a stuck benchmark

# MXNet 1.9.1 figures from /work/shared/anchors/RESULTS.md (W2, us per op, median of 5).
# The headline: ~31 us/op to push a Python function through MXNet's default engine.
MXNET_PYTHON_FN_US = 31.0
MXNET_PUSH_PYCB_RR_DEFAULT_US = 26.8  # push_pycb_rr, default engine (ThreadedEnginePerDevice)
MXNET_SAME_ENGINE_US = {  # per engine type (MXNET_ENGINE_TYPE set explicitly)
    "push_pycb_rr": {"NaiveEngine": 5.6, "ThreadedEngine": 42.6, "ThreadedEnginePerDevice": 31.2},
    "nd_chain_cross": {"NaiveEngine": 27.1, "ThreadedEngine": 33.4, "ThreadedEnginePerDevice": 33.7},
    "nd_rr_bulk64": {"NaiveEngine": 33.2, "ThreadedEngine": 35.9, "ThreadedEnginePerDevice": 31.3},
}
# W3: T(workers=1)/T(workers=2) for MXNet; paired sequential/2-threads for NumPy.
MXNET_W3_SPEEDUP = 1.89
NUMPY_W3_PAIRED_SPEEDUP = 1.83
PARALLEL_TARGET = 1.8


def summarize(samples: list[float]) -> dict[str, Any]:
    """Median, min, max and the samples themselves (rounded for reading)."""
    return {
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "samples": [round(s, 6) for s in samples],
    }


def emit(record: dict[str, Any]) -> None:
    print(json.dumps(record), flush=True)


# =====================================================================================
# 1. Dispatch cost
# =====================================================================================


def dispatch(n: int, reps: int) -> None:
    """Microseconds per pushed no-op, per engine type and dependency pattern."""
    cases = [("rr", 1), ("chain", 1), ("rr_bulk64", 64), ("chain_bulk64", 64)]
    for engine_type in ENGINE_TYPES:
        eng = create(engine_type, None if engine_type == "NaiveEngine" else 2)
        try:
            variables = [eng.new_variable(f"v{i}") for i in range(4)]
            for case, bulk in cases:
                calls = [0]
                try:
                    _time_pushes(eng, variables, case, bulk=bulk, n=n, calls=calls)  # warm-up
                    runs = [_time_pushes(eng, variables, case, bulk=bulk, n=n, calls=calls) for _ in range(reps)]
                except Exception as err:  # report and carry on with the other cases
                    emit({"workload": "dispatch", "engine": engine_type, "case": case, "error": repr(err)[:400]})
                    continue
                stats = summarize([r[0] for r in runs])
                anchors = _dispatch_anchors(engine_type, case)
                emit(
                    {
                        "workload": "dispatch",
                        "engine": engine_type,
                        "case": case,
                        "unit": "us/op",
                        **stats,
                        "ratios": {f"ours/{name}": stats["median"] / value for name, value in anchors.items()},
                        "anchors_us": anchors,
                        "push_loop_us_median": statistics.median(r[1] for r in runs),
                        "n_ops": n,
                        "bulk_size": bulk,
                        "calls_ok": calls[0] == n * (reps + 1),
                    }
                )
        finally:
            eng.stop()


def _time_pushes(
    eng: Any, variables: list[Any], case: str, *, bulk: int, n: int, calls: list[int]
) -> tuple[float, float]:
    """Push ``n`` no-ops in the pattern of ``case``, wait; (total, push loop only) in us/op."""

    def tiny(run_ctx: Any) -> None:
        calls[0] += 1

    push, ctx = eng.push_sync, mx.cpu(0)
    previous = eng.set_bulk_size(bulk)
    t0 = time.perf_counter()
    if case.startswith("chain"):  # op i reads variable i-1 and writes variable i: one serial chain
        for i in range(n):
            push(tiny, ctx, const_vars=(variables[(i - 1) & 3],), mutable_vars=(variables[i & 3],))
    else:  # op i writes variable i % 4: four independent chains
        for i in range(n):
            push(tiny, ctx, mutable_vars=(variables[i & 3],))
    t1 = time.perf_counter()
    eng.set_bulk_size(previous)  # flushes the last open segment
    eng.wait_for_all(timeout=WAIT_TIMEOUT_S)
    t2 = time.perf_counter()
    return (t2 - t0) / n * 1e6, (t1 - t0) / n * 1e6


def _dispatch_anchors(engine_type: str, case: str) -> dict[str, float]:
    """The MXNet 1.9.1 figures a case is compared with."""
    if case == "rr":
        return {
            "mxnet_push_pycb_rr_default": MXNET_PUSH_PYCB_RR_DEFAULT_US,
            "mxnet_push_pycb_rr_same_engine": MXNET_SAME_ENGINE_US["push_pycb_rr"][engine_type],
        }
    if case == "chain":
        return {
            "mxnet_python_fn": MXNET_PYTHON_FN_US,
            "mxnet_nd_chain_cross_same_engine": MXNET_SAME_ENGINE_US["nd_chain_cross"][engine_type],
        }
    if case == "rr_bulk64":
        return {
            "mxnet_push_pycb_rr_default": MXNET_PUSH_PYCB_RR_DEFAULT_US,
            "mxnet_nd_rr_bulk64_same_engine": MXNET_SAME_ENGINE_US["nd_rr_bulk64"][engine_type],
        }
    return {"mxnet_python_fn": MXNET_PYTHON_FN_US}


# =====================================================================================
# 2. Parallel speedup
# =====================================================================================


def parallel(size: int, steps: int, reps: int) -> None:
    """Two independent matmul chains: engine with 2 workers vs 1, and NumPy threads vs 1."""
    rng = np.random.default_rng(0)
    bound = math.sqrt(3.0 / size)  # keeps the chain's values finite
    x0 = [rng.uniform(0, 1, (size, size)).astype(np.float32) for _ in range(2)]
    w = [rng.uniform(-bound, bound, (size, size)).astype(np.float32) for _ in range(2)]
    engines = {workers: create("ThreadedEnginePerDevice", workers) for workers in (1, 2)}

    def engine_run(workers: int) -> float:
        eng = engines[workers]
        # One variable per intermediate result, as MXNet gives each NDArray its own.
        variables = [[eng.new_variable(f"x{k}_{j}") for j in range(steps + 1)] for k in range(2)]
        results: list[list[Any]] = [[x0[k]] + [None] * steps for k in range(2)]
        t0 = time.perf_counter()
        for j in range(steps):
            for k in range(2):  # interleaved A0 B0 A1 B1 ..., as the W3 anchor pushes them

                def step(run_ctx: Any, k: int = k, j: int = j) -> None:
                    results[k][j + 1] = results[k][j] @ w[k]

                eng.push_sync(
                    step, mx.cpu(0), const_vars=(variables[k][j],), mutable_vars=(variables[k][j + 1],), name=f"dot{k}"
                )
        eng.wait_for_all(timeout=WAIT_TIMEOUT_S)
        elapsed = time.perf_counter() - t0
        assert all(np.isfinite(results[k][steps]).all() for k in range(2))
        return elapsed

    def numpy_chain(k: int) -> None:
        x = x0[k]
        for _ in range(steps):
            x = x @ w[k]

    def numpy_run(threads: int) -> float:
        t0 = time.perf_counter()
        if threads == 1:
            numpy_chain(0)
            numpy_chain(1)
        else:
            workers = [threading.Thread(target=numpy_chain, args=(k,)) for k in range(2)]
            for t in workers:
                t.start()
            for t in workers:
                t.join()
        return time.perf_counter() - t0

    configs: list[tuple[str, str, Callable[[], float]]] = [
        ("ThreadedEnginePerDevice", "two_chains_workers1", lambda: engine_run(1)),
        ("ThreadedEnginePerDevice", "two_chains_workers2", lambda: engine_run(2)),
        ("numpy", "two_chains_sequential", lambda: numpy_run(1)),
        ("numpy", "two_chains_threads2", lambda: numpy_run(2)),
    ]
    times: dict[str, list[float]] = {case: [] for _, case, _ in configs}
    try:
        with threadpool_limits(limits=1):
            for _, _, run in configs:  # warm-up
                run()
            for _ in range(reps):  # alternate, so that drift hits every configuration alike
                for _, case, run in configs:
                    times[case].append(run())
    finally:
        for eng in engines.values():
            eng.stop()

    flops = 2 * steps * 2 * size**3
    common = {"matrix": size, "steps_per_chain": steps, "blas_threads": 1}
    for engine_type, case, _ in configs:
        stats = summarize(times[case])
        emit(
            {
                "workload": "parallel",
                "engine": engine_type,
                "case": case,
                "unit": "s",
                **stats,
                "ratios": {},
                "gflops_median": flops / stats["median"] / 1e9,
                **common,
            }
        )
    engine_pairs = [a / b for a, b in zip(times["two_chains_workers1"], times["two_chains_workers2"], strict=True)]
    numpy_pairs = [a / b for a, b in zip(times["two_chains_sequential"], times["two_chains_threads2"], strict=True)]
    engine_speedup = statistics.median(engine_pairs)
    numpy_speedup = statistics.median(numpy_pairs)
    emit(
        {
            "workload": "parallel",
            "engine": "ThreadedEnginePerDevice",
            "case": "speedup_workers1_to_workers2",
            "unit": "x (T1/T2, paired per rep)",
            **summarize(engine_pairs),
            "ratios": {
                "ours/target": engine_speedup / PARALLEL_TARGET,
                "ours/numpy_threads_same_run": engine_speedup / numpy_speedup,
                "ours/mxnet_w3": engine_speedup / MXNET_W3_SPEEDUP,
                "engine_workers1/numpy_sequential": statistics.median(times["two_chains_workers1"])
                / statistics.median(times["two_chains_sequential"]),
            },
            "target": PARALLEL_TARGET,
            "meets_target": engine_speedup >= PARALLEL_TARGET,
            "ratio_of_medians": statistics.median(times["two_chains_workers1"])
            / statistics.median(times["two_chains_workers2"]),
            "anchor_mxnet_w3": MXNET_W3_SPEEDUP,
            **common,
        }
    )
    emit(
        {
            "workload": "parallel",
            "engine": "numpy",
            "case": "speedup_sequential_to_threads2",
            "unit": "x (T1/T2, paired per rep)",
            **summarize(numpy_pairs),
            "ratios": {"ours/anchor_numpy_w3": numpy_speedup / NUMPY_W3_PAIRED_SPEEDUP},
            "anchor_numpy_w3": NUMPY_W3_PAIRED_SPEEDUP,
            **common,
        }
    )


# =====================================================================================
# 3. Pooled allocation
# =====================================================================================


def mlp_step_sizes(batch: int = 128, dims: tuple[int, ...] = (784, 512, 512, 512, 512, 10)) -> list[int]:
    """Byte sizes of one MLP training step's buffers, in allocation order (float32).

    Forward, per layer: the FC output and the activation. Backward, last layer first: the
    activation's and FC output's gradients, the weight and bias gradients, the input gradient.
    """
    layers = list(itertools.pairwise(dims))
    sizes = []
    for _, d_out in layers:
        sizes += [batch * d_out, batch * d_out]
    for d_in, d_out in reversed(layers):
        sizes += [batch * d_out, batch * d_out, d_in * d_out, d_out, batch * d_in]
    return [4 * s for s in sizes]


def storage_bench(steps: int, reps: int) -> None:
    """Alloc-all-then-free-in-reverse per step: framework.storage vs numpy.empty.

    numpy.empty's cost depends on the process's history: glibc serves blocks above its mmap
    threshold with mmap/munmap, and raises that threshold after freeing a bigger block. Run
    after the 4 MiB matrices of ``parallel``, numpy.empty got about 5x cheaper here, so this
    workload runs first, in the state a fresh process starts in.
    """
    ctx = mx.cpu(0)
    sizes = mlp_step_sizes()

    def pooled_run() -> float:
        alloc, free = storage.alloc, storage.free
        t0 = time.perf_counter()
        for _ in range(steps):
            handles = [alloc(n, ctx) for n in sizes]
            while handles:
                free(handles.pop())
        return (time.perf_counter() - t0) / steps * 1e6

    def numpy_run() -> float:
        empty, uint8 = np.empty, np.uint8
        t0 = time.perf_counter()
        for _ in range(steps):
            arrays = [empty(n, dtype=uint8) for n in sizes]
            while arrays:
                arrays.pop()
        return (time.perf_counter() - t0) / steps * 1e6

    storage.release_all(ctx)  # a cold pool: the first step misses
    storage.reset_stats(ctx)
    pooled_run()
    cold = storage.stats(ctx)
    numpy_run()
    storage.reset_stats(ctx)
    pooled_times, numpy_times = [], []
    for _ in range(reps):
        pooled_times.append(pooled_run())
        numpy_times.append(numpy_run())
    warm = storage.stats(ctx)

    def hit_rate(stats: dict[str, Any]) -> float:
        return stats["hits"] / max(1, stats["hits"] + stats["misses"])

    pooled, plain = summarize(pooled_times), summarize(numpy_times)
    common = {"buffers_per_step": len(sizes), "bytes_per_step": sum(sizes), "steps": steps}
    emit(
        {
            "workload": "storage",
            "engine": f"framework.storage({cold['pool_type']})",
            "case": "mlp_step_alloc_free",
            "unit": "us/step",
            **pooled,
            "ratios": {"ours/numpy_empty": pooled["median"] / plain["median"]},
            "hit_rate_from_cold": hit_rate(cold),
            "hit_rate_warm": hit_rate(warm),
            "hits_from_cold": cold["hits"],
            "misses_from_cold": cold["misses"],
            "us_per_alloc_free": pooled["median"] / len(sizes),
            **common,
        }
    )
    emit(
        {
            "workload": "storage",
            "engine": "numpy.empty",
            "case": "mlp_step_alloc_free",
            "unit": "us/step",
            **plain,
            "ratios": {},
            "us_per_alloc_free": plain["median"] / len(sizes),
            **common,
        }
    )


# =====================================================================================


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds), for tests")
    parser.add_argument("--only", default="dispatch,parallel,storage", help="comma-separated workloads")
    args = parser.parse_args(argv)
    only = {w.strip() for w in args.only.split(",") if w.strip()}
    unknown = only - {"dispatch", "parallel", "storage"}
    if unknown:
        parser.error(f"unknown workload(s) {sorted(unknown)}; choose from dispatch, parallel, storage")
    if args.quick:
        plan = {"dispatch": (5_000, 3), "parallel": (512, 20, 3), "storage": (100, 3)}
    else:
        plan = {"dispatch": (20_000, 5), "parallel": (1024, 20, 5), "storage": (200, 5)}
    if "dispatch" in only:
        dispatch(*plan["dispatch"])
    if "storage" in only:  # before parallel: see storage_bench on malloc's memory of big frees
        storage_bench(*plan["storage"])
    if "parallel" in only:
        parallel(*plan["parallel"])


if __name__ == "__main__":
    main()
