"""The benchmark scripts run and print well-formed JSON lines (their figures are not judged here)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from benchmark_runs import run_benchmark
from threadpoolctl import threadpool_limits

from framework.tools.config_table import documented_table

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEYS = {"workload", "engine", "case", "unit", "median", "min", "max", "samples", "ratios"}


@pytest.mark.slow  # runs the engine benchmark
def test_engine_benchmark_quick_prints_json_lines():
    records, _ = run_benchmark("engine.py", "--quick", timeout=120)
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
    records, _ = run_benchmark("custom_op.py", "--quick")
    assert [r["case"] for r in records] == ["forward", "forward+backward"]
    for record in records:
        assert record["unit"] == "us/call" and record["min"] <= record["median"] <= record["max"]
        assert len(record["samples"]) == 3 and "peers" not in record  # no peer given, none reported


# ----------------------------------------------------------------------------- the PyTorch peer
# PyTorch is not in MXLab's venv: these tests check the plumbing with stand-in interpreters;
# the last ones run the peer scripts for real when TORCH_PYTHON names an interpreter with torch.
def _load(relative):
    name = os.path.splitext(os.path.basename(relative))[0]
    spec = importlib.util.spec_from_file_location(f"bench_{name}", os.path.join(ROOT, relative))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


torch_runner = _load("benchmarks/peers/torch_runner.py")
torch_train = _load("benchmarks/peers/torch_train.py")  # imports torch only in main()
torch_dispatch = _load("benchmarks/peers/torch_dispatch.py")


def _fake_python(tmp_path, body):
    """An executable standing in for a peer interpreter: a shell script that ignores its arguments."""
    path = tmp_path / "python"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def test_the_torch_peer_scripts_parse_the_command_lines_the_benchmarks_build():
    args = torch_train.parse_args(
        torch_runner.train_args(
            "lenet", 64, 8192, 5, 20, 1, 0.1, 0.9, wd=1e-4, init="xavier", modes=("eager", "jit.script")
        )
    )
    assert (args.model, args.batch, args.samples, args.warm, args.timed, args.threads) == ("lenet", 64, 8192, 5, 20, 1)
    assert (args.lr, args.momentum, args.wd, args.init, args.modes) == (
        0.1,
        0.9,
        1e-4,
        "xavier",
        ("eager", "jit.script"),
    )
    dispatch = torch_dispatch.parse_args(torch_runner.dispatch_args(2000, 2))
    assert (dispatch.n, dispatch.reps, dispatch.threads) == (2000, 1, 2)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--model", "mlp", "--batch", "8", "--threads", "1", "--modes", "eager,compile"],
            "unknown mode(s) ['compile']",
        ),
        (["--model", "mlp", "--batch", "256", "--samples", "128", "--threads", "1"], "--batch 256 is larger than"),
        (["--model", "mlp", "--batch", "8", "--threads", "0"], "--threads must be positive"),
        (["--model", "resnet", "--batch", "8", "--threads", "1"], "invalid choice: 'resnet'"),
    ],
)
def test_the_torch_train_script_refuses_bad_arguments_naming_them(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        torch_train.parse_args(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_a_missing_torch_interpreter_skips_the_peer_once_with_a_clear_message(tmp_path, capsys):
    rounds = torch_runner.TorchRounds(str(tmp_path / "nowhere"), "torch_dispatch", torch_runner.dispatch_args(10, 1))
    assert rounds.round() is None
    assert "is not an executable file" in rounds.skipped and "make bench" in rounds.skipped
    assert capsys.readouterr().err.startswith("skipping the PyTorch peer: --torch-python:")
    assert rounds.round() is None and capsys.readouterr().err == ""  # said once, not tried again
    assert rounds.note() == {"peer_skipped": {"torch": rounds.skipped}}
    not_given = torch_runner.TorchRounds(None, "torch_dispatch", [])
    assert not_given.round() is None and not_given.note() == {} and not_given.skipped is None


def test_a_peer_script_that_fails_or_lacks_torch_says_so(tmp_path):
    failing = _fake_python(tmp_path, 'echo "Traceback ..." >&2; echo "ValueError: bad shape" >&2; exit 3')
    with pytest.raises(
        torch_runner.TorchPeerUnavailable, match=r"torch_train failed \(exit 3\): ValueError: bad shape"
    ):
        torch_runner.run_script(failing, "torch_train", [])
    no_torch = _fake_python(tmp_path, "echo \"ModuleNotFoundError: No module named 'torch'\" >&2; exit 1")
    with pytest.raises(torch_runner.TorchPeerUnavailable, match=r"cannot import torch; make bench installs it"):
        torch_runner.run_script(no_torch, "torch_dispatch", [])


def test_a_peer_scripts_json_lines_are_its_records_and_other_output_is_ignored(tmp_path):
    python = _fake_python(tmp_path, 'echo \'warming up\'; echo \'{"case": "inplace_a+=1", "samples": [2.5]}\'')
    assert torch_runner.run_script(python, "torch_dispatch", []) == [{"case": "inplace_a+=1", "samples": [2.5]}]


def test_blas_threads_is_what_numpy_blas_uses_here():
    with threadpool_limits(limits=1, user_api="blas"):
        assert torch_runner.blas_threads() == 1
    assert torch_runner.blas_threads() >= 1


def test_gluon_puts_each_torch_mode_beside_its_mxlab_counterpart():
    gluon = _load("benchmarks/gluon.py")  # MXLab itself is imported only when measuring
    ours = [
        {"system": "mxlab", "model": "mlp", "mode": "imperative", "median": 100.0},
        {"system": "mxlab", "model": "mlp", "mode": "hybridized", "median": 300.0},
    ]
    rows = [  # two rounds of the peer, each with both modes
        {"mode": "eager", "rates": [200.0], "final_loss": 2.3, "threads": 2},
        {"mode": "jit.script", "rates": [240.0], "final_loss": 2.3, "threads": 2},
        {"mode": "eager", "rates": [220.0], "final_loss": 2.2, "threads": 2},
        {"mode": "jit.script", "rates": [260.0], "final_loss": 2.2, "threads": 2},
    ]
    theirs = gluon.torch_records(rows, ours, "mlp", 10)
    assert [(r["system"], r["mode"], r["median"], r["samples"]) for r in theirs] == [
        ("torch", "eager", 210.0, [200.0, 220.0]),
        ("torch", "jit.script", 250.0, [240.0, 260.0]),
    ]
    assert [r["peers"] for r in ours] == [{"torch": 210.0}, {"torch": 250.0}]
    speed_up, comparison = gluon.torch_comparison(ours + theirs, "mlp")
    assert speed_up["case"] == "jit_script_speedup" and speed_up["ratio"] == pytest.approx(250 / 210, abs=1e-3)
    assert comparison["case"] == "mxlab_over_torch"
    assert comparison["imperative_over_torch_eager"] == pytest.approx(100 / 210, abs=1e-3)
    assert comparison["hybridized_over_torch_jit_script"] == 1.2
    assert gluon.torch_records([], ours[:1], "mlp", 10) == [] and gluon.torch_comparison(ours, "mlp") == []


def test_the_dispatch_benchmark_goes_on_without_torch_and_says_why(tmp_path):
    missing = str(tmp_path / "torchvenv" / "bin" / "python")
    records, done = run_benchmark("ndarray_dispatch.py", "--n", "200", "--reps", "1", "--torch-python", missing)
    assert "skipping the PyTorch peer" in done.stderr
    assert len(records) == 2
    for record in records:
        assert "torch" not in record["peers"] and record["torch_samples"] == []
        assert missing in record["peer_skipped"]["torch"]


def test_the_runner_reports_a_peer_that_could_not_be_measured(tmp_path):
    records = [{"case": "a"}, {"case": "b", "peer_skipped": {"torch": "no torch"}}, {"peer_skipped": {"torch": "x"}}]
    assert run_all.skipped_peers(records) == {"torch": "no torch"}
    assert run_all.skipped_peers([{"case": "a"}]) == {}
    no_torch = _fake_python(tmp_path, "echo \"ModuleNotFoundError: No module named 'torch'\" >&2; exit 1")
    without_peers = {k: v for k, v in os.environ.items() if k not in ("MXNET_PYTHON", "TORCH_PYTHON")}
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", "run_all.py"), "--quick", "--only", "ndarray_dispatch"]
        + ["--torch-python", no_torch, "--out", str(tmp_path / "report.json")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=without_peers,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"PyTorch not measured: {no_torch} cannot import torch" in done.stdout
    [entry] = json.loads((tmp_path / "report.json").read_text())["benchmarks"]
    assert entry["command"][-2:] == ["--torch-python", no_torch] and entry["returncode"] == 0
    assert all("torch" not in r["peers"] for r in entry["records"])


def test_make_test_never_installs_torch_and_make_bench_pins_the_cpu_build():
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        makefile = f.read()
    test_recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    bench_recipe = makefile.split("\nbench:", 1)[1].split("\n\n", 1)[0]
    assert "setup.sh --test" in test_recipe and "--bench" not in test_recipe and "torch" not in test_recipe
    assert "setup.sh --bench" in bench_recipe and "TORCH_PYTHON=" in bench_recipe
    with open(os.path.join(ROOT, "scripts", "setup.sh"), encoding="utf-8") as f:
        setup = f.read()
    assert 'TORCH_PIN="torch==2.13.0"' in setup and "--dry-run --report" in setup


TORCH_PYTHON = os.environ.get("TORCH_PYTHON", "").strip()
needs_torch = pytest.mark.skipif(not TORCH_PYTHON, reason="TORCH_PYTHON is not set (not a CI need)")


@needs_torch
def test_the_torch_peer_scripts_run_under_the_torch_interpreter():
    args = torch_runner.train_args("mlp", 32, 256, 1, 2, 1, 0.1, 0.9, init="xavier", modes=("eager", "jit.script"))
    records = torch_runner.run_script(TORCH_PYTHON, "torch_train", args)
    assert [r["mode"] for r in records] == ["eager", "jit.script"]
    for record in records:
        assert record["model"] == "mlp" and record["threads"] == 1 and len(record["rates"]) == 1
        assert record["rates"][0] > 0 and 0 < record["final_loss"] < 20
    rows = torch_runner.run_script(TORCH_PYTHON, "torch_dispatch", torch_runner.dispatch_args(100, 1))
    assert [r["case"] for r in rows] == list(torch_dispatch.CASES)
    assert all(len(r["samples"]) == 1 and r["samples"][0] > 0 for r in rows)


@pytest.mark.slow  # trains the MLP for a few dozen steps, twice
def test_train_throughput_reports_cpu_time_per_step_beside_the_rates():
    (record,), _ = run_benchmark(
        "train_throughput.py", "--model", "mlp", "--quick", "--reps", "2", "--blas-threads", "1"
    )
    assert KEYS <= record.keys() and len(record["samples"]) == 2
    cpu = record["cpu_ms_per_step"]
    assert set(cpu) == {"module", "numpy"} and all(v > 0 for v in cpu.values())
    assert record["ratios"]["numpy_over_module_cpu"] > 0 and record["ratios"]["numpy_over_module"] > 0
    ratio = record["ratios"]["module_over_numpy"]  # issue 19's figure, the same pairs the other way up
    assert ratio == pytest.approx(1 / record["ratios"]["numpy_over_module"])
    assert record["targets"] == {"module_over_numpy_at_least": 0.95}
    assert record["meets_module_over_numpy_target"] == (ratio >= 0.95)
