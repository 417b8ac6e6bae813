"""Exceptions travel with the variables a failing function writes (MXNet 1.x semantics)."""

from __future__ import annotations

import threading
import traceback

import pytest

import framework as mx
from framework.engine import FnProperty


class Boom(Exception):
    pass


def fail_loudly(rc):
    raise Boom("kernel exploded")


def test_error_propagates_down_a_chain_with_its_original_traceback(engine):
    a, b, c = (engine.new_variable(n) for n in "abc")
    ran = []
    engine.push_sync(fail_loudly, mx.cpu(), mutable_vars=[a], name="explode")
    engine.push_sync(lambda rc: ran.append("b"), mx.cpu(), const_vars=[a], mutable_vars=[b], name="a_to_b")
    engine.push_sync(lambda rc: ran.append("c"), mx.cpu(), const_vars=[b], mutable_vars=[c], name="b_to_c")
    with pytest.raises(Boom, match="kernel exploded") as info:
        engine.wait_for_var(c, timeout=10)
    assert ran == []  # dependants were skipped
    frames = [frame.name for frame in traceback.extract_tb(info.value.__traceback__)]
    assert "fail_loudly" in frames  # the traceback reaches into the failing function
    assert any("'explode'" in note for note in info.value.__notes__)


def test_independent_variables_are_unaffected(engine):
    bad, good = engine.new_variable("bad"), engine.new_variable("good")
    log = []
    engine.push_sync(fail_loudly, mx.cpu(), mutable_vars=[bad])
    engine.push_sync(lambda rc: log.append("good"), mx.cpu(), mutable_vars=[good])
    engine.wait_for_var(good, timeout=10)
    assert log == ["good"]
    with pytest.raises(Boom):
        engine.wait_for_var(bad, timeout=10)


def test_an_error_is_reported_once_and_cleared_for_every_variable_sharing_it(engine):
    a, b = engine.new_variable("a"), engine.new_variable("b")
    engine.push_sync(fail_loudly, mx.cpu(), mutable_vars=[a, b])
    with pytest.raises(Boom):
        engine.wait_for_var(a, timeout=10)
    engine.wait_for_var(a, timeout=10)  # cleared
    engine.wait_for_var(b, timeout=10)  # b shared the same error: cleared too
    engine.wait_for_all(timeout=10)  # and it is not reported again globally


def test_engine_keeps_working_after_an_error(engine):
    var = engine.new_variable()
    log = []
    engine.push_sync(fail_loudly, mx.cpu(), mutable_vars=[var])
    with pytest.raises(Boom):
        engine.wait_for_all(timeout=10)
    for i in range(3):
        engine.push_sync(lambda rc, i=i: log.append(i), mx.cpu(), mutable_vars=[var])
    engine.wait_for_var(var, timeout=10)
    assert log == [0, 1, 2]


def test_wait_for_all_raises_the_first_error_then_clears_all(engine):
    a, b = engine.new_variable(), engine.new_variable()
    engine.push_sync(fail_loudly, mx.cpu(), mutable_vars=[a])
    engine._wait_idle(10)
    engine.push_sync(lambda rc: (_ for _ in ()).throw(KeyError("second")), mx.cpu(), mutable_vars=[b])
    with pytest.raises(Boom):
        engine.wait_for_all(timeout=10)
    assert a.exception is None and b.exception is None
    engine.wait_for_all(timeout=10)


def test_throw_reports_without_waiting(engine):
    var = engine.new_variable()
    engine.throw(var)  # nothing to report
    engine.push_sync(fail_loudly, mx.cpu(), mutable_vars=[var])
    engine._wait_idle(10)
    assert isinstance(var.exception, Boom)
    with pytest.raises(Boom):
        engine.throw(var)
    engine.throw(var)


def test_no_skip_functions_run_despite_a_poisoned_input(engine):
    var = engine.new_variable()
    log = []
    engine.push_sync(fail_loudly, mx.cpu(), mutable_vars=[var])
    engine.push_sync(lambda rc: log.append("cleanup"), mx.cpu(), const_vars=[var], prop=FnProperty.NO_SKIP)
    with pytest.raises(Boom):
        engine.wait_for_all(timeout=10)
    assert log == ["cleanup"]


def test_async_failure_reported_through_on_complete(engine):
    var = engine.new_variable()

    def fail_later(rc, on_complete):
        threading.Timer(0.01, lambda: on_complete(Boom("from a helper thread"))).start()

    engine.push_async(fail_later, mx.cpu(), mutable_vars=[var], name="remote")
    with pytest.raises(Boom, match="helper thread"):
        engine.wait_for_var(var, timeout=10)


def test_async_function_that_raises_before_calling_back(engine):
    var = engine.new_variable()

    def broken(rc, on_complete):
        raise Boom("raised synchronously")

    engine.push_async(broken, mx.cpu(), mutable_vars=[var])
    with pytest.raises(Boom, match="synchronously"):
        engine.wait_for_var(var, timeout=10)


def test_errors_inside_a_bulk_segment_poison_only_their_own_writes(threaded_engine):
    a, b = threaded_engine.new_variable("a"), threaded_engine.new_variable("b")
    log = []
    with threaded_engine.bulk(16):
        threaded_engine.push_sync(fail_loudly, mx.cpu(), mutable_vars=[a])
        threaded_engine.push_sync(lambda rc: log.append("skipped"), mx.cpu(), const_vars=[a], mutable_vars=[b])
        threaded_engine.push_sync(
            lambda rc: log.append("independent"), mx.cpu(), mutable_vars=[threaded_engine.new_variable()]
        )
    with pytest.raises(Boom):
        threaded_engine.wait_for_var(b, timeout=10)
    assert log == ["independent"]


def test_end_event_carries_the_error_and_the_skip(engine):
    a, b = engine.new_variable(), engine.new_variable()
    with mx.events.record(["engine.end"]) as rec:
        engine.push_sync(fail_loudly, mx.cpu(), mutable_vars=[a], name="explode")
        engine.push_sync(lambda rc: None, mx.cpu(), const_vars=[a], mutable_vars=[b], name="dependant")
        engine._wait_idle(10)
    errors = [e["error"] for e in rec.events]
    assert errors[0] == "Boom: kernel exploded"
    assert errors[1] == "skipped after error in 'explode': Boom: kernel exploded"
    with pytest.raises(Boom):
        engine.wait_for_all()
