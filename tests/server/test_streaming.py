"""Batching and bounded queues, and a client that never reads, against a real uvicorn server."""

from __future__ import annotations

import json
import socket
import threading
import time

import httpx
import numpy as np
import pytest
import uvicorn
from websockets.sync.client import connect

import framework as mx
from framework import events
from framework.engine import create
from server.app import create_app
from server.serving import uvicorn_config
from server.streaming import Batch, ClientQueue, encode_events, events_message, history_chunks, json_safe


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


@pytest.fixture
def live_server(make_manager, tmp_path):
    """The app on a real uvicorn server in a thread, on a free loopback port."""
    manager = make_manager()
    app = create_app(manager, webui_dir=tmp_path, client_queue_events=5000)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn_config(app, lifespan="off", timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield manager, sock.getsockname()[1]
    server.should_exit = True
    thread.join(10)


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
