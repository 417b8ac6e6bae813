"""The README's set-up: one script installs what the project needs or says exactly how, and a clean
checkout set up by it runs an exercise check."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUP = ROOT / "scripts" / "setup.sh"
SYSTEM_PACKAGES = ["chromium", "graphviz", "g++", "nodejs", "npm"]


def fake_bin(tmp_path: Path, uid: int) -> Path:
    """A PATH with none of the project's tools and an `id` that says ``uid``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("dirname",):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    (bin_dir / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (bin_dir / "id").chmod(0o755)
    return bin_dir


def run_setup(tmp_path: Path, uid: int) -> subprocess.CompletedProcess:
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(SETUP, checkout / "scripts" / "setup.sh")
    env = {"PATH": str(fake_bin(tmp_path, uid)), "HOME": str(tmp_path)}
    return subprocess.run(
        ["/bin/bash", str(checkout / "scripts" / "setup.sh")], env=env, capture_output=True, text=True, timeout=60
    )


def test_without_root_the_setup_stops_first_with_the_exact_command(tmp_path):
    result = run_setup(tmp_path, uid=1000)
    assert result.returncode == 1
    assert f"missing system packages: {' '.join(SYSTEM_PACKAGES)}" in result.stderr
    assert f"sudo apt-get update && sudo apt-get install -y {' '.join(SYSTEM_PACKAGES)}" in result.stderr
    assert not (tmp_path / "checkout" / ".venv").exists()  # nothing else was attempted


def test_as_root_without_apt_get_it_also_stops_with_the_command(tmp_path):
    result = run_setup(tmp_path, uid=0)  # the fake PATH has no apt-get
    assert result.returncode == 1 and "sudo apt-get install -y chromium" in result.stderr


def test_an_unknown_argument_is_refused(tmp_path):
    result = subprocess.run(["/bin/bash", str(SETUP), "--fast"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "unknown argument --fast" in result.stderr


def test_make_test_and_make_run_and_ci_start_with_the_one_setup_script():
    makefile = (ROOT / "Makefile").read_text()
    assert "\nrun: setup\n" in makefile and "scripts/setup.sh --test" in makefile
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci and "apt-get" not in ci  # the system packages are the script's job


@pytest.mark.slow
def test_a_clean_checkout_sets_up_with_the_readme_step_and_checks_an_exercise(tmp_path):
    """Copy the tracked files (no .venv, no node_modules), run the set-up, then `mxlab check quadratic` on the stub."""
    if shutil.which("npm") is None or shutil.which("make") is None:
        pytest.skip("needs make and npm (scripts/setup.sh installs npm as root)")
    checkout = tmp_path / "mxlab"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, checkout / name)
    assert not (checkout / ".venv").exists() and not (checkout / "webui" / "node_modules").exists()
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    setup = subprocess.run(
        ["bash", "scripts/setup.sh"],
        cwd=checkout,
        env={**env, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert setup.returncode == 0, setup.stdout[-3000:] + setup.stderr[-3000:]
    assert (checkout / ".venv" / "bin" / "mxlab").exists()
    assert (checkout / "webui" / "node_modules" / "d3").is_dir()
    check = subprocess.run(
        [str(checkout / ".venv" / "bin" / "mxlab"), "check", "quadratic"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = check.stdout + check.stderr
    assert check.returncode == 1, report  # the untouched stub fails its checks: a report, not a crash
    assert "FAIL" in report and "exercise gap" in report, report
    assert "Traceback" not in report, report
