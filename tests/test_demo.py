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
    chain_length, op_ms = 3, 50
    results = engine_basics.compare_engines(["ThreadedEnginePerDevice"], 2, chain_length, op_ms)
    by_program = {r.program: r for r in results}
    dependent, independent = by_program["dependent"], by_program["independent"]
    # on any machine: the dependencies forbid overlap, and every one of the 2 x 3 sleeps lasts at least op_ms
    assert engine_basics.max_overlap(dependent.events) == 1
    assert dependent.seconds >= 2 * chain_length * op_ms / 1000
    # two idle workers, two unordered chains: they fail to overlap only if one worker is starved for
    # a whole chain (150 ms), so the margin is wide; tests/engine proves the overlap with a barrier
    assert engine_basics.max_overlap(independent.events) == 2


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
