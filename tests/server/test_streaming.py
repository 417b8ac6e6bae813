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
from server.frames import Frame, PackedFrame, decode_frame, encode_blocks, frames_message, json_safe
from server.runs import Run
from server.streaming import BATCH_MAX_EVENTS, SPARSE_RESERVE_SHARE, ClientLimits, ClientQueue, history_chunks
from server.worker import EventForwarder


def _frame(seq: int, kinds: dict[str, int]) -> Frame:
    """A frame of ``kinds[k]`` events of each kind ``k`` (fields of a monitor-like kind)."""
    raw = [(kind, seq + i, {"x": i}) for kind, n in kinds.items() for i in range(n)]
    return Frame.of(seq, raw)


def _events_of(message: dict) -> list[dict]:
    return [event for frame in message["frames"] for event in decode_frame(frame)]


def test_encoding_is_json_with_non_json_values_as_strings():
    frame = Frame.of(0, [("a", 1, {"ctx": mx.cpu(1), "v": (1, 2), "x": np.float32(0.5), "n": float("nan")})])
    assert frame.decode() == [{"kind": "a", "t_ns": 1, "ctx": "cpu(1)", "v": [1, 2], "x": 0.5, "n": "nan"}]
    assert json_safe({(1, 2): float("inf"), "ok": [np.int64(3)]}) == {"(1, 2)": "inf", "ok": [3]}
    assert encode_blocks([]) == () and Frame.of(5, []).decode() == []


def test_a_frame_is_column_arrays_per_kind_with_constant_fields_sent_once():
    raw = [
        ("engine.push", 10, (7, "a", "cpu(0)", [], [1], 0, "normal")),
        ("engine.start", 11, (7, "w0", None)),
        ("engine.push", 12, (8, "b", "cpu(0)", [1], [2], 0, "normal")),
        ("monitor", 13, {"name": "fc1_output", "value": 0.5}),  # any kind passes, with its own field names
        ("monitor", 14, {"name": "fc2_output"}),  # other field names: a block of its own
    ]
    frame = json.loads(Frame.of(120, raw).json)
    assert frame["seq"] == 120 and frame["n"] == 5
    push, start, monitor, monitor_short = frame["blocks"]
    assert push["kind"] == "engine.push" and push["n"] == 2 and push["i"] == [0, 2] and push["t_ns"] == [10, 12]
    assert push["fields"]["op"] == [7, 8] and push["fields"]["reads"] == [[], [1]]
    assert push["fields"]["ctx"] == {"all": "cpu(0)"} and push["fields"]["priority"] == {"all": 0}
    assert start["i"] == [1] and start["fields"] == {"op": {"all": 7}, "worker": {"all": "w0"}, "stream": {"all": None}}
    assert monitor["kind"] == "monitor" and monitor["fields"] == {"name": {"all": "fc1_output"}, "value": {"all": 0.5}}
    assert monitor_short["i"] == [4] and monitor_short["fields"] == {"name": {"all": "fc2_output"}}
    decoded = decode_frame(frame)  # publication order comes back from the positions
    assert [e["t_ns"] for e in decoded] == [10, 11, 12, 13, 14]
    assert decoded[0] == {
        "kind": "engine.push", "t_ns": 10, "op": 7, "name": "a", "ctx": "cpu(0)", "reads": [], "writes": [1],
        "priority": 0, "prop": "normal",
    }  # fmt: skip
    assert decoded[3] == {"kind": "monitor", "t_ns": 13, "name": "fc1_output", "value": 0.5}


def test_a_column_is_constant_only_when_values_and_types_agree():
    raw = [("k", 1, {"v": 1}), ("k", 2, {"v": True}), ("k", 3, {"v": 1.0})]  # 1 == True == 1.0, types differ
    assert json.loads(Frame.of(0, raw).json)["blocks"][0]["fields"]["v"] == [1, True, 1.0]
    arrays = [("k", 1, {"v": np.zeros(2)}), ("k", 2, {"v": np.zeros(2)})]  # == gives an array: not constant
    assert Frame.of(0, arrays).decode()[1]["v"] == [0.0, 0.0]
    nans = [("k", 1, {"v": float("nan")}), ("k", 2, {"v": float("nan")})]
    assert [e["v"] for e in Frame.of(0, nans).decode()] == ["nan", "nan"]


def test_values_that_do_not_match_the_kinds_table_are_named():
    with pytest.raises(ValueError, match=r"engine.start has fields \('op', 'worker', 'stream'\), got 2 values"):
        Frame.of(0, [("engine.start", 1, (7, "w", None)), ("engine.start", 2, (8, "w"))])


def test_a_full_queue_thins_frames_to_their_sparse_kinds_until_taken():
    queue = ClientQueue(bound=10, sparse_events=2)  # whole frames up to 10 events, thinned ones up to 12.5
    queue.offer(_frame(0, {"engine.push": 6}))
    queue.offer(_frame(6, {"engine.push": 6, "train.metric": 1}))  # does not fit: the metric passes alone
    queue.offer(_frame(13, {"engine.push": 1}))  # would fit, but the client is behind: thinned too (1 <= 2 passes)
    assert len(queue) == 6 + 1 + 1 and queue.dropped == 6 and queue.dropped_kinds == {"engine.push": 6}
    frames, dropped, dropped_kinds = queue.take()
    assert [f.seq for f in frames] == [0, 6, 13] and dropped == 6 and dropped_kinds == {"engine.push": 6}
    assert [e["kind"] for e in frames[1].decode()] == ["train.metric"]
    message = json.loads(frames_message(frames, dropped, dropped_kinds))
    assert message["frames"][1]["dropped"] == {"engine.push": 6} and message["frames"][1]["n"] == 7
    assert message["dropped"] == 6 and message["dropped_kinds"] == {"engine.push": 6}
    assert len(queue) == 0
    queue.offer(_frame(14, {"engine.push": 4}))  # taken: whole frames again
    assert [f.held for f in queue.take()[0]] == [4]
    with pytest.raises(ValueError, match="bound must be >= 1"):
        ClientQueue(0)
    with pytest.raises(ValueError, match="sparse_events must be >= 0"):
        ClientQueue(10, sparse_events=-1)


def test_a_queue_stays_bounded_when_even_thinned_frames_do_not_fit():
    queue = ClientQueue(bound=20, sparse_events=5)
    for seq in range(0, 1000, 10):  # a client that never reads: 100 frames of 9 pushes and 1 metric
        queue.offer(_frame(seq, {"engine.push": 9, "train.metric": 1}))
    # two frames whole (the bound), then metrics alone up to a quarter more, then nothing
    assert len(queue) == 25 and queue.dropped + len(queue) == 1000
    assert queue.dropped_kinds == {"engine.push": 900 - 18, "train.metric": 100 - 2 - 5}


def test_messages_and_history_chunks():
    frames = [_frame(0, {"a": 2}), _frame(2, {"a": 3000}), _frame(3002, {"a": 3000}), _frame(6002, {"a": 1})]
    assert [[f.seq for f in c] for c in history_chunks(frames, 5000)] == [[0, 2], [3002, 6002]]
    message = json.loads(frames_message(frames[:1], dropped=4, dropped_kinds={"a": 4}))
    assert message["type"] == "frames" and message["dropped"] == 4 and message["dropped_kinds"] == {"a": 4}
    assert _events_of(message) == [{"kind": "a", "t_ns": 0, "x": 0}, {"kind": "a", "t_ns": 1, "x": 1}]
    empty = json.loads(frames_message([], 0, {}))
    assert empty == {"type": "frames", "frames": [], "dropped": 0, "dropped_kinds": {}}


def test_a_queue_is_bounded_in_characters_too():
    small, large = _frame(0, {"a": 1}), _frame(1, {"a": 40})
    queue = ClientQueue(bound=1000, bound_bytes=small.chars + 10, sparse_events=0)
    queue.offer(small)
    queue.offer(_frame(1, {"a": 1}))  # two small frames exceed the characters: dropped (nothing is sparse)
    assert len(queue) == 1 and queue.chars == small.chars and queue.dropped == 1
    assert queue.take()[0][0].seq == 0 and queue.chars == 0
    queue.offer(large)  # larger than the bound, but alone: it passes (a frame is never split)
    assert [f.seq for f in queue.take()[0]] == [1]
    with pytest.raises(ValueError, match="bound_bytes must be >= 1"):
        ClientQueue(10, 0)
    assert [[f.seq for f in c] for c in history_chunks([small, large, small], 5000, large.chars)] == [[0], [1], [0]]


def test_a_finished_runs_history_is_kept_compressed_and_reads_the_same():
    run = Run("r", "replay", {})
    events = [  # columns of arrays (no compact form shortens them) that repeat themselves: zlib's part
        {"kind": "engine.start", "t_ns": i, "op": i % 7, "worker": f"cpu(0)/normal/{i % 2}", "stream": None}
        for i in range(5000)
    ]
    run.publish_events(events)
    plain = list(run.history)
    assert all(isinstance(f, Frame) for f in plain)
    run.finish("done")
    assert all(isinstance(f, PackedFrame) for f in run.history)
    assert sum(len(f.data) for f in run.history) * 2 < sum(f.chars for f in plain)  # at least 2x smaller
    assert [(f.seq, f.count, f.json) for f in run.history] == [(f.seq, f.count, f.json) for f in plain]
    assert run.events() == events
    assert _events_of(json.loads(frames_message(run.history[:1], 0, {}))) == events[: run.history[0].count]
    assert run.history[0].kind_counts() == {"engine.start": run.history[0].count}


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
    # Frames are compact: padded events make the flood outgrow the socket buffers (megabytes), so a send blocks.
    flood = {"events": 80_000, "per_ms": 25, "pad": 100}
    run = httpx.post(f"{base}/api/runs", json={"scenario": "flood", "params": flood}).json()
    stalled = _stalled_websocket(port, f"/api/runs/{run['id']}/events")
    time.sleep(0.3)  # the stalled client is attached before most events exist
    received, dropped = [], []
    with connect(f"ws://127.0.0.1:{port}/api/runs/{run['id']}/events", max_size=None) as ws:
        for text in ws:
            message = json.loads(text)
            if message["type"] == "frames":
                received.extend(_events_of(message))
                dropped.append(message["dropped"])
            if message["type"] == "status" and message["run"]["status"] in ("done", "failed"):
                final = message["run"]
    assert final["status"] == "done"  # the stalled client never held the producer up
    live = manager.get(run["id"])
    # Nothing lost silently: every event reached the reading client or is counted, as thinned for
    # this client (its own ``dropped``: on a loaded machine it can fall behind by itself) or as
    # evicted from the history before it connected. On a quiet machine both counts are 0.
    assert received and len(received) + dropped[-1] + live.dropped_history == final["events"]
    stuck = live.clients
    assert len(stuck) == 1, "the stalled client is still attached"
    # its queue stayed within its bound (whole frames) and the reserve for thinned ones
    assert len(stuck[0]) <= 5000 * (1 + SPARSE_RESERVE_SHARE) and stuck[0].dropped > 0
    # the flood's kind, counted (a loaded machine may drop a few rare events of the run's too, counted by kind)
    assert "train.metric" in stuck[0].dropped_kinds and set(stuck[0].dropped_kinds) <= set(live.event_counts)
    stalled.close()
    deadline = time.monotonic() + 10
    while live.clients and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live.clients == []  # closing the socket frees the server side
    assert httpx.get(f"{base}/api/health").json()["status"] == "ok"


def test_engine_events_come_back_from_a_frame_as_json_dumps_says_them():
    engine = create("ThreadedEnginePerDevice", 2)
    raw: list = []
    with events.subscribe(raw.append, raw=True):
        a, b = engine.new_variable("a"), engine.new_variable('b "quoted" \\ \u00e9')
        engine.push_sync(lambda run_ctx: None, mx.cpu(), const_vars=[a], mutable_vars=[b], name='op "1"\n')
        engine.push_sync(lambda run_ctx: None, mx.cpu(), mutable_vars=[a, b], priority=3)
        engine.wait_for_all()
    engine.stop()
    dicts = [events.to_dict(e) for e in raw]
    assert {"engine.push", "engine.start", "engine.end"} <= {e["kind"] for e in dicts}
    assert Frame.of(0, raw).decode() == json.loads(json.dumps(dicts))
    odd = [
        {"kind": "engine.start", "t_ns": 1, "op": True, "worker": "w", "stream": None},
        {"kind": "engine.end", "t_ns": 1, "op": 2, "worker": "w", "stream": "s0", "error": "boom"},
        {"kind": "engine.push", "t_ns": 1, "op": 3, "name": "n", "ctx": "c", "reads": [1.5], "writes": [], "x": 0},
        {"kind": "engine.start", "t_ns": 1, "op": 4, "worker": "w", "other": None},
    ]
    run = Run("odd", "replay", {})
    run.publish_events(odd)
    assert run.events() == odd


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


def test_the_forwarder_counts_and_the_run_shows_engine_op_as_its_three_events(make_engine):
    engine = make_engine("ThreadedEnginePerDevice", 2)
    var = engine.new_variable("v")
    batches: list[list[events.RawEvent]] = []
    forwarder = EventForwarder(lambda tag, payload: batches.append(payload) if tag == "events" else None)
    subscription = forwarder.subscribe()
    forwarder.start()
    try:
        for _ in range(50):
            engine.push_sync(lambda rc: None, mx.cpu(0), mutable_vars=[var], name="tiny")
        engine.wait_for_all()
    finally:
        events.unsubscribe(subscription)
        forwarder.stop()
    sent = [raw for batch in batches for raw in batch]
    assert any(raw[0] == "engine.op" for raw in sent)  # the watched process sent combined events
    assert "engine.op" not in forwarder.counts
    assert [forwarder.counts[k] for k in ("engine.push", "engine.start", "engine.end")] == [50, 50, 50]
    assert forwarder.forwarded == sum(forwarder.counts.values())
    run = Run("r", "dispatch", {})
    run.publish_raw(sent)
    shown = run.events()
    assert run.total_events == forwarder.forwarded == len(shown)
    assert "engine.op" not in {e["kind"] for e in shown}
    ops = [e for e in shown if e["kind"] == "engine.push"]
    assert len(ops) == 50 and all(e["writes"] == [var.id] and e["name"] == "tiny" for e in ops)


def _operation(op: int, t_end: int, reads: tuple[int, ...] = (1,), worker: str = "w/0") -> events.RawEvent:
    """One engine.op raw event (push at t_end - 20, start at t_end - 10)."""
    return (
        "engine.op",
        t_end,
        (op, f"op{op}", "cpu(0)", reads, (9,), 0, "normal", worker, None, None, t_end - 20, t_end - 10),
    )


def test_a_frame_encodes_engine_op_as_the_three_events_expand_gives():
    as_dict = ("engine.op", 95, dict(zip(events.KINDS["engine.op"], _operation(5, 95)[2], strict=True)))
    raws = [
        ("engine.push", 1, (1, "long", "cpu(0)", [], [9], 0, "normal")),  # a sampled push: its own block
        _operation(2, 50),
        ("monitor.stat", 60, (1, "fc_output", "output", "rms", 0.5)),
        _operation(3, 70, reads=(), worker="w/1"),
        ("engine.end", 80, (1, "w/0", None, None)),
        as_dict,  # engine.op published with a dict of fields
        _operation(4, 99),
    ]
    expanded = events.expand(raws)
    frame = Frame.of(40, raws)
    assert frame.count == len(expanded) == 15
    assert frame.decode() == Frame.of(40, expanded).decode()
    assert frame.kind_counts() == {"engine.push": 5, "engine.start": 4, "engine.end": 5, "monitor.stat": 1}
    only_ops = [_operation(i, 100 * i) for i in range(1, 6)]
    assert Frame.of(0, only_ops).json == Frame.of(0, events.expand(only_ops)).json  # the same text, byte for byte
    with pytest.raises(ValueError, match=r"engine.op has fields .* got 3 values"):
        Frame.of(0, [("engine.op", 1, (1, 2, 3))])


def test_a_run_keeps_frames_of_engine_op_within_the_frame_bound():
    run = Run("r", "attach", {})
    run.publish_raw([_operation(i, 100 + i) for i in range(3000)])
    assert run.total_events == 9000 and all(frame.count <= BATCH_MAX_EVENTS for frame in run.history)
    pushes = [e["op"] for e in run.events() if e["kind"] == "engine.push"]
    assert pushes == list(range(3000))
