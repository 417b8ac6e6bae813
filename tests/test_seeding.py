"""The autouse fixture in seeding.py: every test starts from the same seeded generators, overridable."""

from __future__ import annotations

import random
import types

import numpy as np
import pytest
import seeding

import framework as mx


def draws() -> tuple:
    return random.random(), float(np.random.rand()), mx.nd.random.uniform(shape=(3,)).asnumpy().tolist()


def test_each_test_starts_from_the_run_seed(seeded_random, pytestconfig):
    assert seeded_random == pytestconfig.stash[seeding.SEED_KEY]
    first = draws()
    random.seed(seeded_random)
    np.random.seed(seeded_random)
    mx.random.seed(seeded_random)
    assert draws() == first


@pytest.mark.parametrize(("raw", "seed"), [("", seeding.DEFAULT_TEST_SEED), ("7", 7), (" 4294967295 ", 2**32 - 1)])
def test_the_seed_is_fixed_by_default_and_read_from_the_environment(monkeypatch, raw, seed):
    monkeypatch.setenv(seeding.SEED_VARIABLE, raw)
    config = types.SimpleNamespace(stash=pytest.Stash())
    seeding.pytest_configure(config)
    assert config.stash[seeding.SEED_KEY] == seed


@pytest.mark.parametrize("raw", ["seven", "-1", "4294967296", "1.5"])
def test_a_malformed_seed_stops_the_run_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv(seeding.SEED_VARIABLE, raw)
    with pytest.raises(
        pytest.UsageError, match=f"MXLAB_TEST_SEED must be an integer in \\[0, 2\\*\\*32\\), got '{raw}'"
    ):
        seeding.pytest_configure(types.SimpleNamespace(stash=pytest.Stash()))
