"""Monitor statistics on the wire: a training run's stream carries its ``monitor.stat`` events,
and NaN or infinite statistics arrive as the strings strict JSON allows."""

from __future__ import annotations

import math
from typing import Any

from server_helpers import stream_events, wait_for
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from framework import events
from server import strict_json
from server.frames import Frame, as_raw, decode_frame


def read_strict(client: TestClient, run_id: str) -> list[dict[str, Any]]:
    """Every message of the run's WebSocket, each parsed as strict JSON (no NaN, no Infinity)."""
    messages = []
    with client.websocket_connect(f"/api/runs/{run_id}/events") as ws:
        while True:
            try:
                messages.append(strict_json.loads(ws.receive_text()))
            except WebSocketDisconnect:
                return messages


def test_a_training_runs_stream_carries_its_monitor_table(client):
    params = {"epochs": 1, "monitor_interval": 15, "monitor_pattern": "fc.*"}
    run = client.post("/api/runs", json={"scenario": "train_mlp", "params": params}).json()
    summary = wait_for(client, run["id"])
    assert summary["status"] == "done", summary["error"]
    stats = [e for e in stream_events(read_strict(client, run["id"])) if e["kind"] == "monitor.stat"]
    names = ["fc1_output", "fc2_output", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]
    batches = sorted({e["batch"] for e in stats})
    assert batches == [1, 16, 31] and [e["name"] for e in stats] == names * 3  # 45 batches, every 15th
    assert summary["event_counts"]["monitor.stat"] == len(stats)
    for event in stats:
        assert set(event) == {"kind", "t_ns", "batch", "name", "role", "stat", "value"}
        assert event["role"] == ("output" if event["name"].endswith("_output") else "argument")
        assert event["stat"] == "rms" and isinstance(event["value"], float) and math.isfinite(event["value"])


def test_nan_and_infinite_statistics_arrive_as_strings(client):
    run = client.post("/api/runs", json={"scenario": "monitor_nan"}).json()
    summary = wait_for(client, run["id"])
    assert summary["status"] == "done", summary["error"]
    stats = [e for e in stream_events(read_strict(client, run["id"])) if e["kind"] == "monitor.stat"]
    by_name = {e["name"]: e["value"] for e in stats}
    assert len(stats) == 2 * 4  # fc_output, data, fc_weight, fc_bias; two batches
    assert by_name["fc_output"] == by_name["fc_bias"] == "nan"
    assert by_name["fc_weight"] == by_name["data"] == ["nan", "inf", "-inf"]
    assert {e["stat"] for e in stats} == {"diverged"}


def test_encoding_a_recorded_monitor_event_is_strict_json():
    """The same rule without a worker: the frame encoder the stream and the attach mode share."""
    nan_event = {"kind": "monitor.stat", "t_ns": 1, "batch": 1, "name": "fc1_output", "role": "output"}
    raw = [
        as_raw({**nan_event, "stat": "rms", "value": math.nan}),
        as_raw({**nan_event, "stat": "x", "value": [1.5, -math.inf]}),
    ]
    decoded = decode_frame(strict_json.loads(Frame.of(0, raw).json))
    assert [e["value"] for e in decoded] == ["nan", [1.5, "-inf"]]
    assert tuple(k for k in decoded[0] if k not in ("kind", "t_ns")) == events.KINDS["monitor.stat"]
