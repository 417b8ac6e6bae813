"""Chrome trace upload: a trace MXLab wrote replays into the same trace."""

from __future__ import annotations

import json
import threading
import time

import httpx
import numpy as np
import pytest
from server_helpers import TEST_HOSTS, read_stream, stream_events, wait_for
from starlette.testclient import TestClient

import framework as mx
from framework import events, profiler, storage
from framework.engine import create
from server.app import create_app
from server.traces import (
    MAX_TRACE_BYTES,
    MAX_TRACE_EVENTS,
    Deadline,
    TraceError,
    _StorageLedger,
    parse_trace,
    replay_events,
)


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


def test_monitor_statistics_survive_the_round_trip_as_strict_json(client):
    exe = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc").simple_bind(mx.cpu(), data=(1, 3))
    exe.arg_dict["fc_weight"][:] = 0.5

    def spread(x):
        return mx.nd.concat(mx.nd.max(x), mx.nd.array([np.nan, -np.inf]), dim=0) if x.size == 6 else mx.nd.max(x)

    mon = mx.mon.Monitor(1, stat_func=spread, pattern="fc_")
    mon.install(exe)
    with events.record(["monitor.stat"]) as recorder:
        for _ in range(2):
            mon.tic()
            exe.forward()
            mon.toc()
    trace = profiler.chrome_trace(recorder.events)
    text = json.dumps(trace, allow_nan=False)  # no NaN token: any strict parser reads it
    instants = [e for e in trace["traceEvents"] if e.get("cat") == "monitor"]
    assert [e["name"] for e in instants] == ["monitor fc_output", "monitor fc_weight", "monitor fc_bias"] * 2
    replay = client.post("/api/traces", content=text, headers={"content-type": "application/json"}).json()
    messages, _ = read_stream(client, replay["id"])
    got = [e for e in stream_events(messages) if e["kind"] == "monitor.stat"]
    fields = ("batch", "name", "role", "stat", "value")
    want = [{k: e[k] for k in fields} for e in recorder.events]
    for row in want:
        if row["name"] == "fc_weight":
            row["value"] = [0.5, "nan", "-inf"]  # as the strict JSON of the stream spells them
    assert [{k: e[k] for k in fields} for e in got] == want


def test_plan_bounds_and_kvstore_steps_survive_the_round_trip(client):
    with events.record(["executor.plan"]) as recorder:
        mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc").simple_bind(mx.cpu(), data=(2, 3))
    (plan,) = recorder.events
    step = {"rank": 1, "step": 7, "compute_ms": 3.5, "comm_ms": 1.25, "wait_ms": 0.5, "calls": 2, "nbytes": 4096}
    recorded = [plan, {"kind": "kvstore.step", "t_ns": plan["t_ns"] + 1000, **step}]
    trace = profiler.chrome_trace(recorded)
    args = {e["name"]: e["args"] for e in trace["traceEvents"] if e.get("ph") == "i"}
    assert args["executor.plan"]["bytes_lower_bound"] == plan["bytes_lower_bound"] > 0
    assert args["executor.plan"]["strategy"] == plan["strategy"]
    assert args["kvstore.step"] == step
    text = json.dumps(trace, allow_nan=False)
    replay = client.post("/api/traces", content=text, headers={"content-type": "application/json"}).json()
    messages, _ = read_stream(client, replay["id"])
    got = {e["kind"]: e for e in stream_events(messages) if e["kind"] in ("executor.plan", "kvstore.step")}
    fields = ("bytes_planned", "bytes_naive", "bytes_lower_bound", "strategy")
    assert {k: got["executor.plan"][k] for k in fields} == {k: plan[k] for k in fields}
    assert {k: got["kvstore.step"][k] for k in step} == step


def test_odd_monitor_instants_replay_with_none_for_what_does_not_fit(client):
    odd = {"batch": "7", "name": "x", "role": 3, "stat": None, "value": {"a": 1}}
    listed = {"batch": 2, "name": "y", "role": "output", "stat": "rms", "value": [1, "NaN", "inf", True] + [0] * 20}
    trace = [
        {"ph": "i", "cat": "monitor", "name": "monitor x", "ts": 1, "args": odd},
        {"ph": "i", "cat": "monitor", "name": "monitor y", "ts": 2, "args": listed},
        {"ph": "i", "cat": "monitor", "name": "no name in args", "ts": 3, "args": {"value": 1}},
    ]
    replay = client.post("/api/traces", json=trace).json()
    messages, _ = read_stream(client, replay["id"])
    got = [e for e in stream_events(messages) if e["kind"] == "monitor.stat"]
    assert [{k: v for k, v in e.items() if k not in ("kind", "t_ns")} for e in got] == [
        {"batch": None, "name": "x", "role": "", "stat": "", "value": None},
        {"batch": 2, "name": "y", "role": "output", "stat": "rms", "value": [1, None, "inf", None] + [0] * 12},
    ]


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


def test_events_of_phases_the_replay_ignores_may_carry_anything(client):
    # found by the route fuzzer: an unused phase's args were read as a dict (500, AttributeError)
    trace = [
        {"ph": "B", "name": "work", "ts": 0, "args": {"op": 7}},
        {"ph": "", "args": 1},
        {"ph": "s", "args": [1, 2], "ts": "soon"},
        {"ph": "E", "ts": 5},
    ]
    response = client.post("/api/traces", json=trace)
    assert response.status_code == 201, response.text
    got = stream_events(read_stream(client, response.json()["id"])[0])
    assert [e["name"] for e in got if e["kind"] == "engine.push"] == ["work"]
    assert [e["t_ns"] for e in got if e["kind"] == "engine.end"] == [5_000]
    # a phase the replay uses is still checked
    bad = client.post("/api/traces", json=[{"ph": "B", "ts": 0, "args": 1}])
    assert bad.status_code == 400 and "'args' must be an object" in bad.json()["detail"]


# ----------------------------------------------------------------------------- cost of a replay
def _sawtooth_trace(events: int) -> dict:
    """``storage bytes in use`` counters going up and down: what made the replay quadratic."""
    values = [(i % 500) * 64 + (i // 500) * 8 for i in range(events)]
    counters = [
        {"ph": "C", "name": "storage bytes in use", "pid": 1, "ts": i, "args": {"bytes": v}}
        for i, v in enumerate(values)
    ]
    return {"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "cpu(0)"}}, *counters]}


def test_replayed_storage_reproduces_every_counter_value():
    trace = _sawtooth_trace(3000)
    events, _ = replay_events(parse_trace(json.dumps(trace).encode()))
    in_use, curve, handles = 0, {}, {}
    for e in events:
        if e["kind"] == "storage.alloc":
            assert e["handle"] not in handles
            handles[e["handle"]] = e["nbytes"]
            in_use += e["nbytes"]
        elif e["kind"] == "storage.free":
            assert handles.pop(e["handle"]) == e["nbytes"]  # a live block, freed once, at its size
            in_use -= e["nbytes"]
        curve[e["t_ns"]] = in_use
    expected = {c["ts"] * 1000: c["args"]["bytes"] for c in trace["traceEvents"][1:]}
    assert {t: v for t, v in curve.items() if t in expected} == {t: v for t, v in expected.items() if t in curve}
    assert all(curve.get(t, 0) == v for t, v in expected.items())


def test_a_fall_frees_the_most_recent_block_of_that_size_first():
    ledger = _StorageLedger()
    assert ledger.move_to(100) == [("alloc", 1, 100)]
    assert ledger.move_to(130) == [("alloc", 2, 30)]
    assert ledger.move_to(230) == [("alloc", 3, 100)]
    assert ledger.move_to(130) == [("free", 3, 100)]  # exact size: the most recent 100
    assert ledger.move_to(30) == [("free", 1, 100)]  # exact size again, the older 100
    assert ledger.move_to(10) == [("free", 2, 30), ("alloc", 4, 10)]  # no 20-byte block: free, then allocate back
    assert ledger.in_use == 10 and ledger.live == {4: 10}


def test_a_replay_over_its_time_limit_is_refused():
    data = json.dumps(_sawtooth_trace(10_000)).encode()
    with pytest.raises(TraceError, match=r"took more than 1e-09 s"):
        deadline = Deadline(1e-9)
        replay_events(parse_trace(data, deadline=deadline), deadline)


def test_the_largest_trace_replays_while_health_keeps_answering(live_server):
    """The upload runs off the event loop: /api/health answers while it replays."""
    _, port = live_server
    base = f"http://127.0.0.1:{port}"
    body = json.dumps(_sawtooth_trace(MAX_TRACE_EVENTS - 1)).encode()
    assert len(body) <= MAX_TRACE_BYTES
    upload: dict = {}

    def send() -> None:
        upload["response"] = httpx.post(
            f"{base}/api/traces", content=body, headers={"content-type": "application/json"}, timeout=120
        )
        upload["done"] = time.monotonic()

    sender = threading.Thread(target=send)
    sender.start()
    answered = []
    while sender.is_alive():
        assert httpx.get(f"{base}/api/health", timeout=60).status_code == 200
        answered.append(time.monotonic())
        time.sleep(0.02)
    sender.join()
    assert upload["response"].status_code == 201, upload["response"].text
    assert upload["response"].json()["result"]["trace_events"] == MAX_TRACE_EVENTS
    during = [t for t in answered if t < upload["done"]]
    assert len(during) >= 3, f"only {len(during)} health answers while the upload was in progress"


def test_in_attach_mode_a_trace_replays_in_a_thread(manager, tmp_path):
    """No worker process in attach mode (it would re-import the user's script): same result."""
    app = create_app(manager, webui_dir=tmp_path, mode="attach", extra_hosts=TEST_HOSTS)
    with TestClient(app) as client:
        replay = client.post("/api/traces", json=_sawtooth_trace(50))
        assert replay.status_code == 201, replay.text
        counts = replay.json()["event_counts"]
        assert counts["storage.alloc"] >= 49 and replay.json()["result"]["trace_events"] == 51
