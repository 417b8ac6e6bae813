"""The engine's deferred publication (framework/engine/op_events.py): one engine.op per quick
operation to a sole event buffer, push/start of long ones published while they run, and the
same information as the three classic events either way."""

from __future__ import annotations

import threading
import time

import pytest

import framework as mx
from framework import events


def kinds_of(raws: list[events.RawEvent]) -> list[str]:
    return [raw[0] for raw in raws]


def per_op(raws: list[events.RawEvent]) -> dict[int, list[tuple[str, int, dict]]]:
    """Each operation's engine events, expanded, in stream order: op id -> [(kind, t_ns, fields)]."""
    out: dict[int, list[tuple[str, int, dict]]] = {}
    for raw in events.expand(raws):
        if raw[0] in events.COMBINED_KINDS:
            event = events.to_dict(raw)
            out.setdefault(event["op"], []).append((event["kind"], event["t_ns"], event))
    return out


@pytest.mark.parametrize("kind", ["NaiveEngine", "ThreadedEnginePerDevice"])
def test_a_quick_operation_reaches_a_sole_buffer_as_one_engine_op(make_engine, kind):
    engine = make_engine(kind, 2)
    var, other = engine.new_variable("v"), engine.new_variable("w")
    buffer = events.EventBuffer(100)
    with events.subscribe_buffer(buffer):
        assert events.combine_operations
        engine.push_sync(lambda rc: None, mx.cpu(0), const_vars=[other], mutable_vars=[var], name="quick")
        engine.wait_for_all()
    raws = [raw for raw in buffer.take(100) if raw[0].startswith("engine.") and "wait" not in raw[0]]
    assert kinds_of(raws) == ["engine.op"]
    op = events.to_dict(raws[0])
    assert op["name"] == "quick" and op["ctx"] == "cpu(0)" and op["prop"] == "normal" and op["priority"] == 0
    assert op["reads"] == (other.id,) and op["writes"] == (var.id,) and op["error"] is None
    assert op["t_push"] <= op["t_start"] <= op["t_ns"]
    push, start, end = (events.to_dict(raw) for raw in events.expand(raws))
    assert [push["kind"], start["kind"], end["kind"]] == list(events.COMBINED_KINDS)
    assert push["reads"] == [other.id] and push["writes"] == [var.id]  # lists, as engine.push has them
    assert (push["t_ns"], start["t_ns"], end["t_ns"]) == (op["t_push"], op["t_start"], op["t_ns"])
    assert start["worker"] == end["worker"] == op["worker"] and end["error"] is None


@pytest.mark.parametrize("kind", ["NaiveEngine", "ThreadedEnginePerDevice"])
def test_a_full_buffer_counts_the_engine_ops_it_cannot_keep(make_engine, kind):
    engine = make_engine(kind, 2)
    var = engine.new_variable("v")
    buffer = events.EventBuffer(3)
    with events.subscribe_buffer(buffer):
        for _ in range(5):
            engine.push_sync(lambda rc: None, mx.cpu(0), mutable_vars=[var], name="quick")
        engine.wait_for_all()
    kept = buffer.take(10)
    assert len(kept) == 3 and all(raw[0].startswith("engine.") for raw in kept)
    dropped = buffer.take_dropped()
    # five engine.op and the waits around wait_for_all: three kept, the rest counted by kind
    assert dropped.get("engine.op", 0) + kinds_of(kept).count("engine.op") == 5
    assert sum(dropped.values()) + len(kept) == 5 + 2  # engine.wait_begin and engine.wait_end


def test_other_subscribers_keep_receiving_the_three_events(make_engine):
    engine = make_engine("ThreadedEnginePerDevice", 2)
    var = engine.new_variable("v")
    buffer = events.EventBuffer(100)
    with events.subscribe_buffer(buffer), events.record() as rec:
        assert not events.combine_operations  # the buffer is not the only subscriber
        engine.push_sync(lambda rc: None, mx.cpu(0), mutable_vars=[var], name="seen")
        engine.wait_for_all()
    engine_kinds = [e["kind"] for e in rec.events if e["kind"] in events.COMBINED_KINDS + ("engine.op",)]
    assert engine_kinds == list(events.COMBINED_KINDS)
    assert "engine.op" not in kinds_of(buffer.take(100))


def test_a_failing_operation_carries_its_error_in_engine_op(make_engine):
    engine = make_engine("ThreadedEnginePerDevice", 2)
    var = engine.new_variable("v")

    def boom(rc):
        raise ValueError("bad input")

    buffer = events.EventBuffer(100)
    with events.subscribe_buffer(buffer):
        engine.push_sync(boom, mx.cpu(0), mutable_vars=[var], name="boom")
        with pytest.raises(ValueError, match="bad input"):
            engine.wait_for_all()
    (op,) = [events.to_dict(raw) for raw in buffer.take(100) if raw[0] == "engine.op"]
    assert op["name"] == "boom" and op["error"] == "ValueError: bad input"


def test_long_operations_are_published_while_they_wait_and_run(make_engine, monkeypatch):
    monkeypatch.setattr(events, "SAMPLE_AFTER_NS", 20_000_000)  # 20 ms
    engine = make_engine("ThreadedEnginePerDevice", 1)
    var = engine.new_variable("v")
    release = threading.Event()
    buffer = events.EventBuffer(1000)
    with events.subscribe_buffer(buffer):
        engine.push_sync(lambda rc: release.wait(10), mx.cpu(0), mutable_vars=[var], name="long")
        engine.push_sync(lambda rc: None, mx.cpu(0), mutable_vars=[var], name="behind")
        time.sleep(0.1)
        events.run_samplers()  # what the server's forwarder does on each pass
        live = buffer.take(1000)
        release.set()
        engine.wait_for_all()
    rest = buffer.take(1000)
    seen = per_op(live)
    names = {fields["name"]: op for op, evs in seen.items() for kind, _, fields in evs if kind == "engine.push"}
    # while it ran: the long one pushed and started, the one behind it pushed and waiting
    assert [kind for kind, _, _ in seen[names["long"]]] == ["engine.push", "engine.start"]
    assert [kind for kind, _, _ in seen[names["behind"]]] == ["engine.push"]
    everything = per_op(live + rest)
    for op in (names["long"], names["behind"]):
        assert [kind for kind, _, _ in everything[op]] == list(events.COMBINED_KINDS)  # each once, in order
        times = [t for _, t, _ in everything[op]]
        assert times == sorted(times)
    assert everything[names["long"]][1][1] < everything[names["behind"]][1][1]  # real start times


def test_a_sampler_pass_between_a_claimed_end_and_its_removal_publishes_nothing_more(make_engine, monkeypatch):
    """The window the stress test below once hit: a claimed operation's end is out, but the engine
    has not yet taken it out of its operations in flight, and a sampler pass copies them."""
    monkeypatch.setattr(events, "SAMPLE_AFTER_NS", 0)
    engine = make_engine("ThreadedEnginePerDevice", 1)
    var = engine.new_variable("v")
    release = threading.Event()
    real_end = engine._publish_deferred_end

    def end_then_sample(op, worker, stream, message):
        real_end(op, worker, stream, message)
        engine._last_sampled = 0  # no pause between passes
        events.run_samplers()  # in the worker, before the engine removes op from _inflight

    monkeypatch.setattr(engine, "_publish_deferred_end", end_then_sample)
    buffer = events.EventBuffer(1000)
    with events.subscribe_buffer(buffer):
        engine.push_sync(lambda rc: release.wait(10), mx.cpu(0), mutable_vars=[var], name="long")
        engine.push_sync(lambda rc: None, mx.cpu(0), mutable_vars=[var], name="behind")
        time.sleep(0.05)
        engine._last_sampled = 0
        events.run_samplers()  # claims both: long pushed and started, behind pushed (published 1)
        release.set()
        engine.wait_for_all()
    ops = per_op(buffer.take(1000))
    assert sorted(fields["name"] for evs in ops.values() for kind, _, fields in evs if kind == "engine.push") == [
        "behind",
        "long",
    ]
    for evs in ops.values():
        assert [kind for kind, _, _ in evs] == list(events.COMBINED_KINDS)  # each once, the end last
    assert engine._sampled == {}


def test_sampling_while_operations_end_gives_each_its_three_events_in_order(make_engine, monkeypatch):
    """The claim between the sampler and an ending operation, under a sampler that never rests."""
    monkeypatch.setattr(events, "SAMPLE_AFTER_NS", 0)
    engine = make_engine("ThreadedEnginePerDevice", 2)
    variables = [engine.new_variable(f"v{i}") for i in range(4)]
    buffer = events.EventBuffer(200_000)
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            engine._last_sampled = 0  # no pause between passes
            events.run_samplers()

    with events.subscribe_buffer(buffer):
        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            for i in range(3000):
                engine.push_sync(lambda rc: None, mx.cpu(0), mutable_vars=[variables[i % 4]], name=f"op{i}")
            engine.wait_for_all()
        finally:
            stop.set()
            sampler.join()
    raws = buffer.take(200_000)
    assert buffer.take_dropped() == {}
    ops = per_op(raws)
    assert len(ops) == 3000
    for evs in ops.values():
        assert [kind for kind, _, _ in evs] == list(events.COMBINED_KINDS)
    assert engine._sampled == {}  # every claim was removed by its operation's end


def test_unsubscribing_mid_flight_publishes_nothing_more_and_keeps_nothing(make_engine):
    engine = make_engine("ThreadedEnginePerDevice", 1)
    var = engine.new_variable("v")
    release = threading.Event()
    buffer = events.EventBuffer(100)
    sub = events.subscribe_buffer(buffer)
    engine.push_sync(lambda rc: release.wait(10), mx.cpu(0), mutable_vars=[var], name="spans")
    events.unsubscribe(sub)
    release.set()
    engine.wait_for_all()
    assert [raw for raw in buffer.take(100) if raw[0] in ("engine.op", *events.COMBINED_KINDS)] == []
    assert engine._sampled == {}


# ----------------------------------------------------------------- free pushes run at once, watched
def no_operation_allowed(op):
    raise AssertionError(f"{op.name!r} was submitted as an Operation; it should have run at once")


def engine_op_events(buffer: events.EventBuffer) -> list[dict]:
    return [events.to_dict(raw) for raw in buffer.take(1000) if raw[0] in ("engine.op", *events.COMBINED_KINDS)]


def test_a_watched_free_push_runs_at_once_and_publishes_one_engine_op(make_engine, monkeypatch):
    engine = make_engine("ThreadedEnginePerDevice", 2)
    var, other = engine.new_variable("v"), engine.new_variable("w")
    ran_in = []
    buffer = events.EventBuffer(100)
    with events.subscribe_buffer(buffer):
        engine.push_sync(lambda rc: None, mx.cpu(0), mutable_vars=[var], name="before")
        engine.wait_for_all()
        monkeypatch.setattr(engine, "_submit", no_operation_allowed)
        engine.push_sync(
            lambda rc: ran_in.append((threading.current_thread(), rc.worker)),
            mx.cpu(0),
            const_vars=[other],
            mutable_vars=[var],
            name="free",
            inline_if_ready=True,
        )
        assert ran_in == [(threading.current_thread(), "inline")]  # before push_sync returned
        monkeypatch.undo()
        engine.push_sync(lambda rc: None, mx.cpu(0), mutable_vars=[var], name="after")
        engine.wait_for_all()
    published = engine_op_events(buffer)
    assert [e["kind"] for e in published] == ["engine.op"] * 3
    before, op, after = published
    assert [e["name"] for e in published] == ["before", "free", "after"]
    assert before["op"] < op["op"] < after["op"]  # an id from the operations' counter
    assert op["ctx"] == "cpu(0)" and op["reads"] == (other.id,) and op["writes"] == (var.id,)
    assert op["prop"] == "normal" and op["priority"] == 0
    assert op["worker"] == "inline" and op["stream"] is None and op["error"] is None
    assert op["t_push"] <= op["t_start"] <= op["t_ns"]
    push, start, end = (
        events.to_dict(raw)
        for raw in events.expand([("engine.op", op["t_ns"], tuple(op[name] for name in events.KINDS["engine.op"]))])
    )
    assert [push["kind"], start["kind"], end["kind"]] == list(events.COMBINED_KINDS)
    assert push["t_ns"] <= start["t_ns"] <= end["t_ns"]
    assert push["reads"] == [other.id] and push["writes"] == [var.id] and push["name"] == "free"
    assert start["worker"] == end["worker"] == "inline" and end["error"] is None


def test_a_watched_free_push_that_fails_poisons_its_writes_and_publishes_the_error(make_engine, monkeypatch):
    engine = make_engine("ThreadedEnginePerDevice", 2)
    var, read = engine.new_variable("v"), engine.new_variable("r")

    def boom(rc):
        raise ValueError("bad input")

    buffer = events.EventBuffer(100)
    with events.subscribe_buffer(buffer):
        monkeypatch.setattr(engine, "_submit", no_operation_allowed)
        engine.push_sync(boom, mx.cpu(0), const_vars=[read], mutable_vars=[var], name="boom", inline_if_ready=True)
        monkeypatch.undo()
        assert var.exception_record is not None and read.exception_record is None
        # the poisoned variable sends this one the regular way, which skips it and passes the error on
        engine.push_sync(lambda rc: None, mx.cpu(0), mutable_vars=[var], name="downstream", inline_if_ready=True)
        with pytest.raises(ValueError, match="bad input") as caught:
            engine.wait_for_var(var)
    published = engine_op_events(buffer)
    assert [(e["kind"], e["name"]) for e in published] == [("engine.op", "boom"), ("engine.op", "downstream")]
    failed, skipped = published
    assert failed["error"] == "ValueError: bad input" and failed["worker"] == "inline"
    assert f"op #{failed['op']}," in "".join(getattr(caught.value, "__notes__", []))  # the same id in the note
    assert skipped["error"] == "skipped after error in 'boom': ValueError: bad input"  # the regular path


def test_a_watched_free_push_with_a_recorder_gives_the_three_events(make_engine):
    engine = make_engine("ThreadedEnginePerDevice", 2)
    var = engine.new_variable("v")
    with events.record() as rec:
        assert events.enabled and not events.combine_operations
        engine.push_sync(lambda rc: None, mx.cpu(0), mutable_vars=[var], name="seen", inline_if_ready=True)
        engine.wait_for_all()
    seen = [e for e in rec.events if e["kind"] in (*events.COMBINED_KINDS, "engine.op")]
    assert [e["kind"] for e in seen] == list(events.COMBINED_KINDS)
    assert {e["op"] for e in seen} == {seen[0]["op"]} and seen[0]["name"] == "seen"
    assert seen[1]["worker"] == seen[2]["worker"] == "inline"


def test_a_recorder_joining_during_a_free_push_receives_its_three_events(make_engine):
    engine = make_engine("ThreadedEnginePerDevice", 2)
    var = engine.new_variable("v")
    recorder = events.Recorder()
    buffer = events.EventBuffer(100)
    with events.subscribe_buffer(buffer):
        engine.push_sync(
            lambda rc: recorder.start(), mx.cpu(0), mutable_vars=[var], name="joined", inline_if_ready=True
        )
        recorder.stop()
    seen = [e for e in recorder.events if e["kind"] in (*events.COMBINED_KINDS, "engine.op")]
    assert [e["kind"] for e in seen] == list(events.COMBINED_KINDS)
    push, start, end = seen
    assert push["name"] == "joined" and push["writes"] == [var.id] and push["prop"] == "normal"
    assert push["t_ns"] <= start["t_ns"] <= end["t_ns"] and start["worker"] == end["worker"] == "inline"


def test_run_now_into_new_watched_publishes_one_engine_op(make_engine):
    engine = make_engine("ThreadedEnginePerDevice", 2)
    read, fresh = engine.new_variable("a"), engine.new_variable("b")
    done = []
    buffer = events.EventBuffer(100)
    with events.subscribe_buffer(buffer):
        assert engine.run_now_into_new(done.append, (1,), mx.cpu(0), read, fresh, "add_scalar")
        assert engine.run_now_into_new(int, ("x",), mx.cpu(0), fresh, engine.new_variable("c"), "bad_int")
    assert done == [1]
    ok, failed = engine_op_events(buffer)
    assert ok["kind"] == failed["kind"] == "engine.op" and ok["op"] < failed["op"]
    assert ok["name"] == "add_scalar" and ok["reads"] == (read.id,) and ok["writes"] == (fresh.id,)
    assert ok["worker"] == "inline" and ok["error"] is None and ok["t_push"] <= ok["t_start"] <= ok["t_ns"]
    assert failed["name"] == "bad_int" and failed["error"].startswith("ValueError: invalid literal")


def test_a_deferred_operation_and_a_free_push_publish_the_same_engine_op_fields(make_engine):
    # _publish_deferred_end and _publish_whole build engine.op each in place: they must agree
    engine = make_engine("ThreadedEnginePerDevice", 2)
    var, a, b = engine.new_variable("v"), engine.new_variable("a"), engine.new_variable("b")
    buffer = events.EventBuffer(100)
    with events.subscribe_buffer(buffer):
        for inline in (False, True):
            engine.push_sync(
                lambda rc: None, mx.cpu(0), const_vars=[a, b], mutable_vars=[var], name="same", inline_if_ready=inline
            )
            engine.wait_for_all()
    deferred, free = engine_op_events(buffer)
    assert deferred["worker"] != "inline" and free["worker"] == "inline"
    different = {"op", "t_ns", "t_push", "t_start", "worker"}
    assert {k: v for k, v in deferred.items() if k not in different} == {
        k: v for k, v in free.items() if k not in different
    }
    assert deferred["reads"] == (a.id, b.id) and type(free["reads"]) is tuple and deferred["writes"] == (var.id,)


def test_a_recorder_joining_while_a_deferred_operation_runs_receives_its_three_events(make_engine):
    engine = make_engine("ThreadedEnginePerDevice", 1)
    var = engine.new_variable("v")
    running, release = threading.Event(), threading.Event()
    buffer = events.EventBuffer(100)
    with events.subscribe_buffer(buffer):
        engine.push_sync(
            lambda rc: (running.set(), release.wait(10)), mx.cpu(0), mutable_vars=[var], name="spans", priority=2
        )
        assert running.wait(10)
        with events.record() as rec:  # the buffer is no longer the only subscriber
            release.set()
            engine.wait_for_all()
    seen = [e for e in rec.events if e["kind"] in (*events.COMBINED_KINDS, "engine.op")]
    assert [e["kind"] for e in seen] == list(events.COMBINED_KINDS)
    push, start, end = seen
    assert push["name"] == "spans" and push["writes"] == [var.id] and push["priority"] == 2
    assert push["t_ns"] <= start["t_ns"] <= end["t_ns"] and start["worker"] == end["worker"] != "inline"
    assert engine._sampled == {}


def test_an_end_that_meets_a_claim_the_sampler_then_drops_publishes_the_whole_operation(make_engine):
    """The interleaving the claim exists for, forced: the sampler claims an operation, the
    operation ends and sees the claim, the sampler then finds it done and lets go."""
    engine = make_engine("ThreadedEnginePerDevice", 1)
    var = engine.new_variable("v")
    running, release = threading.Event(), threading.Event()
    buffer = events.EventBuffer(100)
    with events.subscribe_buffer(buffer):
        engine.push_sync(lambda rc: (running.set(), release.wait(10)), mx.cpu(0), mutable_vars=[var], name="met")
        assert running.wait(10)
        (op,) = engine._inflight.values()
        with engine._sampling:  # a sampler pass in progress: it has claimed the operation ...
            engine._sampled[op.id] = op
            release.set()
            deadline = time.monotonic() + 10
            while op.state != "done" and time.monotonic() < deadline:  # ... which ends meanwhile
                time.sleep(0.001)
            assert op.state == "done"
            del engine._sampled[op.id]  # ... and the pass finds it done: it leaves it to the end
        engine.wait_for_all()
    published = engine_op_events(buffer)
    assert [(e["kind"], e["name"]) for e in published] == [("engine.op", "met")]
    assert engine._sampled == {}
