"""Every checker against the reference solutions, the untouched stubs and seeded wrong solutions."""

from __future__ import annotations

from pathlib import Path

import pytest
from wrong import MUTATIONS, Mutation

from exercises import CATALOGUE, get
from exercises.cli import format_report
from exercises.runner import Report, run_attempt

NAMES = [exercise.name for exercise in CATALOGUE]


def all_text(report: Report) -> str:
    return format_report(report) + "\n" + report.output


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_solution_passes_every_check(name):
    report = run_attempt(name, get(name).solution_path, timeout=60)
    failed = [r for r in report.results if not r.passed]
    assert not failed and not report.not_run, format_report(report)
    assert len(report.results) >= 2


@pytest.mark.parametrize("name", NAMES)
def test_the_untouched_stub_fails_every_check_with_a_gap_message(name):
    exercise = get(name)
    report = run_attempt(name, exercise.stub_path, timeout=60)
    assert not report.not_run, format_report(report)
    assert report.results and not any(r.passed for r in report.results), format_report(report)
    for result in report.results:
        assert result.got.startswith("NotImplementedError: exercise gap in "), format_report(report)
        assert result.expected.startswith("the gap to be filled in: "), result
        assert f"{name}.py line " in result.hint, result  # points at the gap in the learner's file
    text = all_text(report)
    assert "Traceback" not in text and "checks.py" not in text and "opcheck.py" not in text


def test_every_exercise_has_at_least_one_seeded_mistake():
    assert {m.exercise for m in MUTATIONS} == set(NAMES)


def mutated(mutation: Mutation, tmp_path: Path) -> Path:
    source = get(mutation.exercise).solution_path.read_text(encoding="utf-8")
    assert source.count(mutation.old) == 1, f"the mutation {mutation.mistake!r} no longer matches the solution"
    path = tmp_path / f"{mutation.exercise}.py"
    path.write_text(source.replace(mutation.old, mutation.new), encoding="utf-8")
    return path


# Mistakes whose checks take over 10 s (measured on 2 cores): `slow`, out of the quick loop.
SLOW_MISTAKES = {("engine_var", "lets a read overtake a waiting write")}
MUTATION_CASES = [
    pytest.param(m, marks=pytest.mark.slow) if (m.exercise, m.mistake) in SLOW_MISTAKES else m for m in MUTATIONS
]


@pytest.mark.parametrize("mutation", MUTATION_CASES, ids=lambda m: f"{m.exercise}: {m.mistake}")
def test_a_seeded_mistake_is_caught_by_the_right_check(mutation, tmp_path):
    report = run_attempt(mutation.exercise, mutated(mutation, tmp_path), timeout=60)
    by_name = {r.name: r for r in report.results}
    assert mutation.caught_by in by_name, format_report(report)
    result = by_name[mutation.caught_by]
    assert not result.passed, format_report(report)
    message = "\n".join([result.input, result.expected, result.got, result.hint, result.diff])
    for words in mutation.message_has:
        assert words in message, f"{words!r} missing from:\n{message}"
    assert "Traceback" not in all_text(report)
    assert result.input and result.expected and result.got and result.hint


def test_a_failure_message_shows_the_input_expected_got_a_diff_and_a_hint(tmp_path):
    mutation = next(m for m in MUTATIONS if m.mistake.startswith("forgets req add") and m.exercise == "quadratic")
    report = run_attempt("quadratic", mutated(mutation, tmp_path), timeout=60)
    text = format_report(report)
    assert "FAIL  forward_req" in text
    assert "input:    exercise_quadratic(x=[[" in text  # small inputs are shown in full
    assert "(shape (2, 3), float32), a=1.0, b=2.0, c=3.0) with req='add'" in text
    assert "expected: out = previous out + a*x^2 + b*x + c" in text
    assert "got:      out = a*x^2 + b*x + c (previous contents lost)" in text
    assert "first mismatch at index (0, 0): expected" in text
    assert "hint:     with req 'add' the operator must add to out" in text
    assert "PASS  forward\n" in text  # the other checks still run and pass


@pytest.mark.parametrize(
    ("check", "old", "new", "what"),
    [
        (
            "forward_req",
            "value = x * (p.a * x + p.b) + p.c",
            "value = x * (p.a * x + p.b) - p.c",
            "forward",
        ),
        (
            "backward_req",
            "assign(outputs[0], req[0], out_grad * (2 * p.a * x + p.b))",
            "assign(outputs[0], req[0], -out_grad * (2 * p.a * x + p.b))",
            "backward",
        ),
    ],
)
def test_a_req_check_reports_a_wrong_formula_as_a_wrong_formula(tmp_path, check, old, new, what):
    """req is handled right (assign is used) but the maths is wrong: the req check must say so, not blame req."""
    source = get("quadratic").solution_path.read_text(encoding="utf-8")
    assert source.count(old) == 1, "the solution no longer has the line this test changes"
    path = tmp_path / "quadratic.py"
    path.write_text(source.replace(old, new), encoding="utf-8")
    result = {r.name: r for r in run_attempt("quadratic", path, timeout=60).results}[check]
    assert not result.passed
    assert "req='write'" in result.input
    assert f"the formula in {what} is the problem" in result.hint
    assert "previous contents lost" not in result.got and "must add to" not in result.hint
    assert result.diff.startswith("first mismatch at index")
