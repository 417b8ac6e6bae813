#!/usr/bin/env python3
"""Training throughput (samples/second) of ``mx.mod.Module`` against hand-written NumPy. JSON lines.

Usage::

    python benchmarks/train_throughput.py                 # MLP and LeNet, 5 reps (about a minute)
    python benchmarks/train_throughput.py --quick         # fewer batches and reps
    python benchmarks/train_throughput.py --model mlp --reps 7 --blas-threads 1

The workloads are the W5 anchor's (``/work/shared/anchors/w5_train.py``):

* **MLP** 784-512-512-10 (relu, SoftmaxOutput), batch 128, SGD lr 0.1 momentum 0.9, random
  data ``U(0, 1)`` with random labels, weights ``U(+-1/sqrt(fan_in))`` (Xavier uniform, "in",
  magnitude 1), biases 0;
* **LeNet** (conv 5x5x20, tanh, max-pool 2, conv 5x5x50, tanh, max-pool 2, fc 500, tanh,
  fc 10), batch 64, data ``(64, 1, 28, 28)``.

MXLab's side is the Module loop without ``fit``'s bookkeeping: ``forward_backward`` on a
``DataBatch`` whose arrays are views of one pre-loaded NDArray, then ``update()``;
``waitall()`` before starting and before stopping the clock. The baseline is the anchor's
hand-written NumPy MLP (forward, backward, SGD with momentum, preallocated buffers, ``out=``
ufuncs), run in the same process and alternated rep by rep with the Module so that machine
drift (this is a shared 2-core machine) hits both alike; the figure that matters is the ratio
per pair of reps. ``ratios.numpy_over_module_cpu`` is the same ratio in CPU time (the whole
process's, engine workers included; ``cpu_ms_per_step`` has both medians), which waiting for
a busy core does not inflate. MXNet 1.9.1 and PyTorch figures are the anchors measured on this machine
(``/work/shared/anchors/RESULTS.md``): MXNet Module MLP 9701, LeNet 1430; PyTorch MLP 16125,
LeNet 2095; NumPy MLP 15629 samples/s.

Targets (issue 4, ``meets_target``): the MLP at least MXNet's Module figure and within 1.15x of
hand-written NumPy (``numpy_over_module`` <= 1.15). Issue 19: the MLP at least 0.95x NumPy by hand
(``ratios.module_over_numpy``, ``meets_module_over_numpy_target``), LeNet at least 1.1x MXNet's
Module and at least PyTorch.

With ``--mxnet-python`` (an interpreter with mxnet 1.9.1) the script also runs its own Module
loop under MXNet (``--system mxnet``: ``mxnet`` imported instead of ``framework``, nothing else
changes), after MXLab's reps, and the record carries MXNet's median as ``peers.mxnet`` and
``ratios.module_over_mxnet_module_same_run``; ``peers.numpy`` is the hand-written NumPy MLP
of the same run.

With ``--torch-python`` (an interpreter with PyTorch) PyTorch trains the same networks
(benchmarks/peers/torch_train.py: same layers, initialisation bounds, data, batch, SGD
learning rate, momentum and weight decay, mean cross-entropy) in one fresh process per rep,
between MXLab's reps, with ``torch.set_num_threads`` equal to the BLAS threads of MXLab's
side (``torch_threads`` in the record); the record carries its median as ``peers.torch`` and
``ratios.ours_over_torch`` (issue 19: LeNet at least 1; the MLP is reported).
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

from benchmarks.peers import torch_runner

SYSTEMS = {"mxlab": "framework", "mxnet": "mxnet"}

ANCHORS = {
    "mlp": {"mxnet_module": 9701.0, "torch": 16125.0, "numpy": 15629.0},
    "lenet": {"mxnet_module": 1430.0, "torch": 2095.0},
}
LR, MOM = 0.1, 0.9
#: Issue 19: the MLP's Module at least this fraction of the hand-written NumPy loop's speed.
MLP_OVER_NUMPY_TARGET = 0.95


def mlp_symbol(mx: Any) -> Any:
    sym = mx.sym
    x = sym.Variable("data")
    x = sym.Activation(sym.FullyConnected(x, num_hidden=512, name="fc1"), act_type="relu")
    x = sym.Activation(sym.FullyConnected(x, num_hidden=512, name="fc2"), act_type="relu")
    x = sym.FullyConnected(x, num_hidden=10, name="fc3")
    return sym.SoftmaxOutput(x, name="softmax")


def lenet_symbol(mx: Any) -> Any:
    sym = mx.sym
    x = sym.Variable("data")
    x = sym.Convolution(x, kernel=(5, 5), num_filter=20, name="conv1")
    x = sym.Pooling(sym.Activation(x, act_type="tanh"), pool_type="max", kernel=(2, 2), stride=(2, 2))
    x = sym.Convolution(x, kernel=(5, 5), num_filter=50, name="conv2")
    x = sym.Pooling(sym.Activation(x, act_type="tanh"), pool_type="max", kernel=(2, 2), stride=(2, 2))
    x = sym.Flatten(x)
    x = sym.Activation(sym.FullyConnected(x, num_hidden=500, name="fc1"), act_type="tanh")
    x = sym.FullyConnected(x, num_hidden=10, name="fc2")
    return sym.SoftmaxOutput(x, name="softmax")


def make_data(num: int, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.random((num, *shape), dtype=np.float32)
    y = rng.integers(0, 10, num).astype(np.float32)
    return x, y


# ----------------------------------------------------------------------------- MXLab Module
def module_runner(mx: Any, model: str, batch: int, x: np.ndarray, y: np.ndarray) -> Callable[[int, int], float]:
    """A function ``run(first, count)`` timing ``count`` Module steps (waitall inside the clock).

    ``mx`` is MXLab's ``framework`` or MXNet 1.9.1's ``mxnet``: the code is the same for both.
    """
    mx.random.seed(0)
    net = mlp_symbol(mx) if model == "mlp" else lenet_symbol(mx)
    mod = mx.mod.Module(net, data_names=["data"], label_names=["softmax_label"], context=mx.cpu())
    mod.bind(data_shapes=[("data", (batch, *x.shape[1:]))], label_shapes=[("softmax_label", (batch,))])
    mod.init_params(mx.init.Xavier(rnd_type="uniform", factor_type="in", magnitude=1))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": LR, "momentum": MOM})
    xs, ys = mx.nd.array(x), mx.nd.array(y)
    per_epoch = len(x) // batch
    batches = [
        mx.io.DataBatch([xs[i * batch : (i + 1) * batch]], [ys[i * batch : (i + 1) * batch]], pad=0)
        for i in range(per_epoch)
    ]

    def run(first: int, count: int) -> float:
        mx.nd.waitall()
        start = time.perf_counter()
        for k in range(first, first + count):
            mod.forward_backward(batches[k % per_epoch])
            mod.update()
        mx.nd.waitall()
        return time.perf_counter() - start

    def breakdown(count: int) -> dict[str, float]:
        """Milliseconds per batch of forward_backward alone and of update alone (each synchronised)."""
        result = {}
        for part, fn in (
            ("forward_backward", lambda k: mod.forward_backward(batches[k % per_epoch])),
            ("update", lambda k: mod.update()),
        ):
            mx.nd.waitall()
            start = time.perf_counter()
            for k in range(count):
                fn(k)
            mx.nd.waitall()
            result[part] = 1e3 * (time.perf_counter() - start) / count
        return result

    run.breakdown = breakdown  # type: ignore[attr-defined]
    return run


# ----------------------------------------------------------------------------- hand-written NumPy
def numpy_runner(batch: int, x: np.ndarray, y: np.ndarray) -> Callable[[int, int], float]:
    """The W5 anchor's NumPy MLP: forward, backward and SGD-momentum with preallocated buffers."""
    labels = y.astype(np.int64)
    rng = np.random.default_rng(1)
    sizes = [(784, 512), (512, 512), (512, 10)]
    w = [(rng.uniform(-1, 1, s) / np.sqrt(s[0])).astype(np.float32) for s in sizes]
    b = [np.zeros(s[1], np.float32) for s in sizes]
    vw = [np.zeros_like(a) for a in w]
    vb = [np.zeros_like(a) for a in b]
    gw = [np.empty_like(a) for a in w]
    gb = [np.empty_like(a) for a in b]
    h = [np.empty((batch, s[1]), np.float32) for s in sizes]
    dh = [np.empty((batch, s[1]), np.float32) for s in sizes]
    rows = np.arange(batch)
    lr, mom = np.float32(LR), np.float32(MOM)
    per_epoch = len(x) // batch

    def step(i: int) -> None:
        xb, yb = x[i * batch : (i + 1) * batch], labels[i * batch : (i + 1) * batch]
        np.matmul(xb, w[0], out=h[0])
        h[0] += b[0]
        np.maximum(h[0], 0, out=h[0])
        np.matmul(h[0], w[1], out=h[1])
        h[1] += b[1]
        np.maximum(h[1], 0, out=h[1])
        z = h[2]
        np.matmul(h[1], w[2], out=z)
        z += b[2]
        z -= z.max(axis=1, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(axis=1, keepdims=True)
        g = dh[2]
        np.copyto(g, z)
        g[rows, yb] -= 1
        g *= np.float32(1.0 / batch)
        np.matmul(h[1].T, g, out=gw[2])
        np.sum(g, axis=0, out=gb[2])
        np.matmul(g, w[2].T, out=dh[1])
        dh[1] *= h[1] > 0
        np.matmul(h[0].T, dh[1], out=gw[1])
        np.sum(dh[1], axis=0, out=gb[1])
        np.matmul(dh[1], w[1].T, out=dh[0])
        dh[0] *= h[0] > 0
        np.matmul(xb.T, dh[0], out=gw[0])
        np.sum(dh[0], axis=0, out=gb[0])
        for params, velocities, grads in ((w, vw, gw), (b, vb, gb)):
            for p, v, gr in zip(params, velocities, grads, strict=True):  # in place: v = mom*v - lr*g; p += v
                np.multiply(v, mom, out=v)
                np.multiply(gr, lr, out=gr)
                np.subtract(v, gr, out=v)
                np.add(p, v, out=p)

    def run(first: int, count: int) -> float:
        start = time.perf_counter()
        for k in range(first, first + count):
            step(k % per_epoch)
        return time.perf_counter() - start

    return run


# ----------------------------------------------------------------------------- PyTorch
def torch_peer(
    python: str | None, model: str, batch: int, samples: int, warm: int, timed: int
) -> torch_runner.TorchRounds:
    """PyTorch's rounds of the same training (one process each), with as many threads as MXLab's BLAS."""
    if python is None:  # not measured (and the MXNet peer's interpreter need not have threadpoolctl)
        return torch_runner.TorchRounds(None, "torch_train", [])
    threads = torch_runner.blas_threads()
    args = torch_runner.train_args(model, batch, samples, warm, timed, threads, LR, MOM, wd=0.0, init="fan_in")
    return torch_runner.TorchRounds(python, "torch_train", args)


# ----------------------------------------------------------------------------- measurement
def summarize(values: list[float]) -> dict[str, Any]:
    med = statistics.median(values)
    return {"median": med, "min": min(values), "max": max(values), "samples": values}


def emit(record: dict[str, Any]) -> None:
    print(json.dumps(record), flush=True)


def mxnet_rates(python: str, model: str, reps: int, quick: bool) -> list[float]:
    """MXNet 1.9.1's Module on the same workload: this script under ``python`` (``--system mxnet``)."""
    command = [python, os.path.abspath(__file__), "--system", "mxnet", "--model", model, "--reps", str(reps)]
    done = subprocess.run(command + (["--quick"] if quick else []), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the MXNet peer failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])["rates"]


def bench(
    model: str,
    reps: int,
    timed: int,
    warm: int,
    system: str = "mxlab",
    mxnet_python: str | None = None,
    quick: bool = False,
    blas_threads: int | None = None,
    torch_python: str | None = None,
) -> None:
    mx = importlib.import_module(SYSTEMS[system])
    batch = 128 if model == "mlp" else 64
    shape = (784,) if model == "mlp" else (1, 28, 28)
    x, y = make_data(batch * max(timed, 50), shape)
    runners: dict[str, Callable[[int, int], float]] = {"module": module_runner(mx, model, batch, x, y)}
    if model == "mlp" and system == "mxlab":
        runners["numpy"] = numpy_runner(batch, x.reshape(len(x), -1), y)
    for run in runners.values():
        run(0, warm)
    torch_rounds = torch_peer(torch_python if system == "mxlab" else None, model, batch, len(x), warm, timed)
    torch_rates: list[float] = []
    torch_threads = set()
    rates: dict[str, list[float]] = {name: [] for name in runners}
    cpu_ms: dict[str, list[float]] = {name: [] for name in runners}  # the whole process: engine workers too
    for rep in range(reps):  # alternate, so that machine drift hits both alike
        for name, run in runners.items():
            cpu_start = time.process_time()
            rates[name].append(timed * batch / run(rep * timed, timed))
            cpu_ms[name].append(1e3 * (time.process_time() - cpu_start) / timed)
        for row in torch_rounds.round() or []:
            torch_rates += row["rates"]
            torch_threads.add(row["threads"])
    module_rates = rates["module"]
    if system != "mxlab":  # a peer run for MXLab's process: just the rates
        emit({"system": system, "model": model, "rates": module_rates})
        return
    record: dict[str, Any] = {
        "workload": "train_throughput",
        "case": f"{model} b{batch}",
        "engine": type(mx.engine.Engine.get()).__name__,
        "model": model,
        "system": "mxlab module (forward_backward + update)",
        "unit": "samples/s",
        "batch": batch,
        "timed_batches_per_rep": timed,
        "reps": reps,
        "blas_threads": blas_threads if blas_threads is not None else "as found",
        **summarize(module_rates),
        "anchors": ANCHORS[model],
    }
    ratios = {
        "module_over_mxnet_module": statistics.median(module_rates) / ANCHORS[model]["mxnet_module"],
        "module_over_torch": statistics.median(module_rates) / ANCHORS[model]["torch"],
    }
    peers: dict[str, float] = {}
    if mxnet_python:
        theirs = mxnet_rates(mxnet_python, model, reps, quick)
        peers["mxnet"] = statistics.median(theirs)
        record["mxnet_module_same_run"] = summarize(theirs)
        ratios["module_over_mxnet_module_same_run"] = statistics.median(module_rates) / peers["mxnet"]
    if torch_rates:
        peers["torch"] = statistics.median(torch_rates)
        record["torch_same_run"] = summarize(torch_rates)
        record["torch_threads"] = sorted(torch_threads)  # what torch.get_num_threads() reported
        record["torch_threads_note"] = "torch.set_num_threads = the BLAS threads of MXLab's process"
        record["blas_threads_found"] = torch_runner.blas_threads()
        ratios["ours_over_torch"] = statistics.median(module_rates) / peers["torch"]
        if model == "lenet":
            record["targets"] = {"ours_over_torch_at_least": 1.0}
    record.update(torch_rounds.note())
    if "numpy" in rates:
        peers["numpy"] = statistics.median(rates["numpy"])
        paired = [n / m for n, m in zip(rates["numpy"], module_rates, strict=True)]
        ratios["numpy_over_module"] = statistics.median(paired)
        ratios["numpy_over_module_per_rep"] = paired
        # CPU time per step is steadier than wall time on a shared machine (waiting for a core does not count)
        ratios["numpy_over_module_cpu"] = statistics.median(
            m / n for m, n in zip(cpu_ms["module"], cpu_ms["numpy"], strict=True)
        )
        ratios["module_over_numpy"] = 1.0 / ratios["numpy_over_module"]
        record["numpy_same_run"] = summarize(rates["numpy"])
        # issue 4's target (`meets_target`) and issue 19's, each from the paired ratio of this run
        record["meets_target"] = (
            statistics.median(module_rates) >= ANCHORS[model]["mxnet_module"] and ratios["numpy_over_module"] <= 1.15
        )
        record["targets"] = {"module_over_numpy_at_least": MLP_OVER_NUMPY_TARGET}
        record["meets_module_over_numpy_target"] = ratios["module_over_numpy"] >= MLP_OVER_NUMPY_TARGET
    record["ratios"] = ratios
    record["peers"] = peers
    record["step_ms"] = 1e3 * batch / statistics.median(module_rates)
    record["cpu_ms_per_step"] = {name: statistics.median(values) for name, values in cpu_ms.items()}
    record["breakdown_ms"] = runners["module"].breakdown(timed)  # type: ignore[attr-defined]
    record["loadavg"] = os.getloadavg()
    emit(record)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all", choices=["mlp", "lenet", "all"])
    parser.add_argument("--reps", type=int, default=None, help="timed repetitions per system (default 5, quick 3)")
    parser.add_argument("--quick", action="store_true", help="fewer batches and repetitions")
    parser.add_argument("--blas-threads", type=int, default=None, help="limit BLAS threads (default: as found)")
    parser.add_argument("--system", choices=sorted(SYSTEMS), default="mxlab", help=argparse.SUPPRESS)
    parser.add_argument("--mxnet-python", help="an interpreter with mxnet 1.9.1, to measure its Module in the same run")
    parser.add_argument("--torch-python", help="an interpreter with PyTorch, to measure it in the same run")
    args = parser.parse_args()
    reps = args.reps or (3 if args.quick else 5)
    models = ["mlp", "lenet"] if args.model == "all" else [args.model]
    limit = None
    if args.blas_threads is not None:
        # imported here: the MXNet peer's interpreter need not have threadpoolctl
        from threadpoolctl import threadpool_limits  # noqa: PLC0415

        limit = threadpool_limits(limits=args.blas_threads)
    try:
        for model in models:
            sizes = {"timed": 20, "warm": 30} if args.quick else {"timed": 100, "warm": 60}
            if model == "lenet":
                sizes = {"timed": 5, "warm": 5} if args.quick else {"timed": 30, "warm": 10}
            bench(
                model,
                reps,
                **sizes,
                system=args.system,
                mxnet_python=args.mxnet_python,
                quick=args.quick,
                blas_threads=args.blas_threads,
                torch_python=args.torch_python,
            )
    finally:
        if limit is not None:
            limit.restore_original_limits()


if __name__ == "__main__":
    main()
