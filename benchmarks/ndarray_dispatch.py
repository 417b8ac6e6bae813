#!/usr/bin/env python3
"""Imperative dispatch cost: ``a += 1`` and ``b = a + 1`` on 16 float32 elements. Prints JSON lines.

Usage::

    python benchmarks/ndarray_dispatch.py [--n 20000] [--reps 5] [--quick] [--mxnet-python PATH] [--torch-python PATH]

Same workload as ``shared/anchors/w1_dispatch.py`` (W1): one warm-up round, then ``reps``
rounds of ``n`` operations followed by ``mx.nd.waitall()``; microseconds per operation,
median of the rounds. Plain NumPy runs the same loop in the same process as the in-run
baseline. With ``--mxnet-python`` (an interpreter with mxnet 1.9.1), MXNet runs the same loop
(benchmarks/peers/mxnet_dispatch.py) in rounds alternating with MXLab's, so both see the same
machine load; with ``--torch-python`` (an interpreter with PyTorch), PyTorch runs it on a
``torch.Tensor`` (benchmarks/peers/torch_dispatch.py, ``torch.set_num_threads`` set to NumPy's
BLAS threads here) in the same alternation. A peer not measured in the run keeps the anchors'
figure (RESULTS.md, side by side on this kind of machine) in ``anchors_us`` and the ratios.

Each case prints, besides the end-to-end figure:

* ``options``: the same loop with the engine's three ways of handing a tiny operation over:
  ``inline`` (the default: run in the calling thread when nothing it touches is pending),
  ``workers`` (``MXLAB_ENGINE_INLINE_MAX_ELEMENTS=0``: always an engine worker) and
  ``workers_bulk64`` (workers, inside ``mx.engine.bulk(64)``);
* ``stages_us``: where the microseconds of one operation go, each stage timed alone with the
  framework's own functions: the Python front end (operator lookup, parsed parameters),
  output allocation (``b = a + 1`` only), the engine (the direct paths' grant, a no-op run and
  the release; the ordinary push only when they decline),
  execution (the compute function and its OpContext), and the rest of ``invoke`` (checks,
  call-pattern lookup, the closure, the loop) as the remainder; ``inference_uncached`` is
  what shape and type inference would add to every call without the call-pattern cache.

Targets (issue 19): at most half of MXNet's cost; stretch: within 2x of PyTorch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

import framework as mx
from benchmarks.peers import torch_runner
from framework.engine import Engine
from framework.ndarray import imperative
from framework.ndarray.ndarray import new_array
from framework.operator import registry
from framework.operator.kernel import WRITE, OpContext

# anchors/RESULTS.md, W1 side by side with MXLab on this machine, 2026-11-25 (us/op, medians)
ANCHORS = {
    "inplace_a+=1": {"mxnet": 9.75, "torch": 1.82},
    "outofplace_b=a+1": {"mxnet": 9.97, "torch": 2.03},
}
CASES = ("inplace_a+=1", "outofplace_b=a+1")
Loop = Callable[[int], None]


def timed_rounds(loop: Loop, wait: Callable[[], None], n: int, reps: int) -> list[float]:
    """Microseconds per operation of ``reps`` rounds of ``n`` operations, after one warm-up round."""
    loop(n)
    wait()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        loop(n)
        wait()
        samples.append((time.perf_counter() - start) / n * 1e6)
    return samples


def median_us(loop: Loop, n: int, reps: int) -> float:
    return statistics.median(timed_rounds(loop, mx.nd.waitall, n, reps))


def mxnet_round(python: str, n: int) -> dict[str, float]:
    """One round of MXNet 1.9.1's loops, in its own interpreter (us/op per case)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers", "mxnet_dispatch.py")
    done = subprocess.run([python, script, "--n", str(n), "--reps", "1"], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"the MXNet peer failed: {done.stderr[-2000:]}")
    return {row["case"]: row["samples"][0] for row in map(json.loads, done.stdout.splitlines())}


def stage_split(case: str, a: mx.nd.NDArray, n: int, reps: int) -> dict[str, float]:
    """Time each stage of one imperative call on its own (see the module docstring)."""
    op = registry.get("_plus_scalar")
    attrs = imperative.parse_attrs(op, {"scalar": 1.0})
    ctx, engine = a.context, Engine.get()
    outofplace = case.startswith("outofplace")
    b = a + 1
    mx.nd.waitall()
    target = b if outofplace else a
    plan = attrs.plan
    compute = op.get_compute(ctx.device_type)
    in_data, out_data, reqs = [a._data], [target._data], [WRITE]
    writes = (target._chunk.var,)
    reads = (a._chunk.var,) if outofplace else ()

    def front_end(count: int) -> None:
        for _ in range(count):
            operator = registry.get("_plus_scalar")
            imperative.scalar_attrs(operator, float(1))

    def inference_uncached(count: int) -> None:
        outs = [] if outofplace else [a]
        for _ in range(count):
            imperative.make_call_plan(op, attrs, [a], outs, plan)

    def allocation(count: int) -> None:
        for _ in range(count):
            new_array((16,), ctx, "float32")  # dropped at once: its block is freed by the next one

    def noop(run_ctx: object) -> None:
        pass

    def direct_noop() -> None:
        pass

    def engine_push(count: int) -> None:
        if outofplace:  # invoke_single's direct path: run at once, granting only the read
            for _ in range(count):
                if not engine.run_now_into_new(direct_noop, (), ctx, reads[0], writes[0], "_plus_scalar"):
                    engine.push_prepared(noop, ctx, reads, writes, "_plus_scalar", True)
            return
        for _ in range(count):  # invoke_in_place's direct path: run at once, granting the written variable
            if not engine.run_now_in_place(direct_noop, (), ctx, writes[0], "_plus_scalar"):
                engine.push_prepared(noop, ctx, reads, writes, "_plus_scalar", True)

    def execution(count: int) -> None:
        for _ in range(count):
            compute(attrs, OpContext(False, ctx, None, []), in_data, reqs, out_data)

    stages = {
        "python_front_end": median_us(front_end, n, reps),
        "allocation": median_us(allocation, n, reps) if outofplace else 0.0,
        "engine_push_and_completion": median_us(engine_push, n, reps),
        "execution": median_us(execution, n, reps),
    }
    stages["inference_uncached"] = median_us(inference_uncached, n, reps)
    return stages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="n=2000, reps=3")
    parser.add_argument("--mxnet-python", help="an interpreter with mxnet 1.9.1, to measure it in the same run")
    parser.add_argument("--torch-python", help="an interpreter with PyTorch, to measure it in the same run")
    args = parser.parse_args()
    n, reps = (2000, 3) if args.quick else (args.n, args.reps)
    engine = Engine.get()  # started first: it may limit BLAS threads (MXLAB_BLAS_THREADS), which PyTorch matches
    torch_args = torch_runner.dispatch_args(n, torch_runner.blas_threads())
    torch_rounds = torch_runner.TorchRounds(args.torch_python, "torch_dispatch", torch_args)
    torch_samples: dict[str, list[float]] = {c: [] for c in CASES}
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

    loops = {"inplace_a+=1": (mx_inplace, np_inplace), "outofplace_b=a+1": (mx_outofplace, np_outofplace)}
    options: dict[str, dict[str, list[float]]] = {c: {"inline": [], "workers": [], "workers_bulk64": []} for c in CASES}
    peers: dict[str, list[float]] = {c: [] for c in CASES}
    limit = engine.inline_max_elements
    # Rounds alternate between the options (and MXNet, when given) so that all see the same load.
    for _ in range(reps):
        for case in CASES:
            ours = loops[case][0]
            options[case]["inline"] += timed_rounds(ours, mx.nd.waitall, n, 1)
            engine.inline_max_elements = 0
            try:
                options[case]["workers"] += timed_rounds(ours, mx.nd.waitall, n, 1)
                with mx.engine.bulk(64):
                    options[case]["workers_bulk64"] += timed_rounds(ours, mx.nd.waitall, n, 1)
            finally:
                engine.inline_max_elements = limit
        if args.mxnet_python:
            for case, value in mxnet_round(args.mxnet_python, n).items():
                peers[case].append(value)
        for row in torch_rounds.round() or []:
            torch_samples[row["case"]] += row["samples"]

    for case in CASES:
        mine = options[case]["inline"]
        median = statistics.median(mine)
        base = statistics.median(timed_rounds(loops[case][1], lambda: None, n, reps))
        stages = stage_split(case, a, n, reps)
        accounted = sum(v for k, v in stages.items() if k != "inference_uncached")
        stages["invoke_rest"] = max(median - accounted, 0.0)
        anchors = dict(ANCHORS[case])
        source = "anchors/RESULTS.md"
        if peers[case]:
            anchors["mxnet"] = statistics.median(peers[case])
            source = "mxnet measured in this run (alternating rounds); torch from anchors/RESULTS.md"
        if torch_samples[case]:  # the ratios to PyTorch then compare figures of this run too
            anchors["torch"] = statistics.median(torch_samples[case])
            mxnet_source = "measured in this run" if peers[case] else "from anchors/RESULTS.md"
            source = f"mxnet {mxnet_source}; torch measured in this run (alternating rounds)"
        print(
            json.dumps(
                {
                    "workload": "W1 imperative dispatch (16,) float32",
                    "case": case,
                    "unit": "us/op",
                    "engine": type(engine).__name__,
                    "n_ops": n,
                    "median": median,
                    "min": min(mine),
                    "max": max(mine),
                    "samples": mine,
                    "options": {name: statistics.median(s) for name, s in options[case].items()},
                    "stages_us": stages,
                    "numpy_median_same_run": base,
                    "anchors_us": anchors,
                    "anchors_source": source,
                    "mxnet_samples": peers[case],
                    "torch_samples": torch_samples[case],
                    "peers": {
                        "numpy": base,
                        **({"mxnet": anchors["mxnet"]} if peers[case] else {}),
                        **({"torch": anchors["torch"]} if torch_samples[case] else {}),
                    },
                    **torch_rounds.note(),
                    "ratios": {
                        "ours_over_mxnet": median / anchors["mxnet"],
                        "ours_over_torch": median / anchors["torch"],
                        "ours_over_numpy_same_run": median / base,
                    },
                    "targets": {"ours_over_mxnet_at_most": 0.5, "stretch_ours_over_torch_at_most": 2.0},
                }
            ),
            flush=True,
        )
    assert float(a.asnumpy()[0]) > 0


if __name__ == "__main__":
    main()
