"""Attach mode: ``server.attach()`` streams the calling process's events live."""

from __future__ import annotations

import gc
import json
import marshal
import multiprocessing
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

import framework as mx
import server
from framework.engine import create
from server import live, live_server
from server.addresses import listen
from server.frames import decode_frame
from server.runs import Run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _unfreeze_the_collector():
    """``attach`` freezes what the process holds (``freeze_gc``); the test session's objects go back afterwards."""
    yield
    gc.unfreeze()


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


def test_attach_freezes_what_is_loaded_unless_told_not_to():
    gc.unfreeze()
    handle = server.attach(port=0, freeze_gc=False)
    handle.stop()
    assert gc.get_freeze_count() == 0
    handle = server.attach(port=0)
    try:
        # the framework's modules, classes and functions are among the frozen objects
        assert gc.get_freeze_count() > 10_000
        assert not any(o is mx.nd.NDArray for o in gc.get_objects())  # out of the collector's generations
    finally:
        handle.stop()


def test_attach_refuses_bad_arguments():
    with pytest.raises(ValueError, match="pass token"):
        server.attach(port=0, host="0.0.0.0")
    with pytest.raises(ValueError, match="port must be an int"):
        server.attach(port=-1)
    with pytest.raises(ValueError, match="token must be a non-empty string"):
        server.attach(port=0, token="")
    with pytest.raises(ValueError, match="freeze_gc must be True or False, got 'yes'"):
        server.attach(port=0, freeze_gc="yes")


def test_the_framework_has_no_live_view_of_its_own():
    assert not hasattr(mx.viz, "serve")


def test_framework_does_not_import_the_server_at_import_time():
    code = "import sys, framework; print('fastapi' in sys.modules, 'server' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


# ----------------------------------------------------------------------------- the server process
def test_attach_serves_from_a_process_of_its_own_and_stop_reaps_it():
    handle = server.attach(port=0)
    try:
        assert handle.running and handle.process.pid != os.getpid()
        base = handle.url.split("/?")[0]
        assert httpx.get(f"{base}/api/health", timeout=10).json()["mode"] == "attach"
    finally:
        handle.stop()
    assert handle.process.returncode == 0  # ended on its own after "stop", and reaped
    handle.stop()  # idempotent


def test_a_port_in_use_raises_in_the_caller():
    taken = listen("127.0.0.1", 0)
    try:
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}"):
            server.attach(port=port)
    finally:
        taken.close()


def test_a_server_process_that_cannot_start_raises_in_the_caller(monkeypatch):
    monkeypatch.setattr(live, "SERVER_PROCESS_MAIN", "import sys; sys.exit(3)")
    with pytest.raises(RuntimeError, match="exited with code 3 before serving"):
        server.attach(port=0)
    # the server process reports why it failed: the caller gets the reason, not a child's log
    broken = "import sys, server.live_server as s; s.create_app = None; sys.exit(s.main())"
    monkeypatch.setattr(live, "SERVER_PROCESS_MAIN", broken)
    with pytest.raises(RuntimeError, match="could not start: TypeError: 'NoneType' object is not callable"):
        server.attach(port=0)


def test_finish_refuses_a_status_that_is_not_final():
    handle = server.attach(port=0)
    try:
        with pytest.raises(ValueError, match="'running' is not a final status"):
            handle.finish("running")
    finally:
        handle.stop()


def test_a_link_to_a_server_process_that_has_gone_stops_sending(capsys):
    ours, theirs = multiprocessing.Pipe(duplex=True)
    theirs.close()
    link = live.ServerLink(ours)
    assert link.send("events", marshal.dumps([("engine.push", 1, (1,))])) is False
    assert link.gone and link.send("stop") is False
    assert capsys.readouterr().err.count("server process has ended") == 1
    ours.close()


WATCHED = """
    import sys
    import framework as mx
    import server

    handle = server.attach(port=0)
    print("server", handle.process.pid, flush=True)
    sys.stdin.readline()  # the test has connected
    engine = mx.engine.create("ThreadedEnginePerDevice", 2)
    v = engine.new_variable("watched")
    for i in range(5):
        engine.push_sync(lambda run_ctx: None, mx.cpu(), mutable_vars=[v], name=f"watched{i}")
    engine.wait_for_all()
    print("pushed", flush=True)
    if sys.argv[1] == "wait":
        sys.stdin.readline()  # killed meanwhile
"""


def _follow_watched(tmp_path, how: str, after_push) -> tuple[list[str], dict, int]:
    """Run WATCHED; connect to its live run; ``after_push(process)``; the push names seen, the
    last status message and the server process's pid, once the server closed the socket."""
    script = tmp_path / "watched.py"
    script.write_text(textwrap.dedent(WATCHED))
    process = subprocess.Popen(
        [sys.executable, str(script), how],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        url = process.stdout.readline().split()[-1]
        server_pid = int(process.stdout.readline().split()[1])
        ws_url = url.split("/?")[0].replace("http://", "ws://") + "/api/runs/live/events"
        names: list[str] = []
        statuses: list[dict] = []
        with connect(ws_url, max_size=None) as ws:
            assert json.loads(ws.recv(timeout=30))["type"] == "hello"
            process.stdin.write("go\n")
            process.stdin.flush()
            assert process.stdout.readline().strip() == "pushed"
            after_push(process)
            while True:  # until the server closes the socket (a server that never does: TimeoutError)
                try:
                    message = json.loads(ws.recv(timeout=30))
                except ConnectionClosed:
                    break
                if message["type"] == "frames":
                    events = [e for frame in message["frames"] for e in decode_frame(frame)]
                    names += [e["name"] for e in events if e["kind"] == "engine.push"]
                elif message["type"] == "status":
                    statuses.append(message["run"])
        return names, statuses[-1], server_pid
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)


def _ended(pid: int, timeout: float = 15.0) -> bool:
    """Whether process ``pid`` is gone (or a zombie nobody reaped yet) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.1)
    return False


def test_a_script_that_never_calls_stop_still_ends_its_live_run_done(tmp_path):
    names, status, server_pid = _follow_watched(tmp_path, "exit", lambda process: process.wait(30))
    assert names == [f"watched{i}" for i in range(5)]  # flushed at exit, before the final status
    assert status["status"] == "done"
    assert _ended(server_pid)


def test_the_server_process_dies_with_the_attached_program(tmp_path):
    _names, status, server_pid = _follow_watched(tmp_path, "wait", lambda process: process.kill())
    assert status["status"] == "failed" and "ended without stopping the server" in status["error"]
    assert _ended(server_pid), "the server process outlived the program it showed"


def test_the_server_process_publishes_the_feed_and_survives_a_bad_batch(capsys):
    """serve_feed, in this process: events, drops, a batch the encoder refuses, the final status."""
    ours, theirs = multiprocessing.Pipe(duplex=True)
    run = Run("live", "attach", {})
    run.set_running()
    ours.send(("events", marshal.dumps([("engine.op", 1, (1, 2, 3))])))  # engine.op has 12 fields
    op = (4, "good", "cpu(0)", (), (1,), 0, "normal", "w/0", None, None, 5, 6)
    ours.send(("events", marshal.dumps([("engine.op", 7, op)])))
    ours.send(("dropped", {"engine.push": 2}))
    ours.send(("finish", "failed", "the script exited with code 3"))
    ours.send(("stop",))
    live_server.serve_feed(theirs, run, os.getppid())
    assert [e["kind"] for e in run.events()] == ["engine.push", "engine.start", "engine.end"]
    summary = run.summary()
    assert summary["status"] == "failed" and summary["error"] == "the script exited with code 3"  # not overridden
    assert summary["dropped_at_source"] == 2
    assert "a batch of events was not shown: ValueError: events: engine.op has fields" in capsys.readouterr().err
    ours.close()
    theirs.close()


def test_the_end_of_the_feed_fails_an_unfinished_live_run():
    ours, theirs = multiprocessing.Pipe(duplex=True)
    run = Run("live", "attach", {})
    run.set_running()
    ours.close()
    live_server.serve_feed(theirs, run, os.getppid())
    assert run.status == "failed" and run.error == live_server.PARENT_GONE
    theirs.close()
