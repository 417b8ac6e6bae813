#!/usr/bin/env python3
"""Distributed KVStore benchmark: MLP training with dist_sync on 2 workers against 1. Prints JSON lines.

Usage::

    python benchmarks/kvstore_dist.py            # 3 reps of 20 steps per case (about a minute)
    python benchmarks/kvstore_dist.py --quick    # 2 reps of 5 steps

The network is the MLP 784-512-512-10 (about 670,000 parameters, 2.7 MB of float32 gradients
per step and worker) on synthetic data, batch 64 per worker, plain SGD. Three cases run on one
local Ray cluster:

* ``local``: one process, no KVStore (the optimizer runs in the process): the baseline;
* ``dist_sync-1w``: the launcher with 1 worker and 1 server: the cost of going through a server;
* ``dist_sync-2w``: the launcher with 2 workers and 2 servers, each worker on its own batches.

``median`` is the job's throughput in samples per second (all workers together) over the reps.
``comm_share`` is the share of a step spent in ``update`` (push the gradients, wait for the
servers to sum and apply them, pull the weights back), measured in a separate pass where each
step waits for its computation before communicating, so nothing overlaps. ``ratios`` compare with
the 1-worker dist_sync run and the local run of this same invocation. On a machine with fewer
cores than workers + servers the processes share the cores, so the 2-worker speedup measures
the overhead more than the scaling.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

import framework as mx
from framework.kvstore.cluster import import_ray, local_ray_options
from framework.module import Module

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 64
FEATURES = 784
CLASSES = 10
RESULT_TAG = "KVSTORE_DIST_RESULT "


# ----------------------------------------------------------------------------- the worker
def worker(steps: int, reps: int) -> dict[str, Any]:
    """Train the MLP; inside a launched job through dist_sync, else locally. Returns the timings."""
    distributed = "MXLAB_KV_RANK" in os.environ
    kv = mx.kv.create("dist_sync") if distributed else None
    rank = kv.rank if kv else 0
    data = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=512, name="fc1"), act_type="relu")
    h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=512, name="fc2"), act_type="relu")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=CLASSES, name="fc3"), name="softmax")
    mod = Module(net, context=[mx.cpu(0)])
    mod.bind(data_shapes=[("data", (BATCH, FEATURES))], label_shapes=[("softmax_label", (BATCH,))])
    mx.random.seed(0)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(kvstore=kv if kv else "local", optimizer="sgd", optimizer_params={"learning_rate": 0.05})
    rng = np.random.default_rng(rank)
    batches = [
        mx.io.DataBatch(
            data=[mx.nd.array(rng.standard_normal((BATCH, FEATURES)).astype(np.float32))],
            label=[mx.nd.array(rng.integers(0, CLASSES, BATCH).astype(np.float32))],
        )
        for _ in range(4)
    ]

    def step(i: int) -> None:
        mod.forward_backward(batches[i % len(batches)])
        mod.update()

    for i in range(3):  # warm-up
        step(i)
    mx.nd.waitall()
    rates = []
    for _ in range(reps):
        if kv:
            kv.barrier()
        start = time.perf_counter()
        for i in range(steps):
            step(i)
        mx.nd.waitall()
        rates.append(steps * BATCH / (time.perf_counter() - start))
    # the split: computation, then communication, each waited for
    compute = communicate = 0.0
    if kv:
        kv.barrier()
    for i in range(steps):
        t0 = time.perf_counter()
        mod.forward_backward(batches[i % len(batches)])
        mx.nd.waitall()
        t1 = time.perf_counter()
        mod.update()
        mx.nd.waitall()
        compute += t1 - t0
        communicate += time.perf_counter() - t1
    return {
        "rank": rank,
        "rates": rates,
        "compute_ms": compute / steps * 1e3,
        "update_ms": communicate / steps * 1e3,
        "comm_share": communicate / (compute + communicate),
    }


# ----------------------------------------------------------------------------- the driver
def run_case(command: list[str]) -> list[dict[str, Any]]:
    """Run a worker command (possibly under the launcher) and collect each worker's result line."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    results = [json.loads(line.split(RESULT_TAG, 1)[1]) for line in done.stdout.splitlines() if RESULT_TAG in line]
    return sorted(results, key=lambda r: r["rank"])


def record(case: str, workers: int, servers: int, results: list[dict[str, Any]], steps: int) -> dict[str, Any]:
    """One JSON line: the job's throughput per rep (all workers' samples together)."""
    reps = len(results[0]["rates"])
    totals = [sum(r["rates"][i] for r in results) for i in range(reps)]
    return {
        "workload": "kvstore_dist",
        "engine": os.environ.get("MXLAB_ENGINE_TYPE", "ThreadedEnginePerDevice"),
        "case": case,
        "unit": "samples/s",
        "median": statistics.median(totals),
        "min": min(totals),
        "max": max(totals),
        "samples": [round(t, 1) for t in totals],
        "workers": workers,
        "servers": servers,
        "batch_per_worker": BATCH,
        "steps_per_rep": steps,
        "compute_ms_per_step": round(statistics.mean(r["compute_ms"] for r in results), 3),
        "update_ms_per_step": round(statistics.mean(r["update_ms"] for r in results), 3),
        "comm_share": round(statistics.mean(r["comm_share"] for r in results), 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 reps of 5 steps")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    steps = args.steps or (5 if args.quick else 20)
    reps = args.reps or (2 if args.quick else 3)
    if args.worker:
        print(RESULT_TAG + json.dumps(worker(steps, reps)), flush=True)
        return 0

    ray = import_ray()
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    ray.init(namespace="mxlab-bench", **local_ray_options())
    address = ray.get_runtime_context().gcs_address
    me = [sys.executable, os.path.abspath(__file__), "--worker", "--steps", str(steps), "--reps", str(reps)]
    try:
        lines = [record("local", 1, 0, run_case(me), steps)]
        for workers in (1, 2):
            launch = [sys.executable, "-m", "framework.kvstore.launch", "-n", str(workers), "-s", str(workers)]
            launch += ["--address", address]
            lines.append(record(f"dist_sync-{workers}w", workers, workers, run_case(launch + me), steps))
    finally:
        ray.shutdown()
    local, one = lines[0], lines[1]
    for line in lines:
        line["ratios"] = {
            "vs_local": line["median"] / local["median"],
            "vs_dist_sync_1_worker": line["median"] / one["median"],
        }
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
