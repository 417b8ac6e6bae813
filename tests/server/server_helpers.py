"""Helpers shared by the server tests: wait for a run, read a run's WebSocket."""

from __future__ import annotations

import time
from typing import Any

from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

FINAL = {"done", "failed", "cancelled", "timeout"}
TEST_HOSTS = ("testserver",)  # the Host name of Starlette's test client, accepted besides loopback names


def wait_for(client: TestClient, run_id: str, timeout: float = 60.0) -> dict[str, Any]:
    """Poll a run until it reaches a final status; returns its summary."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        summary = client.get(f"/api/runs/{run_id}").json()
        if summary["status"] in FINAL:
            return summary
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not finish within {timeout} s: {summary}")


def read_stream(client: TestClient, run_id: str, **params: str) -> tuple[list[dict[str, Any]], int]:
    """Every message of a run's WebSocket until the server closes it, and the close code."""
    messages = []
    query = "&".join(f"{k}={v}" for k, v in params.items())
    with client.websocket_connect(f"/api/runs/{run_id}/events" + (f"?{query}" if query else "")) as ws:
        while True:
            try:
                messages.append(ws.receive_json())
            except WebSocketDisconnect as closed:
                return messages, closed.code


def stream_events(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events of ``events`` messages, checking that each message continues the previous one."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message["type"] == "events":
            assert message["seq"] == len(out) or not message["events"], (message["seq"], len(out))
            out.extend(message["events"])
    return out
