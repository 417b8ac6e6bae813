"""Inline execution: a short push whose variables are all free runs in the pushing thread.

``push_sync(..., inline_if_ready=True)`` is how the imperative path asks for it; the worker
name "inline" in the events is how a learner sees it happen.
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np
import pytest

import framework as mx
from framework import events
from framework.base import EngineError
from framework.engine import Engine, Var, create


@pytest.fixture(params=["ThreadedEngine", "ThreadedEnginePerDevice"])
def engine(request, make_engine):
    return make_engine(request.param, 2)


@pytest.fixture
def default_engine(make_engine):
    """A fresh ThreadedEnginePerDevice installed as the process-wide engine for one test."""
    engine = make_engine("ThreadedEnginePerDevice", 2)
    previous = Engine.set(engine)
    yield engine
    engine.wait_for_all(timeout=10)
    Engine.set(previous)


def test_a_ready_push_runs_in_the_pushing_thread_before_push_returns(engine):
    var = engine.new_variable()
    seen = []
    engine.push_sync(
        lambda rc: seen.append((rc.worker, threading.get_ident())), mx.cpu(), [], [var], inline_if_ready=True
    )
    assert seen == [("inline", threading.get_ident())]


def test_a_push_behind_pending_work_waits_for_a_worker(engine):
    var = engine.new_variable()
    gate = threading.Event()
    seen = []
    engine.push_sync(lambda rc: gate.wait(5), mx.cpu(), [], [var])
    engine.push_sync(lambda rc: seen.append(rc.worker), mx.cpu(), [var], [], inline_if_ready=True)
    assert seen == []  # queued behind the write: the push returned without running it
    gate.set()
    engine.wait_for_all(timeout=10)
    assert len(seen) == 1 and seen[0] != "inline"


def test_without_the_flag_a_ready_push_still_goes_to_a_worker(engine):
    var = engine.new_variable()
    seen = []
    engine.push_sync(lambda rc: seen.append(rc.worker), mx.cpu(), [], [var])
    engine.wait_for_all(timeout=10)
    assert len(seen) == 1 and seen[0] != "inline"


def _listening(listening):
    """Events on: the inline run is an Operation with events; off: the quiet path without one."""
    return events.record(["engine.start"]) if listening else contextlib.nullcontext()


@pytest.mark.parametrize("listening", [False, True], ids=["quiet", "events"])
def test_an_error_raised_inline_travels_with_the_variable_not_out_of_push(engine, listening):
    var = engine.new_variable()

    def fail(rc):
        raise ValueError("inline failure")

    with _listening(listening):
        engine.push_sync(fail, mx.cpu(), [], [var], name="failing", inline_if_ready=True)  # does not raise here
        skipped = []
        engine.push_sync(lambda rc: skipped.append(1), mx.cpu(), [var], [], inline_if_ready=True)
    with pytest.raises(ValueError, match="inline failure") as raised:
        engine.wait_for_var(var)
    assert skipped == []  # the reader inherited the error and was skipped
    assert any("'failing'" in note and "worker inline" in note for note in raised.value.__notes__)


@pytest.mark.parametrize("listening", [False, True], ids=["quiet", "events"])
def test_an_interrupt_raised_inline_is_re_raised_by_the_next_wait(engine, listening):
    var = engine.new_variable()

    def interrupted(rc):
        raise KeyboardInterrupt

    with _listening(listening):
        engine.push_sync(interrupted, mx.cpu(), [], [var], inline_if_ready=True)
    with pytest.raises(KeyboardInterrupt):
        engine.wait_for_all(timeout=10)
    engine.wait_for_all(timeout=10)  # re-raised once
    assert var.exception is None  # an interrupt is the program's, never stored on variables


@pytest.mark.parametrize("listening", [False, True], ids=["quiet", "events"])
def test_a_function_run_inline_may_push_work_and_wait_for_it(engine, listening):
    outer, inner = engine.new_variable(), engine.new_variable()
    seen = []

    def nested(rc):
        engine.push_sync(lambda rc2: seen.append("inner"), mx.cpu(), [], [inner], inline_if_ready=True)
        engine.wait_for_var(inner, timeout=10)  # would hang if the inner push waited behind this one
        seen.append("outer")

    with _listening(listening):
        engine.push_sync(nested, mx.cpu(), [], [outer], inline_if_ready=True)
    engine.wait_for_all(timeout=10)
    assert seen == ["inner", "outer"]


def test_inline_operations_are_published_with_the_inline_worker(engine):
    var = engine.new_variable()
    with events.record(["engine.start"]) as rec:
        engine.push_sync(lambda rc: None, mx.cpu(), [], [var], name="tiny", inline_if_ready=True)
    assert [e["worker"] for e in rec.events] == ["inline"]


def test_inline_if_ready_is_ignored_inside_a_bulk_segment(engine):
    var = engine.new_variable()
    seen = []
    with engine.bulk(4):
        engine.push_sync(lambda rc: seen.append(rc.worker), mx.cpu(), [], [var], inline_if_ready=True)
        assert seen == []  # collected into the segment, not run
    engine.wait_for_all(timeout=10)
    assert len(seen) == 1


def test_push_prepared_names_a_variable_of_another_engine(engine, make_engine):
    other = make_engine("ThreadedEngine", 1).new_variable("foreign")
    with pytest.raises(EngineError, match="foreign.*another engine"):
        engine.push_prepared(lambda rc: None, mx.cpu(), (other,), (), "op", True)


def test_push_prepared_names_a_deleted_variable(engine):
    var = engine.new_variable("gone")
    engine.delete_variable(None, mx.cpu(), var)
    with pytest.raises(EngineError, match="gone.*deleted"):
        engine.push_prepared(lambda rc: None, mx.cpu(), (), (var,), "op", True)


# ----------------------------------------------------------------------------- the imperative path
def _workers_of(op_name, recorded):
    pushed = {e["op"] for e in recorded if e["kind"] == "engine.push" and e["name"] == op_name}
    return [e["worker"] for e in recorded if e["kind"] == "engine.start" and e["op"] in pushed]


def test_small_imperative_operations_run_inline_and_large_ones_on_workers(default_engine):
    small = mx.nd.ones((16,))
    large = mx.nd.ones((default_engine.inline_max_elements,))  # input + output exceed the limit
    mx.nd.waitall()
    with events.record(["engine.push", "engine.start"]) as rec:
        small += 1
        doubled = large * 2
        mx.nd.waitall()
    assert _workers_of("_plus_scalar", rec.events) == ["inline"]
    assert _workers_of("_mul_scalar", rec.events) not in ([], ["inline"])
    np.testing.assert_allclose(small.asnumpy(), 2.0)
    np.testing.assert_allclose(doubled.asnumpy(), 2.0)


def test_a_zero_limit_sends_every_imperative_operation_to_the_workers(default_engine, monkeypatch):
    monkeypatch.setattr(default_engine, "inline_max_elements", 0)
    a = mx.nd.ones((4,))
    mx.nd.waitall()
    with events.record(["engine.push", "engine.start"]) as rec:
        b = a + 1
        mx.nd.waitall()
    assert _workers_of("_plus_scalar", rec.events) not in ([], ["inline"])
    np.testing.assert_allclose(b.asnumpy(), 2.0)


def test_the_limit_comes_from_the_environment(make_engine, monkeypatch):
    monkeypatch.setenv("MXLAB_ENGINE_INLINE_MAX_ELEMENTS", "7")
    assert make_engine("ThreadedEngine", 1).inline_max_elements == 7
    monkeypatch.setenv("MXLAB_ENGINE_INLINE_MAX_ELEMENTS", "-1")
    with pytest.raises(ValueError, match="MXLAB_ENGINE_INLINE_MAX_ELEMENTS"):
        make_engine("ThreadedEngine", 1)


def test_a_busy_variable_gives_back_the_grants_already_made(engine):
    free, busy = engine.new_variable("free"), engine.new_variable("busy")
    gate = threading.Event()
    order = []
    engine.push_sync(lambda rc: (gate.wait(5), order.append("writer")), mx.cpu(), [], [busy])
    # ``free`` is granted first, then ``busy`` refuses: the grant on ``free`` must be taken back,
    # or ``free`` would stay held after the operation completes.
    engine.push_sync(lambda rc: order.append(rc.worker), mx.cpu(), [free, busy], [], inline_if_ready=True)
    assert order == []
    gate.set()
    engine.wait_for_all(timeout=10)
    assert order[0] == "writer" and order[1] != "inline"
    assert free.idle() and busy.idle()


def test_a_learners_variable_class_runs_inline_through_the_public_interface():
    class CountingVar(Var):
        __slots__ = ("grants",)

        def __init__(self, engine_id, name=None):
            super().__init__(engine_id, name)
            self.grants = 0

        def append_write(self, op):
            self.grants += 1
            return super().append_write(op)

    engine = create("ThreadedEngine", 1, var_class=CountingVar)
    try:
        var = engine.new_variable()
        seen = []
        engine.push_sync(lambda rc: seen.append(rc.worker), mx.cpu(), [], [var], inline_if_ready=True)
        assert seen == ["inline"] and var.grants == 1 and var.idle()
    finally:
        engine.stop()


# ----------------------------------------------------------------------------- run_now_into_new
def _fresh_pair(engine):
    return engine.new_variable("input"), engine.new_variable("output")


def test_run_now_into_new_runs_at_once_and_leaves_both_variables_free(engine):
    read, write = _fresh_pair(engine)
    ran = []
    record = lambda *args: ran.append((args, threading.get_ident()))  # noqa: E731
    assert engine.run_now_into_new(record, (1, 2), mx.cpu(), read, write, "op")
    assert ran == [((1, 2), threading.get_ident())]
    assert read.idle() and write.idle() and write.version == 1 and read.version == 0


def test_run_now_into_new_refuses_a_busy_input_without_keeping_a_grant(engine):
    read, write = _fresh_pair(engine)
    gate = threading.Event()
    engine.push_sync(lambda rc: gate.wait(5), mx.cpu(), [], [read], name="writer")
    assert not engine.run_now_into_new(lambda: pytest.fail("ran before the writer"), (), mx.cpu(), read, write, "op")
    gate.set()
    engine.wait_for_all(timeout=10)
    assert read.idle() and write.idle() and write.version == 0


def test_run_now_into_new_poisons_the_new_variable_with_the_error(engine):
    read, write = _fresh_pair(engine)

    def explode():
        raise ValueError("kernel failed")

    assert engine.run_now_into_new(explode, (), mx.cpu(), read, write, "exploding_op")
    assert read.idle() and read.exception is None
    with pytest.raises(ValueError, match="kernel failed"):
        engine.wait_for_var(write, timeout=10)


def test_run_now_into_new_refuses_what_the_regular_path_must_handle(engine, make_engine):
    read, write = _fresh_pair(engine)
    never = lambda: pytest.fail("should not run")  # noqa: E731
    poisoned = engine.new_variable("poisoned")
    engine.push_sync(lambda rc: 1 / 0, mx.cpu(), [], [poisoned], name="divide")
    assert engine._wait_idle(10)  # not wait_for_all: that would report the error and clear it
    assert not engine.run_now_into_new(never, (), mx.cpu(), poisoned, write, "op")  # the error travels instead
    with contextlib.suppress(ZeroDivisionError):
        engine.wait_for_all(timeout=10)
    with engine.bulk(4):
        assert not engine.run_now_into_new(never, (), mx.cpu(), read, write, "op")
    with events.record(["engine.push"]):
        assert not engine.run_now_into_new(never, (), mx.cpu(), read, write, "op")
    other = make_engine("ThreadedEngine", 1).new_variable("elsewhere")
    assert not engine.run_now_into_new(never, (), mx.cpu(), other, write, "op")
    assert not make_engine("NaiveEngine").run_now_into_new(never, (), mx.cpu(), read, write, "op")
    assert read.idle() and write.idle()


# ----------------------------------------------------------------------------- run_now_in_place
def test_run_now_in_place_runs_at_once_and_gives_the_variable_its_next_version(engine):
    var = engine.new_variable("array")
    ran = []
    assert engine.run_now_in_place(lambda *args: ran.append(args), (1, 2), mx.cpu(), var, "op")
    assert ran == [(1, 2)]
    assert var.idle() and var.version == 1


def test_run_now_in_place_refuses_a_variable_being_read_without_keeping_a_grant(engine):
    var = engine.new_variable("array")
    gate = threading.Event()
    engine.push_sync(lambda rc: gate.wait(5), mx.cpu(), [var], [], name="reader")
    assert not engine.run_now_in_place(lambda: pytest.fail("wrote under a reader"), (), mx.cpu(), var, "op")
    gate.set()
    engine.wait_for_all(timeout=10)
    assert var.idle() and var.version == 0


def test_run_now_in_place_grants_what_queued_behind_it(engine):
    """A push from another thread that arrives while the function runs waits for it, then runs."""
    var = engine.new_variable("array")
    order = []

    def write_then_let_another_thread_push():
        order.append("in place")
        pusher = threading.Thread(
            target=lambda: engine.push_sync(lambda rc: order.append("queued"), mx.cpu(), [var], [], name="after")
        )
        pusher.start()
        pusher.join(5)
        order.append("in place done")

    assert engine.run_now_in_place(write_then_let_another_thread_push, (), mx.cpu(), var, "op")
    engine.wait_for_all(timeout=10)
    assert order == ["in place", "in place done", "queued"]
    assert var.idle() and var.version == 1


def test_run_now_in_place_poisons_the_variable_with_the_error(engine):
    var = engine.new_variable("array")

    def explode():
        raise ValueError("kernel failed")

    assert engine.run_now_in_place(explode, (), mx.cpu(), var, "exploding_op")
    assert not engine.run_now_in_place(lambda: pytest.fail("ran on a poisoned variable"), (), mx.cpu(), var, "op")
    with pytest.raises(ValueError, match="kernel failed"):
        engine.wait_for_var(var, timeout=10)
    assert var.idle()


def test_run_now_in_place_refuses_what_the_regular_path_must_handle(engine, make_engine):
    var = engine.new_variable("array")
    never = lambda: pytest.fail("should not run")  # noqa: E731
    with engine.bulk(4):
        assert not engine.run_now_in_place(never, (), mx.cpu(), var, "op")
    with events.record(["engine.push"]):
        assert not engine.run_now_in_place(never, (), mx.cpu(), var, "op")
    other = make_engine("ThreadedEngine", 1).new_variable("elsewhere")
    assert not engine.run_now_in_place(never, (), mx.cpu(), other, "op")
    assert not make_engine("NaiveEngine").run_now_in_place(never, (), mx.cpu(), var, "op")
    deleted = engine.new_variable("deleted")
    engine.delete_variable(None, mx.cpu(), deleted)
    assert not engine.run_now_in_place(never, (), mx.cpu(), deleted, "op")
    assert var.idle() and var.version == 0


def test_run_now_in_place_watched_by_a_sole_buffer_publishes_one_engine_op(engine):
    var = engine.new_variable("array")
    buffer = events.EventBuffer(100)
    with events.subscribe_buffer(buffer):
        assert engine.run_now_in_place(lambda: None, (), mx.cpu(0), var, "in_place")
    published = [events.to_dict(raw) for raw in buffer.take(100) if raw[0].startswith("engine.op")]
    assert len(published) == 1
    (op,) = published
    assert op["name"] == "in_place" and op["reads"] == () and op["writes"] == (var.id,)
    assert op["worker"] == "inline" and op["error"] is None
