"""Batching and bounded queues, and a client that never reads, against a real uvicorn server."""

from __future__ import annotations

import json
import socket
import time

import httpx
import numpy as np
import pytest
from server_helpers import TEST_HOSTS
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect
from websockets.sync.client import connect

import framework as mx
from framework import events
from framework.engine import create
from server.app import create_app
from server.runs import Run
from server.streaming import (
    Batch,
    ClientLimits,
    ClientQueue,
    PackedBatch,
    encode_events,
    events_message,
    history_chunks,
    json_safe,
)


def test_encoding_is_json_with_non_json_values_as_strings():
    text = encode_events([{"kind": "a", "ctx": mx.cpu(1), "v": (1, 2), "x": np.float32(0.5), "n": float("nan")}])
    assert json.loads(f"[{text}]") == [{"kind": "a", "ctx": "cpu(1)", "v": [1, 2], "x": 0.5, "n": "nan"}]
    assert json_safe({(1, 2): float("inf"), "ok": [np.int64(3)]}) == {"(1, 2)": "inf", "ok": [3]}
    assert encode_events([]) == ""


def test_a_full_queue_drops_whole_batches_until_emptied():
    queue = ClientQueue(bound=10)
    queue.offer(Batch(0, 6, "x"))
    queue.offer(Batch(6, 6, "x"))  # does not fit: dropped
    queue.offer(Batch(12, 1, "x"))  # would fit, but the queue overflowed: dropped too (no gap inside a message)
    assert len(queue) == 6 and queue.dropped == 7
    batches, dropped = queue.take()
    assert [b.seq for b in batches] == [0] and dropped == 7 and len(queue) == 0
    queue.offer(Batch(13, 4, "x"))
    assert [b.seq for b in queue.take()[0]] == [13]
    with pytest.raises(ValueError, match="bound must be >= 1"):
        ClientQueue(0)


def test_messages_and_history_chunks():
    batches = [Batch(0, 2, '{"a":1},{"a":2}'), Batch(2, 3000, "[x]"), Batch(3002, 3000, "[y]"), Batch(6002, 1, "{}")]
    assert [[b.seq for b in c] for c in history_chunks(batches, 5000)] == [[0, 2], [3002, 6002]]
    message = json.loads(events_message(batches[:1], dropped=4))
    assert message == {"type": "events", "seq": 0, "events": [{"a": 1}, {"a": 2}], "dropped": 4}
    assert json.loads(events_message([], 0)) == {"type": "events", "seq": 0, "events": [], "dropped": 0}


def test_a_queue_is_bounded_in_characters_too():
    queue = ClientQueue(bound=1000, bound_bytes=10)
    queue.offer(Batch(0, 1, "x" * 6))
    queue.offer(Batch(1, 1, "y" * 6))  # 12 characters would exceed 10: dropped
    assert len(queue) == 1 and queue.chars == 6 and queue.dropped == 1
    assert queue.take()[0][0].seq == 0 and queue.chars == 0
    queue.offer(Batch(2, 1, "z" * 50))  # larger than the bound, but alone: it passes (a batch is never split)
    assert [b.seq for b in queue.take()[0]] == [2]
    with pytest.raises(ValueError, match="bound_bytes must be >= 1"):
        ClientQueue(10, 0)
    big = [Batch(0, 1, "a" * 8), Batch(1, 1, "b" * 8), Batch(2, 1, "c")]
    assert [[b.seq for b in c] for c in history_chunks(big, 5000, max_chars=10)] == [[0], [1, 2]]


def test_a_finished_runs_history_is_kept_compressed_and_reads_the_same():
    run = Run("r", "replay", {})
    events = [
        {"kind": "engine.start", "t_ns": i, "op": i, "worker": "cpu(0)/normal/0", "stream": None} for i in range(5000)
    ]
    run.publish_events(events)
    plain = list(run.history)
    assert all(isinstance(b, Batch) for b in plain)
    run.finish("done")
    assert all(isinstance(b, PackedBatch) for b in run.history)
    assert sum(len(b.data) for b in run.history) * 5 < sum(b.chars for b in plain)  # at least 5x smaller
    assert [(b.seq, b.count, b.chars, b.json) for b in run.history] == [
        (b.seq, b.count, b.chars, b.json) for b in plain
    ]
    assert run.events() == events
    assert json.loads(events_message(run.history[:1], 0))["events"] == events[: run.history[0].count]


def test_client_limits_count_per_run_and_in_total():
    limits = ClientLimits(max_clients=3, max_per_run=2)
    assert limits.enter("a") is None and limits.enter("a") is None
    assert "too many clients on this run: 2 at once" in limits.enter("a")
    assert limits.enter("b") is None
    assert "the server allows 3 at once" in limits.enter("c")
    limits.leave("a")
    assert limits.enter("c") is None and limits.total == 3 and limits.per_run == {"a": 1, "b": 1, "c": 1}
    with pytest.raises(ValueError, match="limits must be >= 1"):
        ClientLimits(0, 1)


def _close_of(ws) -> tuple[int, str]:
    try:
        while True:
            ws.receive_json()
    except WebSocketDisconnect as closed:
        return closed.code, closed.reason


def test_websockets_beyond_the_limits_are_closed_with_1013_and_a_reason(manager, tmp_path):
    for run_id in ("one", "two"):
        manager.add_live(Run(run_id, "attach", {})).set_running()
    app = create_app(manager, webui_dir=tmp_path, extra_hosts=TEST_HOSTS, max_clients=3, max_clients_per_run=2)
    client = TestClient(app)
    with client.websocket_connect("/api/runs/one/events") as a, client.websocket_connect("/api/runs/one/events") as b:
        assert a.receive_json()["type"] == b.receive_json()["type"] == "hello"
        with client.websocket_connect("/api/runs/one/events") as refused:
            assert _close_of(refused) == (1013, "too many clients on this run: 2 at once; try again later")
        with client.websocket_connect("/api/runs/two/events") as c:
            assert c.receive_json()["type"] == "hello"
            with client.websocket_connect("/api/runs/two/events") as refused:
                code, reason = _close_of(refused)
                assert code == 1013 and "the server allows 3 at once" in reason
    with client.websocket_connect("/api/runs/one/events") as again:  # the closed ones were counted out
        assert again.receive_json()["type"] == "hello"


def _stalled_websocket(port: int, path: str) -> socket.socket:
    """Open a WebSocket and never read a byte (not even the handshake answer)."""
    raw = socket.create_connection(("127.0.0.1", port))
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.sendall(
        (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    return raw


@pytest.mark.slow  # streams until a queue overflows
def test_a_client_that_never_reads_is_isolated_and_bounded(live_server):
    manager, port = live_server

    base = f"http://127.0.0.1:{port}"
    run = httpx.post(f"{base}/api/runs", json={"scenario": "flood", "params": {"events": 80_000, "per_ms": 25}}).json()
    stalled = _stalled_websocket(port, f"/api/runs/{run['id']}/events")
    time.sleep(0.3)  # the stalled client is attached before most events exist
    received, dropped = [], []
    with connect(f"ws://127.0.0.1:{port}/api/runs/{run['id']}/events", max_size=None) as ws:
        for text in ws:
            message = json.loads(text)
            if message["type"] == "events":
                received.extend(message["events"])
                dropped.append(message["dropped"])
            if message["type"] == "status" and message["run"]["status"] in ("done", "failed"):
                final = message["run"]
    assert final["status"] == "done"
    assert len(received) == final["events"] and dropped[-1] == 0  # the reading client lost nothing
    live = manager.get(run["id"])
    stuck = live.clients
    assert len(stuck) == 1, "the stalled client is still attached"
    assert len(stuck[0]) <= 5000 and stuck[0].dropped > 0  # its queue stayed within its bound
    stalled.close()
    deadline = time.monotonic() + 10
    while live.clients and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live.clients == []  # closing the socket frees the server side
    assert httpx.get(f"{base}/api/health").json()["status"] == "ok"


def test_the_engine_event_templates_give_the_same_json_as_json_dumps():
    engine = create("ThreadedEnginePerDevice", 2)
    with events.record() as recorder:
        a, b = engine.new_variable("a"), engine.new_variable('b "quoted" \\ \u00e9')
        engine.push_sync(lambda run_ctx: None, mx.cpu(), const_vars=[a], mutable_vars=[b], name='op "1"\n')
        engine.push_sync(lambda run_ctx: None, mx.cpu(), mutable_vars=[a, b], priority=3)
        engine.wait_for_all()
    engine.stop()
    assert {"engine.push", "engine.start", "engine.end"} <= {e["kind"] for e in recorder.events}
    assert json.loads(f"[{encode_events(recorder.events)}]") == json.loads(json.dumps(recorder.events))
    odd = [
        {"kind": "engine.start", "t_ns": 1, "op": True, "worker": "w", "stream": None},  # bool is not an op id
        {"kind": "engine.end", "t_ns": 1, "op": 2, "worker": "w", "stream": "s0", "error": "boom"},
        {"kind": "engine.push", "t_ns": 1, "op": 3, "name": "n", "ctx": "c", "reads": [1.5], "writes": [], "x": 0},
        {"kind": "engine.start", "t_ns": 1, "op": 4, "worker": "w", "other": None},
    ]
    assert json.loads(f"[{encode_events(odd)}]") == odd


@pytest.mark.slow  # waits for the send timeout and the abort grace
def test_a_client_that_never_reads_is_dropped_after_the_send_timeout(make_live_server):
    manager, port = make_live_server(send_timeout=1.0, client_queue_events=5000)
    base = f"http://127.0.0.1:{port}"
    run = httpx.post(f"{base}/api/runs", json={"scenario": "flood", "params": {"events": 200_000, "per_ms": 50}}).json()
    stalled = _stalled_websocket(port, f"/api/runs/{run['id']}/events")
    live = manager.get(run["id"])
    deadline = time.monotonic() + 30
    while not live.clients and time.monotonic() < deadline:
        time.sleep(0.02)
    assert live.clients, "the stalled client never attached"
    while live.clients and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live.clients == [], "the stalled client was not detached after its send timeout"
    # The server side aborted the connection: reading now gets what was buffered, then the reset or EOF.
    stalled.settimeout(30)
    try:
        while stalled.recv(1 << 16):
            pass
    except ConnectionResetError:
        pass
    stalled.close()
    assert httpx.get(f"{base}/api/health").json()["status"] == "ok"
    httpx.post(f"{base}/api/runs/{run['id']}/cancel")
