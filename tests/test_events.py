"""The event bus: delivery, filtering, zero cost when idle, isolation from bad subscribers."""

from __future__ import annotations

import threading

import pytest

import framework as mx
from framework import events


def test_publish_without_subscribers_is_disabled_and_silent():
    assert events.enabled is False
    events.publish("engine.push", op=1)  # no subscriber: nothing happens, nothing raises


def test_subscribers_receive_kind_timestamp_and_fields():
    got = []
    with events.subscribe(got.append, kinds=["kvstore.push"]):
        assert events.enabled is True
        events.publish("kvstore.push", key=3, nbytes=16, ctx="cpu(0)")
        events.publish("kvstore.pull", key=3, nbytes=16, ctx="cpu(0)")  # filtered out
    assert events.enabled is False
    assert len(got) == 1
    assert got[0]["kind"] == "kvstore.push" and got[0]["key"] == 3
    assert isinstance(got[0]["t_ns"], int) and got[0]["t_ns"] > 0


def test_all_kind_subscribers_and_unsubscribe_is_idempotent():
    got = []
    sub = events.subscribe(got.append)
    events.publish("train.metric", epoch=0, batch=1, name="acc", value=0.5)
    events.unsubscribe(sub)
    events.unsubscribe(sub)
    events.publish("train.metric", epoch=0, batch=2, name="acc", value=0.6)
    assert [e["batch"] for e in got] == [1]


def test_unknown_kinds_and_bad_callbacks_are_refused():
    with pytest.raises(ValueError, match=r"unknown event kind\(s\) \['engine.pushh'\]"):
        events.subscribe(print, kinds=["engine.pushh"])
    with pytest.raises(TypeError, match="callback must be callable"):
        events.subscribe("print")


def test_a_failing_subscriber_is_counted_and_does_not_stop_others(caplog):
    got = []

    def broken(event):
        raise RuntimeError("subscriber bug")

    with events.subscribe(broken) as bad, events.subscribe(got.append):
        events.publish("engine.var_new", var=1, name="a")
        events.publish("engine.var_new", var=2, name="b")
    assert [e["var"] for e in got] == [1, 2]
    assert bad.failures == 2
    assert "subscriber bug" in caplog.text or "failed on engine.var_new" in caplog.text


def test_recorder_collects_from_many_threads():
    with events.record(["engine.var_new"]) as rec:
        threads = [
            threading.Thread(target=lambda: [events.publish("engine.var_new", var=i, name="x") for i in range(500)])
            for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(rec.events) == 2000
    assert len(rec.of_kind("engine.var_new")) == 2000


def test_emit_gives_raw_subscribers_tuples_and_others_dicts():
    raw, plain = [], []
    with events.subscribe(raw.append, raw=True), events.subscribe(plain.append, kinds="engine.start"):
        events.emit("engine.start", 7, "cpu(0)/normal/0", None)
        events.publish("kvstore.push", key="w", nbytes=4, ctx="cpu(0)", extra=1)
    # the raw subscriber sees the positional values as emitted, and publish()'s fields dict
    assert [r[0] for r in raw] == ["engine.start", "kvstore.push"]
    assert raw[0][2] == (7, "cpu(0)/normal/0", None)
    assert raw[1][2] == {"key": "w", "nbytes": 4, "ctx": "cpu(0)", "extra": 1}
    # the dict subscriber gets the same event as if it had been published with names
    assert plain == [{"kind": "engine.start", "t_ns": raw[0][1], "op": 7, "worker": "cpu(0)/normal/0", "stream": None}]
    assert events.to_dict(raw[0]) == plain[0]
    assert events.to_dict(raw[1])["extra"] == 1


def test_emit_with_the_wrong_number_of_values_is_named_when_converted():
    with events.subscribe(lambda e: None, raw=True):
        pass
    with pytest.raises(ValueError, match=r"engine.start has fields \('op', 'worker', 'stream'\), got 2 values"):
        events.to_dict(("engine.start", 1, (7, "w")))


def test_engine_events_match_the_kinds_table(make_engine):
    engine = make_engine("ThreadedEnginePerDevice", 1)
    var = engine.new_variable("v")
    with events.record() as rec:
        engine.push_sync(lambda rc: None, mx.cpu(0), mutable_vars=[var], name="noop")
        engine.wait_for_all()
    for event in rec.of_kind("engine.push", "engine.start", "engine.end"):
        assert set(event) == {"kind", "t_ns", *events.KINDS[event["kind"]]}
    push = rec.of_kind("engine.push")[0]
    assert push["name"] == "noop" and push["writes"] == [var.id] and push["reads"] == []


def test_an_event_buffer_keeps_at_most_its_bound_and_counts_the_rest():
    buffer = events.EventBuffer(3)
    with events.subscribe_buffer(buffer):
        for i in range(5):
            events.emit("engine.start", i, "w", None)  # the fast path: the buffer is the only subscriber
        events.publish("kvstore.push", key="w", nbytes=4, ctx="cpu(0)")
    events.emit("engine.start", 9, "w", None)  # unsubscribed: nothing more arrives
    assert [raw[2][0] for raw in buffer.take(2)] == [0, 1] and len(buffer) == 1
    assert buffer.take_dropped() == {"engine.start": 2, "kvstore.push": 1} and buffer.take_dropped() == {}
    assert buffer.take(10)[0][:1] == ("engine.start",) and len(buffer) == 0
    with pytest.raises(ValueError, match="bound must be an int >= 1"):
        events.EventBuffer(0)
    with pytest.raises(TypeError, match="expected an EventBuffer"):
        events.subscribe_buffer([])


def test_an_event_buffer_next_to_other_subscribers_gets_the_same_events():
    buffer, plain = events.EventBuffer(10), []
    with events.subscribe_buffer(buffer, kinds=["engine.start"]), events.subscribe(plain.append):
        events.emit("engine.start", 1, "w", None)
        events.emit("engine.end", 1, "w", None, None)  # not a kind the buffer asked for
    assert [events.to_dict(raw) for raw in buffer.take(10)] == plain[:1]
    assert [e["kind"] for e in plain] == ["engine.start", "engine.end"]


def test_an_empty_buffer_alone_takes_the_fast_path_and_combines_operations():
    buffer = events.EventBuffer(10)
    assert len(buffer) == 0  # falsy, and still the sole subscriber
    with events.subscribe_buffer(buffer):
        assert events._sole_buffers["engine.start"] is buffer
        assert events.combine_operations and events.operation_buffer is buffer
    assert not events.combine_operations and events.operation_buffer is None
    with events.subscribe_buffer(buffer, kinds=events.COMBINED_KINDS):  # no engine.op: nothing to combine into
        assert not events.combine_operations and events.operation_buffer is None
    with events.subscribe_buffer(buffer), events.subscribe_buffer(events.EventBuffer(10)):
        assert not events.combine_operations and "engine.start" not in events._sole_buffers
        assert events.operation_buffer is None


def test_only_buffers_says_whether_publishing_can_run_subscriber_code():
    assert not events.only_buffers  # nobody listens
    first, second = events.EventBuffer(10), events.EventBuffer(10)
    with events.subscribe_buffer(first), events.subscribe_buffer(second, ["train.metric"]):
        assert events.only_buffers
        with events.record(["train.metric"]):
            assert not events.only_buffers
        assert events.only_buffers
    assert not events.only_buffers


def test_emit_at_publishes_an_earlier_time():
    buffer, plain = events.EventBuffer(10), []
    with events.subscribe_buffer(buffer, kinds=["engine.start"]):
        events.emit_at("engine.start", 123, 7, "w", None)
    with events.subscribe(plain.append, kinds=["engine.start"]):
        events.emit_at("engine.start", 456, 8, "w", None)
    assert buffer.take(10) == [("engine.start", 123, (7, "w", None))]
    assert plain == [{"kind": "engine.start", "t_ns": 456, "op": 8, "worker": "w", "stream": None}]


def test_expand_turns_engine_op_into_its_three_events_in_place():
    op = ("engine.op", 30, (5, "add", "cpu(0)", (1,), (2, 3), 0, "normal", "w/0", None, None, 10, 20))
    other = ("kvstore.push", 25, {"key": 1, "nbytes": 4, "ctx": "cpu(0)"})
    raws = [other, op, other]
    expanded = events.expand(raws)
    assert expanded == [
        other,
        ("engine.push", 10, (5, "add", "cpu(0)", [1], [2, 3], 0, "normal")),
        ("engine.start", 20, (5, "w/0", None)),
        ("engine.end", 30, (5, "w/0", None, None)),
        other,
    ]
    as_dict = ("engine.op", 30, dict(zip(events.KINDS["engine.op"], op[2], strict=True)))
    assert events.expand([as_dict]) == expanded[1:4]
    plain = [other]
    assert events.expand(plain) is plain  # nothing to expand: the same list
    assert events.expand_counts({"engine.op": 4, "engine.end": 1, "kvstore.push": 2}) == {
        "engine.push": 4,
        "engine.start": 4,
        "engine.end": 5,
        "kvstore.push": 2,
    }
    assert events.expand_counts({"kvstore.push": 2}) == {"kvstore.push": 2}
