"""Shared fixtures: engines of every type, stopped after each test; every test starts from seeded generators."""

from __future__ import annotations

import needs
import pytest
from engine_configs import ENGINE_CONFIGS, THREADED_CONFIGS, config_id

# The per-test seeding (hooks and the autouse fixture) lives in tests/seeding.py; pytest finds them here by name.
from seeding import pytest_configure, pytest_runtest_makereport, seeded_random  # noqa: F401

import framework as mx
from framework.engine import Engine, create


@pytest.fixture
def make_engine():
    """Build engines on demand; every engine built is stopped when the test ends."""
    built: list[Engine] = []

    def build(kind: str = "ThreadedEnginePerDevice", workers: int | None = 2) -> Engine:
        engine = create(kind, None if kind == "NaiveEngine" else workers)
        built.append(engine)
        return engine

    yield build
    for engine in built:
        if not engine.stopped:
            engine._flush_all_bulk()
            engine._wait_idle(10)
            engine.stop()


@pytest.fixture(params=ENGINE_CONFIGS, ids=config_id)
def engine(request, make_engine):
    """One engine of each type and worker count."""
    kind, workers = request.param
    return make_engine(kind, workers)


@pytest.fixture(params=THREADED_CONFIGS, ids=config_id)
def threaded_engine(request, make_engine):
    kind, workers = request.param
    return make_engine(kind, workers)


#: Markers whose tests are always ``slow`` too: a browser page or a Ray cluster costs seconds before any assertion.
ALWAYS_SLOW = ("browser", "dist")


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m selection, so `-m "not slow"` sees the added markers
def pytest_collection_modifyitems(config, items):
    """Browser and dist tests are also ``slow``; GPU tests skip without a GPU (tools: see tests/needs.py)."""
    for item in items:
        if any(marker in item.keywords for marker in ALWAYS_SLOW):
            item.add_marker(pytest.mark.slow)
    if mx.num_gpus() > 0:
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU with CuPy (none on this machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture(scope="session")
def in_ci() -> bool:
    """Whether this run is under CI, by the one rule in tests/needs.py."""
    return needs.in_ci()
