"""The terminal demo: ``mxlab demo`` runs the engine scenario and writes a trace."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from framework.engine import ENGINE_TYPES
from server.__main__ import main
from server.scenarios import engine_basics

ROOT = Path(__file__).resolve().parents[1]


def test_independent_chains_overlap_and_dependent_chains_do_not():
    results = engine_basics.compare_engines(["ThreadedEnginePerDevice"], num_workers=2, chain_length=3, op_ms=30)
    by_program = {r.program: r for r in results}

    def max_overlap(events):
        starts = {e["op"]: e["t_ns"] for e in events if e["kind"] == "engine.start"}
        ends = {e["op"]: e["t_ns"] for e in events if e["kind"] == "engine.end"}
        spans = [(starts[o], ends[o]) for o in starts]
        return max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)

    assert max_overlap(by_program["independent"].events) == 2
    assert max_overlap(by_program["dependent"].events) == 1
    assert by_program["independent"].seconds < by_program["dependent"].seconds


def test_scenario_rejects_out_of_range_parameters():
    with pytest.raises(ValueError, match="chain_length must be in"):
        engine_basics.compare_engines(chain_length=0)
    with pytest.raises(ValueError, match="op_ms must be in"):
        engine_basics.compare_engines(op_ms=-1)


def test_main_prints_timelines_and_writes_a_chrome_trace(tmp_path, capsys):
    trace = tmp_path / "demo.json"
    assert main(["demo", "--chain-length", "2", "--op-ms", "5", "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    for engine_type in ENGINE_TYPES:
        assert f"== {engine_type}, dependent chains" in out
        assert f"== {engine_type}, independent chains" in out
    document = json.loads(trace.read_text())
    names = {e["name"] for e in document["traceEvents"] if e.get("ph") == "B"}
    assert {"X1", "Y2", "P1", "Q2"} <= names


def test_main_rejects_bad_arguments(capsys):
    assert main(["demo", "--workers", "0"]) == 2
    assert "--workers must be >= 1" in capsys.readouterr().err


def test_python_dash_m_server_demo_runs(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "server",
            "demo",
            "--engine",
            "NaiveEngine",
            "--chain-length",
            "1",
            "--op-ms",
            "1",
            "--trace",
            str(tmp_path / "t.json"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "NaiveEngine, independent chains" in result.stdout
