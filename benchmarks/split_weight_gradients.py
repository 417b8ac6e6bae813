#!/usr/bin/env python3
"""Weight gradients beside the backward chain, on and off, in one process. JSON lines.

Usage::

    python benchmarks/split_weight_gradients.py --model mlp --blas-threads 1
    python benchmarks/split_weight_gradients.py --model lenet --reps 7
    python benchmarks/split_weight_gradients.py --model gluon-mlp --blas-threads 1
    python benchmarks/split_weight_gradients.py --model mlp --blas-threads 1 --which forward

``MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS`` decides, when a Module binds, whether the backward node
of a large FullyConnected or Convolution layer is split in two (framework/executor/
split_backward.py). To see what that buys without the noise of a shared machine between
two processes, this script binds the same network twice in one process (``split`` forced on
and forced off, same seed, so the same initial weights), adds the hand-written NumPy MLP of
``train_throughput.py`` for the MLP, and alternates the three rep by rep. It reports, per
variant, samples/s (wall) and CPU milliseconds per step (``time.process_time``: the whole
process, engine and BLAS threads included) and, per rep, each Module variant over NumPy.
The Module loop and the NumPy loop are ``train_throughput.py``'s own (``module_runner``,
``numpy_runner``), so the figures compare with that script's. ``gluon-mlp`` and ``gluon-lenet``
time ``benchmarks/gluon.py``'s hybridized ``Training`` instead (its CachedOp binds the executor on
the first call, so the split is forced around that call). ``--which forward`` compares the forward
split (``MXLAB_EXEC_SPLIT_FORWARD_PRODUCTS``, framework/executor/split_forward.py) on and off with
the weight-gradient split on in both; ``--which both`` both splits against neither; the default,
``backward``, the weight-gradient split with the forward split off in both.
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import statistics
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framework as mx
from benchmarks import gluon
from benchmarks.train_throughput import make_data, module_runner, numpy_runner

MODELS = ("mlp", "lenet", "gluon-mlp", "gluon-lenet")
BATCH = {"mlp": 128, "lenet": 64}
SHAPE = {"mlp": (784,), "lenet": (1, 28, 28)}
STEPS = {"mlp": (30, 50), "lenet": (5, 15)}  # (warm-up, timed) steps per rep


#: The settings of the two variants per ``--which``: (whole, split), each ``(weight gradients, forward products)``.
VARIANTS = {
    "backward": (("0", "0"), ("1", "0")),  # the weight-gradient split alone
    "forward": (("1", "0"), ("1", "1")),  # the forward split on top of the weight-gradient split
    "both": (("0", "0"), ("1", "1")),
}
SETTINGS = ("MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS", "MXLAB_EXEC_SPLIT_FORWARD_PRODUCTS")


def with_split(values: tuple[str, str], make: Callable[[], Callable[[int, int], float]]) -> Callable[[int, int], float]:
    """``make()`` with both splits forced on or off: the settings are read when an executor binds."""
    saved = {name: os.environ.get(name) for name in SETTINGS}
    os.environ.update(zip(SETTINGS, values, strict=True))
    try:
        return make()
    finally:
        for name, value in saved.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def gluon_runner(net: str, timed: int) -> Callable[[int, int], float]:
    """A hybridized ``gluon.Training``, bound by one warm-up step; ``run(first, count)`` times ``count`` steps."""
    training = gluon.Training(mx, net, hybridize=True)
    data = gluon.batches(mx, net, max(timed, 1))
    training.steps(data[:1])  # the CachedOp binds here

    def run(first: int, count: int) -> float:
        return training.steps([data[(first + k) % len(data)] for k in range(count)])

    return run


def bench(model: str, reps: int, blas_threads: int | None, which: str = "backward") -> dict:
    net = model.removeprefix("gluon-")
    warm, timed = STEPS[net]
    x, y = make_data(BATCH[net] * max(timed, 50), SHAPE[net])
    settings = dict(zip(("whole", "split"), VARIANTS[which], strict=True))
    if model.startswith("gluon-"):
        runners = {name: with_split(settings[name], lambda: gluon_runner(net, timed)) for name in settings}
    else:
        runners = {
            name: with_split(settings[name], lambda: module_runner(mx, net, BATCH[net], x, y)) for name in settings
        }
    if model == "mlp":
        runners["numpy"] = numpy_runner(BATCH[net], x.reshape(len(x), -1), y)
    for run in runners.values():
        run(0, warm)
    rates: dict[str, list[float]] = {name: [] for name in runners}
    cpu_ms: dict[str, list[float]] = {name: [] for name in runners}
    for rep in range(reps):
        order = list(runners) if rep % 2 == 0 else list(reversed(runners))  # neither always goes first
        for name in order:
            cpu = time.process_time()
            rates[name].append(timed * BATCH[net] / runners[name](rep * timed, timed))
            cpu_ms[name].append(1e3 * (time.process_time() - cpu) / timed)
    record = {
        "workload": "split_weight_gradients",
        "model": model,
        "which": which,
        "settings": {name: dict(zip(SETTINGS, values, strict=True)) for name, values in settings.items()},
        "batch": BATCH[net],
        "blas_threads": blas_threads if blas_threads is not None else "as found",
        "reps": reps,
        "samples_per_s": {name: round(statistics.median(v)) for name, v in rates.items()},
        "cpu_ms_per_step": {name: round(statistics.median(v), 3) for name, v in cpu_ms.items()},
        "split_over_whole": round(statistics.median(map(operator.truediv, rates["split"], rates["whole"])), 3),
        "loadavg": os.getloadavg(),
    }
    if "numpy" in rates:
        for name in ("whole", "split"):
            per_rep = [m / n for m, n in zip(rates[name], rates["numpy"], strict=True)]
            record[f"{name}_over_numpy"] = round(statistics.median(per_rep), 3)
            record[f"{name}_over_numpy_per_rep"] = [round(r, 3) for r in per_rep]
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all", choices=[*MODELS, "all"])
    parser.add_argument("--reps", type=int, default=None, help="alternating reps per variant (default 5, quick 3)")
    parser.add_argument("--quick", action="store_true", help="3 reps, the Module models only")
    parser.add_argument("--blas-threads", type=int, default=None, help="limit BLAS threads (default: as found)")
    parser.add_argument(
        "--which", default="backward", choices=sorted(VARIANTS), help="which split the two variants differ by"
    )
    args = parser.parse_args()
    limit = None
    if args.blas_threads is not None:
        from threadpoolctl import threadpool_limits  # noqa: PLC0415

        limit = threadpool_limits(limits=args.blas_threads)
    try:
        everything = MODELS[:2] if args.quick else MODELS
        for model in everything if args.model == "all" else [args.model]:
            record = bench(model, args.reps or (3 if args.quick else 5), args.blas_threads, args.which)
            print(json.dumps(record), flush=True)
    finally:
        if limit is not None:
            limit.restore_original_limits()


if __name__ == "__main__":
    main()
