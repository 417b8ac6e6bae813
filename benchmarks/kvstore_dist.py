#!/usr/bin/env python3
"""Distributed KVStore benchmark: MLP training with dist_sync on 2 workers against 1 process. Prints JSON lines.

Usage::

    python benchmarks/kvstore_dist.py            # 3 reps of 20 steps per case (about a minute)
    python benchmarks/kvstore_dist.py --quick    # 2 reps of 5 steps

The network is the MLP 784-512-512-10 (about 670,000 parameters, 2.7 MB of float32 gradients
per step and worker) on synthetic data, batch 64 per worker, plain SGD. Two cases run on one
local Ray cluster:

* ``local``: one process, no KVStore (the optimizer runs in the process): the baseline;
* ``dist_sync-2w1s``: the launcher with 2 workers and 1 server, each worker on its own batches,
  the optimizer on the server (MXNet's default for distributed training).

``median`` is the job's throughput in samples per second (all workers together) over the reps;
``ratios.vs_local`` divides it by the one-process figure of this same invocation (the issue's
target for 2 workers is at least 0.7). Then a second pass times every step on its own
(``DistKVStore.begin_step``/``end_step``) and splits it, on each worker's own clock, into
``compute`` (no message to a server in flight), ``communication`` (messages in flight) and
``waiting`` (a server holding a push until the other worker pushed too); see
:mod:`framework.kvstore.timing`. ``messages_per_step`` counts the messages of one step (one
pushpull per layer and server). The workers share their server's host here, so the arrays go
through shared memory and the messages over the servers' Unix sockets; run with
``MXLAB_KV_TRANSPORT=ray`` to send everything through Ray instead (docs/kvstore.md). On a
machine with fewer cores than workers + server the processes share the cores, so the 2-worker
figure measures overhead more than scaling.
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
from framework.kvstore.launch import BLAS_VARIABLES
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
    # the split: every step timed on its own, cut by the messages in flight (framework/kvstore/timing.py)
    splits = []
    if kv:
        kv.barrier()
    for i in range(steps):
        if kv:
            kv.begin_step()
            step(i)
            s = kv.end_step()
            splits.append((s.compute_s, s.comm_s, s.wait_s, s.ray_calls))
        else:
            t0 = time.perf_counter()
            step(i)
            mx.nd.waitall()
            splits.append((time.perf_counter() - t0, 0.0, 0.0, 0))
    compute, comm, wait, calls = (statistics.mean(column) for column in zip(*splits, strict=True))
    return {
        "rank": rank,
        "rates": rates,
        "compute_ms": compute * 1e3,
        "comm_ms": comm * 1e3,
        "wait_ms": wait * 1e3,
        "messages_per_step": calls,
        "steps_ms": [[round(x * 1e3, 3) for x in row[:3]] for row in splits],
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
    """One JSON line: the job's throughput per rep (all workers' samples together) and the step split."""
    reps = len(results[0]["rates"])
    totals = [sum(r["rates"][i] for r in results) for i in range(reps)]

    def mean(field: str) -> float:
        return round(statistics.mean(r[field] for r in results), 3)

    step_ms = mean("compute_ms") + mean("comm_ms") + mean("wait_ms")
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
        "split_ms_per_step": {
            "compute": mean("compute_ms"),
            "communication": mean("comm_ms"),
            "waiting": mean("wait_ms"),
        },
        "comm_share": round((mean("comm_ms") + mean("wait_ms")) / step_ms, 4) if step_ms else 0.0,
        "messages_per_step": mean("messages_per_step"),
        "per_worker_steps_ms": {r["rank"]: r["steps_ms"] for r in results},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 reps of 5 steps")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument(
        "--blas-threads", type=int, default=1, help="BLAS threads of every process (default 1: one core each)"
    )
    parser.add_argument("--per-step", action="store_true", help="also print every step's split (ms) per worker")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    steps = args.steps or (5 if args.quick else 20)
    reps = args.reps or (2 if args.quick else 3)
    if args.worker:
        print(RESULT_TAG + json.dumps(worker(steps, reps)), flush=True)
        return 0

    # every process (workers, servers, the local baseline) gets the same BLAS thread count; it must be
    # set before Ray starts, whose worker processes (the servers) inherit this environment
    for name in BLAS_VARIABLES:
        os.environ[name] = str(args.blas_threads)
    ray = import_ray()
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    ray.init(namespace="mxlab-bench", **local_ray_options())
    address = ray.get_runtime_context().gcs_address
    me = [sys.executable, os.path.abspath(__file__), "--worker", "--steps", str(steps), "--reps", str(reps)]
    try:
        local = record("local", 1, 0, run_case(me), steps)
        launch = [sys.executable, "-m", "framework.kvstore.launch", "-n", "2", "-s", "1", "--address", address]
        two = record("dist_sync-2w1s", 2, 1, run_case(launch + me), steps)
    finally:
        ray.shutdown()
    for line in (local, two):
        line["ratios"] = {"vs_local": round(line["median"] / local["median"], 4)}
        line["blas_threads"] = args.blas_threads
        if not args.per_step:
            line.pop("per_worker_steps_ms")
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
