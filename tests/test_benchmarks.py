"""The benchmark scripts run and print well-formed JSON lines (their figures are not judged here)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from framework.tools.config_table import documented_table

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


# ----------------------------------------------------------------------------- the list and the runner
def _run_all_module():
    spec = importlib.util.spec_from_file_location("run_all", os.path.join(ROOT, "benchmarks", "run_all.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_all"] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


run_all = _run_all_module()


def test_every_script_in_the_folder_is_on_the_list_and_every_listed_script_exists():
    scripts = {name[:-3] for name in os.listdir(os.path.join(ROOT, "benchmarks")) if name.endswith(".py")}
    listed = [b.name for b in run_all.BENCHMARKS]
    assert len(listed) == len(set(listed))
    assert sorted(scripts - set(run_all.NOT_BENCHMARKS)) == sorted(listed)


def test_the_readme_lists_the_benchmarks_of_the_list():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        documented = documented_table(f.read(), "<!-- benchmarks:start -->", "<!-- benchmarks:end -->")
    assert documented == run_all.markdown_list(), "run python benchmarks/run_all.py --list and paste it"


def test_make_bench_runs_the_runner():
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        makefile = f.read()
    recipe = makefile.split("\nbench:", 1)[1].split("\n\n", 1)[0]
    assert "benchmarks/run_all.py" in recipe


def test_only_selects_by_name_and_refuses_unknown_names():
    assert [b.name for b in run_all.select("io,engine")] == ["engine", "io"]  # list order
    with pytest.raises(run_all.UnknownBenchmarkError, match=r"unknown benchmark\(s\) \['turbo'\]"):
        run_all.select("engine,turbo")
    with pytest.raises(run_all.UnknownBenchmarkError):
        run_all.select(" , ")


def test_output_lines_are_split_into_records_and_the_rest():
    records, other = run_all.split_output('{"a": 1}\nconnected\n\n[1, 2]\n{"b": 2}\n')
    assert records == [{"a": 1}, {"b": 2}]
    assert other == ["connected", "[1, 2]"]


def test_runner_collects_a_quick_benchmark_into_one_report(tmp_path):
    out = tmp_path / "report.json"
    script = os.path.join(ROOT, "benchmarks", "run_all.py")
    without_peers = {k: v for k, v in os.environ.items() if k not in ("MXNET_PYTHON", "TORCH_PYTHON")}
    done = subprocess.run(  # no peer interpreters here (CI sets MXNET_PYTHON): the peer tests are below
        [sys.executable, script, "--quick", "--only", "ndarray_dispatch", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=without_peers,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["quick"] is True
    [entry] = report["benchmarks"]
    assert entry["name"] == "ndarray_dispatch" and entry["returncode"] == 0
    assert entry["command"][-1] == "--quick"
    assert entry["records"] and all("median" in r for r in entry["records"])
    bad = subprocess.run(
        [sys.executable, script, "--only", "turbo"], capture_output=True, text=True, timeout=60, cwd=ROOT, check=False
    )
    assert bad.returncode == 2 and "unknown benchmark(s) ['turbo']" in bad.stderr


# ----------------------------------------------------------------------------- peers and the table
def test_peer_interpreters_come_from_the_command_line_first_then_the_environment(tmp_path):
    python = sys.executable
    assert run_all.peer_interpreters({}, {"MXNET_PYTHON": python, "TORCH_PYTHON": " "}) == {"mxnet": python}
    assert run_all.peer_interpreters({"torch": python}, {"MXNET_PYTHON": ""}) == {"torch": python}
    with pytest.raises(run_all.PeerInterpreterError, match=r"MXNET_PYTHON: '.*nowhere' is not an executable file"):
        run_all.peer_interpreters({}, {"MXNET_PYTHON": str(tmp_path / "nowhere")})
    not_executable = tmp_path / "python"
    not_executable.write_text("")
    with pytest.raises(run_all.PeerInterpreterError, match=r"--torch-python: .* is not an executable file"):
        run_all.peer_interpreters({"torch": str(not_executable)}, {})


def test_each_benchmark_gets_only_the_peers_it_declares():
    peers = {"mxnet": "/peers/mx/python", "torch": "/peers/torch/python"}
    by_name = {b.name: b for b in run_all.BENCHMARKS}
    command = run_all.command_for(by_name["custom_op"], True, peers)
    assert command[1:] == [str(by_name["custom_op"].script), "--quick", "--mxnet-python", "/peers/mx/python"]
    assert run_all.command_for(by_name["engine"], False, peers)[1:] == [str(by_name["engine"].script)]
    assert all(set(b.peers) <= set(run_all.PEERS) for b in run_all.BENCHMARKS)


def test_every_declared_peer_is_an_option_of_its_script():
    for benchmark in run_all.BENCHMARKS:
        source = benchmark.script.read_text(encoding="utf-8")
        for peer in benchmark.peers:
            assert f'"--{peer}-python"' in source, f"{benchmark.name} declares {peer} but takes no --{peer}-python"


def _report(records, returncode=0):
    return {
        "started": "2026-11-25T00:00:00+00:00",
        "quick": True,
        "python": "3.11",
        "machine": {"cpus": 2},
        "benchmarks": [{"name": "demo", "returncode": returncode, "records": records}],
    }


def test_the_table_puts_each_peer_in_its_column_and_shows_records_without_a_median():
    report = _report(
        [
            {"workload": "w", "case": "a|b", "unit": "us", "median": 12.345, "peers": {"mxnet": 20.0, "numpy": 0.5}},
            {"workload": "memory", "case": "mlp", "planned_mb": 1234.5, "loadavg": [1, 2, 3]},
        ]
    )
    table = run_all.markdown_table(report)
    assert run_all.table_columns(table) == list(run_all.TABLE_COLUMNS)
    rows = [line for line in table.splitlines() if line.startswith("| demo")]
    assert rows[0] == "| demo | w a\\|b | us | 12.3 | 20.0 | - | 0.5 |"
    assert rows[1] == "| demo | memory mlp |  | planned_mb 1,234 | - | - | - |"
    assert "peers measured in this run: mxnet, numpy" in table
    failed = run_all.markdown_table(_report([], returncode=3))
    assert "| demo | FAILED (exit 3) |" in failed


def test_write_doc_replaces_only_the_marked_table_and_refuses_a_doc_without_markers(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text(f"# Title\n\n{run_all.DOC_START}\nold\n{run_all.DOC_END}\n\nafter\n", encoding="utf-8")
    report = _report([{"workload": "w", "unit": "us", "median": 1.0}])
    run_all.write_doc(report, doc)
    text = doc.read_text(encoding="utf-8")
    assert "old" not in text and text.startswith("# Title") and text.endswith("after\n")
    assert "| demo | w | us | 1.00 |" in text
    doc.write_text("no markers\n", encoding="utf-8")
    with pytest.raises(ValueError, match="expected one <!-- bench-table:start -->"):
        run_all.write_doc(report, doc)


def test_the_performance_doc_shows_a_table_with_the_generators_columns():
    with open(os.path.join(ROOT, "docs", "performance.md"), encoding="utf-8") as f:
        section = documented_table(f.read(), run_all.DOC_START, run_all.DOC_END)
    assert run_all.table_columns(section) == list(run_all.TABLE_COLUMNS), (
        "regenerate it: python benchmarks/run_all.py --write-doc benchmarks/results/<report>.json"
    )


@pytest.mark.slow  # runs the custom-operator benchmark
def test_custom_op_benchmark_quick_prints_one_record_per_case():
    script = os.path.join(ROOT, "benchmarks", "custom_op.py")
    done = subprocess.run(
        [sys.executable, script, "--quick"], capture_output=True, text=True, timeout=300, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    records = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert [r["case"] for r in records] == ["forward", "forward+backward"]
    for record in records:
        assert record["unit"] == "us/call" and record["min"] <= record["median"] <= record["max"]
        assert len(record["samples"]) == 3 and "peers" not in record  # no peer given, none reported


@pytest.mark.slow  # trains the MLP for a few dozen steps, twice
def test_train_throughput_reports_cpu_time_per_step_beside_the_rates():
    script = os.path.join(ROOT, "benchmarks", "train_throughput.py")
    command = [sys.executable, script, "--model", "mlp", "--quick", "--reps", "2", "--blas-threads", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    (record,) = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert KEYS <= record.keys() and len(record["samples"]) == 2
    cpu = record["cpu_ms_per_step"]
    assert set(cpu) == {"module", "numpy"} and all(v > 0 for v in cpu.values())
    assert record["ratios"]["numpy_over_module_cpu"] > 0 and record["ratios"]["numpy_over_module"] > 0
