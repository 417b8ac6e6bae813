"""ThreadedEngine: dependency-driven scheduling onto worker threads.

Pushing an operation appends it to the queue of every variable it touches (``Var``); each
variable that can grant access at once counts the operation's pending counter down by
one, and the last grant dispatches it to a worker. When an operation completes, its
variables grant the operations queued behind it, which may dispatch them in turn. No lock
is held while functions run: the only engine-wide lock orders the *appending* of
dependencies, so that concurrent pushes from several threads stay consistent.

``ThreadedEngine`` sends everything to one shared pool; ``ThreadedEnginePerDevice``
(per_device.py) chooses a pool per device and kind of work. A short push whose variables
are all free may skip all of this and run in the pushing thread (inline.py).
"""

from __future__ import annotations

import abc
import threading
from collections import deque

from .. import config
from ..base import EngineError
from ..context import Context
from .base import Engine
from .inline import INLINE_WORKER, InlineRuns
from .operation import Operation, RunContext
from .var import Var
from .workers import WorkerPool


def worker_count(engine_type: str, num_workers: int | None) -> int:
    """``num_workers`` if given, else ``MXLAB_CPU_WORKER_NTHREADS``; anything but an int >= 1 is an error.

    Zero is refused rather than read as "use the default": an engine without workers would
    accept pushes and never run them.
    """
    if num_workers is None:
        return config.get("MXLAB_CPU_WORKER_NTHREADS")
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
        raise EngineError(f"{engine_type}: num_workers must be an int >= 1, got {num_workers!r}")
    return num_workers


class _InlineRun(threading.local):
    """Per thread: the operations queued by the inline run in progress (None when none is)."""

    pending: deque | None = None


class ThreadedEngineBase(InlineRuns, Engine):
    """Scheduling shared by the threaded engines; subclasses choose the pool (``_pool_for``).

    ``InlineRuns`` (inline.py) comes first: its inline paths replace ``Engine``'s, which never run inline.
    """

    def __init__(self) -> None:
        super().__init__()
        self._inline = _InlineRun()
        # The RunContext of the last inline run: one per context is enough (it holds no stream
        # on a CPU), and reusing it saves building one per tiny operation.
        self._inline_run_ctx = RunContext(Context("cpu", 0), None, INLINE_WORKER)
        self._pools: dict[object, WorkerPool] = {}
        self._pools_lock = threading.Lock()

    def _schedule(self, op: Operation) -> None:
        granted = 0
        with self._push_lock:
            for var in op.reads:
                granted += var.append_read(op)
            for var in op.writes:
                granted += var.append_write(op)
        # Releasing the extra 1 only now means no completion can dispatch `op` before
        # all its dependencies were appended.
        if op.release(granted + 1):
            if op.inline_if_ready and op.ctx.device_type == "cpu":  # a GPU function needs a worker's stream
                # At once, not through the trampoline of _run_inline: a function that pushes
                # work and waits for it must not find that work queued behind itself.
                self._execute(op, INLINE_WORKER, None)
            else:
                self._dispatch(op)

    def _release_dependencies(self, op: Operation) -> None:
        self._release_vars(op.reads, op.writes)

    def _release_vars(self, reads: tuple[Var, ...], writes: tuple[Var, ...]) -> None:
        """Let variables whose reads and writes completed grant the operations queued behind them."""
        for var in reads:
            for ready in var.complete_read():
                if ready.release(1):
                    self._dispatch(ready)
        for var in writes:
            for ready in var.complete_write():
                if ready.release(1):
                    self._dispatch(ready)

    def _dispatch(self, op: Operation) -> None:
        if op.inline:
            self._run_inline(op)
            return
        pool = self._pool_for(op)
        if not pool.offer_continuation(op):
            pool.enqueue(op)

    def _run_inline(self, op: Operation) -> None:
        """Run ``op`` in this thread; nested inline work is queued, not recursed into.

        An inline operation that completes at once may make another inline operation
        ready, and so on down a long chain: the trampoline keeps the stack flat.
        """
        pending = self._inline.pending
        if pending is not None:
            pending.append(op)
            return
        self._inline.pending = pending = deque([op])
        try:
            while pending:
                self._execute(pending.popleft(), INLINE_WORKER, None)
        finally:
            self._inline.pending = None

    @abc.abstractmethod
    def _pool_for(self, op: Operation) -> WorkerPool:
        """The worker pool that runs ``op`` (one shared pool, or one per device and kind)."""

    def _make_pool(self, key: object, name: str, num_workers: int) -> WorkerPool:
        with self._pools_lock:
            pool = self._pools.get(key)
            if pool is None:
                pool = self._pools[key] = WorkerPool(name, num_workers, self._execute)
            return pool

    def _stop_workers(self) -> None:
        with self._pools_lock:
            pools = list(self._pools.values())
            self._pools.clear()
        for pool in pools:
            pool.stop()

    def workers(self) -> list[str]:
        """Names of the worker threads started so far (pools start on first use)."""
        return [w for pool in list(self._pools.values()) for w in pool.workers]


class ThreadedEngine(ThreadedEngineBase):
    """One shared pool of ``num_workers`` threads for every device and kind of work."""

    type_name = "ThreadedEngine"

    def __init__(self, num_workers: int | None = None) -> None:
        workers = worker_count(self.type_name, num_workers)  # checked before the engine exists
        super().__init__()
        self.num_workers = workers

    def _pool_for(self, op: Operation) -> WorkerPool:
        pool = self._pools.get("shared")
        return pool if pool is not None else self._make_pool("shared", "shared", self.num_workers)
