"""The REST API and the event WebSocket, on the real scenarios with default parameters."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from server_helpers import TEST_HOSTS, read_stream, stream_events, wait_for
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from framework import profiler
from framework.engine import ENGINE_TYPES
from server.app import ReleasingIterator, create_app
from server.scenarios import REGISTRY, SCENARIO_MODULES


def test_health_reports_server_mode(client):
    assert client.get("/api/health").json() == {"status": "ok", "version": "0.1.0", "mode": "server"}


def test_scenarios_list_names_schemas_and_defaults(client):
    listed = client.get("/api/scenarios").json()
    names = [s["name"] for s in listed]
    assert names[: len(SCENARIO_MODULES)] == list(SCENARIO_MODULES)
    engine = next(s for s in listed if s["name"] == "engine_basics")
    assert engine["defaults"] == {
        "engine_type": "ThreadedEnginePerDevice",
        "workers": 2,
        "chain_length": 4,
        "op_ms": 20.0,
        "program": "both",
        "loop": False,
    }
    props = engine["schema"]["properties"]
    assert props["workers"]["minimum"] == 1 and props["workers"]["maximum"] == 8
    assert props["engine_type"]["enum"] == list(ENGINE_TYPES)
    assert engine["tutorial"] == "tutorials/02-dependency-engine.md"


def test_openapi_docs_are_served(client):
    assert client.get("/docs").status_code == 200
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/api/runs", "/api/runs/{run_id}", "/api/traces", "/api/runs/{run_id}/graph.dot"} <= paths.keys()
    assert "scenario" in json.dumps(paths["/api/runs"]["post"]["requestBody"])


@pytest.mark.slow  # the training scenarios run for seconds
@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_scenario_runs_with_defaults_and_streams_every_event(client, name):
    created = client.post("/api/runs", json={"scenario": name})
    assert created.status_code == 201, created.text
    run = created.json()
    assert run["status"] in ("queued", "running") and run["params"] == REGISTRY[name].params().model_dump(mode="json")
    messages, code = read_stream(client, run["id"])
    assert code == 1000
    assert messages[0]["type"] == "hello" and messages[0]["run"]["id"] == run["id"]
    assert messages[-1]["type"] == "status" and messages[-1]["run"]["status"] == "done", messages[-1]
    received = stream_events(messages)
    assert all(m["dropped"] == 0 and m["dropped_kinds"] == {} for m in messages if m["type"] == "frames")
    summary = client.get(f"/api/runs/{run['id']}").json()
    assert summary["status"] == "done" and summary["error"] is None
    counts = dict(Counter(e["kind"] for e in received))
    # No event lost: what the client got is what the worker counted and the server stored.
    assert counts == summary["result"]["event_counts"] == summary["event_counts"]
    assert summary["events"] == len(received) > 0
    # Every operation the engine was given also started and ended.
    assert counts.get("engine.push", 0) == counts.get("engine.start", 0) == counts.get("engine.end", 0)
    if name == "engine_basics":
        assert counts["engine.push"] == summary["result"]["operations_pushed"] == 16
    if name == "rw_hazards":
        assert counts["engine.push"] == summary["result"]["operations"] == 3 * (1 + 3)
        assert summary["result"]["writes_exclusive"] is True
    assert all(isinstance(e["t_ns"], int) for e in received)


def test_late_joiner_gets_the_history_first(client):
    run = client.post("/api/runs", json={"scenario": "engine_basics", "params": {"chain_length": 2}}).json()
    wait_for(client, run["id"])
    messages, code = read_stream(client, run["id"])
    assert code == 1000
    assert messages[0]["type"] == "hello" and messages[0]["run"]["status"] == "done"
    assert len(stream_events(messages)) == client.get(f"/api/runs/{run['id']}").json()["events"]


def test_trace_download_is_a_chrome_trace_attachment(client):
    run = client.post("/api/runs", json={"scenario": "engine_basics", "params": {"program": "independent"}}).json()
    wait_for(client, run["id"])
    response = client.get(f"/api/runs/{run['id']}/trace")
    assert response.status_code == 200
    assert response.headers["content-disposition"] == f'attachment; filename="mxlab-engine_basics-{run["id"]}.json"'
    document = response.json()
    begins = [e for e in document["traceEvents"] if e["ph"] == "B"]
    assert sorted(e["name"] for e in begins) == sorted([f"P{i}" for i in range(1, 5)] + [f"Q{i}" for i in range(1, 5)])


def test_trace_downloads_are_streamed_one_at_a_time(client):
    replay = client.post("/api/traces", json=[{"ph": "X", "name": "op", "ts": i, "dur": 1} for i in range(5000)])
    run_id = replay.json()["id"]
    with client.stream("GET", f"/api/runs/{run_id}/trace") as first:
        assert first.status_code == 200 and "content-length" not in first.headers  # streamed in chunks
        chunks = first.iter_text()
        text = next(chunks)
        busy = client.get(f"/api/runs/{run_id}/trace")
        assert busy.status_code == 429 and "being prepared already" in busy.json()["detail"]
        text += "".join(chunks)
    assert len([e for e in json.loads(text)["traceEvents"] if e["ph"] == "B"]) == 5000
    assert client.get(f"/api/runs/{run_id}/trace").status_code == 200  # the slot was given back


def test_a_download_slot_is_released_even_if_never_started():
    released = []

    def chunks():
        yield "never read"

    iterator = ReleasingIterator(chunks(), lambda: released.append(1))
    del iterator
    assert released == [1]
    iterator = ReleasingIterator(iter(["a", "b"]), lambda: released.append(2))
    assert list(iterator) == ["a", "b"] and released == [1, 2]
    iterator.close()  # idempotent
    assert released == [1, 2]


def test_graph_dot_for_a_symbol_scenario_and_404_without_one(client):
    planned = client.post("/api/runs", json={"scenario": "memory_planning"}).json()
    engine = client.post("/api/runs", json={"scenario": "engine_basics", "params": {"chain_length": 1}}).json()
    assert wait_for(client, planned["id"])["has_graph"] is True
    response = client.get(f"/api/runs/{planned['id']}/graph.dot")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/vnd.graphviz")
    assert response.text.lstrip().startswith("digraph")
    assert wait_for(client, engine["id"])["has_graph"] is False
    missing = client.get(f"/api/runs/{engine['id']}/graph.dot")
    assert missing.status_code == 404 and missing.json() == {"detail": f"run {engine['id']} has no symbol graph"}


def test_runs_are_listed_newest_first_and_unknown_ids_are_404(client):
    first = client.post("/api/runs", json={"scenario": "engine_basics", "params": {"chain_length": 1}}).json()
    second = client.post("/api/runs", json={"scenario": "rw_hazards", "params": {"phases": 1}}).json()
    listed = [r["id"] for r in client.get("/api/runs").json()]
    assert listed[:2] == [second["id"], first["id"]]
    for path in ("/api/runs/nope", "/api/runs/nope/trace", "/api/runs/nope/graph.dot"):
        response = client.get(path)
        assert response.status_code == 404 and response.json() == {"detail": "unknown run 'nope'"}
    assert client.post("/api/runs/nope/cancel").status_code == 404
    wait_for(client, first["id"])
    wait_for(client, second["id"])


def test_cancel_stops_a_running_run_and_is_idempotent(client):
    run = client.post("/api/runs", json={"scenario": "hang", "params": {"seconds": 60.0}}).json()
    cancelled = client.post(f"/api/runs/{run['id']}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    again = client.post(f"/api/runs/{run['id']}/cancel").json()
    assert again["status"] == "cancelled" and again["ended"] == cancelled.json()["ended"]
    messages, code = read_stream(client, run["id"])
    assert code == 1000 and messages[0]["run"]["status"] == "cancelled"


def test_cancelling_a_finished_run_returns_it_unchanged(client):
    run = client.post("/api/runs", json={"scenario": "engine_basics", "params": {"chain_length": 1}}).json()
    done = wait_for(client, run["id"])
    assert client.post(f"/api/runs/{run['id']}/cancel").json() == done


def test_status_messages_follow_the_run_and_the_socket_closes_after_the_end(client):
    run = client.post("/api/runs", json={"scenario": "engine_basics", "params": {"op_ms": 50.0}}).json()
    messages, code = read_stream(client, run["id"])
    statuses = [m["run"]["status"] for m in messages if m["type"] in ("hello", "status")]
    assert statuses[-1] == "done" and code == 1000
    assert statuses == sorted(statuses, key=["queued", "running", "done"].index)
    last_events = max(i for i, m in enumerate(messages) if m["type"] == "frames")
    assert last_events < len(messages) - 1  # the final status comes after every event


def test_unknown_run_websocket_closes_with_4404(client):
    messages, code = read_stream(client, "does-not-exist")
    assert messages == [] and code == 4404


def test_old_finished_runs_are_evicted_beyond_max_runs(make_manager, tmp_path):

    client = TestClient(create_app(make_manager(max_runs=3, max_running=2), webui_dir=tmp_path, extra_hosts=TEST_HOSTS))
    ids = []
    for _ in range(5):
        ids.append(client.post("/api/runs", json={"scenario": "flood", "params": {"events": 10}}).json()["id"])
        wait_for(client, ids[-1])
    assert [r["id"] for r in client.get("/api/runs").json()] == ids[:1:-1]
    assert client.get(f"/api/runs/{ids[0]}").status_code == 404


def test_result_is_made_json_safe_and_graph_and_log_arrive(client):
    run = client.post("/api/runs", json={"scenario": "flood", "params": {"events": 5}}).json()
    summary = wait_for(client, run["id"])
    assert summary["result"]["nan"] == "nan" and summary["result"]["tuple"] == [1, 2]
    assert summary["result"]["context"] == "cpu(0)" and summary["result"]["published"] == 5
    assert summary["log"] == ["flooding"] and summary["has_graph"] is True
    assert client.get(f"/api/runs/{run['id']}/graph.dot").text == "digraph flood { a -> b; }"


def test_chrome_trace_of_a_run_matches_the_profilers_view_of_its_events(client, manager):
    run = client.post("/api/runs", json={"scenario": "rw_hazards", "params": {"phases": 1}}).json()
    wait_for(client, run["id"])
    events = manager.get(run["id"]).events()
    assert client.get(f"/api/runs/{run['id']}/trace").json() == json.loads(json.dumps(profiler.chrome_trace(events)))


def test_messages_from_the_client_are_ignored(client):
    run = client.post("/api/runs", json={"scenario": "engine_basics", "params": {"chain_length": 1}}).json()

    messages = []
    with client.websocket_connect(f"/api/runs/{run['id']}/events") as ws:
        ws.send_text('{"type": "run", "code": "import os; os._exit(1)"}')
        ws.send_bytes(b"\x00" * 1000)
        while True:
            try:
                messages.append(ws.receive_json())
            except WebSocketDisconnect as closed:
                assert closed.code == 1000
                break
    assert messages[-1]["run"]["status"] == "done"
    assert client.get("/api/health").status_code == 200
