"""Attach mode: ``server.attach()`` shows the events of the calling process, live.

Inside any script::

    import framework as mx
    import server
    handle = server.attach(port=8000)  # prints the URL; the browser shows run "live"
    ...                                # train, push work: every event streams to the browser
    handle.stop()

or, without changing the script, ``mxlab attach script.py [args...]`` (see :mod:`server.__main__`).

The watched program keeps only the cheap half of the work: an
:class:`~framework.events.EventBuffer` subscribed to its event bus (engine threads only
append, never wait), emptied every 10 ms by the worker's forwarder thread, which sends the
raw events as ``marshal`` bytes down a socket pair -- what a scenario's worker process
does. The other half (expanding ``engine.op``, encoding frames, the web app with its
WebSockets) runs in a server process of its own, :mod:`server.live_server`, started here
in a fresh interpreter, so that it shares neither this program's GIL nor its core. It
serves one run with id ``"live"`` (scenario ``"attach"``); starting scenario runs is
refused in this mode (the run shows this program only), and ``/api/health`` reports
``"mode": "attach"`` so the UI opens ``?run=live``.

Errors still reach the caller: this process binds the listening socket (port in use, no such
interface: OSError here) and waits until the server process says it listens (or why not).
The server process never outlives this one (:mod:`server.live_server`), and
:meth:`ServerHandle.stop` -- also called at interpreter exit -- waits for it to end.
"""

from __future__ import annotations

import atexit
import gc
import multiprocessing
import os
import subprocess
import sys
import webbrowser
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from framework import events

from .addresses import is_loopback, listen, url_for
from .live_server import CLIENT_GRACE_S, LIVE_RUN_ID, START_TIMEOUT_S
from .streaming import BATCH_MAX_EVENTS, FINAL_STATUSES, FORWARD_INTERVAL_S
from .worker import EventForwarder, locked_sender

# The directory holding the ``server`` and ``framework`` packages: the server process imports them from there.
SOURCE_ROOT = str(Path(__file__).resolve().parent.parent)
SERVER_PROCESS_MAIN = "import sys; from server.live_server import main; sys.exit(main())"
READY_TIMEOUT_S = START_TIMEOUT_S + 60.0  # a fresh interpreter imports the framework first (slow when loaded)


class ServerLink:
    """The watched program's end of the feed: ``send(tag, *payload)`` from any thread, which
    stops sending (and says so once) when the server process has gone."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._send = locked_sender(conn)
        self.gone = False

    def send(self, tag: str, *payload: Any) -> bool:
        """Send one message; False (and nothing sent) once the server process has gone."""
        if self.gone:
            return False
        try:
            self._send(tag, *payload)
        except OSError:  # BrokenPipeError, ConnectionResetError: the server process ended
            self.gone = True
            print("MXLab: the attach server process has ended; events are no longer shown", file=sys.stderr)
            return False
        return True


class LiveFeed:
    """Subscribes to every event of this process and sends them to the server process in batches.

    The batching is the worker's :class:`~server.worker.EventForwarder`, and so is what goes
    down the feed: this process only buffers and marshals, as a scenario's worker does.
    """

    def __init__(self, link: ServerLink, interval: float = FORWARD_INTERVAL_S, batch_events: int = BATCH_MAX_EVENTS):
        self._link = link
        self._forwarder = EventForwarder(self._send, interval, batch_events)
        self._subscription: events.Subscription | None = None
        self._stopping = False

    def _send(self, tag: str, payload: Any) -> None:
        if not self._link.send(tag, payload):
            self.pause()  # nobody receives any more: publishing becomes free again

    def start(self) -> None:
        self._subscription = self._forwarder.subscribe()
        self._forwarder.start()

    def pause(self) -> None:
        """Stop listening (events published meanwhile are not shown); ``resume`` listens again."""
        subscription, self._subscription = self._subscription, None
        if subscription is not None:
            events.unsubscribe(subscription)

    def resume(self) -> None:
        if self._subscription is None and not self._stopping and not self._link.gone:
            self._subscription = self._forwarder.subscribe()

    def stop(self) -> None:
        """Stop listening and send what is still buffered (idempotent)."""
        self.pause()
        self._stopping = True
        self._forwarder.stop()


class ServerHandle:
    """What :func:`attach` returns: the ``url`` to open, ``finish()`` and ``stop()``."""

    def __init__(self, url: str, process: subprocess.Popen, link: ServerLink, feed: LiveFeed) -> None:
        self.url = url
        self.process = process
        self._link = link
        self._feed = feed
        self._stopped = False

    @property
    def running(self) -> bool:
        """Whether the server process is still serving."""
        return self.process.poll() is None

    def pause(self) -> None:
        """Stop streaming this process's events until :meth:`resume` (publishing is free again)."""
        self._feed.pause()

    def resume(self) -> None:
        self._feed.resume()

    def finish(self, status: str = "done", error: str | None = None) -> None:
        """Stop streaming and give the live run its final ``status``; the server keeps serving it."""
        if status not in FINAL_STATUSES:
            raise ValueError(f"finish: {status!r} is not a final status; choose one of {sorted(FINAL_STATUSES)}")
        self._feed.stop()  # every event published so far goes down the feed before the status
        self._link.send("finish", status, error)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop streaming, mark the live run done, and end the server process (idempotent).

        Connected browsers get up to 2 s to receive the final status; a server process that
        has not ended ``timeout`` seconds after that is terminated.
        """
        if self._stopped:
            return
        self._stopped = True
        atexit.unregister(self.stop)
        self.finish("done")
        self._link.send("stop")
        try:
            self.process.wait(CLIENT_GRACE_S + timeout)
        except subprocess.TimeoutExpired:
            _end_process(self.process)
        self._link.conn.close()

    def __repr__(self) -> str:
        return f"<MXLab server {self.url} {'running' if self.running else 'stopped'}>"


def _end_process(process: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL if it is still there a second later; reaped either way."""
    process.terminate()
    try:
        process.wait(1.0)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def start_server_process(listener: Any, token: str | None) -> tuple[subprocess.Popen, Connection]:
    """Start :mod:`server.live_server` on ``listener`` (a bound, listening socket) and wait until it
    serves; returns the process and this side of the feed. Raises RuntimeError saying why it did not start."""
    ours, theirs = multiprocessing.Pipe(duplex=True)
    python_path = os.pathsep.join(p for p in (SOURCE_ROOT, os.environ.get("PYTHONPATH", "")) if p)
    # -c rather than -m: ``server``'s __init__ imports this module, which imports server.live_server
    command = [sys.executable, "-c", SERVER_PROCESS_MAIN, "--listen-fd", str(listener.fileno())]
    command += ["--feed-fd", str(theirs.fileno())]
    try:
        process = subprocess.Popen(
            command,
            pass_fds=(listener.fileno(), theirs.fileno()),
            env={**os.environ, "PYTHONPATH": python_path},
            stdin=subprocess.DEVNULL,
        )
    except OSError as err:
        ours.close()
        raise RuntimeError(f"attach: could not start the server process: {err}") from err
    finally:
        theirs.close()  # the child holds the only other end: its exit means end of file here
    try:
        try:
            ours.send(("config", {"token": token}))
        except OSError:
            pass  # it has ended already: the end of the feed below says so
        if not ours.poll(READY_TIMEOUT_S):
            raise RuntimeError(f"attach: the server process did not start within {READY_TIMEOUT_S:g} s")
        try:
            reply = ours.recv()
        except (EOFError, OSError):  # OSError: it ended without reading what we sent (a reset)
            code = process.wait(5.0)
            raise RuntimeError(
                f"attach: the server process exited with code {code} before serving (its error is above)"
            ) from None
        if reply[0] != "ready":
            raise RuntimeError(f"attach: the server process could not start: {reply[1]}")
    except BaseException:  # an error, or Ctrl+C while waiting: leave no server process behind
        ours.close()
        if process.poll() is None:
            _end_process(process)
        raise
    return process, ours


def attach(
    port: int = 8000,
    host: str = "127.0.0.1",
    token: str | None = None,
    open_browser: bool = False,
    freeze_gc: bool = True,
) -> ServerHandle:
    """Serve the MXLab UI for this process from a server process of its own; returns a :class:`ServerHandle`.

    ``port=0`` picks a free port (read it from ``handle.url``). A host beyond loopback
    needs a ``token``, as with ``mxlab serve``. ``freeze_gc`` moves the objects alive now
    (the framework, NumPy, the program's imports) out of the cyclic collector's reach with
    ``gc.freeze()``, as a scenario's worker process does; ``gc.unfreeze()`` undoes it.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"attach: port must be an int in [0, 65535], got {port!r}")
    if token is not None and (not isinstance(token, str) or not token):
        raise ValueError("attach: token must be a non-empty string or None")
    if not isinstance(freeze_gc, bool):
        raise ValueError(f"attach: freeze_gc must be True or False, got {freeze_gc!r}")
    if not is_loopback(host):
        if token is None:
            raise ValueError(f"attach: host {host!r} is reachable from other machines; pass token=<secret>")
        print(f"WARNING: server.attach listening on {host}: protect the token", file=sys.stderr)
    sock = listen(host, port)
    try:
        actual_port = sock.getsockname()[1]
        process, conn = start_server_process(sock, token)
    finally:
        sock.close()  # the server process has its own copy; ours would keep accepting after it ended
    if freeze_gc:
        # Watching allocates a few tuples per operation, so young collections come more often,
        # each promotes the operations in flight, and full collections follow several times as
        # often; each would rescan the ~100 000 objects imported so far (50 to 75 ms here).
        # Frozen, they are skipped. They are still freed when their last reference goes; only a
        # reference cycle among them is never collected.
        gc.freeze()
    link = ServerLink(conn)
    feed = LiveFeed(link)
    feed.start()
    handle = ServerHandle(
        url_for(host, actual_port, f"run={LIVE_RUN_ID}" + (f"&token={token}" if token else "")), process, link, feed
    )
    atexit.register(handle.stop)  # a script that never calls stop(): its last events and "done" still arrive
    print(f"MXLab is showing this process at {handle.url}", flush=True)
    if open_browser:
        webbrowser.open(handle.url)
    return handle
