"""The commands: check, hint levels and reset, solution with its spoiler warning, the list; stub generation."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from exercises import CATALOGUE, get, hints, stubgen
from exercises.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def mxlab_home(tmp_path, monkeypatch):
    """Every test gets its own state directory (hint levels, statuses)."""
    home = tmp_path / "mxlab-home"
    monkeypatch.setenv("MXLAB_HOME", str(home))
    return home


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def test_hints_advance_one_level_per_call_and_reset_starts_again(mxlab_home):
    texts = hints.load_hints(get("quadratic"))
    code, first = run("hint", "quadratic")
    assert code == 0 and first.startswith(f"Hint 1 of {len(texts)} for quadratic") and texts[0][:40] in first
    code, second = run("hint", "quadratic")
    assert second.startswith(f"Hint 2 of {len(texts)}") and texts[1][:40] in second
    assert json.loads((mxlab_home / "hints.json").read_text()) == {"quadratic": 2}
    for _ in range(len(texts)):
        code, last = run("hint", "quadratic")
    assert last.startswith(f"Hint {len(texts)} of {len(texts)}") and "that was the last hint" in last
    code, text = run("hint", "quadratic", "--reset")
    assert code == 0 and "reset" in text
    code, again = run("hint", "quadratic")
    assert again.startswith("Hint 1 of")
    code, third = run("hint", "quadratic", "--level", "3")
    assert third.startswith("Hint 3 of") and texts[2][:40] in third
    code, fourth = run("hint", "quadratic")
    assert fourth.startswith("Hint 4 of")


def test_hint_levels_are_kept_per_exercise_and_bad_levels_are_refused(capsys):
    run("hint", "conv2d")
    run("hint", "conv2d")
    assert run("hint", "max_pool")[1].startswith("Hint 1 of")
    assert run("hint", "conv2d", "--level", "0")[0] == 2
    assert run("hint", "conv2d", "--level", "99")[0] == 2
    assert "has hints 1 to" in capsys.readouterr().err


def test_a_malformed_state_file_is_an_error_naming_it(mxlab_home, capsys):
    mxlab_home.mkdir()
    (mxlab_home / "hints.json").write_text("[1, 2]")
    assert run("hint", "quadratic")[0] == 2
    assert "hints.json should hold a JSON object" in capsys.readouterr().err


@pytest.mark.parametrize("exercise", CATALOGUE, ids=lambda e: e.name)
def test_every_exercise_has_a_readme_and_at_least_three_hints(exercise):
    assert len(hints.load_hints(exercise)) >= 3
    readme = exercise.readme_path.read_text(encoding="utf-8")
    assert f"mxlab check {exercise.name}" in readme and "Read first" in readme


def test_solution_prints_a_spoiler_warning_then_the_reference():
    code, text = run("solution", "memory_planner")
    assert code == 0
    assert text.startswith("*** SPOILER: the reference solution of memory_planner follows.")
    assert "bisect.insort(self._keys, (nbytes, sid))" in text
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text


def test_check_reports_and_records_the_status_shown_by_the_list(mxlab_home):
    code, text = run("check", "smooth_l1", "--file", str(get("smooth_l1").solution_path))
    assert code == 0 and "6/6 checks passed" in text
    code, text = run("check", "max_pool")  # the untouched stub
    assert code == 1 and "0/7 checks passed" in text and "mxlab hint max_pool" in text
    run("hint", "max_pool")
    code, listing = run("exercises")
    assert code == 0
    lines = {line.split()[0]: line for line in listing.splitlines() if line.startswith("  ") and line.split()}
    assert "done (6/6)" in lines["smooth_l1"]
    assert "0/7 checks pass, 1 hint(s) seen" in lines["max_pool"]
    assert "not checked yet" in lines["quadratic"]
    assert set(lines) >= {e.name for e in CATALOGUE}
    assert run("list")[1] == listing


def test_only_runs_the_named_checks_and_refuses_unknown_ones(mxlab_home, capsys):
    code, text = run("check", "quadratic", "--only", "infer_shape", "--only", "forward")
    assert code == 1 and "FAIL  forward\n" in text and "FAIL  infer_shape" in text
    assert "backward" not in text and "0/2 checks passed" in text
    assert not (mxlab_home / "status.json").exists()  # a partial run is not the exercise's status
    assert run("check", "quadratic", "--only", "forwards")[0] == 2
    assert "quadratic has no check 'forwards'; its checks are: forward, forward_req" in capsys.readouterr().err


def test_usage_errors_return_2_with_a_message(capsys, tmp_path):
    assert run("check", "quadratik")[0] == 2
    assert "unknown exercise 'quadratik' (did you mean" in capsys.readouterr().err
    assert run("check", "quadratic", "--file", str(tmp_path / "none.py"))[0] == 2
    assert "no file at" in capsys.readouterr().err
    assert run("check", "quadratic", "--timeout", "0")[0] == 2
    assert run("frobnicate")[0] == 2
    assert run()[0] == 2


def test_python_dash_m_exercises_runs_the_same_commands(tmp_path):
    env = {"MXLAB_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "exercises", "check", "quadratic", "--file", str(get("quadratic").solution_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "8/8 checks passed" in done.stdout


def test_the_stubs_are_generated_from_the_solutions_and_current():
    for exercise in CATALOGUE:
        assert stubgen.stub_is_current(exercise), f"run python -m exercises.stubgen --write ({exercise.name} is stale)"
        stub = exercise.stub_path.read_text(encoding="utf-8")
        assert stub.count("# TODO(exercise): ") == stub.count('raise NotImplementedError("exercise gap in ') >= 1
        assert "BEGIN SOLUTION" not in stub


def test_stub_generation_refuses_malformed_markers():
    with pytest.raises(stubgen.StubError, match="never closed"):
        stubgen.make_stub("def f():\n    # BEGIN SOLUTION do it\n    return 1\n")
    with pytest.raises(stubgen.StubError, match="END SOLUTION without BEGIN"):
        stubgen.make_stub("x = 1\n# END SOLUTION\n")
    with pytest.raises(stubgen.StubError, match="inside another"):
        stubgen.make_stub("# BEGIN SOLUTION a\n# BEGIN SOLUTION b\n# END SOLUTION\n")
    stub = stubgen.make_stub(
        "def area(r):\n    # BEGIN SOLUTION return pi r^2\n    return 3.14 * r * r\n    # END SOLUTION\n"
    )
    assert '    # TODO(exercise): return pi r^2\n    raise NotImplementedError("exercise gap in area")\n' in stub
