"""``python -m exercises.run_checks <exercise> <file> [check ...]``: run an attempt's checks (the subprocess side).

The runner (``runner.py``) starts this in a fresh interpreter with a time limit, so an
infinite loop, ``os._exit`` or a crash in the learner's code ends *this* process, not the
caller. It speaks a line protocol on its stdout, one JSON object per line, flushed at
once so that the runner knows how far it got even if the process dies:

* ``{"event": "import"}`` before importing the attempt file;
* ``{"event": "start", "check": name}`` before each check;
* ``{"event": "result", ...}`` after each check (a :class:`~exercises.checker.CheckResult`);
* ``{"event": "done"}`` at the end.

Anything the attempt prints goes to stderr (file descriptor 1 is redirected there), so it
cannot corrupt the protocol.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

from . import get
from .checker import CheckResult, exception_result, run_check

PROTOCOL_PREFIX = "MXLAB-CHECK "


def _protocol_stream() -> TextIO:
    """A private copy of stdout for the protocol; fd 1 then points at stderr for the attempt's prints."""
    sys.stdout.flush()
    stream = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    return stream


def _send(stream: TextIO, message: dict[str, Any]) -> None:
    stream.write(PROTOCOL_PREFIX + json.dumps(message) + "\n")
    stream.flush()


def load_attempt(name: str, path: str) -> ModuleType:
    """Import the attempt file as module ``mxlab_attempt_<name>`` (its registrations run now)."""
    module_name = f"mxlab_attempt_{name}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    sys.path.append(str(Path(path).resolve().parent))  # the learner's own helper modules, last in line
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m exercises.run_checks <exercise> <attempt file> [check ...]", file=sys.stderr)
        return 2
    name, path, only = argv[0], argv[1], argv[2:]
    exercise = get(name)
    checks = [c for c in importlib.import_module(exercise.checks_module).CHECKS if not only or c.name in only]
    stream = _protocol_stream()
    _send(stream, {"event": "import"})
    try:
        attempt = load_attempt(name, path)
    except BaseException as error:  # SyntaxError, SystemExit, KeyboardInterrupt-free user errors
        result = exception_result("import", error, path, f"importing {path}")
        if isinstance(error, SyntaxError):
            result.got = f"SyntaxError: {error.msg} (line {error.lineno}: {(error.text or '').strip()})"
        result.hint = "your file must import cleanly before any check can run; " + result.hint
        _send(stream, {"event": "result", **result.to_json()})
        _send(stream, {"event": "done"})
        return 0
    for check in checks:
        _send(stream, {"event": "start", "check": check.name})
        result: CheckResult = run_check(check, attempt, path)
        _send(stream, {"event": "result", **result.to_json()})
    _send(stream, {"event": "done"})
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stderr.flush()
    # Engine worker threads of a broken attempt may still be blocked: do not wait for them.
    os._exit(code)
