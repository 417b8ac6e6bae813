"""``mxlab check|hint|solution|exercises``: the exercise commands (also ``python -m exercises ...``).

* ``check <exercise> [--file PATH] [--timeout S] [--only CHECK]``: run every check of the
  exercise (or only the named ones) on your file (default: the stub in
  ``exercises/<exercise>/``) in a subprocess, and print each failure with the input that
  broke it, expected versus got, and a hint;
* ``hint <exercise> [--level N] [--reset]``: the next hint (1, then 2, ...), hint N, or
  start again;
* ``solution <exercise>``: the reference solution, after a spoiler warning;
* ``exercises`` (or ``list``): every exercise with its status.

``main(argv)`` takes the subcommand as ``argv[0]`` and returns the exit status: 0 when
everything passed (or the command succeeded), 1 when a check failed, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import TextIO

from . import CATALOGUE, UnknownExercise, get, hints, state, stubgen
from .checker import CheckResult
from .runner import DEFAULT_TIMEOUT, Report, run_attempt

STATUS_FILE = "status.json"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mxlab", description="MXLab exercises: write a piece of MXNet, get it checked."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{check,hint,solution,exercises,list}")
    check = commands.add_parser("check", help="run the checks of an exercise on your file")
    check.add_argument("exercise")
    check.add_argument("--file", type=Path, help="your attempt (default: exercises/<exercise>/<exercise>.py)")
    check.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds before the run is stopped")
    check.add_argument("--only", action="append", metavar="CHECK", help="run only this check (repeatable)")
    hint = commands.add_parser("hint", help="show the next hint of an exercise")
    hint.add_argument("exercise")
    hint.add_argument("--level", type=int, help="show hint N (and continue from there)")
    hint.add_argument("--reset", action="store_true", help="start the hints again from hint 1")
    solution = commands.add_parser("solution", help="show the reference solution (spoiler)")
    solution.add_argument("exercise")
    commands.add_parser("exercises", help="list the exercises and your status")
    commands.add_parser("list", help="same as exercises")
    return parser


# ----------------------------------------------------------------------------- formatting
def _indent(label: str, text: str) -> str:
    prefix = f"    {label:<10}"
    lines = str(text).splitlines() or [""]
    return "\n".join([prefix + lines[0]] + [" " * len(prefix) + line for line in lines[1:]])


def format_result(result: CheckResult) -> str:
    if result.passed:
        text = f"  PASS  {result.name}"
        if result.details:
            text += "\n" + textwrap.indent(result.details.rstrip(), "        ")
        return text
    lines = [f"  FAIL  {result.name}"]
    if result.input:
        lines.append(_indent("input:", result.input))
    lines.append(_indent("expected:", result.expected))
    lines.append(_indent("got:", result.got))
    if result.diff:
        lines.append(_indent("", result.diff))
    if result.hint:
        lines.append(_indent("hint:", result.hint))
    if result.details:
        lines.append(textwrap.indent(result.details.rstrip(), "        "))
    return "\n".join(lines)


def format_report(report: Report) -> str:
    lines = [f"mxlab check {report.exercise}: {report.file}"]
    lines += [format_result(r) for r in report.results]
    for name in report.not_run:
        lines.append(f"  SKIP  {name} (not run: the run stopped before it)")
    passed = sum(r.passed for r in report.results)
    total = len(report.results) + len(report.not_run)
    if report.output and not report.passed:
        lines.append("  output of your code (last lines):")
        lines.append(textwrap.indent(report.output, "    | "))
    if report.passed:
        lines.append(
            f"{passed}/{total} checks passed. Well done: `mxlab solution {report.exercise}` shows the "
            "reference to compare with."
        )
    else:
        lines.append(f"{passed}/{total} checks passed. `mxlab hint {report.exercise}` gives a hint.")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- commands
def cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    exercise = get(args.exercise)
    attempt = args.file or exercise.stub_path
    if not Path(attempt).is_file():
        print(f"mxlab check: no file at {attempt}", file=sys.stderr)
        return 2
    if args.timeout <= 0:
        print(f"mxlab check: --timeout must be positive, got {args.timeout}", file=sys.stderr)
        return 2
    report = run_attempt(exercise.name, attempt, args.timeout, args.only)
    print(format_report(report), file=out)
    if args.only:  # a partial run says nothing about the exercise as a whole
        return 0 if report.passed else 1
    statuses = state.load(STATUS_FILE)
    statuses[exercise.name] = {
        "passed": sum(r.passed for r in report.results),
        "total": len(report.results) + len(report.not_run),
        "file": str(Path(attempt).resolve()),
    }
    state.save(STATUS_FILE, statuses)
    return 0 if report.passed else 1


def cmd_hint(args: argparse.Namespace, out: TextIO) -> int:
    exercise = get(args.exercise)
    if args.reset:
        hints.reset(exercise)
        print(f"hints for {exercise.name} reset: the next `mxlab hint {exercise.name}` shows hint 1", file=out)
        return 0
    try:
        level, count, text = hints.next_hint(exercise, args.level)
    except ValueError as err:
        print(f"mxlab hint: {err}", file=sys.stderr)
        return 2
    print(f"Hint {level} of {count} for {exercise.name}:\n", file=out)
    print(textwrap.indent(text, "  "), file=out)
    if level < count:
        print(f"\n(`mxlab hint {exercise.name}` again for hint {level + 1})", file=out)
    else:
        print(f"\n(that was the last hint; `mxlab hint {exercise.name} --reset` starts again)", file=out)
    return 0


def cmd_solution(args: argparse.Namespace, out: TextIO) -> int:
    exercise = get(args.exercise)
    print(
        f"*** SPOILER: the reference solution of {exercise.name} follows. If you are still working on it, "
        f"`mxlab hint {exercise.name}` may be all you need. ***\n",
        file=out,
    )
    print(stubgen.strip_markers(exercise.solution_path.read_text(encoding="utf-8")), file=out)
    return 0


def cmd_list(args: argparse.Namespace, out: TextIO) -> int:
    statuses = state.load(STATUS_FILE)
    levels = state.load(hints.HINTS_FILE)
    print("MXLab exercises (edit the file, then `mxlab check <name>`):\n", file=out)
    for exercise in CATALOGUE:
        found = statuses.get(exercise.name)
        if not isinstance(found, dict):
            status = "not checked yet"
        elif found.get("passed") == found.get("total"):
            status = f"done ({found['passed']}/{found['total']})"
        else:
            status = f"{found.get('passed')}/{found.get('total')} checks pass"
        used = levels.get(exercise.name, 0)
        hint_text = f", {used} hint(s) seen" if used else ""
        print(f"  {exercise.name:<15} {exercise.title:<38} {status}{hint_text}", file=out)
        print(f"  {'':<15} {exercise.summary}", file=out)
    print(f"\nStart with `cat {CATALOGUE[0].readme_path}` and `mxlab check {CATALOGUE[0].name}`.", file=out)
    return 0


COMMANDS = {"check": cmd_check, "hint": cmd_hint, "solution": cmd_solution, "exercises": cmd_list, "list": cmd_list}


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    """Run one exercise command; ``argv[0]`` is the subcommand."""
    out = out or sys.stdout
    parser = build_parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    except SystemExit as exit_:  # argparse already printed the usage message
        return int(exit_.code or 0) if exit_.code in (0, None) else 2
    try:
        return COMMANDS[args.command](args, out)
    except UnknownExercise as err:
        print(f"mxlab {args.command}: {err}", file=sys.stderr)
        return 2
    except (state.StateError, FileNotFoundError, ValueError) as err:
        print(f"mxlab {args.command}: {err}", file=sys.stderr)
        return 2
