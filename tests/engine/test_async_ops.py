"""Asynchronous operations (``push_async``): done when ``on_complete`` is called, on every engine type.

An async function only starts its work and returns; the engine frees the thread that ran
it at once and marks the operation done when ``on_complete`` is called, possibly from
another thread, possibly after that thread pushed more work to the same engine. This is
what the Python ``Custom`` operator is built on (tests/custom_op/test_custom_op_async.py).
"""

from __future__ import annotations

import random
import threading

import pytest

import framework as mx
from framework.base import EngineError
from framework.engine import FnProperty

pytestmark = pytest.mark.timeout(60)


class Boom(Exception):
    pass


def later(delay: float, action) -> None:
    threading.Timer(delay, action).start()


@pytest.mark.parametrize("prop", [FnProperty.NORMAL, FnProperty.ASYNC], ids=["normal", "async"])
def test_async_and_sync_operations_on_shared_variables_keep_push_order(engine, prop):
    """Completions arrive from helper threads after random delays; the order still holds."""
    a, b = engine.new_variable("a"), engine.new_variable("b")
    log: list[str] = []
    rng = random.Random(7)
    expected = []
    for i in range(20):
        if i % 3 == 0:
            engine.push_sync(lambda rc, i=i: log.append(f"sync{i}"), mx.cpu(), mutable_vars=[a, b])
            expected.append(f"sync{i}")
        else:
            var = a if i % 2 else b

            delay = rng.uniform(0, 0.01)

            def start(rc, on_complete, i=i, delay=delay):
                later(delay, lambda: (log.append(f"async{i}"), on_complete()))

            engine.push_async(start, mx.cpu(), mutable_vars=[var], prop=prop, name=f"async{i}")
            expected.append(f"async{i}")
    engine.wait_for_all(timeout=30)

    # every sync op writes both variables: each async op sits between the same two syncs
    def block_of(name: str, order: list[str]) -> int:
        return sum(1 for entry in order[: order.index(name)] if entry.startswith("sync"))

    assert sorted(log) == sorted(expected)
    assert [block_of(n, log) for n in expected] == [block_of(n, expected) for n in expected]
    # and on one variable, writes keep exact push order
    on_a = [n for n in expected if n.startswith("sync") or int(n[5:]) % 2]
    assert [n for n in log if n in on_a] == on_a


def test_a_dependant_waits_for_on_complete_not_for_the_function_to_return(threaded_engine):
    engine = threaded_engine
    var = engine.new_variable("v")
    log: list[str] = []
    callbacks = []

    def start(rc, on_complete):
        log.append("started")
        callbacks.append(on_complete)

    engine.push_async(start, mx.cpu(), mutable_vars=[var], name="slow")
    engine.push_sync(lambda rc: log.append("dependant"), mx.cpu(), const_vars=[var], name="reader")
    threading.Event().wait(0.05)
    assert log == ["started"]
    callbacks[0]()
    engine.wait_for_all(timeout=10)
    assert log == ["started", "dependant"]


def test_naive_engine_push_async_returns_after_on_complete():
    engine = mx.engine.create("NaiveEngine")
    var = engine.new_variable()
    log: list[str] = []
    engine.push_async(lambda rc, done: later(0.02, lambda: (log.append("done"), done())), mx.cpu(), mutable_vars=[var])
    assert log == ["done"]


@pytest.mark.parametrize("prop", [FnProperty.NORMAL, FnProperty.ASYNC], ids=["normal", "async"])
def test_helper_thread_may_push_and_wait_before_completing(engine, prop):
    """The thread that ran the async function is free: the helper's own pushes (on the same
    device, even with a single worker) run and can be waited for before ``on_complete``."""
    out = engine.new_variable("out")
    scratch = engine.new_variable("scratch")
    log: list[str] = []

    def helper(on_complete) -> None:
        for i in range(5):
            engine.push_sync(lambda rc, i=i: log.append(f"inner{i}"), mx.cpu(), mutable_vars=[scratch])
        engine.wait_for_var(scratch, timeout=10)
        log.append("complete")
        on_complete()

    def start(rc, on_complete):
        threading.Thread(target=helper, args=(on_complete,)).start()

    engine.push_async(start, mx.cpu(), mutable_vars=[out], prop=prop, name="hand_off")
    engine.push_sync(lambda rc: log.append("after"), mx.cpu(), const_vars=[out])
    engine.wait_for_all(timeout=20)
    assert log == [f"inner{i}" for i in range(5)] + ["complete", "after"]


def test_on_complete_may_be_called_synchronously_after_pushing(engine):
    """Calling back inside the function (what the naive engine's Custom does) also works."""
    var, side = engine.new_variable("v"), engine.new_variable("side")
    log: list[str] = []

    def start(rc, on_complete):
        engine.push_sync(lambda rc: log.append("pushed inside"), mx.cpu(), mutable_vars=[side])
        log.append("calling back")
        on_complete()

    engine.push_async(start, mx.cpu(), mutable_vars=[var])
    engine.push_sync(lambda rc: log.append("after"), mx.cpu(), const_vars=[var])
    engine.wait_for_all(timeout=10)
    assert sorted(log) == ["after", "calling back", "pushed inside"]
    assert log.index("calling back") < log.index("after")


def test_error_given_to_on_complete_propagates_like_a_raised_one(engine):
    a, b, c = (engine.new_variable(n) for n in "abc")
    ran: list[str] = []
    engine.push_async(
        lambda rc, done: later(0.01, lambda: done(Boom("remote failure"))), mx.cpu(), mutable_vars=[a], name="remote"
    )
    engine.push_sync(lambda rc: ran.append("b"), mx.cpu(), const_vars=[a], mutable_vars=[b], name="a_to_b")
    engine.push_async(lambda rc, done: (ran.append("c"), done()), mx.cpu(), const_vars=[b], mutable_vars=[c])
    engine.push_sync(lambda rc: ran.append("cleanup"), mx.cpu(), const_vars=[c], prop=FnProperty.NO_SKIP)
    with pytest.raises(Boom, match="remote failure") as info:
        engine.wait_for_var(c, timeout=10)
    assert any("'remote'" in note for note in info.value.__notes__)  # where it came from
    engine.wait_for_all(timeout=10)  # reported once: the error is cleared for every variable
    engine.wait_for_var(a, timeout=10)
    assert ran == ["cleanup"]  # dependants (sync and async) were skipped, no_skip ran


def test_an_async_function_is_skipped_when_its_input_is_poisoned(engine):
    src, dst = engine.new_variable("src"), engine.new_variable("dst")
    started: list[str] = []

    def fail(rc):
        raise Boom("upstream")

    engine.push_sync(fail, mx.cpu(), mutable_vars=[src])
    engine.push_async(lambda rc, done: (started.append("x"), done()), mx.cpu(), const_vars=[src], mutable_vars=[dst])
    with pytest.raises(Boom, match="upstream"):
        engine.wait_for_var(dst, timeout=10)
    assert started == []


def test_on_complete_races_exactly_one_winner(engine):
    var = engine.new_variable("v")
    outcomes: list[str] = []
    lock = threading.Lock()

    def start(rc, on_complete):
        barrier = threading.Barrier(4)

        def call():
            barrier.wait()
            try:
                on_complete()
                result = "completed"
            except EngineError as err:
                result = str(err)
            with lock:
                outcomes.append(result)

        for _ in range(4):
            threading.Thread(target=call).start()

    engine.push_async(start, mx.cpu(), mutable_vars=[var], name="raced")
    engine.wait_for_var(var, timeout=10)
    for _ in range(200):
        if len(outcomes) == 4:
            break
        threading.Event().wait(0.01)
    assert sorted(outcomes) == ["completed"] + ["on_complete of operation 'raced' was called twice"] * 3
    assert engine.pending_operations() == []


def test_late_on_complete_after_the_function_raised_is_refused(engine):
    """A function that raises is completed by the engine with that error; a late callback is a bug."""
    var = engine.new_variable("v")
    kept = []

    def start(rc, on_complete):
        kept.append(on_complete)
        raise Boom("raised before calling back")

    engine.push_async(start, mx.cpu(), mutable_vars=[var], name="raiser")
    with pytest.raises(Boom):
        engine.wait_for_var(var, timeout=10)
    assert kept[0].called
    with pytest.raises(EngineError, match="'raiser' was called twice"):
        kept[0]()


def test_events_end_when_on_complete_is_called(engine):
    var = engine.new_variable("v")
    with mx.events.record(["engine.start", "engine.end"]) as rec:
        engine.push_async(lambda rc, done: later(0.05, done), mx.cpu(), mutable_vars=[var], name="timed")
        engine.wait_for_var(var, timeout=10)
    start = next(e for e in rec.events if e["kind"] == "engine.start")
    end = next(e for e in rec.events if e["kind"] == "engine.end" and e["op"] == start["op"])
    assert end["t_ns"] - start["t_ns"] >= 40_000_000  # the bar spans the async work, not the call
