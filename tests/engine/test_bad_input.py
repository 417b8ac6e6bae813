"""Wrong uses of the engine fail at once with a message naming what was wrong."""

from __future__ import annotations

import re

import pytest

import framework as mx
from framework.base import ContextError, EngineError
from framework.engine import FnProperty, ThreadedEngine, ThreadedEnginePerDevice, create


def noop(rc):
    return None


def test_pushing_a_non_callable(engine):
    with pytest.raises(EngineError, match="fn must be callable, got int"):
        engine.push_sync(42, mx.cpu())
    with pytest.raises(EngineError, match="push_async: fn must be callable"):
        engine.push_async("not a function", mx.cpu())
    with pytest.raises(EngineError, match="new_operator: fn must be callable"):
        engine.new_operator(None)


def test_a_variable_both_read_and_mutated(engine):
    var = engine.new_variable("w")
    with pytest.raises(EngineError, match=r"'w' listed as both read .* and mutated"):
        engine.push_sync(noop, mx.cpu(), const_vars=[var], mutable_vars=[var])


def test_duplicate_variables(engine):
    var = engine.new_variable()
    with pytest.raises(EngineError, match="twice in const_vars"):
        engine.push_sync(noop, mx.cpu(), const_vars=[var, var])
    with pytest.raises(EngineError, match="twice in mutable_vars"):
        engine.push_sync(noop, mx.cpu(), mutable_vars=[var, var])


def test_a_deleted_variable(engine):
    var = engine.new_variable("gone")
    engine.delete_variable(None, mx.cpu(), var)
    with pytest.raises(EngineError, match="'gone' was deleted"):
        engine.push_sync(noop, mx.cpu(), const_vars=[var])
    with pytest.raises(EngineError, match="'gone' was deleted"):
        engine.wait_for_var(var)


def test_things_that_are_not_variables(engine):
    with pytest.raises(EngineError, match="expected engine variables from new_variable\\(\\), got str"):
        engine.push_sync(noop, mx.cpu(), mutable_vars=["x"])
    with pytest.raises(EngineError, match="throw: expected an engine variable"):
        engine.throw(3)


def test_a_variable_of_another_engine(make_engine):
    first, second = make_engine("ThreadedEngine", 1), make_engine("ThreadedEngine", 1)
    var = first.new_variable("mine")
    with pytest.raises(EngineError, match="'mine' belongs to another engine"):
        second.push_sync(noop, mx.cpu(), mutable_vars=[var])
    handle = first.new_operator(noop)
    with pytest.raises(EngineError, match="belongs to another engine"):
        second.push(handle, mx.cpu())


def test_a_wrong_context(engine):
    var = engine.new_variable()
    with pytest.raises(ContextError, match="push_sync: expected a Context such as mx.cpu\\(0\\), got 'cpu'"):
        engine.push_sync(noop, "cpu", mutable_vars=[var])
    with pytest.raises(ContextError, match="no GPU is available"):
        engine.push_sync(noop, mx.gpu(0), mutable_vars=[var])


def test_bad_property_priority_and_bulk_size(engine):
    with pytest.raises(EngineError, match="prop must be a FnProperty"):
        engine.push_sync(noop, mx.cpu(), prop="normal")
    with pytest.raises(EngineError, match="priority must be an int, got 1.5"):
        engine.push_sync(noop, mx.cpu(), priority=1.5)
    with pytest.raises(EngineError, match="size must be an int >= 0, got -1"):
        engine.set_bulk_size(-1)
    with pytest.raises(EngineError, match="expected a handle from new_operator"):
        engine.push(noop, mx.cpu())


def test_on_complete_misuse(engine):
    var = engine.new_variable()
    misuses = []

    def twice(rc, on_complete):
        on_complete()
        try:
            on_complete()
        except EngineError as err:
            misuses.append(str(err))

    def wrong_argument(rc, on_complete):
        try:
            on_complete("failed")
        except EngineError as err:
            misuses.append(str(err))
        on_complete()

    engine.push_async(twice, mx.cpu(), mutable_vars=[var], name="twice")
    engine.push_async(wrong_argument, mx.cpu(), mutable_vars=[var], name="wrong")
    engine.wait_for_all(timeout=10)
    assert misuses == [
        "on_complete of operation 'twice' was called twice",
        "on_complete of 'wrong' takes an exception or nothing, got 'failed'",
    ]


def test_unknown_engine_types_and_worker_counts():
    with pytest.raises(EngineError, match="unknown engine type 'Turbo'"):
        create("Turbo")
    with pytest.raises(EngineError, match="NaiveEngine runs in the pushing thread"):
        create("NaiveEngine", num_workers=3)
    with pytest.raises(EngineError, match="num_workers must be an int >= 1, got 0"):
        create("ThreadedEngine", num_workers=0)


@pytest.mark.parametrize("engine_class", [ThreadedEngine, ThreadedEnginePerDevice])
@pytest.mark.parametrize("bad", [0, -2, 1.5, "2", True])
def test_threaded_engines_refuse_worker_counts_that_are_not_positive_ints(engine_class, bad):
    # Zero used to fall back to the environment's default (`num_workers or ...`).
    with pytest.raises(
        EngineError, match=re.escape(f"{engine_class.type_name}: num_workers must be an int >= 1, got {bad!r}")
    ):
        engine_class(bad)


def test_threaded_engines_take_their_default_worker_count_from_the_environment(monkeypatch):
    monkeypatch.setenv("MXLAB_CPU_WORKER_NTHREADS", "3")
    engine = ThreadedEngine()
    per_device = ThreadedEnginePerDevice()
    try:
        assert engine.num_workers == 3 and per_device.cpu_workers == 3
    finally:
        engine.stop()
        per_device.stop()


def test_copy_property_is_a_real_enum_member():
    assert FnProperty("copy_to_gpu") is FnProperty.COPY_TO_GPU
