"""Helpers shared by the server tests: wait for a run, read a run's WebSocket."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from server.app import create_app
from server.frames import decode_frame
from server.runs import RunManager
from server.serving import uvicorn_config

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
    """The events of ``frames`` messages, checking that each frame continues the previous one whole."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message["type"] == "frames":
            for frame in message["frames"]:
                assert frame["seq"] == len(out) and "dropped" not in frame, (frame["seq"], len(out))
                out.extend(decode_frame(frame))
    return out


@contextlib.contextmanager
def serve_in_thread(manager: RunManager, webui_dir: Path, **app_settings: Any) -> Iterator[int]:
    """The app on a real uvicorn server in a daemon thread, on a free loopback port (yielded)."""
    app = create_app(manager, webui_dir=webui_dir, **app_settings)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    server = uvicorn.Server(uvicorn_config(app, lifespan="off", timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.01)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
