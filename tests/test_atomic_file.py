"""Crash-safe saves: a write either replaces the target completely or leaves it untouched."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from framework.atomic_file import atomic_write, write_bytes_atomic, write_text_atomic

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)


def test_atomic_write_replaces_the_target_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")
    write_bytes_atomic(target, b"new content")
    assert target.read_bytes() == b"new content"
    write_text_atomic(str(target), "h\u00e9llo\n")
    assert target.read_text(encoding="utf-8") == "h\u00e9llo\n"
    assert os.listdir(tmp_path) == ["f.bin"]


def test_an_exception_mid_write_keeps_the_old_file_and_removes_the_temp_file(tmp_path):
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="disk on fire"), atomic_write(target) as stream:
        stream.write(b"half of the new")
        raise RuntimeError("disk on fire")
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["f.bin"]
    with pytest.raises(KeyboardInterrupt), atomic_write(tmp_path / "absent.bin") as stream:
        raise KeyboardInterrupt
    assert os.listdir(tmp_path) == ["f.bin"]


def test_permissions_follow_the_replaced_file_or_the_umask(tmp_path):
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    write_bytes_atomic(target, b"new")
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    fresh = tmp_path / "fresh.bin"
    write_bytes_atomic(fresh, b"x")
    plain = tmp_path / "plain.bin"
    plain.write_bytes(b"x")
    assert stat.S_IMODE(os.stat(fresh).st_mode) == stat.S_IMODE(os.stat(plain).st_mode)


def test_bad_mode_and_missing_directory_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"mode must be 'w' or 'wb', got 'ab'"), atomic_write(tmp_path / "f", "ab"):
        pass
    with pytest.raises(FileNotFoundError), atomic_write(tmp_path / "no" / "such" / "dir.bin"):
        pass


def _kill_trials(kind: str, directory: str, trials: int, seed: int) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": ROOT}
    out = subprocess.run(
        [sys.executable, os.path.join(TESTS, "kill_mid_save.py"), kind, directory, str(trials), str(seed)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    return [json.loads(line) for line in out.stdout.splitlines()]


def _assert_never_broken(results: list[dict], trials: int, valid: set[str]) -> None:
    assert len(results) == trials
    broken = [r for r in results if r["found"] not in valid]
    assert not broken, broken[:5]
    # the harness is only meaningful if some kills landed while a temporary file was being written
    assert any(r["killed_mid_write"] for r in results), "no kill landed mid-write: the delays are too short"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the harness forks")
@pytest.mark.parametrize(
    ("kind", "trials", "valid"),
    [("nd_save", 30, {"A", "B"}), ("checkpoint", 12, {"AA", "AB", "BA", "BB"})],
)
def test_killing_a_save_leaves_the_old_or_the_new_file(tmp_path, kind, trials, valid):
    _assert_never_broken(_kill_trials(kind, str(tmp_path), trials, seed=7), trials, valid)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="the harness forks")
@pytest.mark.parametrize(
    ("kind", "trials", "valid"),
    [("nd_save", 200, {"A", "B"}), ("checkpoint", 50, {"AA", "AB", "BA", "BB"})],
)
def test_killing_a_save_hundreds_of_times(tmp_path, kind, trials, valid):
    _assert_never_broken(_kill_trials(kind, str(tmp_path), trials, seed=11), trials, valid)


def test_a_symlinked_target_is_replaced_through_the_link(tmp_path):
    real = tmp_path / "real.params"
    real.write_bytes(b"old")
    link = tmp_path / "latest.params"
    link.symlink_to(real)
    write_bytes_atomic(link, b"new")
    assert link.is_symlink() and real.read_bytes() == b"new"
