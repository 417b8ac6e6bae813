#!/usr/bin/env python3
"""Peer workload: PyTorch training throughput of the W5 MLP and LeNet, eager and TorchScript.

Run with an interpreter that has ``torch`` (``make bench`` makes .peers/torchvenv)::

    .peers/torchvenv/bin/python benchmarks/peers/torch_train.py --model mlp --batch 128 --threads 2

The networks, data and optimizer are those of benchmarks/train_throughput.py and
benchmarks/gluon.py, which pass their own settings (``torch_runner.train_args``):

* MLP 784-512-512-10 (ReLU) and LeNet (conv 5x5x20, tanh, max-pool 2, conv 5x5x50, tanh,
  max-pool 2, fc 500, tanh, fc 10), softmax cross-entropy averaged over the batch (the
  gradient MXNet's ``SoftmaxOutput`` with ``rescale_grad = 1/batch`` and Gluon's
  ``trainer.step(batch)`` produce);
* ``torch.optim.SGD`` with the benchmark's learning rate, momentum and weight decay (PyTorch's
  momentum form gives the same steps as MXNet's for a constant learning rate);
* weights ``U(+-1/sqrt(fan_in))`` (``--init fan_in``: Module's ``Xavier(uniform, in, 1)``) or
  Xavier uniform over the average fan (``--init xavier``: Gluon's ``Xavier()``), biases 0;
* data from ``default_rng(0)``: pixels U(0, 1), labels 0..9, ``--samples`` of them;
* ``torch.set_num_threads(--threads)``: the benchmark passes MXLab's BLAS thread count.

Modes: ``eager`` (``nn.Sequential``) and ``jit.script`` (the same network compiled by
``torch.jit.script``, PyTorch's graph mode that needs no C++ compiler; ``torch.compile`` is
not used: it compiles C++ for every new process, tens of seconds per network on two cores).
Each mode trains its own copy: ``--warm`` untimed batches, then ``--timed`` batches per round.
Prints one JSON line per mode with the samples/s of each round.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

MODES = ("eager", "jit.script")
N_CLASSES = 10


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["mlp", "lenet"], required=True)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--samples", type=int, default=8192, help="size of the synthetic data set")
    parser.add_argument("--warm", type=int, default=5, help="untimed batches before the first round")
    parser.add_argument("--timed", type=int, default=20, help="timed batches per round")
    parser.add_argument("--reps", type=int, default=1, help="timed rounds")
    parser.add_argument("--threads", type=int, required=True, help="torch.set_num_threads")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--wd", type=float, default=0.0)
    parser.add_argument("--init", choices=["fan_in", "xavier"], default="fan_in")
    parser.add_argument("--modes", default="eager", help=f"comma-separated, of {', '.join(MODES)}")
    args = parser.parse_args(argv)
    args.modes = tuple(m.strip() for m in args.modes.split(",") if m.strip())
    unknown = [m for m in args.modes if m not in MODES]
    if unknown or not args.modes:
        parser.error(f"--modes: unknown mode(s) {unknown or args.modes}; known: {', '.join(MODES)}")
    for name in ("batch", "samples", "timed", "reps", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be positive")
    if args.warm < 0:
        parser.error("--warm must not be negative")
    if args.batch > args.samples:
        parser.error(f"--batch {args.batch} is larger than --samples {args.samples}")
    return args


def build(torch: Any, model: str, init: str) -> Any:
    """The W5 network, initialised as the MXLab side initialises it."""
    nn = torch.nn
    if model == "mlp":
        net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, N_CLASSES))
    else:
        net = nn.Sequential(
            nn.Conv2d(1, 20, 5), nn.Tanh(), nn.MaxPool2d(2, 2),
            nn.Conv2d(20, 50, 5), nn.Tanh(), nn.MaxPool2d(2, 2),
            nn.Flatten(), nn.Linear(800, 500), nn.Tanh(), nn.Linear(500, N_CLASSES),
        )  # fmt: skip
    with torch.no_grad():
        for layer in net:
            if isinstance(layer, nn.Linear | nn.Conv2d):
                fan_in = layer.weight[0].numel()
                fan_out = layer.weight.shape[0] * layer.weight[0, 0].numel()
                bound = (1 / fan_in) ** 0.5 if init == "fan_in" else (6 / (fan_in + fan_out)) ** 0.5
                layer.weight.uniform_(-bound, bound)
                layer.bias.zero_()
    return net


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    import numpy as np  # noqa: PLC0415 - after the arguments, so that they can be checked without torch
    import torch  # noqa: PLC0415
    import torch.nn.functional as F  # noqa: PLC0415

    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.random((args.samples, 784), dtype=np.float32))
    y = torch.from_numpy(rng.integers(0, N_CLASSES, args.samples).astype(np.int64))
    if args.model == "lenet":
        x = x.reshape(-1, 1, 28, 28)
    per_epoch = args.samples // args.batch
    size = args.batch
    batches = [(x[i * size : (i + 1) * size], y[i * size : (i + 1) * size]) for i in range(per_epoch)]  # views

    runs = {}
    for mode in args.modes:
        torch.manual_seed(0)
        net = build(torch, args.model, args.init)
        opt = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=args.momentum, weight_decay=args.wd)
        runs[mode] = (torch.jit.script(net) if mode == "jit.script" else net, opt)

    def steps(mode: str, first: int, count: int) -> tuple[float, float]:
        """Train ``count`` batches; the seconds they took and the last loss."""
        net, opt = runs[mode]
        last = None
        start = time.perf_counter()
        for k in range(first, first + count):
            data, label = batches[k % per_epoch]
            opt.zero_grad(set_to_none=True)
            last = F.cross_entropy(net(data), label)
            last.backward()
            opt.step()
        return time.perf_counter() - start, float("nan") if last is None else float(last.item())

    for mode in args.modes:
        steps(mode, 0, args.warm)
    rates: dict[str, list[float]] = {mode: [] for mode in args.modes}
    losses = {}
    for rep in range(args.reps):  # modes alternate, as the benchmarks' own rounds do
        for mode in args.modes:
            seconds, losses[mode] = steps(mode, args.warm + rep * args.timed, args.timed)
            rates[mode].append(args.timed * args.batch / seconds)
    for mode in args.modes:
        record = {"model": args.model, "mode": mode, "unit": "samples/s", "batch": args.batch, "rates": rates[mode]}
        extra = {"final_loss": losses[mode], "threads": torch.get_num_threads(), "torch": torch.__version__}
        print(json.dumps({**record, **extra}), flush=True)


if __name__ == "__main__":
    main()
