"""The event bus: how every mechanism reports what it does, at no cost when nobody listens.

Lower layers publish, upper layers (profiler, server, tests) subscribe. A publisher
guards each call with ``if events.enabled:`` so that, with no subscriber, reporting costs
one attribute check. Each event is a plain dict ``{"kind", "t_ns", **fields}`` with
``t_ns`` from ``time.perf_counter_ns()``; the kinds and their fields are listed in
``KINDS`` (DESIGN.md, "Events").
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

Event = dict[str, Any]
Callback = Callable[[Event], None]

KINDS: dict[str, tuple[str, ...]] = {
    "engine.var_new": ("var", "name"),
    "engine.var_delete": ("var", "name"),
    "engine.push": ("op", "name", "ctx", "reads", "writes", "priority", "prop"),
    "engine.start": ("op", "worker", "stream"),
    "engine.end": ("op", "worker", "stream", "error"),
    "engine.wait_begin": ("var",),
    "engine.wait_end": ("var",),
    "storage.alloc": ("handle", "ctx", "nbytes", "rounded", "pool_hit"),
    "storage.free": ("handle", "ctx", "nbytes", "rounded", "pooled"),
    "executor.plan": ("graph", "storage", "inplace", "bytes_planned", "bytes_naive"),
    "kvstore.push": ("key", "nbytes", "ctx"),
    "kvstore.pull": ("key", "nbytes", "ctx"),
    "train.metric": ("epoch", "batch", "name", "value"),
}

_log = logging.getLogger(__name__)

#: True while at least one subscriber exists. Publishers test this before building fields.
enabled = False

_lock = threading.Lock()
# kind -> subscribers interested in it; "*" holds those that want every kind. Replaced,
# never mutated, so publish() can read it without a lock.
_routes: dict[str, tuple[Subscription, ...]] = {}


class Subscription:
    """A handle returned by :func:`subscribe`; pass it to :func:`unsubscribe` (or use ``with``)."""

    __slots__ = ("callback", "kinds", "failures")

    def __init__(self, callback: Callback, kinds: frozenset[str] | None) -> None:
        self.callback = callback
        self.kinds = kinds
        self.failures = 0

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        unsubscribe(self)


def subscribe(callback: Callback, kinds: Iterable[str] | None = None) -> Subscription:
    """Call ``callback(event)`` for every published event of ``kinds`` (all kinds if None).

    Callbacks run synchronously in the publishing thread (often an engine worker), so they
    must be quick and thread-safe; hand heavy work to a queue. An exception in a callback
    is logged and counted, never propagated into the engine.
    """
    if not callable(callback):
        raise TypeError(f"events.subscribe: callback must be callable, got {type(callback).__name__}")
    kind_set = None
    if kinds is not None:
        kind_set = frozenset([kinds] if isinstance(kinds, str) else kinds)
        unknown = sorted(kind_set - KINDS.keys())
        if unknown:
            raise ValueError(f"events.subscribe: unknown event kind(s) {unknown}; known kinds: {sorted(KINDS)}")
    sub = Subscription(callback, kind_set)
    global enabled
    with _lock:
        for key in kind_set or ("*",):
            _routes[key] = _routes.get(key, ()) + (sub,)
        enabled = True
    return sub


def unsubscribe(sub: Subscription) -> None:
    """Stop delivering to ``sub``; unsubscribing twice is harmless."""
    global enabled
    with _lock:
        for key in list(_routes):
            remaining = tuple(s for s in _routes[key] if s is not sub)
            if remaining:
                _routes[key] = remaining
            else:
                del _routes[key]
        enabled = bool(_routes)


def publish(kind: str, **fields: Any) -> None:
    """Deliver ``{"kind": kind, "t_ns": now, **fields}`` to the subscribers of ``kind``."""
    routes = _routes
    targets = routes.get(kind, ()) + routes.get("*", ())
    if not targets:
        return
    event = {"kind": kind, "t_ns": fields.pop("t_ns", None) or time.perf_counter_ns(), **fields}
    for sub in targets:
        try:
            sub.callback(event)
        except Exception:
            sub.failures += 1
            if sub.failures == 1:
                _log.exception("event subscriber %r failed on %s; later failures are counted only", sub.callback, kind)


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
