"""The engine's side of bulking: each thread's bulk size, and when collected segments are pushed.

bulk.py collects and fuses; this module decides what the pusher sees. The bulk size is per
thread, as in MXNet (:class:`_BulkSetting`): ``with engine.bulk(n):`` in one thread changes
neither another thread's size nor its pushes. ``threads_bulking`` counts the threads whose
size is above 1, so that the inline paths can skip the thread-local read while nobody bulks.

Flushing keeps the engine's promise: a thread's open segment is pushed before any push of
that thread that cannot join it (``_flush_own_bulk``), and every thread's before a wait, a
deletion or a stop (``_flush_all_bulk``), or those would miss work still being collected.
Until ``_push_segments`` reports a segment landed on its variables' queues, the collector is
not ``quiet`` and dying arrays keep their blocks (framework/ndarray/chunk.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..base import EngineError
from .bulk import BulkCollector, RecordException, fuse_segment
from .operation import Operation


class _BulkSetting(threading.local):
    """One thread's bulk size; the class attribute is every new thread's default (1: off).

    A class default makes reading the size a plain attribute lookup on every push, where
    ``getattr(local, "size", 1)`` would raise and swallow an AttributeError each time.
    """

    size = 1


class BulkControl:
    """Per-thread bulk sizes and flushing, shared by every engine type (mixed into ``Engine``)."""

    _bulk: BulkCollector
    _bulk_local: _BulkSetting
    threads_bulking: int
    _bulking_lock: threading.Lock

    # provided by Engine (base.py) and ExceptionPropagation (exceptions.py)
    _submit: Callable[[Operation], None]
    _record_exception: RecordException

    def bulk_size(self) -> int:
        """How many consecutive small pushes of the calling thread are fused into one operation (1 = off)."""
        return self._bulk_local.size

    def set_bulk_size(self, size: int) -> int:
        """Set the calling thread's bulk size (0 or 1 turns bulking off); returns its previous size.

        Per thread, as MXNet's: other threads keep their own sizes and open segments.
        """
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise EngineError(f"set_bulk_size: size must be an int >= 0, got {size!r}")
        segment = self._bulk.take_own()
        if segment is not None:
            self._push_segments([segment])
        previous = self.bulk_size()
        size = max(size, 1)
        if (previous > 1) != (size > 1):
            with self._bulking_lock:
                self.threads_bulking += 1 if size > 1 else -1
        self._bulk_local.size = size
        return previous

    @contextmanager
    def bulk(self, size: int) -> Iterator[None]:
        """``with engine.bulk(64):`` fuses this thread's pushes inside the block (``mx.engine.bulk``)."""
        previous = self.set_bulk_size(size)
        try:
            yield
        finally:
            self.set_bulk_size(previous)

    def _flush_own_bulk(self) -> None:
        if self._bulk_local.size > 1:
            segment = self._bulk.take_own()
            if segment is not None:
                self._push_segments([segment])

    def _flush_all_bulk(self) -> None:
        segments = self._bulk.take_all()
        if segments:
            self._push_segments(segments)

    def _push_segments(self, segments: list[Any]) -> None:
        """Submit segments taken from the bulk collector, then report them landed.

        Only once a segment's operation is on its variables' queues may those variables look
        idle again: until ``landed``, the collector is not ``quiet`` and dying arrays keep
        their blocks (framework/ndarray/chunk.py).
        """
        try:
            for segment in segments:
                self._submit(fuse_segment(segment, self._record_exception))
        finally:
            self._bulk.landed(len(segments))
