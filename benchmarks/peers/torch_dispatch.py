#!/usr/bin/env python3
"""Peer workload: PyTorch's eager dispatch, ``a += 1`` and ``b = a + 1`` on a 16-element float32 tensor.

Run with an interpreter that has ``torch`` (``make bench`` makes .peers/torchvenv)::

    .peers/torchvenv/bin/python benchmarks/peers/torch_dispatch.py [--n 20000] [--reps 1] [--threads 2]

The loop is benchmarks/ndarray_dispatch.py's: one warm-up round, then ``reps`` rounds of ``n``
operations, microseconds per operation. PyTorch runs a CPU operation before it returns, so
there is nothing to wait for at the end of a round. Prints one JSON line per case;
ndarray_dispatch.py (``--torch-python``) calls it once per round, between its own rounds.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

CASES = ("inplace_a+=1", "outofplace_b=a+1")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000, help="operations per round")
    parser.add_argument("--reps", type=int, default=1, help="timed rounds after the warm-up round")
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    args = parser.parse_args(argv)
    if args.n < 1 or args.reps < 1 or args.threads < 1:
        parser.error("--n, --reps and --threads must be positive")
    return args


def rounds(loop: Callable[[int], None], n: int, reps: int) -> list[float]:
    loop(n)
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        loop(n)
        samples.append((time.perf_counter() - start) / n * 1e6)
    return samples


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    import torch  # noqa: PLC0415 - after the arguments, so that they can be checked without torch

    torch.set_num_threads(args.threads)
    a = torch.zeros(16, dtype=torch.float32)

    def inplace(count: int) -> None:
        nonlocal a
        for _ in range(count):
            a += 1

    def outofplace(count: int) -> None:
        for _ in range(count):
            b = a + 1  # noqa: F841 - the allocation and release are part of the cost

    for case, loop in zip(CASES, (inplace, outofplace), strict=True):
        record = {"case": case, "samples": rounds(loop, args.n, args.reps), "torch": torch.__version__}
        print(json.dumps({**record, "threads": torch.get_num_threads()}), flush=True)


if __name__ == "__main__":
    main()
