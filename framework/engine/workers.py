"""A pool of worker threads that run ready operations, highest priority first.

Ready operations sit in a heap ordered by (-priority, arrival); a ``SimpleQueue`` of tokens
counts them, so an idle worker sleeps in C code until there is work, then pops the best
operation. When a worker's completion makes another operation of the same pool ready, the
worker keeps it as its *continuation* and runs it next, instead of queueing it and waking
another thread: a chain of dependent operations then stays on one warm thread (unless a
higher-priority operation is waiting, which always goes first). Each worker lazily creates
one stream per GPU context it serves, which is
what lets copies and computation on one device overlap.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from .. import backend
from ..context import Context
from .operation import Operation

_log = logging.getLogger("framework.engine")

Execute = Callable[[Operation, str, Any], None]


class WorkerPool:
    """``num_workers`` daemon threads named ``<name>/<i>`` executing operations."""

    def __init__(self, name: str, num_workers: int, execute: Execute) -> None:
        self.name = name
        self.num_workers = num_workers
        self._execute = execute
        self._heap: list[tuple[int, int, Operation]] = []
        self._heap_lock = threading.Lock()
        self._tokens: queue.SimpleQueue[bool | None] = queue.SimpleQueue()
        self._arrival = itertools.count()
        self._local = threading.local()  # per worker: the continuation slot
        self.workers = [f"{name}/{i}" for i in range(num_workers)]
        self._threads = [
            threading.Thread(target=self._loop, args=(worker,), name=f"mxlab-{worker}", daemon=True)
            for worker in self.workers
        ]
        for thread in self._threads:
            thread.start()

    def enqueue(self, op: Operation) -> None:
        """Hand a ready operation to the pool."""
        op.state = "ready"
        with self._heap_lock:
            heapq.heappush(self._heap, (-op.priority, next(self._arrival), op))
        self._tokens.put(True)

    def offer_continuation(self, op: Operation) -> bool:
        """Called while dispatching: keep ``op`` for the calling worker if it belongs here.

        Returns False (the caller then enqueues) when the caller is not one of this pool's
        workers, when it already holds a continuation, or when a ready operation of higher
        priority is waiting.
        """
        local = self._local
        if getattr(local, "slot", False) is not None:
            return False
        with self._heap_lock:
            if self._heap and -self._heap[0][0] > op.priority:
                return False
        op.state = "ready"
        local.slot = op
        return True

    def _loop(self, worker: str) -> None:
        streams: dict[Context, Any] = {}
        local = self._local
        local.slot = None
        while self._tokens.get() is not None:
            with self._heap_lock:
                op = heapq.heappop(self._heap)[2]
            while op is not None:
                self._run(op, worker, streams)
                op, local.slot = local.slot, None

    def _run(self, op: Operation, worker: str, streams: dict[Context, Any]) -> None:
        try:
            stream = None
            if op.ctx.device_type == "gpu":
                stream = streams.get(op.ctx)
                if stream is None:
                    stream = streams[op.ctx] = backend.new_stream(op.ctx)
            self._execute(op, worker, stream)
        except BaseException:  # the engine's own bookkeeping failed: say so loudly
            _log.critical("engine worker %s failed while running %r", worker, op, exc_info=True)

    def stop(self) -> None:
        """Let every worker finish its current operation and exit; joins the threads."""
        for _ in self._threads:
            self._tokens.put(None)
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join()
