"""benchmarks/server_overhead.py runs and prints well-formed JSON lines (its figures are not judged here)."""

from __future__ import annotations

import pytest
from benchmark_runs import run_benchmark

KEYS = {"workload", "engine", "case", "unit", "median", "min", "max", "samples", "ratios"}


@pytest.mark.slow  # runs the benchmark: about 45 s
def test_server_overhead_benchmark_quick_prints_json_lines():
    records, _ = run_benchmark("server_overhead.py", "--quick", timeout=240, notices=True)
    assert {r["case"] for r in records} == {
        f"{mode}/{kernel}/{case}"
        for mode in ("worker_process", "attach")
        for kernel in ("noop", "matmul128")
        for case in ("no_subscriber", "recorder", "buffer", "served")
    }
    for record in records:
        assert KEYS <= record.keys() and record["min"] <= record["median"] <= record["max"]
        assert len(record["samples"]) == 3
    for served in (r for r in records if r["case"].endswith("/served")):
        assert 0 < served["client_events_received"] <= served["events_streamed"]
        assert served["client_events_dropped"] == served["events_streamed"] - served["client_events_received"]
        assert {"served/no_subscriber", "served/recorder", "served/buffer"} <= served["ratios"].keys()
        assert served["meets_target"] == (served["ratios"]["served/no_subscriber"] <= served["target"])
        # the server's and the client's CPU per operation (Linux /proc, in 10 ms ticks: a quick rep may round
        # to none; the worker-process set-up's server is this process, timed exactly, and always works)
        assert served["server_cpu_us_per_op"] >= 0 and served["client_cpu_us_per_op"] >= 0
        if served["case"].startswith("worker_process/"):
            assert served["server_cpu_us_per_op"] > 0


def test_server_overhead_collector_mode_counts_full_collections_frozen_and_not():
    records = {r["case"]: r for r in run_benchmark("server_overhead.py", "--quick", "--collector", timeout=240)[0]}
    assert records.keys() == {
        f"collector/noop/{frozen}/{name}" for frozen in ("not_frozen", "frozen") for name in ("no_subscriber", "buffer")
    }
    for case, record in records.items():
        assert KEYS <= record.keys() and len(record["samples"]) == 6  # --quick: 3 reps, doubled
        assert record["full_collections"] >= 0 and record["full_collection_ms_per_1000_ops"] >= 0
        assert (record["full_collections"] == 0) == (record["full_collection_ms_per_1000_ops"] == 0), case
    assert records["collector/noop/frozen/buffer"]["ratios"]["buffer/no_subscriber"] > 0
