"""What runs inside a worker process: one scenario, its events streamed back to the server.

The server starts :func:`worker_main` in a fresh process (``server.runs``) and reads the
other end of ``conn``. Everything the worker says is a tuple ``(tag, payload...)``:

* ``("events", [raw, ...])`` -- a batch of at most 2000 raw events ``(kind, t_ns, values)``
  (:data:`framework.events.RawEvent`), pickled as they are: the server turns them into
  dicts and JSON (that costs more than the engine's own dispatch, so it belongs on the
  server's core, not in the process being watched);
* ``("graph", dot)`` and ``("log", line)`` -- from the scenario's :class:`WorkerContext`;
* ``("result", dict)`` -- the scenario's return value plus ``event_counts``, sent last;
* ``("error", text)`` -- the scenario raised; ``text`` is the exception's type and message.

A worker that dies without a word (segfault, ``os._exit``, killed) is noticed by the
server as the end of the pipe and the process's exit code.
"""

from __future__ import annotations

import gc
import operator
import pickle
import threading
import traceback
from collections import Counter, deque
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import framework as mx
from framework import events

from .scenarios.base import Scenario
from .streaming import BATCH_MAX_EVENTS, FLUSH_INTERVAL_S, json_safe

MAX_GRAPH_CHARS = 2_000_000
MAX_LOG_CHARS = 2_000

Send = Callable[..., None]
_kind = operator.itemgetter(0)  # raw events are (kind, t_ns, values)


class EventForwarder:
    """Subscribed to every event; a background thread sends them in batches.

    The subscriber callback runs in whichever thread published (often an engine worker),
    so it is the deque's own ``append``: thread-safe, no lock, no Python frame. Every
    ``interval`` seconds the sender thread takes what has accumulated and sends it in
    batches of at most ``batch_events``.
    """

    def __init__(self, send: Send, interval: float = FLUSH_INTERVAL_S, batch_events: int = BATCH_MAX_EVENTS) -> None:
        self._send = send
        self._interval = interval
        self._batch_events = batch_events
        self._pending: deque[events.RawEvent] = deque()
        self._wake = threading.Event()
        self._stopping = False
        self._flush_lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="mxlab-event-forwarder", daemon=True)
        self.counts: Counter[str] = Counter()
        self.forwarded = 0

    @property
    def on_event(self) -> Callable[[events.RawEvent], None]:
        """The subscriber callback (a ``raw=True`` subscription)."""
        return self._pending.append

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread and send whatever is still waiting."""
        self._stopping = True
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()
        self.flush()

    def flush(self) -> None:
        """Encode and send every waiting event, ``batch_events`` at a time."""
        with self._flush_lock:
            pending = self._pending
            while pending:
                n = min(len(pending), self._batch_events)
                batch = [pending.popleft() for _ in range(n)]
                try:
                    self._send("events", batch)
                except (TypeError, AttributeError, pickle.PicklingError):
                    self._send("events", [json_safe(events.to_dict(e)) for e in batch])  # unpicklable: str
                self.counts.update(map(_kind, batch))
                self.forwarded += n

    def _loop(self) -> None:
        while not self._stopping:
            self._wake.wait(self._interval)
            self._wake.clear()
            self.flush()


class WorkerContext:
    """The :class:`~server.scenarios.base.RunContext` a scenario gets inside a worker."""

    def __init__(self, send: Send) -> None:
        self._send = send

    def set_graph(self, dot: str) -> None:
        if not isinstance(dot, str) or not dot.lstrip().startswith(("digraph", "graph", "strict")):
            raise ValueError("set_graph: expected Graphviz DOT source starting with 'digraph'")
        if len(dot) > MAX_GRAPH_CHARS:
            raise ValueError(f"set_graph: DOT source of {len(dot)} characters exceeds {MAX_GRAPH_CHARS}")
        self._send("graph", dot)

    def log(self, message: str) -> None:
        self._send("log", str(message)[:MAX_LOG_CHARS])


def _locked_sender(conn: Connection) -> Send:
    """``send(tag, *payload)`` that several threads may call (a Connection is not thread-safe)."""
    lock = threading.Lock()

    def send(tag: str, *payload: Any) -> None:
        with lock:
            conn.send((tag, *payload))

    return send


def describe_error(err: BaseException) -> str:
    """``"ValueError: message (at file.py:12 in fn)"``: what went wrong and where, in one line."""
    where = ""
    frames = traceback.extract_tb(err.__traceback__)
    if frames:
        last = frames[-1]
        where = f" (at {last.filename.rsplit('/', 1)[-1]}:{last.lineno} in {last.name})"
    return f"{type(err).__name__}: {err}{where}"


def worker_main(conn: Connection, scenario: Scenario, raw_params: dict[str, Any]) -> None:
    """Run ``scenario`` with ``raw_params`` and report everything over ``conn``."""
    send = _locked_sender(conn)
    try:
        params = scenario.validate(raw_params)
        # Everything imported so far (numpy, the framework) lives as long as the process: move
        # it out of the collector's reach, so the full collections that a stream of in-flight
        # events triggers do not rescan it (gc.freeze, the preforking servers' trick).
        gc.freeze()
        forwarder = EventForwarder(send)
        subscription = events.subscribe(forwarder.on_event, raw=True)
        forwarder.start()
        try:
            result = scenario.run(params, WorkerContext(send))
            mx.nd.waitall()  # work the scenario left on the default engine is part of the run
        finally:
            events.unsubscribe(subscription)
            forwarder.stop()
        if not isinstance(result, dict):
            raise TypeError(f"scenario {scenario.name!r} returned {type(result).__name__}, expected a dict")
        result = json_safe(result)
        result["event_counts"] = dict(forwarder.counts)
        send("result", result)
    except BaseException as err:  # reported to the server, which marks the run failed
        send("error", describe_error(err))
    finally:
        conn.close()
