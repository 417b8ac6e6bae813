"""Events on the wire: JSON batches, a bounded queue per client, and the WebSocket sender.

The path of an event from the framework to a browser:

1. a subscriber (in the worker process, or in the user's process in attach mode) collects
   events and every 50 ms encodes them, at most 2000 at a time, with :func:`encode_events`
   into one JSON text (the events separated by commas, without the brackets);
2. the run (:class:`server.runs.Run`) stores that text as a :class:`Batch` in its history
   and offers it to the :class:`ClientQueue` of every connected WebSocket;
3. each WebSocket has its own sender task (:func:`stream_run`) that, every 50 ms, takes
   whatever its queue holds and sends it as one ``events`` message.

Events are encoded once and never parsed again on the way out: a message is the batches'
texts joined inside a small envelope. A queue holds at most ``bound`` events and
``bound_bytes`` characters of JSON (so one message of a client that stopped reading is all
the memory it can hold); when a batch does not fit, it is dropped and counted, and the
queue keeps dropping until the sender has emptied it, so that every message is a
contiguous slice of the run's event stream that starts at ``seq``. The producer never
waits for a client: a stalled browser only loses events (and learns how many from
``dropped``), it never slows the run or other clients.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import zlib
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from starlette.websockets import WebSocket, WebSocketDisconnect

FLUSH_INTERVAL_S = 0.05  # at most ~20 messages a second per client
BATCH_MAX_EVENTS = 2000  # a producer flushes early when this many events are waiting
HISTORY_CHUNK_EVENTS = 5000  # late joiners receive the history in messages of at most this many events
CLIENT_QUEUE_EVENTS = 20_000  # per-client bound, in events ...
CLIENT_QUEUE_BYTES = 2 * 1024 * 1024  # ... and in characters of JSON (so in the size of one message)
SEND_TIMEOUT_S = 60.0  # a send blocked this long (the client stopped reading) ends the connection
MAX_CLIENTS = 128  # WebSockets open at once on the server ...
MAX_CLIENTS_PER_RUN = 32  # ... and on one run
FINAL_STATUSES = frozenset({"done", "failed", "cancelled", "timeout"})


# ----------------------------------------------------------------------------- encoding
def _json_default(value: Any) -> Any:
    """What ``json.dumps`` cannot encode: NumPy scalars become numbers, anything else ``str``."""
    if isinstance(value, np.generic):
        return json_safe(value.item())
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    return str(value)


def json_safe(value: Any) -> Any:
    """``value`` with only JSON types left: tuples become lists, keys strings, and NaN,
    infinities and unknown objects their ``str`` (JSON has no NaN; browsers refuse it)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return json_safe(_json_default(value))


_encode_strict = json.JSONEncoder(default=_json_default, allow_nan=False, separators=(",", ":")).encode
_quote = json.encoder.encode_basestring_ascii  # a str as an ASCII JSON string literal (C; lone surrogates escaped)


def _encode_engine_event(e: dict[str, Any]) -> str | None:
    """The hottest kinds (push/start/end: three per engine operation) through a template.

    ``json.dumps`` walks each dict generically (about 2.5 us per event here, more than the
    engine takes to dispatch a small operation); filling a fixed template is about 3x
    faster. Only an event with exactly the usual fields and types takes this path (bool is
    not int here); anything else returns None and goes through ``json.dumps``.
    """
    kind = e["kind"]
    if kind == "engine.start" and len(e) == 5:
        t, op, worker, stream = e["t_ns"], e["op"], e["worker"], e["stream"]
        if type(t) is int and type(op) is int and type(worker) is str and stream is None:
            return f'{{"kind":"engine.start","t_ns":{t},"op":{op},"worker":{_quote(worker)},"stream":null}}'
    elif kind == "engine.end" and len(e) == 6:
        t, op, worker, stream, error = e["t_ns"], e["op"], e["worker"], e["stream"], e["error"]
        if type(t) is int and type(op) is int and type(worker) is str and stream is None and error is None:
            return f'{{"kind":"engine.end","t_ns":{t},"op":{op},"worker":{_quote(worker)},"stream":null,"error":null}}'
    elif kind == "engine.push" and len(e) == 9:
        t, op, name, ctx, prop, priority = e["t_ns"], e["op"], e["name"], e["ctx"], e["prop"], e["priority"]
        reads, writes = e["reads"], e["writes"]
        if (
            type(t) is int
            and type(op) is int
            and type(name) is str
            and type(ctx) is str
            and type(prop) is str
            and type(priority) is int
            and type(reads) is list
            and type(writes) is list
            and all(type(v) is int for v in reads)
            and all(type(v) is int for v in writes)
        ):
            return (
                f'{{"kind":"engine.push","t_ns":{t},"op":{op},"name":{_quote(name)},"ctx":{_quote(ctx)},'
                f'"reads":{reads},"writes":{writes},"priority":{priority},"prop":{_quote(prop)}}}'
            )
    return None


def _encode_event(event: dict[str, Any]) -> str:
    try:
        text = _encode_engine_event(event)
    except KeyError:  # the usual number of fields, but not the usual ones
        text = None
    if text is not None:
        return text
    try:
        return _encode_strict(event)
    except (ValueError, TypeError):  # NaN, a tuple key, ...: say it in JSON's terms
        return json.dumps(json_safe(event), separators=(",", ":"))


def encode_events(events: list[dict[str, Any]]) -> str:
    """The events as JSON objects separated by commas (a JSON array without its brackets).

    Engine push/start/end events are filled into templates; every other event goes
    through the standard encoder, and an event holding something JSON cannot say exactly
    (NaN, a tuple key, an unknown object) through :func:`json_safe` first.
    """
    return ",".join(map(_encode_event, events))


def count_kinds(events: Iterable[dict[str, Any]]) -> dict[str, int]:
    """How many events of each kind."""
    return dict(Counter(e["kind"] for e in events))


@dataclass(frozen=True)
class Batch:
    """Consecutive events of one run: ``count`` events starting at stream index ``seq``."""

    seq: int
    count: int
    json: str  # the events' JSON objects, comma-separated

    @property
    def chars(self) -> int:
        return len(self.json)

    def decode(self) -> list[dict[str, Any]]:
        return json.loads(f"[{self.json}]") if self.count else []

    def packed(self) -> PackedBatch:
        """The same events, compressed (a finished run's history is kept this way)."""
        return PackedBatch(self.seq, self.count, len(self.json), zlib.compress(self.json.encode("utf-8"), 1))


@dataclass(frozen=True)
class PackedBatch:
    """A :class:`Batch` kept zlib-compressed: engine events repeat their keys and names, so the
    JSON shrinks about tenfold; ``json`` inflates it again when a message or a download needs it."""

    seq: int
    count: int
    chars: int  # the length of the inflated JSON
    data: bytes

    @property
    def json(self) -> str:
        return zlib.decompress(self.data).decode("utf-8")

    def decode(self) -> list[dict[str, Any]]:
        return json.loads(f"[{self.json}]") if self.count else []

    def packed(self) -> PackedBatch:
        return self


StoredBatch = Batch | PackedBatch  # what a run's history holds


def events_message(batches: list[StoredBatch], dropped: int) -> str:
    """One ``events`` message for consecutive ``batches`` (see docs/server.md)."""
    seq = batches[0].seq if batches else 0
    body = ",".join(b.json for b in batches if b.count)
    return f'{{"type":"events","seq":{seq},"events":[{body}],"dropped":{dropped}}}'


def history_chunks(
    batches: list[StoredBatch], max_events: int = HISTORY_CHUNK_EVENTS, max_chars: int = CLIENT_QUEUE_BYTES
) -> Iterator[list[StoredBatch]]:
    """Group whole batches into messages of at most ``max_events`` events and ``max_chars``
    characters (a larger batch goes alone)."""
    chunk: list[StoredBatch] = []
    size = chars = 0
    for batch in batches:
        if chunk and (size + batch.count > max_events or chars + batch.chars > max_chars):
            yield chunk
            chunk, size, chars = [], 0, 0
        chunk.append(batch)
        size += batch.count
        chars += batch.chars
    if chunk:
        yield chunk


# ----------------------------------------------------------------------------- per-client queue
class ClientQueue:
    """The events waiting for one WebSocket client: at most ``bound`` events and ``bound_bytes``
    characters of their JSON (one batch larger than that still goes through an empty queue).

    ``offer`` is called by the run's producer thread, ``take`` by the client's sender task
    on the event loop; a lock makes the handoff safe. ``offer`` never blocks on the client.
    """

    def __init__(self, bound: int = CLIENT_QUEUE_EVENTS, bound_bytes: int = CLIENT_QUEUE_BYTES) -> None:
        if bound < 1:
            raise ValueError(f"ClientQueue: bound must be >= 1, got {bound}")
        if bound_bytes < 1:
            raise ValueError(f"ClientQueue: bound_bytes must be >= 1, got {bound_bytes}")
        self.bound = bound
        self.bound_bytes = bound_bytes
        self.chars = 0
        self.dropped = 0
        self._lock = threading.Lock()
        self._batches: deque[StoredBatch] = deque()
        self._events = 0
        self._overflowing = False

    def offer(self, batch: StoredBatch) -> None:
        """Queue ``batch``, or drop it (counted) when it does not fit or the queue overflowed."""
        with self._lock:
            size = batch.chars
            too_big = self._batches and self.chars + size > self.bound_bytes
            if self._overflowing or self._events + batch.count > self.bound or too_big:
                self._overflowing = True  # keep dropping until emptied: messages stay contiguous
                self.dropped += batch.count
                return
            self._batches.append(batch)
            self._events += batch.count
            self.chars += size

    def take(self) -> tuple[list[StoredBatch], int]:
        """Everything queued (oldest first) and the drop count so far; empties the queue."""
        with self._lock:
            batches = list(self._batches)
            self._batches.clear()
            self._events = 0
            self.chars = 0
            self._overflowing = False
            return batches, self.dropped

    def __len__(self) -> int:
        """Events waiting now (never more than ``bound``)."""
        return self._events


# ----------------------------------------------------------------------------- client limits
class ClientLimits:
    """How many WebSockets are open, in all and per run; ``enter`` refuses beyond the limits.

    Used from the event loop only (one thread), so plain counters suffice.
    """

    def __init__(self, max_clients: int = MAX_CLIENTS, max_per_run: int = MAX_CLIENTS_PER_RUN) -> None:
        if max_clients < 1 or max_per_run < 1:
            raise ValueError(f"ClientLimits: limits must be >= 1, got {max_clients} and {max_per_run}")
        self.max_clients = max_clients
        self.max_per_run = max_per_run
        self.total = 0
        self.per_run: Counter[str] = Counter()

    def enter(self, run_id: str) -> str | None:
        """Count one more client of ``run_id``; or, over a limit, the reason to refuse it (not counted)."""
        if self.total >= self.max_clients:
            return f"too many clients: the server allows {self.max_clients} at once; try again later"
        if self.per_run[run_id] >= self.max_per_run:
            return f"too many clients on this run: {self.max_per_run} at once; try again later"
        self.total += 1
        self.per_run[run_id] += 1
        return None

    def leave(self, run_id: str) -> None:
        self.total -= 1
        self.per_run[run_id] -= 1
        if self.per_run[run_id] <= 0:
            del self.per_run[run_id]


# ----------------------------------------------------------------------------- the sender
async def _ignore_incoming(websocket: WebSocket) -> None:
    """Read and discard what the client sends (no command is ever taken from a browser)
    until it disconnects; reading is how a disconnect is noticed."""
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return


class StreamedRun(Protocol):
    """What :func:`stream_run` needs of a run (:class:`server.runs.Run` is one; runs.py builds on
    this module, so it is described here rather than imported)."""

    status: str

    def attach(self, client: ClientQueue) -> list[StoredBatch]: ...

    def detach(self, client: ClientQueue) -> None: ...

    def summary(self) -> dict[str, Any]: ...


async def stream_run(
    websocket: WebSocket,
    run: StreamedRun,
    *,
    flush_interval: float = FLUSH_INTERVAL_S,
    queue_bound: int = CLIENT_QUEUE_EVENTS,
    queue_bytes: int = CLIENT_QUEUE_BYTES,
    history_chunk: int = HISTORY_CHUNK_EVENTS,
    send_timeout: float = SEND_TIMEOUT_S,
) -> None:
    """Send ``run`` to an accepted WebSocket: hello, history, live batches, statuses, close.

    A send that stays blocked for ``send_timeout`` seconds (a client that stopped reading)
    ends the connection (the server's WebSocket protocol then drops the socket, see
    :mod:`server.serving`); until then that client's queue just fills and drops.
    """
    client = ClientQueue(queue_bound, queue_bytes)
    history = run.attach(client)
    incoming = asyncio.ensure_future(_ignore_incoming(websocket))

    async def send(text: str) -> None:
        await asyncio.wait_for(websocket.send_text(text), timeout=send_timeout)

    try:
        summary = run.summary()
        last_status = summary["status"]
        await send(json.dumps({"type": "hello", "run": summary}))
        for chunk in history_chunks(history, history_chunk, queue_bytes):
            await send(events_message(chunk, client.dropped))
        sent_dropped = client.dropped
        while not incoming.done():
            status = run.status  # read before taking: events published before this status are queued
            batches, dropped = client.take()
            if batches or dropped != sent_dropped:
                await send(events_message(batches, dropped))
                sent_dropped = dropped
            if status != last_status:
                await send(json.dumps({"type": "status", "run": run.summary()}))
                last_status = status
            if status in FINAL_STATUSES:
                await websocket.close(code=1000)
                return
            await asyncio.sleep(flush_interval)
    except (TimeoutError, WebSocketDisconnect, RuntimeError, OSError):
        # The client went away or stopped reading; nothing to tell it.
        pass
    finally:
        run.detach(client)
        incoming.cancel()
