"""ruff (lint and format check) runs as part of the test suite."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TARGETS = [
    p
    for p in ("framework", "server", "exercises", "tutorials", "examples", "tests", "benchmarks")
    if (ROOT / p).exists()
]


def ruff() -> list[str]:
    candidate = Path(sys.executable).with_name("ruff")
    if candidate.exists():
        return [str(candidate)]
    found = shutil.which("ruff")
    if found is None:
        pytest.fail("ruff is not installed: install the [dev] extra (make test does)")
    return [found]


def test_ruff_lint_is_clean():
    result = subprocess.run([*ruff(), "check", *TARGETS], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean():
    result = subprocess.run([*ruff(), "format", "--check", *TARGETS], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
