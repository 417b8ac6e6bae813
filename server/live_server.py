"""The server process of attach mode: it serves the ``live`` run that the attached program feeds.

:func:`server.attach` (:mod:`server.live`) binds the listening socket itself, then starts
this module's :func:`main` in a fresh interpreter (``--listen-fd N --feed-fd M``)
that inherits two descriptors: that socket, and one end of a socket pair, the *feed*. The
watched program only buffers its events and sends them down the feed as ``marshal`` bytes
(the worker's :class:`~server.worker.EventForwarder`); this process expands each
``engine.op`` into its three events, encodes frames and serves HTTP and WebSockets -- on
the other core, outside the watched program's GIL, as ``python -m server`` does with a
scenario's worker process (the same roles, reversed: here the producer is the parent).

What travels on the feed, as ``(tag, payload...)`` tuples:

* parent to child: ``("config", {"token": ...})`` first; then ``("events", data)`` and
  ``("dropped", {kind: n})`` as a worker sends them; ``("finish", status, error)`` gives the
  live run its final status while serving goes on; ``("stop",)`` ends the process;
* child to parent: ``("ready",)`` once uvicorn listens, or ``("error", text)`` when it
  could not start (the parent raises it to its caller).

The process dies with its parent: the end of the feed (the parent exited or was killed) or
a change of parent (the feed's other end survived in a forked grandchild) ends the live run
``failed`` and the process. Ctrl+C is ignored here: it belongs to the watched program, which
then stops this process through the feed.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import socket
import sys
import threading
import time
from multiprocessing.connection import Connection

import uvicorn

from .app import create_app
from .runs import Run, RunManager
from .serving import uvicorn_config
from .worker import describe_error

LIVE_RUN_ID = "live"
START_TIMEOUT_S = 30.0  # uvicorn's start-up, on a loaded machine
PARENT_CHECK_S = 0.5  # an idle feed checks this often whether the parent is still the same
CLIENT_GRACE_S = 2.0  # connected browsers get this long to receive the final status
PARENT_GONE = "the attached program ended without stopping the server (it exited early, crashed or was killed)"


def serve_feed(feed: Connection, run: Run, parent_pid: int) -> None:
    """Publish what arrives on ``feed`` into ``run`` until ``("stop",)``, the end of the feed,
    or the parent's death; the run is final when this returns."""
    while True:
        if not feed.poll(PARENT_CHECK_S):
            if os.getppid() != parent_pid:
                break
            continue
        try:
            message = feed.recv()
        except (EOFError, OSError):
            break
        tag = message[0]
        if tag == "events":
            try:
                run.publish_forwarded(message[1])
            except Exception as err:  # one batch the encoder refuses must not end the server
                print(f"MXLab attach server: a batch of events was not shown: {describe_error(err)}", file=sys.stderr)
        elif tag == "dropped":
            run.count_dropped_at_source(message[1])
        elif tag == "finish":
            run.finish(message[1], message[2])
        elif tag == "stop":
            run.finish("done")
            return
    run.finish("failed", PARENT_GONE)  # ignored when the parent had finished the run already


def start_server(listener: socket.socket, token: str | None) -> tuple[uvicorn.Server, threading.Thread, Run]:
    """The web app in attach mode with its ``live`` run, on uvicorn in a thread; returns once it listens."""
    runs = RunManager(allow_runs=False)
    run = runs.add_live(Run(LIVE_RUN_ID, "attach", {}))
    run.set_running()
    app = create_app(runs, token=token, mode="attach")
    server = uvicorn.Server(uvicorn_config(app, lifespan="off"))
    # A thread, not the main one: uvicorn then leaves the signal handlers alone (SIGINT stays ignored).
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, name="mxlab-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    if not server.started:
        server.should_exit = True
        raise RuntimeError(f"uvicorn did not start within {START_TIMEOUT_S:g} s")
    return server, thread, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="server.live_server", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--listen-fd", type=int, required=True, help="the inherited listening socket")
    parser.add_argument("--feed-fd", type=int, required=True, help="the inherited end of the feed")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent_pid = os.getppid()
    feed = Connection(args.feed_fd)
    try:
        tag, config = feed.recv()
        if tag != "config":
            raise RuntimeError(f"expected the config first on the feed, got {tag!r}")
        server, thread, run = start_server(socket.socket(fileno=args.listen_fd), config["token"])
    except EOFError:
        return 1  # the parent went away before the server started: nobody to tell
    except Exception as err:
        feed.send(("error", describe_error(err)))
        return 1
    # What is imported now lives as long as the process: out of the collector's reach, the full
    # collections that a stream of new event tuples triggers do not rescan it (as in a worker;
    # expanding engine.op costs about 3x less then).
    gc.freeze()
    feed.send(("ready",))
    serve_feed(feed, run, parent_pid)
    feed.close()
    deadline = time.monotonic() + CLIENT_GRACE_S
    while run.clients and time.monotonic() < deadline:
        time.sleep(0.02)
    server.should_exit = True
    thread.join(5.0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
