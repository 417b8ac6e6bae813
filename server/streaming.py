"""Events on the wire: frames, a bounded queue per client that thins when full, and the sender.

The path of an event from the framework to a browser:

1. an :class:`~framework.events.EventBuffer` (in the worker process, or in the user's
   process in attach mode) keeps the raw events; a forwarder thread takes them, at most
   2000 at a time, every few milliseconds;
2. the run (:class:`server.runs.Run`) encodes each such batch once into a
   :class:`~server.frames.Frame` (column arrays per kind, :mod:`server.frames`), stores it
   in its history and offers it to the :class:`ClientQueue` of every connected WebSocket;
3. each WebSocket has its own sender task (:func:`stream_run`) that, every 50 ms, takes
   whatever its queue holds and sends it as one ``frames`` message.

Frames are encoded once and never parsed again on the way out: a message is the frames'
texts joined inside a small envelope. A queue holds at most ``bound`` events and
``bound_bytes`` characters of JSON. A client that reads slower than events arrive sees its
queue fill; from then on each new frame is *thinned* (:meth:`Frame.thinned`: the kinds
with many events in that frame are left out, the rare ones pass) until the sender has
taken the queue again. So a slow client receives a sample of the stream in time -- whole
frames as often as it keeps up, the sparse kinds always -- and learns how many events of
each kind it lost (``dropped``, ``dropped_kinds``). The producer never waits for a client:
a stalled browser only loses events, it never slows the run or other clients.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter, deque
from collections.abc import Iterator
from typing import Any, Protocol

from starlette.websockets import WebSocket, WebSocketDisconnect

from .frames import StoredFrame, frames_message

FLUSH_INTERVAL_S = 0.05  # at most ~20 messages a second per client
FORWARD_INTERVAL_S = 0.01  # a forwarder takes the events every 10 ms: few events wait, each briefly
BATCH_MAX_EVENTS = 2000  # events per frame at most
EVENT_BUFFER_EVENTS = 50_000  # raw events a process keeps for its forwarder; beyond, counted and dropped
HISTORY_CHUNK_EVENTS = 5000  # late joiners receive the history in messages of at most this many events
CLIENT_QUEUE_EVENTS = 20_000  # per-client bound, in events ...
CLIENT_QUEUE_BYTES = 2 * 1024 * 1024  # ... and in characters of JSON (so in the size of one message)
SPARSE_BLOCK_EVENTS = 64  # a thinned frame keeps the kinds with at most this many events in it
SPARSE_RESERVE_SHARE = 0.25  # beyond its bounds a queue takes this share more, of thinned frames only
SEND_TIMEOUT_S = 60.0  # a send blocked this long (the client stopped reading) ends the connection
MAX_CLIENTS = 128  # WebSockets open at once on the server ...
MAX_CLIENTS_PER_RUN = 32  # ... and on one run
FINAL_STATUSES = frozenset({"done", "failed", "cancelled", "timeout"})


def history_chunks(
    frames: list[StoredFrame], max_events: int = HISTORY_CHUNK_EVENTS, max_chars: int = CLIENT_QUEUE_BYTES
) -> Iterator[list[StoredFrame]]:
    """Group whole frames into messages of at most ``max_events`` events and ``max_chars``
    characters (a larger frame goes alone)."""
    chunk: list[StoredFrame] = []
    size = chars = 0
    for frame in frames:
        if chunk and (size + frame.count > max_events or chars + frame.chars > max_chars):
            yield chunk
            chunk, size, chars = [], 0, 0
        chunk.append(frame)
        size += frame.count
        chars += frame.chars
    if chunk:
        yield chunk


# ----------------------------------------------------------------------------- per-client queue
class ClientQueue:
    """The frames waiting for one WebSocket client: whole frames up to ``bound`` events and
    ``bound_bytes`` characters of their JSON (one frame larger than that still goes through an
    empty queue), and thinned ones up to a quarter more.

    A frame that does not fit is thinned to its blocks of at most ``sparse_events`` events,
    which may use the extra quarter (so the rare kinds keep arriving while a client is
    behind); if even that does not fit, the frame is dropped whole. Everything left
    out is counted per kind. ``offer`` is called by the run's producer thread, ``take`` by
    the client's sender task on the event loop; a lock makes the handoff safe. ``offer``
    never blocks on the client.
    """

    def __init__(
        self,
        bound: int = CLIENT_QUEUE_EVENTS,
        bound_bytes: int = CLIENT_QUEUE_BYTES,
        sparse_events: int = SPARSE_BLOCK_EVENTS,
    ) -> None:
        if bound < 1:
            raise ValueError(f"ClientQueue: bound must be >= 1, got {bound}")
        if bound_bytes < 1:
            raise ValueError(f"ClientQueue: bound_bytes must be >= 1, got {bound_bytes}")
        if sparse_events < 0:
            raise ValueError(f"ClientQueue: sparse_events must be >= 0, got {sparse_events}")
        self.bound = bound
        self.bound_bytes = bound_bytes
        self.sparse_events = sparse_events
        self.chars = 0
        self.dropped = 0
        self.dropped_kinds: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._frames: deque[StoredFrame] = deque()
        self._events = 0
        self._behind = False  # a frame did not fit since the last take: thin the next ones too

    def _fits(self, events: int, chars: int, share: float = 1.0) -> bool:
        """Whether ``events`` more and ``chars`` more stay within ``share`` of the bounds."""
        if not self._frames:
            return True  # a frame larger than the bounds still goes through an empty queue
        return self._events + events <= self.bound * share and self.chars + chars <= self.bound_bytes * share

    def offer(self, frame: StoredFrame) -> None:
        """Queue ``frame`` whole, thinned, or not at all (counted), whichever fits."""
        with self._lock:
            if not self._behind and self._fits(frame.count, frame.chars):
                self._append(frame, frame.count)
                return
            self._behind = True
            thin = frame.thinned(self.sparse_events)
            if thin.blocks and self._fits(thin.held, thin.chars, 1.0 + SPARSE_RESERVE_SHARE):
                self._append(thin, thin.held)
                self._count_dropped(dict(thin.dropped))
            else:
                self._count_dropped(frame.kind_counts())

    def _append(self, frame: StoredFrame, events: int) -> None:
        self._frames.append(frame)
        self._events += events
        self.chars += frame.chars

    def _count_dropped(self, kinds: dict[str, int]) -> None:
        self.dropped += sum(kinds.values())
        self.dropped_kinds.update(kinds)

    def take(self) -> tuple[list[StoredFrame], int, dict[str, int]]:
        """Everything queued (oldest first) and the drop counts so far; empties the queue."""
        with self._lock:
            frames = list(self._frames)
            self._frames.clear()
            self._events = 0
            self.chars = 0
            self._behind = False
            return frames, self.dropped, dict(self.dropped_kinds)

    def __len__(self) -> int:
        """Events waiting now (never more than ``bound``, but for one larger frame alone)."""
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

    def attach(self, client: ClientQueue) -> list[StoredFrame]: ...

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
            await send(frames_message(chunk, 0, {}))
        sent_dropped = 0
        while not incoming.done():
            status = run.status  # read before taking: events published before this status are queued
            frames, dropped, dropped_kinds = client.take()
            if frames or dropped != sent_dropped:
                await send(frames_message(frames, dropped, dropped_kinds))
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
