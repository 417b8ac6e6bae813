"""Running a benchmark script as its tests do: this interpreter, the repository root, JSON lines back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def run_benchmark(
    script: str, *args: str, timeout: float = 300, env: dict[str, str] | None = None, notices: bool = False
) -> tuple[list[dict[str, Any]], subprocess.CompletedProcess[str]]:
    """Run ``benchmarks/<script>`` with ``args``; its JSON records and the finished process.

    Fails the calling test, with the end of the script's output, unless it exits with 0 and
    every line it prints is JSON; ``notices=True`` lets lines that are not JSON objects through
    (``server.attach()`` prints where it serves).
    """
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return [json.loads(line) for line in lines if not notices or line.startswith("{")], done
