#!/usr/bin/env python3
"""Gluon training throughput, imperative against hybridized (and MXNet 1.9.1's Gluon).

Usage::

    python benchmarks/gluon.py [--reps 3] [--quick] [--model mlp|lenet|all]
    python benchmarks/gluon.py --mxnet-python /work/main/.peers/mxvenv/bin/python
    python benchmarks/gluon.py --torch-python .peers/torchvenv/bin/python

The networks are those of the W5 anchor (``../shared/anchors/w5_train.py``) written with
Gluon: the MLP 784-512-512-10 (relu, batch 128) and LeNet (two 5x5 convolutions with tanh
and 2x2 max-pooling, Dense 500 tanh, Dense 10; batch 64), softmax cross-entropy, SGD with
learning rate 0.1 and momentum 0.9 through ``gluon.Trainer``, on synthetic data
(``default_rng(0)``: pixels U(0, 1), labels 0..9). A step is ``autograd.record()``, the
forward and the loss, ``backward()`` and ``trainer.step``; ``waitall`` brackets the timed
batches. The same network is built twice from the same seed, one copy left imperative
and one hybridized (``static_alloc``), and the reps alternate between them, so both figures
come from the same run.

The script runs on MXLab (``--system mxlab``, the default) and on MXNet 1.9.1 (``--system
mxnet``: it imports ``mxnet`` instead of ``framework``, nothing else changes). With
``--mxnet-python`` it also runs itself under that interpreter and reports MXNet's figures
next to MXLab's. Prints one JSON line per (system, model, mode) with samples/s over the
reps, one per (system, model) with ``hybridize``'s speed-up, and, with both systems, one
per model comparing them (issue 18's targets: hybridized at least MXNet's hybridized
throughput; imperative at least 0.8x of it).

With ``--torch-python`` (an interpreter with PyTorch) PyTorch trains the same networks
(benchmarks/peers/torch_train.py: same layers, Xavier bounds, data, batch and SGD) in one
fresh process per rep, between MXLab's reps, with ``torch.set_num_threads`` equal to NumPy's
BLAS threads here: eager (beside MXLab's imperative figure, as ``peers.torch``) and compiled
by ``torch.jit.script`` (beside the hybridized one). ``torch.compile`` is not used: it
compiles C++ in every new process, tens of seconds per network on this machine. The script
then prints PyTorch's records (system ``torch``), its ``jit.script`` speed-up and, per model,
MXLab over PyTorch for both pairs (``imperative_over_torch_eager``,
``hybridized_over_torch_jit_script``; reported, no target).
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
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

from benchmarks.peers import torch_runner

N_SAMPLES, D_IN, N_CLASSES = 8192, 784, 10
BATCH = {"mlp": 128, "lenet": 64}
WARMUP = 5
TIMED = {"mlp": 60, "lenet": 20}
QUICK_TIMED = {"mlp": 10, "lenet": 4}
MODES = ("imperative", "hybridized")
SYSTEMS = {"mxlab": "framework", "mxnet": "mxnet"}


def build(mx: Any, model: str) -> Any:
    """The W5 network as a Gluon HybridSequential."""
    nn = mx.gluon.nn
    net = nn.HybridSequential()
    with net.name_scope():
        if model == "mlp":
            net.add(nn.Dense(512, activation="relu"), nn.Dense(512, activation="relu"), nn.Dense(N_CLASSES))
        else:
            net.add(nn.Conv2D(20, kernel_size=5, activation="tanh"), nn.MaxPool2D(pool_size=2, strides=2))
            net.add(nn.Conv2D(50, kernel_size=5, activation="tanh"), nn.MaxPool2D(pool_size=2, strides=2))
            net.add(nn.Flatten(), nn.Dense(500, activation="tanh"), nn.Dense(N_CLASSES))
    return net


def batches(mx: Any, model: str, count: int) -> list[tuple[Any, Any]]:
    """``count`` pre-made (data, label) NDArray batches of the synthetic data set."""
    rng = np.random.default_rng(0)
    x = rng.random((N_SAMPLES, D_IN), dtype=np.float32)
    y = rng.integers(0, N_CLASSES, N_SAMPLES).astype(np.float32)
    if model == "lenet":
        x = x.reshape(-1, 1, 28, 28)
    size = BATCH[model]
    per_epoch = N_SAMPLES // size
    out = []
    for i in range(count):
        j = (i % per_epoch) * size
        out.append((mx.nd.array(x[j : j + size], dtype="float32"), mx.nd.array(y[j : j + size], dtype="float32")))
    return out


class Training:
    """One network, its Trainer and loss: ``steps(data)`` trains on the batches and returns the seconds."""

    def __init__(self, mx: Any, model: str, hybridize: bool) -> None:
        self.mx = mx
        mx.random.seed(0)
        self.net = build(mx, model)
        self.net.initialize(mx.init.Xavier())
        if hybridize:
            self.net.hybridize(static_alloc=True)
        self.trainer = mx.gluon.Trainer(self.net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
        self.loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
        self.last_loss = float("nan")

    def steps(self, data: list[tuple[Any, Any]]) -> float:
        mx = self.mx
        mx.nd.waitall()
        start = time.perf_counter()
        for x, y in data:
            with mx.autograd.record():
                loss = self.loss_fn(self.net(x), y)
            loss.backward()
            self.trainer.step(x.shape[0])
        mx.nd.waitall()
        seconds = time.perf_counter() - start
        self.last_loss = float(loss.mean().asscalar())
        return seconds


def measure(system: str, model: str, reps: int, timed: int, torch_python: str | None = None) -> list[dict[str, Any]]:
    """Samples/s of the imperative and the hybridized network, reps alternated (and PyTorch's, when given)."""
    mx = importlib.import_module(SYSTEMS[system])
    data = batches(mx, model, WARMUP + timed)
    runs = {mode: Training(mx, model, mode == "hybridized") for mode in MODES}
    for run in runs.values():
        run.steps(data[:WARMUP])  # hybridized: traces and binds here
    torch_rounds = torch_peer(torch_python, model, timed)
    torch_rows: list[dict[str, Any]] = []
    rates: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(reps):
        for mode, run in runs.items():
            rates[mode].append(timed * BATCH[model] / run.steps(data[WARMUP:]))
        torch_rows += torch_rounds.round() or []
    records = []
    for mode in MODES:
        samples = [round(r, 1) for r in rates[mode]]
        records.append(rate_record(system, model, mode, timed, samples, runs[mode].last_loss, **torch_rounds.note()))
    return records + torch_records(torch_rows, records, model, timed)


def rate_record(
    system: str, model: str, mode: str, timed: int, samples: list[float], final_loss: float, **extra: Any
) -> dict[str, Any]:
    """One system's samples/s in one mode, as every record of this benchmark reports it."""
    return {
        "workload": "gluon",
        "system": system,
        "model": model,
        "mode": mode,
        "unit": "samples/s",
        "batch": BATCH[model],
        "timed_batches": timed,
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "samples": samples,
        "final_loss": round(final_loss, 4),
        **extra,
    }


# ----------------------------------------------------------------------------- PyTorch
#: MXLab's mode and the PyTorch mode set beside it.
TORCH_COUNTERPART = {"imperative": "eager", "hybridized": "jit.script"}


def torch_peer(python: str | None, model: str, timed: int) -> torch_runner.TorchRounds:
    """PyTorch's rounds of the same training (one process each), with as many threads as NumPy's BLAS here."""
    if python is None:  # not measured (and the MXNet peer's interpreter need not have threadpoolctl)
        return torch_runner.TorchRounds(None, "torch_train", [])
    args = torch_runner.train_args(
        model, BATCH[model], N_SAMPLES, WARMUP, timed, torch_runner.blas_threads(), 0.1, 0.9,
        wd=0.0, init="xavier", modes=tuple(TORCH_COUNTERPART.values()),
    )  # fmt: skip
    return torch_runner.TorchRounds(python, "torch_train", args)


def torch_records(
    rows: list[dict[str, Any]], ours: list[dict[str, Any]], model: str, timed: int
) -> list[dict[str, Any]]:
    """PyTorch's records from its rounds' rows; MXLab's records get ``peers.torch`` of their counterpart."""
    records = []
    for mode in TORCH_COUNTERPART.values():
        samples = [round(r, 1) for row in rows if row["mode"] == mode for r in row["rates"]]
        if not samples:
            continue
        last = [row for row in rows if row["mode"] == mode][-1]
        note = "torch.set_num_threads = the BLAS threads of MXLab's process"
        record = rate_record("torch", model, mode, timed, samples, last["final_loss"], threads=last["threads"])
        records.append({**record, "threads_note": note})
    theirs = {r["mode"]: r["median"] for r in records}
    for record in ours:
        counterpart = TORCH_COUNTERPART[record["mode"]]
        if counterpart in theirs:
            record["peers"] = {"torch": theirs[counterpart]}
    return records


def torch_comparison(records: list[dict[str, Any]], model: str) -> list[dict[str, Any]]:
    """PyTorch's ``jit.script`` speed-up and MXLab over PyTorch for each pair of modes (none if not measured)."""
    ours = {r["mode"]: r["median"] for r in records if r["system"] == "mxlab" and r["model"] == model}
    theirs = {r["mode"]: r["median"] for r in records if r["system"] == "torch" and r["model"] == model}
    out = []
    if len(theirs) == len(TORCH_COUNTERPART):
        ratio = round(theirs["jit.script"] / theirs["eager"], 3)
        out.append(
            {"workload": "gluon", "system": "torch", "model": model, "case": "jit_script_speedup", "ratio": ratio}
        )
    ratios = {  # flat, so that run_all's table shows them
        f"{mine}_over_torch_{counterpart.replace('.', '_')}": round(ours[mine] / theirs[counterpart], 3)
        for mine, counterpart in TORCH_COUNTERPART.items()
        if mine in ours and counterpart in theirs
    }
    if ratios:
        out.append({"workload": "gluon", "model": model, "case": "mxlab_over_torch", **ratios})
    return out


def speedup(records: list[dict[str, Any]], system: str, model: str) -> dict[str, Any]:
    median = {r["mode"]: r["median"] for r in records if r["system"] == system and r["model"] == model}
    return {
        "workload": "gluon",
        "system": system,
        "model": model,
        "case": "hybridize_speedup",
        "ratio": round(median["hybridized"] / median["imperative"], 3),
    }


def run_peer(python: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """This script under MXNet's interpreter (``--system mxnet``): its records."""
    command = [python, os.path.abspath(__file__), "--system", "mxnet", "--model", args.model, "--reps", str(args.reps)]
    if args.quick:
        command.append("--quick")
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the MXNet peer failed: {done.stderr[-2000:]}")
    return [r for r in map(json.loads, done.stdout.splitlines()) if "mode" in r]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", choices=sorted(SYSTEMS), default="mxlab")
    parser.add_argument("--model", choices=["mlp", "lenet", "all"], default="all")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="fewer timed batches, 2 reps")
    parser.add_argument("--mxnet-python", help="an interpreter with mxnet 1.9.1, to measure it in the same run")
    parser.add_argument("--torch-python", help="an interpreter with PyTorch, to measure it in the same run")
    args = parser.parse_args()
    if args.quick:
        args.reps = min(args.reps, 2)
    models = ["mlp", "lenet"] if args.model == "all" else [args.model]
    timed = QUICK_TIMED if args.quick else TIMED
    records = []
    torch_python = args.torch_python if args.system == "mxlab" else None
    for model in models:
        records += measure(args.system, model, args.reps, timed[model], torch_python)
    peer = run_peer(args.mxnet_python, args) if args.mxnet_python and args.system == "mxlab" else []
    for record in records:  # MXNet's figure beside MXLab's, for run_all's table
        theirs = [r["median"] for r in peer if (r["model"], r["mode"]) == (record["model"], record["mode"])]
        if theirs:
            record["peers"] = {**record.get("peers", {}), "mxnet": theirs[0]}
        print(json.dumps(record), flush=True)
    for model in models:
        print(json.dumps(speedup(records, args.system, model)), flush=True)
    for model in models:  # PyTorch's jit.script speed-up and MXLab over PyTorch, when it was measured
        for record in torch_comparison(records, model):
            print(json.dumps(record), flush=True)
    if peer:
        for record in peer:
            print(json.dumps(record), flush=True)
        records += peer
        for model in models:
            print(json.dumps(speedup(records, "mxnet", model)), flush=True)
            ours = {r["mode"]: r["median"] for r in records if r["system"] == "mxlab" and r["model"] == model}
            theirs = {r["mode"]: r["median"] for r in records if r["system"] == "mxnet" and r["model"] == model}
            comparison = {
                "workload": "gluon",
                "model": model,
                "case": "mxlab_over_mxnet_hybridized",
                "hybridized_ratio": round(ours["hybridized"] / theirs["hybridized"], 3),
                "imperative_ratio_to_mxnet_hybridized": round(ours["imperative"] / theirs["hybridized"], 3),
            }
            print(json.dumps(comparison), flush=True)


if __name__ == "__main__":
    main()
