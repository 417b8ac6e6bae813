"""Attach mode: ``server.attach()`` streams the calling process's events live."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx
import pytest
from websockets.sync.client import connect

import framework as mx
import server
from framework.engine import create
from server.frames import decode_frame


def test_attach_streams_this_processs_events_and_stops():
    subscriptions_before = mx.events._subscriptions
    handle = server.attach(port=0)
    try:
        base = handle.url.split("/?")[0]
        assert handle.url.endswith("/?run=live")
        assert httpx.get(f"{base}/api/health").json()["mode"] == "attach"
        live = httpx.get(f"{base}/api/runs/live").json()
        assert live["scenario"] == "attach" and live["status"] == "running"
        refused = httpx.post(f"{base}/api/runs", json={"scenario": "engine_basics"})
        assert refused.status_code == 409 and "python -m server" in refused.json()["detail"]
        ws_url = base.replace("http://", "ws://") + "/api/runs/live/events"
        with connect(ws_url, max_size=None) as ws:
            assert json.loads(ws.recv(timeout=10))["type"] == "hello"
            engine = create("ThreadedEnginePerDevice", 2)
            v = engine.new_variable("attached")
            for i in range(20):
                engine.push_sync(lambda run_ctx: None, mx.cpu(), mutable_vars=[v], name=f"live{i}")
            engine.wait_for_all()
            engine.stop()
            names: list[str] = []
            deadline = time.monotonic() + 10
            while len(names) < 20 and time.monotonic() < deadline:
                message = json.loads(ws.recv(timeout=10))
                if message["type"] == "frames":
                    events = [e for frame in message["frames"] for e in decode_frame(frame)]
                    names += [e["name"] for e in events if e["kind"] == "engine.push"]
            assert names == [f"live{i}" for i in range(20)]
            handle.stop()
            statuses = [json.loads(m) for m in ws]  # the rest, until the server closes
            assert statuses[-1]["type"] == "status" and statuses[-1]["run"]["status"] == "done"
    finally:
        handle.stop()
    assert not handle.running
    # the live feed unsubscribed: the event bus is back to the subscribers it had before
    assert mx.events._subscriptions == subscriptions_before
    assert mx.events.enabled is bool(subscriptions_before)
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{base}/api/health", timeout=2)


def test_attach_shows_the_scripts_own_monitor():
    """What docs/server.md promises: a script's mx.mon.Monitor reaches the live run, no change needed."""
    handle = server.attach(port=0)
    try:
        ws_url = handle.url.split("/?")[0].replace("http://", "ws://") + "/api/runs/live/events"
        with connect(ws_url, max_size=None) as ws:
            assert json.loads(ws.recv(timeout=10))["type"] == "hello"
            exe = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc").simple_bind(mx.cpu(), data=(2, 3))
            mon = mx.mon.Monitor(1, pattern="fc_")
            mon.install(exe)
            for _ in range(3):
                mon.tic()
                exe.forward()
                mon.toc()
            stats: list[dict] = []
            deadline = time.monotonic() + 10
            while len(stats) < 9 and time.monotonic() < deadline:
                message = json.loads(ws.recv(timeout=10))
                if message["type"] == "frames":
                    for frame in message["frames"]:
                        stats += [e for e in decode_frame(frame) if e["kind"] == "monitor.stat"]
        names = ["fc_output", "fc_weight", "fc_bias"]
        assert [(e["batch"], e["name"]) for e in stats] == [(b, n) for b in (1, 2, 3) for n in names]
        assert {e["stat"] for e in stats} == {"rms"} and all(isinstance(e["value"], float) for e in stats)
    finally:
        handle.stop()


def test_attach_refuses_bad_arguments():
    with pytest.raises(ValueError, match="pass token"):
        server.attach(port=0, host="0.0.0.0")
    with pytest.raises(ValueError, match="port must be an int"):
        server.attach(port=-1)
    with pytest.raises(ValueError, match="token must be a non-empty string"):
        server.attach(port=0, token="")


def test_the_framework_has_no_live_view_of_its_own():
    assert not hasattr(mx.viz, "serve")


def test_framework_does_not_import_the_server_at_import_time():
    code = "import sys, framework; print('fastapi' in sys.modules, 'server' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
