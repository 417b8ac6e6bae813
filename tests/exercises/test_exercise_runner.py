"""An attempt runs in a subprocess with a time limit: loops, exits, crashes and import errors are reported."""

from __future__ import annotations

import time

import pytest

from exercises import get
from exercises.cli import format_report
from exercises.runner import run_attempt

CHECK_NAMES = [
    "forward",
    "forward_req",
    "backward",
    "backward_req",
    "infer_shape",
    "infer_type",
    "numeric_gradient",
    "edge_cases",
]


def solution_with(tmp_path, old, new, name="quadratic"):
    source = get(name).solution_path.read_text(encoding="utf-8")
    assert source.count(old) == 1
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace(old, new), encoding="utf-8")
    return path


FORWARD_BODY = "    assign(outputs[0], req[0], value)"


@pytest.mark.slow  # waits out a 4 s timeout
def test_an_infinite_loop_in_a_check_is_a_timeout_within_the_limit(tmp_path):
    path = solution_with(tmp_path, FORWARD_BODY, "    while True:\n        pass")
    start = time.monotonic()
    report = run_attempt("quadratic", path, timeout=4)
    # an endless loop never returns: stopping it at all is the point; the rest is a slow machine's start-up
    assert time.monotonic() - start < 40
    last = report.results[-1]
    assert last.name == "forward" and not last.passed
    assert last.got == "still running after 4 s during check 'forward'"
    assert "loop that never ends" in last.hint
    assert report.not_run == CHECK_NAMES[1:]
    assert "SKIP  backward (not run" in format_report(report)


@pytest.mark.slow  # waits out a timeout
def test_an_infinite_loop_at_import_is_a_timeout(tmp_path):
    path = tmp_path / "attempt.py"
    path.write_text("while True:\n    pass\n", encoding="utf-8")
    report = run_attempt("quadratic", path, timeout=3)
    assert [r.name for r in report.results] == ["import"]
    assert report.results[0].got == "still running after 3 s while importing your file"
    assert report.not_run == CHECK_NAMES


def test_os_exit_in_the_attempt_is_reported_with_the_check_that_ran(tmp_path):
    path = solution_with(tmp_path, FORWARD_BODY, "    import os\n\n    os._exit(3)")
    report = run_attempt("quadratic", path, timeout=30)
    last = report.results[-1]
    assert last.name == "forward" and not last.passed
    assert last.got == "the Python process ended with exit code 3 during check 'forward'"
    assert report.not_run == CHECK_NAMES[1:]


def test_a_crash_of_the_interpreter_is_reported_with_its_signal(tmp_path):
    path = solution_with(tmp_path, FORWARD_BODY, "    import ctypes\n\n    ctypes.string_at(0)")
    report = run_attempt("quadratic", path, timeout=30)
    last = report.results[-1]
    assert last.name == "forward" and "crashed with SIGSEGV during check 'forward'" in last.got


def test_an_exception_at_import_is_reported_and_no_check_runs(tmp_path):
    path = tmp_path / "attempt.py"
    path.write_text("import numpy\n\nraise RuntimeError('boom at import')\n", encoding="utf-8")
    report = run_attempt("quadratic", path, timeout=30)
    assert [r.name for r in report.results] == ["import"]
    result = report.results[0]
    assert result.got == "RuntimeError: boom at import"
    assert "attempt.py:3" in result.hint and "import cleanly" in result.hint
    assert report.not_run == CHECK_NAMES and not report.passed
    assert "Traceback" not in format_report(report)


def test_a_syntax_error_names_the_line(tmp_path):
    path = tmp_path / "attempt.py"
    path.write_text("def broken(:\n    pass\n", encoding="utf-8")
    report = run_attempt("quadratic", path, timeout=30)
    assert report.results[0].got.startswith("SyntaxError: ") and "(line 1: def broken(:)" in report.results[0].got


def test_an_exception_inside_the_learners_code_names_their_line(tmp_path):
    path = solution_with(tmp_path, FORWARD_BODY, "    assign(outputs[0], req[0], value.reshape(-1, 7))")
    report = run_attempt("quadratic", path, timeout=30)
    forward = next(r for r in report.results if r.name == "forward")
    assert forward.got.startswith("ValueError: cannot reshape array")
    assert "quadratic.py:" in forward.hint and "in quadratic_forward" in forward.hint
    assert next(r for r in report.results if r.name == "infer_shape").passed  # the other checks still run


def test_prints_of_the_attempt_do_not_break_the_report(tmp_path):
    path = solution_with(tmp_path, FORWARD_BODY, FORWARD_BODY + "\n    print('MXLAB-CHECK not json', end='')")
    report = run_attempt("quadratic", path, timeout=60)
    assert report.passed, format_report(report)


def test_bad_arguments_raise_clear_errors(tmp_path):
    with pytest.raises(KeyError, match="unknown exercise 'quadratik'.*did you mean|unknown exercise 'quadratik'"):
        run_attempt("quadratik", tmp_path / "x.py")
    with pytest.raises(FileNotFoundError, match="no attempt file"):
        run_attempt("quadratic", tmp_path / "missing.py")
    with pytest.raises(ValueError, match="timeout must be positive"):
        run_attempt("quadratic", get("quadratic").solution_path, timeout=0)
