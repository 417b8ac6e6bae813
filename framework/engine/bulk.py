"""Bulking: fusing consecutive small pushes into one engine operation.

Each push costs a fixed dispatch overhead, which dominates for tiny functions. With a bulk
size above 1, consecutive NORMAL, priority-0 ``push_sync`` calls from one thread on one
context are collected into a segment and pushed as a single operation that reads the union
of their reads and writes the union of their writes. Running the collected functions in
order inside that operation keeps every dependency the separate pushes would have had.

A segment is flushed when it is full, when the context changes, when its thread pushes
anything that cannot be bulked, and on every wait. Exceptions keep their per-function
meaning: a function whose variables are poisoned (before or inside the segment) is
skipped, and an error poisons only the variables its own function writes.

While a segment is collected, its variables' queues know nothing of it: a variable used
only by an open segment looks idle. The same holds *in transit*, after the segment left
the collector and before the engine appended it to those queues. Whoever frees memory when
a variable looks idle (a dying NDArray returning its block to the pool) must therefore
also ask the collector: :attr:`BulkCollector.quiet` is False from the first push collected
until every segment taken out has landed (``landed``, called by the engine once the
segment is on its variables' queues).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..context import Context
from .operation import FnProperty, Operation, RunContext
from .var import ExceptionRecord, Var

Item = tuple[Any, tuple[Var, ...], tuple[Var, ...], str]
#: The engine's ``_record_exception(error, op_name, op_id, ctx, worker)``: wraps an error raised
#: inside a segment so it travels with the variables the failing function writes.
RecordException = Callable[[BaseException, str, int, Context, str], ExceptionRecord]


class Segment:
    """Functions collected by one thread for one context, in push order."""

    __slots__ = ("ctx", "items")

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.items: list[Item] = []


class BulkCollector:
    """One open segment per pushing thread; waits flush every thread's segment.

    Every segment returned by :meth:`add`, :meth:`take_own` or :meth:`take_all` is *in
    transit* until the engine reports it with :meth:`landed`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[int, Segment] = {}
        self._in_transit = 0
        #: True when no segment is open and none is in transit: then no variable has a
        #: pending bulked operation its queue does not show. A plain attribute, written under
        #: the lock and read without it (by finalizers, which must not wait).
        self.quiet = True

    def add(
        self, fn: Any, ctx: Context, reads: tuple[Var, ...], writes: tuple[Var, ...], name: str, size: int
    ) -> Segment | None:
        """Append a push to this thread's segment; return a segment that must be pushed now."""
        key = threading.get_ident()
        full = None
        with self._lock:
            segment = self._open.get(key)
            if segment is not None and segment.ctx != ctx:
                full = self._open.pop(key)  # context changed: the old segment goes first
                segment = None
            if segment is None:
                segment = self._open[key] = Segment(ctx)
            segment.items.append((fn, reads, writes, name))
            self.quiet = False
            if full is None and len(segment.items) >= size:
                full = self._open.pop(key)
            if full is not None:
                self._in_transit += 1
        return full

    def any_open(self) -> bool:
        """Whether any thread has an open segment (a look without the lock: a hint, exact for the caller's own)."""
        return bool(self._open)

    def in_transit(self) -> int:
        """How many segments were taken out and have not landed yet (a look without the lock)."""
        return self._in_transit

    def take_own(self) -> Segment | None:
        """Remove and return the calling thread's open segment, if any (in transit until :meth:`landed`)."""
        with self._lock:
            segment = self._open.pop(threading.get_ident(), None)
            if segment is not None:
                self._in_transit += 1
            return segment

    def take_all(self) -> list[Segment]:
        """Remove and return every thread's open segment (each in transit until :meth:`landed`)."""
        if not self._open:  # the common case, without the lock
            return []
        with self._lock:
            segments = list(self._open.values())
            # Counted in transit before the dictionary empties: a lock-free reader of
            # ``quiet`` never sees an instant with the segments in neither place.
            self._in_transit += len(segments)
            self._open.clear()
        return segments

    def landed(self, count: int) -> None:
        """``count`` segments taken out are now on their variables' queues (or will never run)."""
        with self._lock:
            self._in_transit -= count
            self.quiet = not self._open and not self._in_transit


def fuse_segment(segment: Segment, record_exception: RecordException) -> Operation:
    """One Operation that runs a segment's functions in order with per-function errors.

    ``record_exception`` is the engine's own, passed in so this module needs no Engine.
    """
    items = segment.items
    writes = tuple(dict.fromkeys(v for _, _, w, _ in items for v in w))
    written = set(writes)
    reads = tuple(dict.fromkeys(v for _, r, _, _ in items for v in r if v not in written))
    if len(items) == 1:
        name = items[0][3]
    else:
        shown = ", ".join(item[3] for item in items[:3])
        name = f"bulk[{len(items)}]: {shown}{', ...' if len(items) > 3 else ''}"

    def run_segment(run_ctx: RunContext) -> None:  # reads ``op`` (made below) when it runs
        poisoned: dict[Var, ExceptionRecord] = {}
        try:
            for fn, item_reads, item_writes, item_name in items:
                record = None
                for var in item_reads + item_writes:
                    record = poisoned.get(var) or var.exception_record
                    if record is not None and record.error is not None:
                        break
                    record = None
                if record is None:
                    try:
                        fn(run_ctx)
                    except Exception as err:  # a KeyboardInterrupt ends the segment: see Engine._complete
                        record = record_exception(err, item_name, op.id, run_ctx.ctx, run_ctx.worker)
                if record is not None:
                    for var in item_writes:
                        poisoned[var] = record
        finally:
            # The segment holds write access to all of these, so setting them here is safe.
            for var, record in poisoned.items():
                var.exception_record = record

    op = Operation(run_segment, False, segment.ctx, reads, writes, FnProperty.NORMAL, 0, name)
    op.handles_exceptions = True
    return op
