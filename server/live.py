"""Attach mode: ``server.attach()`` shows the events of the calling process, live.

Inside any script::

    import framework as mx
    import server
    handle = server.attach(port=8000)  # prints the URL; the browser shows run "live"
    ...                                # train, push work: every event streams to the browser
    handle.stop()

or, without changing the script, ``mxlab attach script.py [args...]`` (see :mod:`server.__main__`).

The same web app as ``python -m server`` runs in a daemon thread (uvicorn with its own
event loop). Instead of worker processes, one run with id ``"live"`` (scenario
``"attach"``, status ``running``) is fed by this process's event bus: an
:class:`~framework.events.EventBuffer` (engine threads only append, never wait), emptied
every 10 ms by the worker's forwarder thread, which encodes frames into the run -- the
same path a worker's events take, except that here the frame encoding shares this
process's GIL with the code being watched (benchmarks/server_overhead.py measures what
that costs).
Starting scenario runs is refused in this mode (a worker process would re-import the
user's script); ``/api/health`` reports ``"mode": "attach"`` so the UI opens ``?run=live``.
"""

from __future__ import annotations

import sys
import threading
import time
import webbrowser
from typing import Any

import uvicorn

from framework import events

from .addresses import is_loopback, listen, url_for
from .app import create_app
from .runs import Run, RunManager
from .serving import uvicorn_config
from .streaming import BATCH_MAX_EVENTS, FORWARD_INTERVAL_S
from .worker import EventForwarder

LIVE_RUN_ID = "live"


class LiveFeed:
    """Subscribes to every event of this process and publishes them into ``run`` in batches.

    The batching is the worker's :class:`~server.worker.EventForwarder`; only where the
    batches go differs: into the live run here, down a pipe in a worker process.
    """

    def __init__(self, run: Run, interval: float = FORWARD_INTERVAL_S, batch_events: int = BATCH_MAX_EVENTS) -> None:
        self.run = run
        self._forwarder = EventForwarder(self._publish, interval, batch_events)
        self._subscription: events.Subscription | None = None
        self._stopping = False

    def _publish(self, tag: str, payload: Any) -> None:
        # raw tuples were buffered on the hot path; the frame is encoded here, in the forwarder's thread
        if tag == "events":
            self.run.publish_raw(payload)
        elif tag == "dropped":
            self.run.count_dropped_at_source(payload)

    def start(self) -> None:
        self._subscription = self._forwarder.subscribe()
        self._forwarder.start()

    def pause(self) -> None:
        """Stop listening (events published meanwhile are not shown); ``resume`` listens again."""
        if self._subscription is not None:
            events.unsubscribe(self._subscription)
            self._subscription = None

    def resume(self) -> None:
        if self._subscription is None and not self._stopping:
            self._subscription = self._forwarder.subscribe()

    def stop(self) -> None:
        self.pause()
        self._stopping = True
        self._forwarder.stop()


class ServerHandle:
    """What :func:`attach` returns: the ``url`` to open and ``stop()``."""

    def __init__(self, url: str, server: Any, thread: threading.Thread, feed: LiveFeed, run: Run) -> None:
        self.url = url
        self.run = run
        self._server = server
        self._thread = thread
        self._feed = feed

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def pause(self) -> None:
        """Stop streaming this process's events until :meth:`resume` (publishing is free again)."""
        self._feed.pause()

    def resume(self) -> None:
        self._feed.resume()

    def finish(self, status: str = "done", error: str | None = None) -> None:
        """Stop streaming and give the live run its final ``status``; the server keeps serving it."""
        self._feed.stop()
        self.run.finish(status, error)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop streaming, mark the live run done, and shut the server down (idempotent)."""
        self.finish("done")
        deadline = time.monotonic() + 2.0  # let connected browsers receive the final status
        while self.run.clients and time.monotonic() < deadline:
            time.sleep(0.02)
        self._server.should_exit = True
        self._thread.join(timeout)

    def __repr__(self) -> str:
        return f"<MXLab server {self.url} {'running' if self.running else 'stopped'}>"


def attach(
    port: int = 8000, host: str = "127.0.0.1", token: str | None = None, open_browser: bool = False
) -> ServerHandle:
    """Serve the MXLab UI for this process in a background thread; returns a :class:`ServerHandle`.

    ``port=0`` picks a free port (read it from ``handle.url``). A host beyond loopback
    needs a ``token``, as with ``mxlab serve``.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"attach: port must be an int in [0, 65535], got {port!r}")
    if token is not None and (not isinstance(token, str) or not token):
        raise ValueError("attach: token must be a non-empty string or None")
    if not is_loopback(host):
        if token is None:
            raise ValueError(f"attach: host {host!r} is reachable from other machines; pass token=<secret>")
        print(f"WARNING: server.attach listening on {host}: protect the token", file=sys.stderr)
    sock = listen(host, port)
    actual_port = sock.getsockname()[1]

    runs = RunManager(allow_runs=False)
    run = runs.add_live(Run(LIVE_RUN_ID, "attach", {}))
    run.set_running()
    feed = LiveFeed(run)
    feed.start()
    app = create_app(runs, token=token, mode="attach")
    config = uvicorn_config(app, lifespan="off")
    server = uvicorn.Server(config)
    # uvicorn installs signal handlers only from the main thread: Ctrl+C stays the script's.
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="mxlab-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10.0
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    if not server.started:
        feed.stop()
        server.should_exit = True
        raise RuntimeError("attach: the server did not start within 10 s")
    query = f"run={LIVE_RUN_ID}" + (f"&token={token}" if token else "")
    url = url_for(host, actual_port, query)
    print(f"MXLab is showing this process at {url}", flush=True)
    if open_browser:
        webbrowser.open(url)
    return ServerHandle(url, server, thread, feed, run)
