#!/usr/bin/env python3
"""Run every benchmark and collect their JSON lines into one report file (what ``make bench`` runs).

Usage::

    python benchmarks/run_all.py                      # every benchmark, full sizes (many minutes)
    python benchmarks/run_all.py --quick              # every benchmark with --quick (small sizes)
    python benchmarks/run_all.py --only engine,io     # some of them, by name
    python benchmarks/run_all.py --list               # the list, as the README shows it

:data:`BENCHMARKS` is the one list of benchmarks: the README's benchmark list is printed from
it (``--list``) and ``tests/test_benchmarks.py`` checks that the two agree and that every
script in this folder is on it. Each benchmark runs as its own process (``python
benchmarks/<name>.py``), one after the other so they do not compete for the cores, and prints
JSON lines; the runner keeps every line, notes anything else the script printed, and writes
``benchmarks/results/<UTC timestamp>.json`` (the folder is not versioned)::

    {"started": ..., "quick": ..., "python": ..., "machine": ...,
     "benchmarks": [{"name", "script", "description", "command", "returncode", "seconds",
                     "records": [...], "other_output": [...], "stderr_tail": ...}, ...]}

A benchmark that fails is reported (its return code and the end of its stderr) and the
others still run; the runner's exit status is 1 if any failed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"


@dataclass(frozen=True)
class Benchmark:
    """One benchmark script: ``benchmarks/<name>.py``, which accepts ``--quick``."""

    name: str
    description: str

    @property
    def script(self) -> Path:
        return HERE / f"{self.name}.py"


#: Every benchmark, in the order ``make bench`` runs them.
BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("engine", "dispatch cost, parallel speedup and pooled allocation of the three engines"),
    Benchmark(
        "ndarray_dispatch",
        "imperative dispatch: `a += 1` and `b = a + 1` on a tiny array, per stage and per engine hand-off "
        "(and MXNet 1.9.1 with `--mxnet-python`)",
    ),
    Benchmark(
        "operators",
        "FullyConnected, LayerNorm, linalg gemm2 and the fused LSTM forward and backward against NumPy "
        "(and MXNet 1.9.1 with `--mxnet-python`)",
    ),
    Benchmark("operators_conv", "convolution and pooling on LeNet's shapes against a NumPy im2col implementation"),
    Benchmark("executor_memory", "planned memory against MXNet's, mirroring, parallel branches"),
    Benchmark("train_throughput", "`Module` training samples per second against hand-written NumPy"),
    Benchmark("io", "ImageRecordIter decoding with 2 threads against 1 and against Pillow in a loop"),
    Benchmark("kvstore", "push and pull of many 4 MiB keys from two contexts"),
    Benchmark("server_overhead", "engine dispatch while the server streams every event to a client"),
    Benchmark(
        "server_load",
        "the server under hostile load: streaming and stalled clients, largest uploads, hostile bodies",
    ),
    Benchmark("kvstore_dist", "MLP training with dist_sync on 2 Ray workers against 1"),
    Benchmark(
        "gluon",
        "Gluon training of the W5 MLP and LeNet, imperative against hybridized (and MXNet 1.9.1 with `--mxnet-python`)",
    ),
)
#: Scripts in this folder that are not benchmarks.
NOT_BENCHMARKS = ("run_all",)


class UnknownBenchmarkError(ValueError):
    """``--only`` named a benchmark that is not on the list."""


def select(only: str | None) -> list[Benchmark]:
    """The benchmarks named in ``only`` (comma-separated), in list order; all when None."""
    if only is None:
        return list(BENCHMARKS)
    wanted = [name.strip() for name in only.split(",") if name.strip()]
    known = {b.name for b in BENCHMARKS}
    unknown = [name for name in wanted if name not in known]
    if unknown or not wanted:
        raise UnknownBenchmarkError(f"--only: unknown benchmark(s) {unknown or wanted}; known: {', '.join(known)}")
    return [b for b in BENCHMARKS if b.name in wanted]


def markdown_list() -> str:
    """The README's benchmark list: one line per benchmark, its script and what it measures."""
    return "\n".join(f"- `benchmarks/{b.name}.py`: {b.description}" for b in BENCHMARKS)


def split_output(stdout: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSON objects among ``stdout``'s lines, and the other non-blank lines."""
    records, other = [], []
    for line in stdout.splitlines():
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            records.append(value)
        else:
            other.append(line)
    return records, other


def run(benchmark: Benchmark, quick: bool) -> dict[str, Any]:
    """Run one benchmark to completion and return its part of the report."""
    command = [sys.executable, str(benchmark.script)] + (["--quick"] if quick else [])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, check=False)
    records, other = split_output(done.stdout)
    return {
        "name": benchmark.name,
        "script": str(benchmark.script.relative_to(ROOT)),
        "description": benchmark.description,
        "command": command[1:],
        "returncode": done.returncode,
        "seconds": round(time.perf_counter() - started, 3),
        "records": records,
        "other_output": other,
        "stderr_tail": done.stderr[-4000:],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="pass --quick to every benchmark (small sizes)")
    parser.add_argument("--only", default=None, help="comma-separated benchmark names (default: all)")
    parser.add_argument("--list", action="store_true", help="print the benchmark list as the README shows it")
    parser.add_argument("--out", default=None, help="report file (default: benchmarks/results/<timestamp>.json)")
    args = parser.parse_args(argv)
    if args.list:
        print(markdown_list())
        return 0
    try:
        chosen = select(args.only)
    except UnknownBenchmarkError as err:
        parser.error(str(err))
    started = datetime.now(UTC)
    out = Path(args.out) if args.out else RESULTS / f"{started.strftime('%Y%m%dT%H%M%SZ')}.json"
    report: dict[str, Any] = {
        "started": started.isoformat(),
        "quick": args.quick,
        "python": sys.version.split()[0],
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "cpus": os.cpu_count()},
        "benchmarks": [],
    }
    failed = []
    for benchmark in chosen:
        print(f"running {benchmark.script.relative_to(ROOT)}{' --quick' if args.quick else ''} ...", flush=True)
        result = run(benchmark, args.quick)
        report["benchmarks"].append(result)
        status = "ok" if result["returncode"] == 0 else f"FAILED (exit {result['returncode']})"
        print(f"  {status}: {len(result['records'])} records in {result['seconds']:.1f} s", flush=True)
        if result["returncode"] != 0:
            failed.append(benchmark.name)
            print("  " + result["stderr_tail"][-800:].replace("\n", "\n  "), flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"report: {out}" + (f"; failed: {', '.join(failed)}" if failed else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
