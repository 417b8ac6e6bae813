"""ruff (lint and format check) and mypy (type check) run as part of the test suite."""

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


def tool(name: str) -> list[str]:
    """The dev tool installed next to this interpreter (the venv), else on PATH."""
    candidate = Path(sys.executable).with_name(name)
    if candidate.exists():
        return [str(candidate)]
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: install the [dev] extra (make test does)")
    return [found]


def ruff() -> list[str]:
    return tool("ruff")


def test_ruff_lint_is_clean():
    result = subprocess.run([*ruff(), "check", *TARGETS], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean():
    result = subprocess.run([*ruff(), "format", "--check", *TARGETS], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_type_check_is_clean():
    # The packages checked, and how strictly, are configured in pyproject.toml ([tool.mypy]).
    result = subprocess.run([*tool("mypy")], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
