"""The benchmark scripts run and print well-formed JSON lines (their figures are not judged here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEYS = {"workload", "engine", "case", "unit", "median", "min", "max", "samples", "ratios"}


@pytest.mark.slow  # runs the engine benchmark
def test_engine_benchmark_quick_prints_json_lines():
    script = os.path.join(ROOT, "benchmarks", "engine.py")
    done = subprocess.run(
        [sys.executable, script, "--quick"], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    records = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    for record in records:
        assert KEYS <= record.keys(), f"missing {KEYS - record.keys()} in {record}"
        assert "error" not in record, record
        assert record["min"] <= record["median"] <= record["max"]
        assert len(record["samples"]) >= 3
    assert {r["workload"] for r in records} == {"dispatch", "parallel", "storage"}
    dispatch = [r for r in records if r["workload"] == "dispatch"]
    engines = {r["engine"] for r in dispatch}
    assert engines == {"NaiveEngine", "ThreadedEngine", "ThreadedEnginePerDevice"}
    assert {r["case"] for r in dispatch} == {"rr", "chain", "rr_bulk64", "chain_bulk64"}
    assert all(r["calls_ok"] and r["ratios"] for r in dispatch)
    speedups = [r for r in records if r["case"].startswith("speedup")]
    assert len(speedups) == 2
    pooled = next(r for r in records if r["engine"].startswith("framework.storage"))
    assert 0.9 < pooled["hit_rate_from_cold"] <= 1 and pooled["hit_rate_warm"] == 1.0
