"""The README's Python blocks run, so the documentation cannot drift from the code."""

from __future__ import annotations

import re
from pathlib import Path

import framework as mx
from framework import profiler
from framework.engine import Engine

ROOT = Path(__file__).resolve().parents[1]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


def test_readme_tour_runs(tmp_path, monkeypatch, make_engine):
    blocks = python_blocks(ROOT / "README.md")
    assert blocks, "README.md has no python block"
    monkeypatch.chdir(tmp_path)
    engine = make_engine("ThreadedEnginePerDevice", 2)
    with mx.engine.use(engine):
        namespace: dict = {}
        for block in blocks:
            exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["log"] == ["write a", "a -> b"]
    assert (tmp_path / "tour.trace.json").exists()
    assert (tmp_path / "tour.params").exists()
    assert profiler.get_state() == "stop"
    assert Engine.get() is not engine


def test_every_exported_name_exists():
    missing = [name for name in mx.__all__ if not hasattr(mx, name)]
    assert missing == []
    for name in ("nd", "sym", "mod", "io", "init", "viz", "autograd", "optimizer", "metric", "recordio"):
        assert hasattr(mx, name), name
