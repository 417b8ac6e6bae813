"""Run an attempt's checks in a subprocess with a time limit, and read back what it found.

The attempt is the learner's code: it may loop forever, call ``os._exit``, crash the
interpreter or fail to import. Running it in a separate ``python -m
exercises.run_checks`` process with a timeout turns each of those into a reported failure
of the check that was running, instead of a hung or dead ``mxlab`` command.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import get
from .checker import CheckResult
from .run_checks import PROTOCOL_PREFIX

DEFAULT_TIMEOUT = 60.0
_ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Report:
    """Everything one ``check`` run found."""

    exercise: str
    file: str
    results: list[CheckResult] = field(default_factory=list)
    #: Names of checks that never ran (the process ended before them).
    not_run: list[str] = field(default_factory=list)
    #: Learner output (prints, warnings) captured from the subprocess, last lines only.
    output: str = ""

    @property
    def passed(self) -> bool:
        return bool(self.results) and all(r.passed for r in self.results) and not self.not_run


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _tail(text: str, lines: int = 15) -> str:
    kept = text.strip().splitlines()[-lines:]
    return "\n".join(kept)


def check_names(exercise_name: str) -> list[str]:
    """The names of an exercise's checks, in the order they run."""
    return [c.name for c in importlib.import_module(get(exercise_name).checks_module).CHECKS]


def run_attempt(
    exercise_name: str, attempt_file: str | Path, timeout: float = DEFAULT_TIMEOUT, only: list[str] | None = None
) -> Report:
    """Check ``attempt_file`` against ``exercise_name``'s checks (or just ``only``) in a subprocess."""
    exercise = get(exercise_name)
    only = list(only or [])
    unknown = [name for name in only if name not in check_names(exercise.name)]
    if unknown:
        raise ValueError(
            f"{exercise.name} has no check {unknown[0]!r}; its checks are: {', '.join(check_names(exercise.name))}"
        )
    if timeout <= 0:
        raise ValueError(f"timeout must be positive, got {timeout}")
    path = Path(attempt_file).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no attempt file at {path}")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("MXLAB_CPU_WORKER_NTHREADS", "2")
    process = subprocess.Popen(
        [sys.executable, "-m", "exercises.run_checks", exercise.name, str(path), *only],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=str(_ROOT),
        env=env,
        start_new_session=True,  # its own process group: a timeout kills every thread and child
    )
    timed_out = False
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        stdout, stderr = process.communicate()
    expected = [n for n in check_names(exercise.name) if not only or n in only]
    return _report(exercise.name, str(path), expected, stdout, stderr, process.returncode, timed_out, timeout)


def _report(
    name: str,
    path: str,
    expected_checks: list[str],
    stdout: str,
    stderr: str,
    returncode: int,
    timed_out: bool,
    timeout: float,
) -> Report:
    """Rebuild the results from the protocol lines; explain how the process ended if it ended early."""
    report = Report(name, path, output=_tail(stderr))
    running: str | None = None
    done = False
    for line in stdout.splitlines():
        if not line.startswith(PROTOCOL_PREFIX):
            continue
        try:
            message = json.loads(line[len(PROTOCOL_PREFIX) :])
        except json.JSONDecodeError:  # a line cut short by the process dying mid-write
            continue
        event = message.pop("event", None)
        if event == "import":
            running = "import"
        elif event == "start":
            running = message["check"]
        elif event == "result":
            report.results.append(CheckResult.from_json(message))
            running = None
        elif event == "done":
            done = True
    if done:
        finished = {r.name for r in report.results}
        report.not_run = [n for n in expected_checks if n not in finished]
        return report
    where = "while importing your file" if running == "import" else f"during check {running!r}"
    if timed_out:
        got = f"still running after {timeout:g} s {where}"
        hint = "look for a loop that never ends (a `while` whose condition never changes) or a wait that is never woken"
    elif returncode is not None and returncode < 0:
        got = f"the Python process crashed with {_signal_name(returncode)} {where}"
        hint = "a crash like this comes from native code: check the shapes and strides you hand to NumPy"
    else:
        got = f"the Python process ended with exit code {returncode} {where}"
        hint = "something in your code ended the process (sys.exit, os._exit, or an error at interpreter level)"
    report.results.append(
        CheckResult(
            running or "startup",
            False,
            input=where.replace("during check", "running check"),
            expected="the check to finish",
            got=got,
            hint=hint,
        )
    )
    finished = {r.name for r in report.results}
    report.not_run = [n for n in expected_checks if n not in finished]
    return report
