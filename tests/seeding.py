"""Every test starts from seeded generators: a fixed seed by default, ``MXLAB_TEST_SEED`` to override.

Like MXNet's ``with_seed()``: Python's ``random``, NumPy's global ``np.random`` and MXLab's
``mx.random`` are seeded before each test, so a run is reproducible and one test behaves the same
alone or in the suite; a failed test's report names the seed to rerun it with. tests/conftest.py
imports the hooks and the fixture below, which is how pytest finds them.
"""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

import framework as mx
from framework.engine import Engine
from framework.resource import ResourceManager

#: Overrides the seed every test starts from, e.g. ``MXLAB_TEST_SEED=7 pytest tests/operator``.
SEED_VARIABLE = "MXLAB_TEST_SEED"
#: The default seed: MXLab's own default (``MXLAB_SEED``), so an unseeded test sees a fresh process's streams.
DEFAULT_TEST_SEED = 0
SEED_KEY = pytest.StashKey[int]()


def pytest_configure(config: pytest.Config) -> None:
    """Read the test seed once; a malformed value stops the run naming the variable."""
    raw = os.environ.get(SEED_VARIABLE, "").strip()
    if not raw:
        config.stash[SEED_KEY] = DEFAULT_TEST_SEED
        return
    try:
        seed = int(raw)
    except ValueError:
        seed = -1
    if not 0 <= seed < 2**32:
        raise pytest.UsageError(f"{SEED_VARIABLE} must be an integer in [0, 2**32), got {raw!r}")
    config.stash[SEED_KEY] = seed


@pytest.fixture(autouse=True)
def seeded_random(request: pytest.FixtureRequest) -> int:
    """Seed Python's, NumPy's global and MXLab's generators before each test (like MXNet's ``with_seed``).

    A test that seeds itself simply reseeds afterwards, so its outcome does not change. MXLab's reseed is
    an engine operation: waiting for it here keeps it out of whatever the test then records.
    """
    seed = request.config.stash[SEED_KEY]
    random.seed(seed)
    np.random.seed(seed)
    mx.random.seed(seed)
    manager = ResourceManager.get()
    engine = Engine.get()
    for resource in list(manager._random.values()):
        engine.wait_for_var(resource.var)
    return seed


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport:
    """A failed test's report names the seed it ran with and how to rerun with it."""
    report = yield
    if report.failed and SEED_KEY in item.config.stash:
        seed = item.config.stash[SEED_KEY]
        report.sections.append(
            (
                "random seed",
                f"random, numpy.random and mx.random were seeded with {seed}: rerun with {SEED_VARIABLE}={seed}",
            )
        )
    return report
