#!/usr/bin/env python3
"""Executor benchmarks: planned memory against MXNet, mirroring, parallel branches. JSON lines.

Usage::

    python benchmarks/executor_memory.py            # everything (about a minute)
    python benchmarks/executor_memory.py --quick    # smaller sizes and fewer repetitions
    python benchmarks/executor_memory.py --only memory,planners,mirror,parallel

1. ``memory``: the three networks of the W4 anchor (``/work/shared/anchors/w4_memory.py``):
   ``mlp8`` (data (128, 784), 8 x [FullyConnected(1024) + relu], FullyConnected(10),
   SoftmaxOutput), ``lenet`` (data (64, 1, 28, 28)) and ``mlp20`` (data (64, 784), 20 x
   [FullyConnected(512) + relu], ...), bound with ``simple_bind`` for training
   (``grad_req='write'``) and inference (``'null'``). Figure: the planned internal memory
   (``debug_str``'s ``Total N MB allocated``: intermediate entries only, no arguments,
   gradients or auxiliary states) against MXNet 1.9.1's on the same networks, at the
   anchor's batch size and at 16 times it (MXNet prints whole MB, so the 16x figure reads
   its planner at a finer resolution). Target: at most MXNet's, every network and mode.
2. ``planners``: the same three networks and ResNet-18 v1 (the model zoo's, data (32, 3, 224,
   224); ``--quick``: (4, 3, 64, 64)), train and infer: the bytes planned by MXNet's strategy
   (``MXLAB_MEMORY_PLANNER=mxnet``), by greedy by size (``greedy_by_size``) and the lower
   bound they share (the peak of the bytes alive at once in the schedule), on one bound
   graph (``Executor.plan_with``). Figures only: plans are exact, so one run is enough.
3. ``mirror``: ``mlp20`` at batch 1024 (the W4 definition, larger batch), training
   memory and time per step (forward + backward) with segment checkpointing versus the
   unmirrored plan, alternating configurations rep by rep, BLAS on one thread. Target:
   at least 40% less memory for at most 35% more time. MXNet's per-node rule
   (``MXNET_BACKWARD_DO_MIRROR=1``) is shown too: on this MLP it saves nothing (MXNet's own
   figure is worse than unmirrored, 5 MB against 2 MB).
4. ``parallel``: two independent towers (4 x FullyConnected(1024) + relu each, batch 256)
   joined by an add and a loss; one training step through ThreadedEnginePerDevice with 2
   workers versus 1, BLAS on one thread. Target: at least 1.6x.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import threading

import numpy as np
from threadpoolctl import threadpool_limits

import framework as mx
from framework import symbol as sym
from framework.engine import create
from framework.executor import simple_bind
from framework.executor.plan_memory import STRATEGIES
from framework.gluon.model_zoo import vision
from server.scenarios.memory_planning import lenet  # the memory scenario's LeNet: one definition

MB = 1 << 20
# MXNet 1.9.1, anchors RESULTS.md W4: (reported MB at the batch, at 16x the batch, naive MB at the batch).
MXNET_W4 = {
    ("mlp8", "train"): (4, 72, 16.0),
    ("mlp8", "infer"): (1, 16, 8.01),
    ("lenet", "train"): (12, 195, 17.1),
    ("lenet", "infer"): (4, 67, 8.53),
    ("mlp20", "train"): (2, 42, 10.0),
    ("mlp20", "infer"): (0, 4, 5.0),
}
MXNET_MIRROR_MLP20_MB = 5  # MXNET_BACKWARD_DO_MIRROR=1, mlp20 train at batch 64 (vs 2 unmirrored)
MIRROR_MEMORY_TARGET = 0.40
MIRROR_TIME_TARGET = 1.35
PARALLEL_TARGET = 1.6


def emit(record: dict[str, Any]) -> None:
    print(json.dumps(record), flush=True)


def summarize(samples: list[float]) -> dict[str, Any]:
    return {
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "samples": [round(s, 6) for s in samples],
    }


# ---------------------------------------------------------------------------- networks
def mlp(depth: int, hidden: int) -> sym.Symbol:
    x = sym.Variable("data")
    for i in range(depth):
        x = sym.FullyConnected(x, num_hidden=hidden, name=f"fc{i}")
        x = sym.Activation(x, act_type="relu", name=f"relu{i}")
    x = sym.FullyConnected(x, num_hidden=10, name="fc_out")
    return sym.SoftmaxOutput(x, name="softmax")


NETS: list[tuple[str, Callable[[], sym.Symbol], tuple[int, ...]]] = [
    ("mlp8", lambda: mlp(8, 1024), (128, 784)),
    ("lenet", lenet, (64, 1, 28, 28)),
    ("mlp20", lambda: mlp(20, 512), (64, 784)),
]


def fill(exe: Any, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    for name, array in exe.arg_dict.items():
        if name.endswith("label"):
            array[:] = rng.integers(0, 10, array.shape)
        elif name == "data":
            array[:] = rng.uniform(-1, 1, array.shape)
        else:
            array[:] = rng.uniform(-0.05, 0.05, array.shape)


def step(exe: Any) -> None:
    exe.forward(is_train=True)
    exe.backward()


# ---------------------------------------------------------------------------- 1. memory
def bench_memory(quick: bool) -> None:
    for name, build, shape in NETS:
        net = build()
        for mode in ("train", "infer"):
            mxnet_mb, mxnet_16x_mb, mxnet_naive = MXNET_W4[(name, mode)]
            req = "write" if mode == "train" else "null"
            exe = simple_bind(net, mx.cpu(), grad_req=req, data=shape)
            fill(exe)
            if mode == "train":
                step(exe)
            else:
                exe.forward()
            mx.nd.waitall()
            planned, naive = exe.plan.bytes_planned, exe.plan.bytes_naive
            big = simple_bind(net, mx.cpu(), grad_req=req, data=(shape[0] * 16, *shape[1:]))
            planned_16x = big.plan.bytes_planned
            emit(
                {
                    "workload": "memory",
                    "net": name,
                    "mode": mode,
                    "batch": shape[0],
                    "unit": "MB",
                    "planned_MB": round(planned / MB, 4),
                    "reported_MB": planned >> 20,
                    "naive_MB": round(naive / MB, 4),
                    "lower_bound_MB": round(exe.plan.bytes_lower_bound / MB, 4),
                    "ratio_planned_over_naive": round(planned / naive, 4),
                    "blocks": exe.plan.num_blocks,
                    "inplace_pairs": len(exe.plan.inplace),
                    "planned_16x_MB": round(planned_16x / MB, 3),
                    "mxnet_reported_MB": mxnet_mb,
                    "mxnet_reported_16x_MB": mxnet_16x_mb,
                    "mxnet_naive_MB": mxnet_naive,
                    "target": "reported MB <= MXNet's at the batch and at 16x the batch",
                    "meets_target": (planned >> 20) <= mxnet_mb and (planned_16x >> 20) <= mxnet_16x_mb,
                }
            )
            del exe, big


# ---------------------------------------------------------------------------- 2. planners
def resnet18() -> sym.Symbol:
    """ResNet-18 v1 of the model zoo as a symbol, ending in a softmax loss for training."""
    return sym.SoftmaxOutput(vision.resnet18_v1()(sym.Variable("data")), name="softmax")


def bench_planners(quick: bool) -> None:
    nets = [*NETS, ("resnet18", resnet18, (4, 3, 64, 64) if quick else (32, 3, 224, 224))]
    for name, build, shape in nets:
        net = build()
        for mode in ("train", "infer"):
            exe = simple_bind(net, mx.cpu(), grad_req="write" if mode == "train" else "null", data=shape)
            plans = {s: exe.plan_with(dataclasses.replace(exe.plan.options, strategy=s)) for s in STRATEGIES}
            bound = exe.plan.bytes_lower_bound
            least = min(p.bytes_planned for p in plans.values())
            emit(
                {
                    "workload": "planners",
                    "net": name,
                    "mode": mode,
                    "data": list(shape),
                    "unit": "MB",
                    "mxnet_MB": round(plans["mxnet"].bytes_planned / MB, 3),
                    "greedy_by_size_MB": round(plans["greedy_by_size"].bytes_planned / MB, 3),
                    "lower_bound_MB": round(bound / MB, 3),
                    "naive_MB": round(exe.plan.bytes_naive / MB, 3),
                    "blocks": {s: p.num_blocks for s, p in plans.items()},
                    "bytes": {
                        **{s: p.bytes_planned for s, p in plans.items()},
                        "lower_bound": bound,
                        "naive": exe.plan.bytes_naive,
                    },
                    "least": [s for s, p in plans.items() if p.bytes_planned == least],
                }
            )
            del exe


# ---------------------------------------------------------------------------- 3. mirror
def bench_mirror(quick: bool) -> None:
    batch = 256 if quick else 1024
    reps = 3 if quick else 7
    net = mlp(20, 512)
    exes = {}
    for mirror in (None, "node", "segment"):
        exes[mirror] = simple_bind(net, mx.cpu(), mirror=mirror, data=(batch, 784))
        fill(exes[mirror])
    base = exes[None].plan.bytes_planned
    for mirror, exe in exes.items():
        emit(
            {
                "workload": "mirror",
                "case": f"mlp20 train b{batch} mirror={mirror or 'none'}",
                "unit": "MB",
                "planned_MB": round(exe.plan.bytes_planned / MB, 3),
                "saved_vs_unmirrored": round(1 - exe.plan.bytes_planned / base, 4),
                "mirror_nodes": exe.num_mirror_nodes,
            }
        )
    times: dict[str, list[float]] = {"none": [], "segment": []}
    with threadpool_limits(limits=1):
        for exe in exes.values():  # warm-up
            step(exe)
        mx.nd.waitall()
        for _ in range(reps):  # alternate, so that machine drift hits both alike
            for mirror in (None, "segment"):
                start = time.perf_counter()
                for _ in range(2):
                    step(exes[mirror])
                mx.nd.waitall()
                times[mirror or "none"].append((time.perf_counter() - start) / 2)
    ratios = [s / n for s, n in zip(times["segment"], times["none"], strict=True)]
    saved = 1 - exes["segment"].plan.bytes_planned / base
    emit(
        {
            "workload": "mirror",
            "case": f"mlp20 train b{batch}: segment checkpointing vs unmirrored",
            "unit": "s/step (segment)",
            **summarize(times["segment"]),
            "unmirrored": summarize(times["none"]),
            "ratios": {"time_segment_over_none_paired_median": round(statistics.median(ratios), 4)},
            "memory_saved": round(saved, 4),
            "mxnet_mirror_mlp20_MB": MXNET_MIRROR_MLP20_MB,
            "target": f">= {MIRROR_MEMORY_TARGET:.0%} less memory for <= {MIRROR_TIME_TARGET - 1:.0%} more time",
            "meets_target": saved >= MIRROR_MEMORY_TARGET and statistics.median(ratios) <= MIRROR_TIME_TARGET,
        }
    )


# ---------------------------------------------------------------------------- 4. parallel branches
def towers(depth: int, width: int) -> sym.Symbol:
    x = sym.Variable("data")
    outs = []
    for side in ("a", "b"):
        h = x
        for i in range(depth):
            h = sym.Activation(
                sym.FullyConnected(h, num_hidden=width, name=f"{side}fc{i}"), act_type="relu", name=f"{side}relu{i}"
            )
        outs.append(h)
    return sym.MakeLoss(sym.sum(sym.elemwise_add(*outs, name="join"), name="total"), name="loss")


def _numpy_towers(depth: int, width: int, batch: int, threads: int) -> float:
    """Seconds for the towers' matmuls (forward + backward) in plain NumPy on 1 or 2 threads."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (batch, width)).astype(np.float32)
    w = rng.uniform(-0.03, 0.03, (width, width)).astype(np.float32)

    def tower() -> None:
        h = x
        for _ in range(depth):  # forward, then the two products per layer of backward
            h = np.maximum(h @ w.T, 0)
        for _ in range(depth):
            h @ w
            h.T @ x

    start = time.perf_counter()
    if threads == 1:
        tower()
        tower()
    else:
        workers = [threading.Thread(target=tower) for _ in range(2)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
    return time.perf_counter() - start


def bench_parallel(quick: bool) -> None:
    depth, width, batch = (3, 1024, 128) if quick else (4, 1024, 256)
    reps = 3 if quick else 7
    net = towers(depth, width)
    engines = {n: create("ThreadedEnginePerDevice", n) for n in (1, 2)}
    exes = {}
    try:
        for n, engine in engines.items():
            with mx.engine.use(engine):
                exes[n] = simple_bind(net, mx.cpu(), data=(batch, width))
                fill(exes[n])
        times: dict[int, list[float]] = {1: [], 2: []}
        limit: dict[int, list[float]] = {1: [], 2: []}
        with threadpool_limits(limits=1):
            for n, engine in engines.items():  # warm-up
                with mx.engine.use(engine):
                    step(exes[n])
                    engine.wait_for_all()
            for _ in range(reps):
                for n, engine in engines.items():
                    with mx.engine.use(engine):
                        start = time.perf_counter()
                        for _ in range(2):
                            step(exes[n])
                        engine.wait_for_all()
                        times[n].append((time.perf_counter() - start) / 2)
                for n in (1, 2):  # the machine's own limit, paired in the same rep
                    limit[n].append(_numpy_towers(depth, width, batch, threads=n))
        same = all(
            np.allclose(exes[1].grad_dict[k].asnumpy(), exes[2].grad_dict[k].asnumpy(), rtol=1e-4, atol=1e-5)
            for k in exes[1].grad_dict
        )
    finally:
        for engine in engines.values():
            engine.stop()
    speedups = [a / b for a, b in zip(times[1], times[2], strict=True)]
    emit(
        {
            "workload": "parallel",
            "case": f"two towers {depth} x FC({width}) b{batch}, train step, 2 workers vs 1",
            "unit": "s/step (2 workers)",
            **summarize(times[2]),
            "one_worker": summarize(times[1]),
            "ratios": {"speedup_paired_median": round(statistics.median(speedups), 4)},
            "same_gradients": same,
            "machine_limit": {
                "numpy_same_matmuls_2_threads_vs_1_paired_median": round(
                    statistics.median(a / b for a, b in zip(limit[1], limit[2], strict=True)), 4
                ),
                "note": "two Python threads running the same matmuls directly: what this machine allows now",
            },
            "target": f">= {PARALLEL_TARGET}x",
            "meets_target": statistics.median(speedups) >= PARALLEL_TARGET,
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repetitions")
    parser.add_argument("--only", default="memory,planners,mirror,parallel", help="comma-separated workloads")
    args = parser.parse_args()
    chosen = [w.strip() for w in args.only.split(",") if w.strip()]
    known = {"memory": bench_memory, "planners": bench_planners, "mirror": bench_mirror, "parallel": bench_parallel}
    unknown = sorted(set(chosen) - known.keys())
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; choose from {sorted(known)}")
    for name in chosen:
        try:
            known[name](args.quick)
        except Exception as err:  # one failing workload becomes an error line, not a crash
            emit({"workload": name, "error": f"{type(err).__name__}: {err}"})
            raise


if __name__ == "__main__":
    main()
