"""A pool of worker threads that run ready operations, highest priority first.

Ready operations sit in a heap ordered by (-priority, arrival); a ``SimpleQueue`` of tokens
counts them, so an idle worker sleeps in C code until there is work, then pops the best
operation. Each worker lazily creates one stream per GPU context it serves, which is
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

    def _loop(self, worker: str) -> None:
        streams: dict[Context, Any] = {}
        while self._tokens.get() is not None:
            with self._heap_lock:
                op = heapq.heappop(self._heap)[2]
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
