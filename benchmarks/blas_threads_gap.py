#!/usr/bin/env python3
"""How the MLP's gap to NumPy by hand changes with BLAS threads, in one process. JSON lines.

Usage::

    python benchmarks/blas_threads_gap.py [--reps 9] [--threads 1,2] [--quick]

``train_throughput.py`` measures one BLAS thread count per run, so two runs on a shared machine
see different loads. This script times the Module MLP step and the hand-written NumPy MLP
(``train_throughput.py``'s ``module_runner`` and ``numpy_runner``) in one process, switching
NumPy's BLAS threads (threadpoolctl) between reps: each rep runs every (thread count, system)
pair once. It reports per pair the fastest rep's milliseconds per step (the rep least disturbed
by other processes) and the median, and per thread count the gap (MXLab minus NumPy, ms) and the
ratio (NumPy's step over MXLab's, i.e. MXLab's speed as a fraction of NumPy's). A gap that stays
the same while both steps get shorter is a fixed cost outside the products: the second BLAS
thread shortens only the products, so the same gap is a larger share of a shorter step.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from threadpoolctl import threadpool_limits

import framework as mx
from benchmarks.train_throughput import make_data, module_runner, numpy_runner

BATCH, WARM, TIMED = 128, 30, 40


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=None, help="reps (default 9, quick 3)")
    parser.add_argument("--quick", action="store_true", help="3 reps")
    parser.add_argument("--threads", default="1,2", help="BLAS thread counts to alternate, comma-separated")
    args = parser.parse_args()
    counts = [int(t) for t in args.threads.split(",") if t.strip()]
    x, y = make_data(BATCH * 50, (784,))
    runners = {"mxlab": module_runner(mx, "mlp", BATCH, x, y), "numpy": numpy_runner(BATCH, x, y)}
    for count in counts:
        with threadpool_limits(limits=count, user_api="blas"):
            for run in runners.values():
                run(0, WARM)
    ms: dict[tuple[int, str], list[float]] = {(c, name): [] for c in counts for name in runners}
    reps = args.reps or (3 if args.quick else 9)
    for rep in range(reps):
        for count in counts:
            with threadpool_limits(limits=count, user_api="blas"):
                for name, run in runners.items():
                    ms[(count, name)].append(1e3 * run(rep * TIMED, TIMED) / TIMED)
    for count in counts:
        best = {name: min(ms[(count, name)]) for name in runners}
        median = {name: statistics.median(ms[(count, name)]) for name in runners}
        print(
            json.dumps(
                {
                    "workload": "blas_threads_gap",
                    "blas_threads": count,
                    "engine": type(mx.engine.Engine.get()).__name__,
                    "ms_per_step_best": {k: round(v, 3) for k, v in best.items()},
                    "ms_per_step_median": {k: round(v, 3) for k, v in median.items()},
                    "gap_ms_best": round(best["mxlab"] - best["numpy"], 3),
                    "mxlab_over_numpy_best": round(best["numpy"] / best["mxlab"], 3),
                    "reps": reps,
                    "loadavg": os.getloadavg(),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
