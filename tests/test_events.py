"""The event bus: delivery, filtering, zero cost when idle, isolation from bad subscribers."""

from __future__ import annotations

import threading

import pytest

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
