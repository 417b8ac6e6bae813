"""What runs inside a worker process: one scenario, its events streamed back to the server.

The server starts :func:`worker_main` in a fresh process (``server.runs``) and reads the
other end of ``conn``. Everything the worker says is a tuple ``(tag, payload...)``:

* ``("events", data)`` -- a batch of at most 2000 raw events ``(kind, t_ns, values)``
  (:data:`framework.events.RawEvent`) as ``marshal`` bytes (about twice as fast as pickle
  for tuples of numbers and strings), or pickled as a list when a value is not a plain
  Python type: the server encodes them into a frame (that costs more than the engine's own
  dispatch, so it belongs on the server's core, not in the process being watched);
* ``("dropped", {kind: n})`` -- events the worker's buffer could not keep (the server
  did not take them fast enough);
* ``("graph", dot)`` and ``("log", line)`` -- from the scenario's :class:`WorkerContext`;
* ``("result", dict)`` -- the scenario's return value plus ``event_counts``, sent last;
* ``("error", text)`` -- the scenario raised; ``text`` is the exception's type and message.

A worker that dies without a word (segfault, ``os._exit``, killed) is noticed by the
server as the end of the pipe and the process's exit code.
"""

from __future__ import annotations

import gc
import marshal
import operator
import pickle
import threading
import traceback
from collections import Counter
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import framework as mx
from framework import events

from .frames import json_safe
from .scenarios.base import Scenario
from .streaming import BATCH_MAX_EVENTS, EVENT_BUFFER_EVENTS, FORWARD_INTERVAL_S

MAX_GRAPH_CHARS = 2_000_000
MAX_LOG_CHARS = 2_000

Send = Callable[..., None]
_kind = operator.itemgetter(0)  # raw events are (kind, t_ns, values)


class EventForwarder:
    """An :class:`~framework.events.EventBuffer` and a thread that sends its events in batches.

    The publishing threads (often engine workers) only append to the buffer, or count an
    event when it is full (:func:`framework.events.emit`'s fast path). Every ``interval``
    seconds the forwarder thread takes what has accumulated and sends it in batches of at
    most ``batch_events``; a short interval keeps few events waiting, so few of them live
    long enough for the garbage collector to scan them again and again. Being the only
    subscriber, the buffer receives quick engine operations as one ``engine.op`` event each
    (``framework.events.combine_operations``); before each pass the forwarder lets the
    engines publish the operations in flight for long (``events.run_samplers``), and the
    receiver expands the rest (:func:`framework.events.expand`).
    """

    def __init__(
        self,
        send: Send,
        interval: float = FORWARD_INTERVAL_S,
        batch_events: int = BATCH_MAX_EVENTS,
        bound: int = EVENT_BUFFER_EVENTS,
    ) -> None:
        self._send = send
        self._interval = interval
        self._batch_events = batch_events
        self.buffer = events.EventBuffer(bound)
        self._wake = threading.Event()
        self._stopping = False
        self._flush_lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="mxlab-event-forwarder", daemon=True)
        self.counts: Counter[str] = Counter()
        self.forwarded = 0
        self.dropped: Counter[str] = Counter()

    def subscribe(self) -> events.Subscription:
        """Subscribe the buffer to every event (unsubscribe with :func:`framework.events.unsubscribe`)."""
        return events.subscribe_buffer(self.buffer)

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
        """Send every waiting event, ``batch_events`` at a time, and the count of those dropped."""
        with self._flush_lock:
            while self.buffer.pending:
                batch = self.buffer.take(self._batch_events)
                self._send("events", batch)
                # counted as the receiver sees them: an engine.op is three events (events.expand)
                counts = events.expand_counts(Counter(map(_kind, batch)))
                self.counts.update(counts)
                self.forwarded += sum(counts.values())
            dropped = events.expand_counts(self.buffer.take_dropped())
            if dropped:
                self.dropped.update(dropped)
                self._send("dropped", dropped)

    def _loop(self) -> None:
        while not self._stopping:
            self._wake.wait(self._interval)
            self._wake.clear()
            events.run_samplers()  # operations in flight for long: their push and start, now
            self.flush()


def _send_events(conn: Connection, batch: list[events.RawEvent]) -> None:
    """A batch of raw events down the pipe: marshal bytes, else pickled, else as JSON-safe dicts."""
    try:
        payload: Any = marshal.dumps(batch)
    except ValueError:  # a value marshal does not know (a NumPy scalar, an object): pickle it
        payload = batch
    try:
        conn.send(("events", payload))
    except (TypeError, AttributeError, pickle.PicklingError):
        conn.send(("events", [json_safe(events.to_dict(e)) for e in batch]))  # unpicklable: str


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


def locked_sender(conn: Connection) -> Send:
    """``send(tag, *payload)`` that several threads may call (a Connection is not thread-safe)."""
    lock = threading.Lock()

    def send(tag: str, *payload: Any) -> None:
        with lock:
            if tag == "events":
                _send_events(conn, payload[0])
            else:
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
    send = locked_sender(conn)
    try:
        params = scenario.validate(raw_params)
        # Everything imported so far (numpy, the framework) lives as long as the process: move
        # it out of the collector's reach, so the full collections that a stream of in-flight
        # events triggers do not rescan it (gc.freeze, the preforking servers' trick).
        gc.freeze()
        forwarder = EventForwarder(send)
        subscription = forwarder.subscribe()
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
        if forwarder.dropped:
            result["events_dropped_at_source"] = dict(forwarder.dropped)
        send("result", result)
    except BaseException as err:  # reported to the server, which marks the run failed
        send("error", describe_error(err))
    finally:
        conn.close()
