"""Chrome trace upload: a trace MXLab wrote replays into the same trace."""

from __future__ import annotations

from server_helpers import read_stream, stream_events, wait_for

import framework as mx
from framework import events, profiler, storage
from framework.engine import create


def _without_host(trace: dict) -> list[dict]:
    return [e for e in trace["traceEvents"]]


def test_a_runs_trace_replays_into_the_same_trace(client):
    run = client.post("/api/runs", json={"scenario": "rw_hazards", "params": {"phases": 2}}).json()
    wait_for(client, run["id"])
    original = client.get(f"/api/runs/{run['id']}/trace").json()
    uploaded = client.post("/api/traces", json=original)
    assert uploaded.status_code == 201, uploaded.text
    replay = uploaded.json()
    assert replay["scenario"] == "replay" and replay["status"] == "done"
    assert replay["result"]["operations"] == 2 * (1 + 3)
    replayed = client.get(f"/api/runs/{replay['id']}/trace").json()

    def operations(trace: dict) -> list[tuple]:
        """Operator slices with times relative to the first one (the replay has no var_new before it)."""
        slices = [e for e in trace["traceEvents"] if e.get("cat") == "operator"]
        t0 = slices[0]["ts"]
        return [
            (e["ph"], e["name"], round(e["ts"] - t0, 3), e["args"].get("op"), e["args"].get("reads")) for e in slices
        ]

    assert operations(replayed) == operations(original)
    messages, code = read_stream(client, replay["id"])
    assert code == 1000 and len(stream_events(messages)) == replay["events"]


def test_storage_counters_waits_and_metrics_survive_the_round_trip(client):
    engine = create("NaiveEngine")
    with events.record() as recorder:
        v = engine.new_variable("v")
        handles = [storage.alloc(n, mx.cpu()) for n in (1000, 5000, 300)]
        engine.push_sync(lambda run_ctx: None, mx.cpu(), mutable_vars=[v], name="op")
        engine.wait_for_var(v)
        storage.free(handles[1])
        events.publish("train.metric", epoch=1, batch=2, name="accuracy", value=0.75)
        storage.free(handles[0])
        storage.free(handles[2])
    original = profiler.chrome_trace(recorder.events)
    replay = client.post("/api/traces", json=original).json()
    replayed = client.get(f"/api/runs/{replay['id']}/trace").json()

    def view(trace: dict) -> list[tuple]:
        """Slices and counters, times relative to the first (the replay has no var_new before it)."""
        kept = [e for e in trace["traceEvents"] if e["ph"] in ("C", "X", "B", "E")]
        t0 = kept[0]["ts"]
        args = [e.get("args", {}) for e in kept]
        return [
            (e["ph"], e["name"], round(e["ts"] - t0, 3), a.get("bytes"), a.get("value"))
            for e, a in zip(kept, args, strict=True)
        ]

    assert view(replayed) == view(original)


def test_a_bare_list_from_another_tool_becomes_operations(client):
    trace = [
        {"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "renderer"}},
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 3, "args": {"name": "main"}},
        {"ph": "X", "name": "layout", "ts": 10.5, "dur": 4, "pid": 7, "tid": 3},
        {"ph": "B", "name": "paint", "ts": 20, "pid": 7, "tid": 3, "args": {"op": "not-an-int"}},
        {"ph": "E", "ts": 25, "pid": 7, "tid": 3},
    ]
    replay = client.post("/api/traces", json=trace).json()
    messages, _ = read_stream(client, replay["id"])
    got = stream_events(messages)
    starts = [e for e in got if e["kind"] == "engine.start"]
    pushes = [e for e in got if e["kind"] == "engine.push"]
    assert [p["name"] for p in pushes] == ["layout", "paint"] and {p["ctx"] for p in pushes} == {"renderer"}
    assert {s["worker"] for s in starts} == {"main"} and len({p["op"] for p in pushes}) == 2
    assert [e["t_ns"] for e in got if e["kind"] == "engine.end"] == [14_500, 25_000]
