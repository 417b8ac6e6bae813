"""Every tutorial runs from a fresh interpreter and prints what its text says it prints.

Each ``tutorials/NN-*.md`` file is executed by ``tutorials/run.py`` in its own subprocess
(a fresh interpreter, as a fresh notebook kernel would be), which compares every block's
output with the ```text block marked ``<!-- expected-output -->`` after it. The runner's own
matching rules (wildcards, numeric tolerance, malformed files) are tested here too.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from needs import missing, needs_module

from exercises import EXERCISES
from server.scenarios import REGISTRY
from server.scenarios import TUTORIALS as TUTORIAL_TABLE

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "tutorials"

spec = importlib.util.spec_from_file_location("tutorial_runner", TUTORIALS / "run.py")
runner = importlib.util.module_from_spec(spec)
sys.modules["tutorial_runner"] = runner  # dataclasses look their module up by name
spec.loader.exec_module(runner)

EXPECTED_FILES = [
    "01-ndarray-and-async.md",
    "02-dependency-engine.md",
    "03-storage-and-resources.md",
    "04-symbols-and-inference.md",
    "05-executor-memory.md",
    "06-writing-an-operator.md",
    "07-operator-property-and-simpleop.md",
    "08-cpp-operator-library.md",
    "09-kvstore.md",
    "10-data-loading-and-recordio.md",
    "11-train-end-to-end.md",
    "12-gpu-with-cupy.md",
    "13-profiling.md",
    "14-fused-rnn.md",
    "15-gluon-and-hybridize.md",
]
WATCH_LINK = re.compile(r"http://127\.0\.0\.1:8000/\?scenario=(\w+)")
EXERCISE_COMMAND = re.compile(r"mxlab (?:check|hint|solution) (\w+)")
# Requirements a CI machine must have: there a missing one fails instead of skipping.
CI_REQUIRED = {"g++"}


def test_the_numbered_tutorials_exist_and_follow_the_format():
    found = sorted(p.name for p in TUTORIALS.glob("[0-9][0-9]-*.md"))
    assert found == EXPECTED_FILES
    for name in EXPECTED_FILES:
        text = (TUTORIALS / name).read_text()
        assert text.startswith("---\njupyter:\n  jupytext:"), f"{name}: no jupytext YAML header"
        assert "kernelspec:" in text and "name: python3" in text, f"{name}: no python3 kernelspec"
        assert "## What you saw" in text and "## Try this" in text, f"{name}: missing closing sections"
        scenarios = set(WATCH_LINK.findall(text))
        assert scenarios, f"{name}: no 'Watch it live' link"
        tutorial = runner.parse(TUTORIALS / name)
        assert tutorial.cells, f"{name}: no python blocks"
        assert any(cell.expected is not None for cell in tutorial.cells), f"{name}: no output is checked"
    assert (TUTORIALS / "README.md").exists() and (TUTORIALS / "jupytext.toml").exists()


@pytest.mark.parametrize("name", EXPECTED_FILES)
def test_jupytext_pairs_the_same_code_cells_and_every_cell_compiles(name):
    """The notebook jupytext makes has exactly the runner's cells (shell/text blocks stay Markdown)."""
    jupytext = needs_module("jupytext", "it pairs the tutorials with notebooks (the [dev] extra installs it)")
    tutorial = runner.parse(TUTORIALS / name)
    notebook = jupytext.read(TUTORIALS / name)
    code = [cell.source.strip() for cell in notebook.cells if cell.cell_type == "code"]
    assert code == [cell.source.strip() for cell in tutorial.cells]
    assert notebook.metadata["kernelspec"]["name"] == "python3"
    for number, cell in enumerate(tutorial.cells, 1):
        compile(cell.source, f"{name}:block{number}", "exec")  # also for tutorials skipped here (12)


@pytest.mark.slow  # a fresh interpreter per tutorial; several train networks
@pytest.mark.parametrize("name", EXPECTED_FILES)
def test_tutorial_runs_and_prints_its_expected_output(name):
    path = TUTORIALS / name
    env = dict(os.environ, MXLAB_PROGRESS="0", PYTHONHASHSEED="0")
    result = subprocess.run(
        [sys.executable, str(TUTORIALS / "run.py"), str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    if result.returncode == 3:
        lacking = {need for need in runner.parse(path).requires if runner.missing_requirements([need])}
        missing(result.stdout.strip(), required_in_ci=bool(lacking & CI_REQUIRED))
    assert result.returncode == 0, f"{name} failed:\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}"
    assert result.stdout.strip().endswith("outputs checked")


def test_watch_it_live_links_follow_the_servers_tutorial_table_and_the_index_agrees():
    """Links, the index and the web UI's table (server.scenarios.TUTORIALS) agree; every scenario is registered."""
    table = {Path(tutorial.path).name: tutorial for tutorial in TUTORIAL_TABLE}
    assert sorted(table) == EXPECTED_FILES
    assert all(tutorial.path == f"tutorials/{name}" for name, tutorial in table.items())
    for scenario in REGISTRY.values():  # the tutorial that explains a scenario links to it
        assert scenario.name in table[Path(scenario.tutorial).name].scenarios, scenario.name
    index_row = re.compile(r"^\| \d\d \| \[[^]]+\]\((\d\d-[\w-]+\.md)\) \|.*\| ([^|]+) \|$", re.M)
    index_rows = {
        match.group(1): set(re.findall(r"`(\w+)`", match.group(2)))
        for match in index_row.finditer((TUTORIALS / "README.md").read_text())
    }
    assert sorted(index_rows) == EXPECTED_FILES
    for name in EXPECTED_FILES:
        text = (TUTORIALS / name).read_text()
        watch = text[text.index("Watch it live:") :]
        assert watch.startswith("Watch it live: run `make run`, then open http://127.0.0.1:8000/?scenario="), name
        linked = set(WATCH_LINK.findall(text))
        assert linked <= set(REGISTRY), f"{name}: links {linked - set(REGISTRY)}, not a registered scenario"
        assert linked == set(table[name].scenarios), f"{name} links {linked}; TUTORIALS says {table[name].scenarios}"
        assert linked == index_rows[name], f"{name} links {linked}; tutorials/README.md lists {index_rows[name]}"


def test_exercise_references_name_real_exercises_and_every_exercise_is_referenced():
    texts = {name: (TUTORIALS / name).read_text() for name in EXPECTED_FILES}
    for name, text in texts.items():
        commands = set(EXERCISE_COMMAND.findall(text))
        assert commands <= set(EXERCISES), f"{name}: `mxlab check` of unknown exercise(s) {commands - set(EXERCISES)}"
    everything = "\n".join(texts.values())
    unreferenced = [exercise for exercise in EXERCISES if f"`{exercise}`" not in everything]
    assert not unreferenced, f"no tutorial points at the exercise(s) {unreferenced}"


# ---------------------------------------------------------------------- the runner itself
def test_numbers_match_to_a_relative_tolerance_and_text_exactly():
    assert runner.line_matches("loss 0.5000", "loss 0.50001")
    assert not runner.line_matches("loss 0.5000", "loss 0.51")
    assert runner.line_matches("loss 0.5", "loss 0.51", rtol=0.05)
    assert runner.line_matches("[[ 6. 11.]", "[[ 6.0  11.0]")  # spacing and number formatting
    assert not runner.line_matches("accuracy 0.96", "precision 0.96")
    assert not runner.line_matches("a 1 2", "a 1")
    assert runner.line_matches("nan", "nan") and not runner.line_matches("nan", "1.0")


def test_wildcards_match_any_text_and_any_lines():
    assert runner.line_matches("took ... ms", "took 12.25 ms")
    assert runner.output_matches("first\n...\nlast", "first\na\nb\nlast")
    assert runner.output_matches("first\n...\nlast", "first\nlast")
    assert not runner.output_matches("first\nlast", "first\nmiddle\nlast")
    assert not runner.output_matches("first\n...\nlast", "first\nsecond")
    assert runner.output_matches("\nx 1\n\n", "x 1.0\n")


def test_parse_attaches_expected_output_and_options(tmp_path):
    md = tmp_path / "t.md"
    md.write_text(
        "<!-- requires: g++ -->\n```python\nprint(1)\n```\n\n<!-- expected-output rtol=0.1 -->\n"
        "```text\n1\n```\n```bash\nmake\n```\n```python\nx = 2\n```\n"
    )
    tutorial = runner.parse(md)
    assert tutorial.requires == ["g++"]
    assert [c.expected for c in tutorial.cells] == ["1", None]
    assert tutorial.cells[0].rtol == 0.1 and tutorial.cells[1].source == "x = 2\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("```python\nprint(1)\n", "unclosed"),
        ("<!-- expected-output -->\n```text\n1\n```\n", "no python block"),
        ("```python\nprint(1)\n```\n<!-- expected-output -->\n```bash\n1\n```\n", "must precede ```text"),
        ("```python\nprint(1)\n```\n<!-- expected-output tol=1 -->\n```text\n1\n```\n", "unknown expected-output"),
        ("```python\nprint(1)\n```\n<!-- expected-output -->\nprose\n", "not followed by"),
        ("<!-- requires: tpu -->\n```python\nx=1\n```\n", "unknown requirement"),
    ],
)
def test_malformed_tutorials_are_rejected_with_the_reason(tmp_path, text, message):
    md = tmp_path / "bad.md"
    md.write_text(text)
    with pytest.raises(runner.TutorialFormatError, match=message):
        runner.missing_requirements(runner.parse(md).requires)


def test_a_wrong_output_or_an_exception_fails_with_the_block_named(tmp_path):
    md = tmp_path / "t.md"
    md.write_text("```python\nprint('hello')\n```\n<!-- expected-output -->\n```text\nhullo\n```\n")
    with pytest.raises(runner.CellFailure, match=r"t.md, block 1 \(line 1\) printed something other"):
        runner.run(runner.parse(md))
    md.write_text("```python\nx = 1\n```\n```python\nassert x == 2, 'x is not 2'\n```\n")
    with pytest.raises(runner.CellFailure, match=r"block 2 \(line 4\) raised:(.|\n)*x is not 2"):
        runner.run(runner.parse(md))


def test_cli_exit_codes(tmp_path):
    good, bad = tmp_path / "good.md", tmp_path / "bad.md"
    good.write_text("```python\nprint(3 * 2)\n```\n<!-- expected-output -->\n```text\n6\n```\n")
    bad.write_text("```python\nprint(3 * 2)\n```\n<!-- expected-output -->\n```text\n7\n```\n")
    assert runner.main([str(good)]) == 0
    assert runner.main([str(bad)]) == 1
    assert runner.main([str(tmp_path / "missing.md")]) == 2


def test_missing_requirements_name_what_is_missing(monkeypatch):
    monkeypatch.setattr(runner.shutil, "which", lambda name: None)
    assert runner.missing_requirements(["g++"]) == ["g++ (a C++ compiler) is not installed"]
    monkeypatch.setattr(runner.shutil, "which", lambda name: "/usr/bin/g++")
    assert runner.missing_requirements(["g++"]) == []


def test_cli_reports_a_missing_requirement_with_status_3(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(runner.shutil, "which", lambda name: None)
    md = tmp_path / "needs.md"
    md.write_text("<!-- requires: g++ -->\n```python\nprint(1)\n```\n")
    assert runner.main([str(md)]) == 3
    assert "skipped needs.md: needs g++" in capsys.readouterr().out
