"""The event bus: how every mechanism reports what it does, at no cost when nobody listens.

Lower layers publish, upper layers (profiler, server, tests) subscribe. A publisher
guards each call with ``if events.enabled:`` so that, with no subscriber, reporting costs
one attribute check. Each event is a plain dict ``{"kind", "t_ns", **fields}`` with
``t_ns`` from ``time.perf_counter_ns()``; the kinds and their fields are listed in
``KINDS`` (DESIGN.md, "Events").

The hottest publishers (the engine's push/start/end, three per operation) call
:func:`emit` with the fields as positional values in ``KINDS`` order. A subscriber that asks
for ``raw=True`` then receives the tuple ``(kind, t_ns, values)`` as it is, and builds dicts
later, off the hot path, with :func:`to_dict`.

The cheapest subscriber is an :class:`EventBuffer` (:func:`subscribe_buffer`): a bounded
buffer of raw events that a consumer thread empties (the server's event forwarder is one).
When a buffer is the only subscriber of a kind, :func:`emit` appends to it directly: one
tuple and one append per event on the publishing thread, no callback frame; when the
buffer is full the event is counted, not kept, so a consumer that falls behind costs the
program neither memory nor time.

When such a buffer is the only subscriber of the engine's kinds (the server's forwarder is),
the engine goes one step further (:data:`combine_operations`): an operation that finishes
quickly is published once, as one ``engine.op`` event carrying its push, start and end,
instead of three events. The buffer's consumer calls :func:`run_samplers` on every pass, and
the engine then publishes ``engine.push``/``engine.start`` of operations still in flight
after :data:`SAMPLE_AFTER_NS`, so that waiting and running work stays visible live;
:func:`expand` turns ``engine.op`` back into the three events on the consumer's side.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import Counter, deque
from collections.abc import Callable, Iterable
from typing import Any

Event = dict[str, Any]
#: What a ``raw=True`` subscriber receives: ``(kind, t_ns, values)``, where ``values`` is a
#: tuple in ``KINDS[kind]`` order (from :func:`emit`) or a dict of fields (from :func:`publish`).
RawEvent = tuple[str, int, "tuple[Any, ...] | dict[str, Any]"]
#: A subscriber: it receives an :data:`Event`, or a :data:`RawEvent` when subscribed with ``raw=True``.
Callback = Callable[[Any], None]

KINDS: dict[str, tuple[str, ...]] = {
    "engine.var_new": ("var", "name"),
    "engine.var_delete": ("var", "name"),
    "engine.push": ("op", "name", "ctx", "reads", "writes", "priority", "prop"),
    "engine.start": ("op", "worker", "stream"),
    "engine.end": ("op", "worker", "stream", "error"),
    # One operation that finished before anyone published its push (see combine_operations):
    # engine.push's fields (reads and writes as tuples), then engine.end's, then the push and
    # start times (t_ns is the end). Only an EventBuffer that is the sole subscriber receives
    # it; expand() gives the three events it stands for.
    "engine.op": (
        "op",
        "name",
        "ctx",
        "reads",
        "writes",
        "priority",
        "prop",
        "worker",
        "stream",
        "error",
        "t_push",
        "t_start",
    ),
    "engine.wait_begin": ("var",),
    "engine.wait_end": ("var",),
    "storage.alloc": ("handle", "ctx", "nbytes", "rounded", "pool_hit"),
    "storage.free": ("handle", "ctx", "nbytes", "rounded", "pooled"),
    "executor.plan": ("graph", "storage", "inplace", "bytes_planned", "bytes_naive"),
    "kvstore.push": ("key", "nbytes", "ctx"),
    "kvstore.pull": ("key", "nbytes", "ctx"),
    # One training step of a distributed worker, split by :mod:`framework.kvstore.timing`:
    # milliseconds of compute, communication and waiting (they add up to the step), messages, bytes.
    "kvstore.step": ("rank", "step", "compute_ms", "comm_ms", "wait_ms", "calls", "nbytes"),
    "train.metric": ("epoch", "batch", "name", "value"),
    # One row of mx.mon.Monitor.toc: ``value`` is a float, or a list of at most 16 floats when
    # the statistic has several elements; ``role`` says where the array came from
    # ("output", "input", "argument", "auxiliary"), ``stat`` names the statistic function.
    "monitor.stat": ("batch", "name", "role", "stat", "value"),
    # The user instrumentation of mx.profiler (Task, Frame, Event, Counter, Marker): ``range``
    # ties a begin to its end, ``thread`` is the publishing thread's name.
    "profiler.task_begin": ("domain", "name", "range", "thread"),
    "profiler.task_end": ("domain", "name", "range", "thread"),
    "profiler.frame_begin": ("domain", "name", "range", "thread"),
    "profiler.frame_end": ("domain", "name", "range", "thread"),
    "profiler.event_begin": ("domain", "name", "range", "thread"),
    "profiler.event_end": ("domain", "name", "range", "thread"),
    "profiler.counter": ("domain", "name", "value", "thread"),
    "profiler.marker": ("domain", "name", "scope", "thread"),
}

_log = logging.getLogger(__name__)

#: True while at least one subscriber exists. Publishers test this before building fields.
enabled = False
#: True while one EventBuffer is the only subscriber of every engine operation kind: the
#: engine may then publish a quick operation as one ``engine.op`` event (see the module notes).
combine_operations = False
#: That buffer while :data:`combine_operations` holds, else None: the engine appends its
#: ``engine.op`` events to it directly, as :func:`emit`'s fast path would.
operation_buffer: EventBuffer | None = None
#: True while there are subscribers and every one is an :class:`EventBuffer`: publishing then
#: runs no subscriber code (it appends, or counts under a lock no finalizer can wait for), so
#: even a finalizer may publish (the storage pool's ``free_nowait`` does).
only_buffers = False
#: What ``engine.op`` stands for, in order; :func:`expand` and :func:`expand_counts` use it.
COMBINED_KINDS = ("engine.push", "engine.start", "engine.end")


def _operation_part(kind: str, time_field: str | None) -> tuple[str, tuple[int, ...], int | None]:
    names = KINDS["engine.op"]
    time_at = None if time_field is None else names.index(time_field)
    return kind, tuple(names.index(name) for name in KINDS[kind]), time_at


#: How one ``engine.op`` makes the three events it stands for: per kind, the positions of
#: its fields among engine.op's values, and the position of its time (None: engine.op's own
#: time, the end). The one statement of that mapping: :func:`expand` applies it row by row,
#: the server's frame encoder column by column.
OPERATION_PARTS: tuple[tuple[str, tuple[int, ...], int | None], ...] = (
    _operation_part("engine.push", "t_push"),
    _operation_part("engine.start", "t_start"),
    _operation_part("engine.end", None),
)
#: An operation still in flight this long after its push has its push and start published
#: on their own by the next :func:`run_samplers` (50 ms: about what a browser redraws at).
SAMPLE_AFTER_NS = 50_000_000

_lock = threading.Lock()
_subscriptions: tuple[Subscription, ...] = ()
# kind -> every subscriber that receives it (those of "*" included), computed when someone
# subscribes or unsubscribes. Replaced, never mutated, so publishers read it without a lock
# and pay a single dict lookup per event.
_routes: dict[str, tuple[Subscription, ...]] = {}
# kind -> the EventBuffer that is its only subscriber (the fast path of emit and publish).
_sole_buffers: dict[str, EventBuffer] = {}
_now = time.perf_counter_ns
# Weak references to the samplers of run_samplers (engines register theirs).
_samplers: list[weakref.WeakMethod] = []


class EventBuffer:
    """Raw events waiting for a consumer thread: at most ``bound``; beyond it events are counted.

    The publishing thread (often an engine worker) only appends; the consumer calls
    :meth:`take` and :meth:`take_dropped`. Dropping the newest events when full (rather
    than the oldest) keeps what was taken contiguous up to the moment the buffer filled.
    """

    __slots__ = ("bound", "pending", "_dropped", "_lock")

    def __init__(self, bound: int) -> None:
        if isinstance(bound, bool) or not isinstance(bound, int) or bound < 1:
            raise ValueError(f"EventBuffer: bound must be an int >= 1, got {bound!r}")
        self.bound = bound
        #: The raw events waiting, oldest first (a deque: appends and pops are thread-safe).
        self.pending: deque[RawEvent] = deque()
        self._dropped: Counter[str] = Counter()
        self._lock = threading.Lock()

    def offer(self, raw: RawEvent) -> None:
        """Keep ``raw``, or count it when the buffer is full (what the subscription calls)."""
        if len(self.pending) < self.bound:
            self.pending.append(raw)
        else:
            self.overflowed(raw[0])

    def overflowed(self, kind: str) -> None:
        """Count one event of ``kind`` that did not fit.

        Nothing the cyclic collector counts is allocated under the lock, here or in
        :meth:`take_dropped`, so no finalizer can run while a thread holds it: a finalizer
        that publishes (:data:`only_buffers`) and lands here cannot wait for its own thread.
        """
        with self._lock:
            self._dropped[kind] += 1

    def take(self, max_events: int) -> list[RawEvent]:
        """Up to ``max_events`` of the oldest waiting events (removed from the buffer)."""
        pending = self.pending
        n = min(len(pending), max_events)
        return [pending.popleft() for _ in range(n)]

    def take_dropped(self) -> dict[str, int]:
        """How many events of each kind did not fit since the last call (and reset the counts)."""
        fresh: Counter[str] = Counter()  # made before the lock is taken: see overflowed
        with self._lock:
            dropped, self._dropped = self._dropped, fresh
        return dict(dropped)

    def __len__(self) -> int:
        return len(self.pending)


class Subscription:
    """A handle returned by :func:`subscribe`; pass it to :func:`unsubscribe` (or use ``with``)."""

    __slots__ = ("callback", "kinds", "raw", "failures", "buffer")

    def __init__(
        self, callback: Callback, kinds: frozenset[str] | None, raw: bool = False, buffer: EventBuffer | None = None
    ) -> None:
        self.callback = callback
        self.kinds = kinds
        self.raw = raw
        self.failures = 0
        self.buffer = buffer

    def wants(self, kind: str) -> bool:
        return self.kinds is None or kind in self.kinds

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        unsubscribe(self)


def subscribe(callback: Callback, kinds: Iterable[str] | None = None, raw: bool = False) -> Subscription:
    """Call ``callback(event)`` for every published event of ``kinds`` (all kinds if None).

    Callbacks run synchronously in the publishing thread (often an engine worker), so they
    must be quick and thread-safe; hand heavy work to a queue. An exception in a callback
    is logged and counted, never propagated into the engine. With ``raw=True`` the callback
    receives :data:`RawEvent` tuples (turn them into dicts with :func:`to_dict`).
    """
    if not callable(callback):
        raise TypeError(f"events.subscribe: callback must be callable, got {type(callback).__name__}")
    kind_set = _kind_set(kinds)
    return _add(Subscription(callback, kind_set, bool(raw)))


def subscribe_buffer(buffer: EventBuffer, kinds: Iterable[str] | None = None) -> Subscription:
    """Append every published event of ``kinds`` (all if None) to ``buffer`` as a :data:`RawEvent`.

    The cheapest way to watch: see :class:`EventBuffer`. Unsubscribe as any subscription.
    """
    if not isinstance(buffer, EventBuffer):
        raise TypeError(f"events.subscribe_buffer: expected an EventBuffer, got {type(buffer).__name__}")
    return _add(Subscription(buffer.offer, _kind_set(kinds), raw=True, buffer=buffer))


def _kind_set(kinds: Iterable[str] | None) -> frozenset[str] | None:
    """``kinds`` as a frozenset (None: all kinds); an unknown kind is an error that lists the known ones."""
    if kinds is None:
        return None
    kind_set = frozenset([kinds] if isinstance(kinds, str) else kinds)
    unknown = sorted(kind_set - KINDS.keys())
    if unknown:
        raise ValueError(f"events.subscribe: unknown event kind(s) {unknown}; known kinds: {sorted(KINDS)}")
    return kind_set


def _add(sub: Subscription) -> Subscription:
    global _subscriptions
    with _lock:
        _subscriptions = (*_subscriptions, sub)
        _rebuild_routes()
    return sub


def unsubscribe(sub: Subscription) -> None:
    """Stop delivering to ``sub``; unsubscribing twice is harmless."""
    global _subscriptions
    with _lock:
        _subscriptions = tuple(s for s in _subscriptions if s is not sub)
        _rebuild_routes()


def _rebuild_routes() -> None:
    """Recompute ``_routes`` and ``enabled`` from the subscriptions (called under ``_lock``)."""
    global _routes, _sole_buffers, enabled, combine_operations, operation_buffer, only_buffers
    _routes = {kind: targets for kind in KINDS if (targets := tuple(s for s in _subscriptions if s.wants(kind)))}
    # "is not None": an empty EventBuffer is falsy (it has a length)
    _sole_buffers = {
        kind: buffer
        for kind, targets in _routes.items()
        if len(targets) == 1 and (buffer := targets[0].buffer) is not None
    }
    combined = _sole_buffers.get("engine.op")
    combine_operations = combined is not None and all(_sole_buffers.get(k) is combined for k in COMBINED_KINDS)
    operation_buffer = combined if combine_operations else None
    only_buffers = bool(_subscriptions) and all(s.buffer is not None for s in _subscriptions)
    enabled = bool(_subscriptions)


def _deliver(sub: Subscription, kind: str, event: Event | RawEvent) -> None:
    try:
        sub.callback(event)
    except Exception:
        sub.failures += 1
        if sub.failures == 1:
            _log.exception("event subscriber %r failed on %s; later failures are counted only", sub.callback, kind)


def publish(kind: str, **fields: Any) -> None:
    """Deliver ``{"kind": kind, "t_ns": now, **fields}`` to the subscribers of ``kind``."""
    targets = _routes.get(kind)
    if not targets:
        return
    t_ns = fields.pop("t_ns", None) or _now()
    buffer = _sole_buffers.get(kind)
    if buffer is not None:
        buffer.offer((kind, t_ns, fields))
        return
    event = {"kind": kind, "t_ns": t_ns, **fields}
    for sub in targets:
        _deliver(sub, kind, (kind, t_ns, fields) if sub.raw else event)


def emit(kind: str, *values: Any) -> None:
    """The hot path: publish ``kind`` with its fields given positionally, in ``KINDS[kind]`` order.

    Raw subscribers get the values tuple as it is; a dict is built only if some subscriber
    wants dicts. Callers still guard with ``if events.enabled:``.
    """
    buffer = _sole_buffers.get(kind)
    if buffer is not None:  # the fast path: no callback frame, see EventBuffer
        pending = buffer.pending
        if len(pending) < buffer.bound:
            pending.append((kind, _now(), values))
        else:
            buffer.overflowed(kind)
        return
    _deliver_raw(kind, (kind, _now(), values))


def emit_at(kind: str, t_ns: int, *values: Any) -> None:
    """:func:`emit` for an event that happened earlier, at ``t_ns`` (``perf_counter_ns``).

    The engine publishes the push and start of a long operation this way when it finds it
    still in flight (see the module notes). Events then arrive slightly out of time order.
    """
    buffer = _sole_buffers.get(kind)
    if buffer is not None:
        buffer.offer((kind, t_ns, values))
    else:
        _deliver_raw(kind, (kind, t_ns, values))


def _deliver_raw(kind: str, raw: RawEvent) -> None:
    """Hand ``raw`` to every subscriber of ``kind``, as it is or as a dict (built once)."""
    targets = _routes.get(kind)
    if not targets:
        return
    event = None
    for sub in targets:
        if sub.raw:
            _deliver(sub, kind, raw)
        else:
            if event is None:
                event = to_dict(raw)
            _deliver(sub, kind, event)


def add_sampler(method: Callable[[], None]) -> None:
    """Have :func:`run_samplers` call the bound ``method`` for as long as its object lives.

    Engines register the method that publishes the push and start of operations in flight
    for long (:data:`combine_operations`); only a weak reference is kept.
    """
    with _lock:
        _samplers[:] = [ref for ref in _samplers if ref() is not None]
        _samplers.append(weakref.WeakMethod(method))


def run_samplers() -> None:
    """Call every live sampler: what a buffer's consumer does before each time it takes events."""
    if not combine_operations:
        return
    for ref in tuple(_samplers):
        method = ref()
        if method is not None:
            try:
                method()
            except Exception:
                _log.exception("event sampler %r failed", method)


def expand(raws: list[RawEvent]) -> list[RawEvent]:
    """``raws`` with every ``engine.op`` replaced by its engine.push, engine.start and engine.end.

    The three keep their own times (push, start, end), at the place of the ``engine.op``.
    Returns ``raws`` itself when it holds none.
    """
    if not any(raw[0] == "engine.op" for raw in raws):
        return raws
    out: list[RawEvent] = []
    for raw in raws:
        if raw[0] != "engine.op":
            out.append(raw)
            continue
        kind, t_end, values = raw
        if isinstance(values, dict):
            values = tuple(values.get(name) for name in KINDS[kind])
        for part, fields, time_at in OPERATION_PARTS:
            # engine.push's reads and writes are lists, as the classic path publishes them
            part_values = tuple(list(v) if type(v) is tuple else v for v in map(values.__getitem__, fields))
            out.append((part, t_end if time_at is None else values[time_at], part_values))
    return out


def expand_counts(counts: dict[str, int]) -> dict[str, int]:
    """Per-kind counts with ``engine.op`` counted as the three events it stands for."""
    combined = counts.get("engine.op")
    if not combined:
        return dict(counts)
    out = {kind: n for kind, n in counts.items() if kind != "engine.op"}
    for kind in COMBINED_KINDS:
        out[kind] = out.get(kind, 0) + combined
    return out


def to_dict(raw: RawEvent) -> Event:
    """The ``{"kind", "t_ns", ...fields}`` dict of a raw event (what ordinary subscribers get)."""
    kind, t_ns, values = raw
    if isinstance(values, dict):
        return {"kind": kind, "t_ns": t_ns, **values}
    names = KINDS[kind]
    if len(names) != len(values):
        raise ValueError(f"events: {kind} has fields {names}, got {len(values)} values {values!r}")
    event = {"kind": kind, "t_ns": t_ns}
    event.update(zip(names, values, strict=True))
    return event


class Recorder:
    """Collects events into ``self.events`` while active; ``with events.record() as rec:``."""

    def __init__(self, kinds: Iterable[str] | None = None) -> None:
        self.events: list[Event] = []
        self._kinds = kinds
        self._sub: Subscription | None = None

    def start(self) -> Recorder:
        if self._sub is None:
            # list.append is atomic under the GIL, so workers may publish concurrently.
            self._sub = subscribe(self.events.append, self._kinds)
        return self

    def stop(self) -> None:
        if self._sub is not None:
            unsubscribe(self._sub)
            self._sub = None

    def of_kind(self, *kinds: str) -> list[Event]:
        """The recorded events whose kind is one of ``kinds``, in publication order."""
        return [e for e in self.events if e["kind"] in kinds]

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def record(kinds: Iterable[str] | None = None) -> Recorder:
    """A :class:`Recorder` for ``kinds``; start it with ``with``."""
    return Recorder(kinds)
