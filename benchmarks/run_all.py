#!/usr/bin/env python3
"""Run every benchmark and collect their JSON lines into one report file (what ``make bench`` runs).

Usage::

    python benchmarks/run_all.py                      # every benchmark, full sizes (many minutes)
    python benchmarks/run_all.py --quick              # every benchmark with --quick (small sizes)
    python benchmarks/run_all.py --only engine,io     # some of them, by name
    python benchmarks/run_all.py --list               # the list, as the README shows it
    MXNET_PYTHON=mxvenv/bin/python python benchmarks/run_all.py   # with MXNet 1.9.1 measured beside MXLab
    python benchmarks/run_all.py --table REPORT.json  # the Markdown table of a report
    python benchmarks/run_all.py --write-doc REPORT.json   # that table into docs/performance.md

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

**Peers.** A benchmark that can measure a peer in the same run declares it
(:attr:`Benchmark.peers`) and takes the peer's interpreter as ``--<peer>-python PATH``
(``--mxnet-python``: a Python with mxnet 1.9.1; ``--torch-python``: one with PyTorch). The
runner takes them once, from ``--mxnet-python``/``--torch-python`` or the ``MXNET_PYTHON`` /
``TORCH_PYTHON`` environment variables (what ``make bench MXNET_PYTHON=...`` sets), and passes
each to the benchmarks that declare that peer. A record carries what a peer measured *in this
run* as ``"peers": {"mxnet": figure, "torch": ..., "numpy": ...}``, in the record's ``unit``
(figures copied from an older measurement never go there). A peer that was given but could not be
measured (PyTorch's interpreter without ``torch``, say) leaves its reason in the records as
``"peer_skipped": {peer: reason}``; the benchmark still succeeds and the runner prints the reason.

**Table.** Beside the JSON report the runner writes ``<report>.md``: one row per record,
MXLab's figure (the record's ``median``, or its ``value``, or else its other scalar figures)
and the peers' figures in their columns. ``--write-doc REPORT`` puts that table between the
``<!-- bench-table:start -->`` markers of docs/performance.md.
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
    #: The peers (keys of :data:`PEERS`) whose interpreter the script takes as ``--<peer>-python``.
    peers: tuple[str, ...] = ()

    @property
    def script(self) -> Path:
        return HERE / f"{self.name}.py"


#: Peer systems: the name a record's ``peers`` uses, the table's column title, the environment
#: variable that names the peer's interpreter (None: measured inside MXLab's own process).
PEERS: dict[str, tuple[str, str | None]] = {
    "mxnet": ("MXNet 1.9.1", "MXNET_PYTHON"),
    "torch": ("PyTorch", "TORCH_PYTHON"),
    "numpy": ("NumPy by hand", None),
}


#: Every benchmark, in the order ``make bench`` runs them.
BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("engine", "dispatch cost, parallel speedup and pooled allocation of the three engines"),
    Benchmark(
        "ndarray_dispatch",
        "imperative dispatch: `a += 1` and `b = a + 1` on a tiny array, per stage and per engine hand-off "
        "(and MXNet 1.9.1 with `--mxnet-python`, PyTorch with `--torch-python`)",
        peers=("mxnet", "torch"),
    ),
    Benchmark(
        "operators",
        "FullyConnected, LayerNorm, linalg gemm2 and the fused LSTM forward and backward against NumPy "
        "(and MXNet 1.9.1 with `--mxnet-python`)",
        peers=("mxnet",),
    ),
    Benchmark(
        "custom_op",
        "Python `CustomOp` per-call overhead, forward and forward+backward (and MXNet 1.9.1's `Custom` with the "
        "same class with `--mxnet-python`)",
        peers=("mxnet",),
    ),
    Benchmark("operators_conv", "convolution and pooling on LeNet's shapes against a NumPy im2col implementation"),
    Benchmark("executor_memory", "planned memory against MXNet's, mirroring, parallel branches"),
    Benchmark(
        "train_throughput",
        "`Module` training samples per second against hand-written NumPy (and MXNet 1.9.1's Module with "
        "`--mxnet-python`, the same networks in PyTorch with `--torch-python`)",
        peers=("mxnet", "torch"),
    ),
    Benchmark(
        "split_weight_gradients",
        "Module (and hybridized Gluon) training with weight gradients split off beside the backward chain, "
        "against whole backward nodes, in one process",
    ),
    Benchmark(
        "blas_threads_gap", "the Module MLP's gap to hand-written NumPy with 1 and 2 BLAS threads, in one process"
    ),
    Benchmark(
        "io",
        "ImageRecordIter decoding with 2 threads against 1 and against Pillow in a loop (and MXNet 1.9.1's "
        "ImageRecordIter on the same file with `--mxnet-python`)",
        peers=("mxnet",),
    ),
    Benchmark("kvstore", "push and pull of many 4 MiB keys from two contexts"),
    Benchmark("server_overhead", "engine dispatch while the server streams every event to a client"),
    Benchmark(
        "server_load",
        "the server under hostile load: streaming and stalled clients, largest uploads, hostile bodies",
    ),
    Benchmark("kvstore_dist", "MLP training with dist_sync on 2 Ray workers against 1"),
    Benchmark(
        "gluon",
        "Gluon training of the W5 MLP and LeNet, imperative against hybridized (and MXNet 1.9.1 with `--mxnet-python`, "
        "PyTorch eager and `torch.jit.script` with `--torch-python`)",
        peers=("mxnet", "torch"),
    ),
)
#: Scripts in this folder that are not benchmarks.
NOT_BENCHMARKS = ("run_all",)


class UnknownBenchmarkError(ValueError):
    """``--only`` named a benchmark that is not on the list."""


class PeerInterpreterError(ValueError):
    """A peer interpreter was named but is not an executable file."""


def peer_interpreters(given: dict[str, str | None], environ: dict[str, str] | None = None) -> dict[str, str]:
    """The peers' interpreters: ``given`` (command line) first, else their environment variable.

    Blank values count as not given; a named interpreter must be an executable file.
    """
    environ = os.environ if environ is None else environ
    found = {}
    for peer, (_title, variable) in PEERS.items():
        path = given.get(peer) or (environ.get(variable, "") if variable else "")
        if not path.strip():
            continue
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            source = f"--{peer}-python" if given.get(peer) else variable
            raise PeerInterpreterError(f"{source}: {path!r} is not an executable file")
        found[peer] = path
    return found


def command_for(benchmark: Benchmark, quick: bool, peers: dict[str, str]) -> list[str]:
    """The command that runs ``benchmark``: ``--quick`` if asked, and the peers it declares."""
    command = [sys.executable, str(benchmark.script)] + (["--quick"] if quick else [])
    for peer in benchmark.peers:
        if peer in peers:
            command += [f"--{peer}-python", peers[peer]]
    return command


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


def skipped_peers(records: list[dict[str, Any]]) -> dict[str, str]:
    """Why a peer given to a benchmark was not measured: its records' ``peer_skipped`` reasons, one per peer."""
    reasons: dict[str, str] = {}
    for record in records:
        for peer, why in (record.get("peer_skipped") or {}).items():
            reasons.setdefault(peer, str(why))
    return reasons


def run(benchmark: Benchmark, quick: bool, peers: dict[str, str] | None = None) -> dict[str, Any]:
    """Run one benchmark to completion and return its part of the report."""
    command = command_for(benchmark, quick, peers or {})
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


# ----------------------------------------------------------------------------- the Markdown table
#: The table's columns: what was measured, then MXLab's figure and each peer's.
TABLE_COLUMNS: tuple[str, ...] = ("benchmark", "measurement", "unit", "MXLab") + tuple(t for t, _ in PEERS.values())
#: Record keys that name what a record measured, in the order the label shows them.
LABEL_KEYS = ("workload", "case", "model", "mode", "system", "engine")
#: Record keys that are bookkeeping, not figures worth a table cell.
NOT_FIGURES = frozenset({"min", "max", "samples", "reps", "loadavg", "peers", "unit", "batch", "returncode"})
DOC = ROOT / "docs" / "performance.md"
DOC_START, DOC_END = "<!-- bench-table:start -->", "<!-- bench-table:end -->"


def figure(value: float) -> str:
    """A number as a table shows it: three significant digits, thousands grouped."""
    if isinstance(value, bool):
        return str(value)
    if value == 0 or abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) < 1 else f"{value:.{2 if abs(value) < 10 else 1}f}"


def record_label(record: dict[str, Any]) -> str:
    """What a record measured, from its naming keys (a value already in the label is not repeated)."""
    label = ""
    for key in LABEL_KEYS:
        value = record.get(key)
        if value is None or value == "" or str(value) in label:
            continue
        label = f"{label} {value}".strip()
    return label or "(unnamed)"


def mxlab_figure(record: dict[str, Any]) -> str:
    """MXLab's figure of a record: ``median``, else ``value``, else its other scalar figures."""
    for key in ("median", "value"):
        if isinstance(record.get(key), int | float):
            return figure(record[key])
    scalars = [
        f"{key} {figure(value)}"
        for key, value in record.items()
        if isinstance(value, int | float) and key not in NOT_FIGURES and key not in LABEL_KEYS
    ]
    return ", ".join(scalars[:4]) if scalars else "-"


def table_rows(report: dict[str, Any]) -> list[list[str]]:
    """One row per record of every benchmark of ``report`` (one row for a benchmark that failed)."""
    rows = []
    for entry in report["benchmarks"]:
        if entry["returncode"] != 0:
            rows.append([entry["name"], f"FAILED (exit {entry['returncode']})", "", "-"] + ["-"] * len(PEERS))
        for record in entry["records"]:
            peers = record.get("peers") or {}
            cells = [figure(peers[p]) if isinstance(peers.get(p), int | float) else "-" for p in PEERS]
            unit = str(record.get("unit", ""))
            rows.append([entry["name"], record_label(record), unit, mxlab_figure(record), *cells])
    return rows


def markdown_table(report: dict[str, Any]) -> str:
    """The report as one Markdown table with :data:`TABLE_COLUMNS`, and a line saying where it came from."""
    peers = sorted({p for e in report["benchmarks"] for r in e["records"] for p in (r.get("peers") or {})})
    machine = report.get("machine", {})
    lines = [
        f"Run started {report['started']}{' with --quick' if report.get('quick') else ''}, Python "
        f"{report.get('python', '?')}, {machine.get('cpus', '?')} CPUs; peers measured in this run: "
        f"{', '.join(peers) or 'none'}.",
        "",
        "| " + " | ".join(TABLE_COLUMNS) + " |",
        "| " + " | ".join("---" for _ in TABLE_COLUMNS) + " |",
    ]
    for row in table_rows(report):
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    return "\n".join(lines)


def table_columns(markdown: str) -> list[str]:
    """The column titles of the first Markdown table in ``markdown``."""
    header = next(line for line in markdown.splitlines() if line.startswith("| "))
    return [cell.strip() for cell in header.strip().strip("|").split("|")]


def write_doc(report: dict[str, Any], doc: Path = DOC) -> None:
    """Replace the table between ``doc``'s bench-table markers with ``report``'s table."""
    text = doc.read_text(encoding="utf-8")
    if text.count(DOC_START) != 1 or text.count(DOC_END) != 1 or text.index(DOC_START) > text.index(DOC_END):
        raise ValueError(f"{doc}: expected one {DOC_START} line followed by one {DOC_END} line")
    before, rest = text.split(DOC_START, 1)
    after = rest.split(DOC_END, 1)[1]
    doc.write_text(f"{before}{DOC_START}\n{markdown_table(report)}\n{DOC_END}{after}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="pass --quick to every benchmark (small sizes)")
    parser.add_argument("--only", default=None, help="comma-separated benchmark names (default: all)")
    parser.add_argument("--list", action="store_true", help="print the benchmark list as the README shows it")
    parser.add_argument("--out", default=None, help="report file (default: benchmarks/results/<timestamp>.json)")
    for peer, (title, variable) in PEERS.items():
        if variable:
            parser.add_argument(f"--{peer}-python", default=None, help=f"{title}'s interpreter (default: ${variable})")
    parser.add_argument("--table", metavar="REPORT", help="print the Markdown table of a report file and stop")
    parser.add_argument("--write-doc", metavar="REPORT", help="put a report's table into docs/performance.md")
    args = parser.parse_args(argv)
    if args.list:
        print(markdown_list())
        return 0
    if args.table or args.write_doc:
        report = json.loads(Path(args.table or args.write_doc).read_text(encoding="utf-8"))
        if args.table:
            print(markdown_table(report))
        else:
            write_doc(report)
            print(f"wrote the table of {args.write_doc} into {DOC.relative_to(ROOT)}")
        return 0
    try:
        chosen = select(args.only)
        peers = peer_interpreters({p: getattr(args, f"{p}_python", None) for p in PEERS})
    except (UnknownBenchmarkError, PeerInterpreterError) as err:
        parser.error(str(err))
    started = datetime.now(UTC)
    out = Path(args.out) if args.out else RESULTS / f"{started.strftime('%Y%m%dT%H%M%SZ')}.json"
    report: dict[str, Any] = {
        "started": started.isoformat(),
        "quick": args.quick,
        "python": sys.version.split()[0],
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "cpus": os.cpu_count()},
        "peer_interpreters": peers,
        "benchmarks": [],
    }
    failed = []
    for benchmark in chosen:
        shown = " ".join(command_for(benchmark, args.quick, peers)[1:]).replace(str(ROOT) + os.sep, "")
        print(f"running {shown} ...", flush=True)
        result = run(benchmark, args.quick, peers)
        report["benchmarks"].append(result)
        status = "ok" if result["returncode"] == 0 else f"FAILED (exit {result['returncode']})"
        print(f"  {status}: {len(result['records'])} records in {result['seconds']:.1f} s", flush=True)
        for peer, why in skipped_peers(result["records"]).items():
            print(f"  {PEERS[peer][0] if peer in PEERS else peer} not measured: {why}", flush=True)
        if result["returncode"] != 0:
            failed.append(benchmark.name)
            print("  " + result["stderr_tail"][-800:].replace("\n", "\n  "), flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown_table(report) + "\n", encoding="utf-8")
    failures = f"; failed: {', '.join(failed)}" if failed else ""
    print(f"report: {out} (table: {out.with_suffix('.md').name}){failures}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
