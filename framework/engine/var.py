"""An engine variable and its queue of pending operations (MXNet's ``ThreadedVar``).

A variable is a token that stands for some resource (an array's memory, a random
generator). Operations declare which variables they read and which they write; the
variable's queue turns those declarations into an order:

* consecutive reads run together;
* a write waits for every earlier read and write;
* reads after a write wait for that write.

State: ``_queue`` holds operations not yet granted, in push order; ``_running_reads``
counts granted reads not yet completed; ``_write_granted`` says a write holds the
variable. Each ``append_*`` returns True when the operation may proceed at once; each
``complete_*`` returns the operations that the completion unblocked. The caller (the
engine) turns a grant into one decrement of the operation's pending counter.

"Idle" here means idle as far as this queue knows. An operation collected in a bulk
segment reaches the queue only when its segment is pushed (bulk.py), so code that frees
what a variable guards when it looks idle (``retire``, ``retire_if_idle_nowait``) must
first make sure no segment may still hold it: the NDArray chunk asks the engine's bulk
collector (``quiet``, ``in_transit``; framework/ndarray/chunk.py).

The three methods every inline operation calls (``try_grant``, ``complete_read``,
``complete_write``) take the lock with ``acquire()`` and release it in ``finally`` rather
than with a ``with`` statement: ``with`` looks up ``__enter__`` and ``__exit__`` and builds
a bound method object for each on every use, which costs a third of such a call. The
meaning is the same.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from typing import Any

_var_ids = itertools.count(1)


class ExceptionRecord:
    """An exception raised by one operation, shared by every variable it poisoned.

    Sharing one record is what lets ``wait_for_var`` clear an error for all the variables
    that inherited it at once (MXNet shares one ``exception_ptr`` the same way).
    """

    __slots__ = ("error", "op_name")

    def __init__(self, error: BaseException, op_name: str) -> None:
        self.error: BaseException | None = error
        self.op_name = op_name


class Var:
    """A dependency token created by ``Engine.new_variable``; never build one directly."""

    __slots__ = (
        "id",
        "_name",
        "engine_id",
        "version",
        "deleted",
        "exception_record",
        "_lock",
        "_queue",
        "_running_reads",
        "_write_granted",
        "_on_idle",
    )

    def __init__(self, engine_id: int, name: str | None = None) -> None:
        self.id = next(_var_ids)
        self._name = name  # None: named after the id, when somebody asks (most never do)
        self.engine_id = engine_id
        #: Number of writes completed so far: each write makes a new version.
        self.version = 0
        self.deleted = False
        self.exception_record: ExceptionRecord | None = None
        self._lock = threading.Lock()
        self._queue: deque[tuple[Any, bool]] = deque()
        self._running_reads = 0
        self._write_granted = False
        self._on_idle: Any = None

    @property
    def name(self) -> str:
        """What events, traces and error messages call this variable (``var<id>`` by default)."""
        return self._name or f"var{self.id}"

    @property
    def exception(self) -> BaseException | None:
        """The error this variable carries from a failed writer, if not yet reported."""
        record = self.exception_record
        return None if record is None else record.error

    def append_read(self, op: Any) -> bool:
        """Queue a read by ``op``; True if it may start now (no write pending before it)."""
        with self._lock:
            if not self._queue and not self._write_granted:
                self._running_reads += 1
                return True
            self._queue.append((op, False))
            return False

    def append_write(self, op: Any) -> bool:
        """Queue a write by ``op``; True if it may start now (nothing else pending or running)."""
        with self._lock:
            if not self._queue and not self._write_granted and self._running_reads == 0:
                self._write_granted = True
                return True
            self._queue.append((op, True))
            return False

    def complete_read(self) -> list[Any]:
        """A granted read finished; the write queued behind the last read may now start."""
        lock = self._lock
        lock.acquire()  # not ``with``: see the module docstring
        try:
            self._running_reads -= 1
            if self._running_reads == 0 and self._queue:
                # Reads are only ever queued behind a write, so the head here is a write.
                op, _is_write = self._queue.popleft()
                self._write_granted = True
                return [op]
            retired = None if self._on_idle is None else self._take_on_idle()
        finally:
            lock.release()
        if retired is not None:
            retired()
        return []

    def complete_write(self) -> list[Any]:
        """The granted write finished: grant every read up to the next write, or that write."""
        lock = self._lock
        lock.acquire()  # not ``with``: see the module docstring
        try:
            self.version += 1
            self._write_granted = False
            queue = self._queue
            granted = []
            while queue and not queue[0][1]:
                granted.append(queue.popleft()[0])
            self._running_reads += len(granted)
            if not granted and queue:
                granted.append(queue.popleft()[0])
                self._write_granted = True
            retired = None if granted or self._on_idle is None else self._take_on_idle()
        finally:
            lock.release()
        if retired is not None:
            retired()
        return granted

    def try_grant(self, write: bool) -> bool:
        """Grant a read (or a write) at once if the variable is idle and carries no error, else False.

        For the engine's inline path, which calls it while holding its push lock (so no
        operation can be appended meanwhile): ``idle()`` and ``append_*`` in one step, one
        lock round trip instead of two. The lock is still needed: a completion on another
        thread moves an operation from the queue to the granted state in several steps, and a
        look without the lock could fall between them. A False changes nothing; a grant is
        given back with :meth:`revoke` or ended by ``complete_*``.
        """
        lock = self._lock
        lock.acquire()  # not ``with``: see the module docstring
        try:
            if self._queue or self._write_granted or self._running_reads:
                return False
            record = self.exception_record
            if record is not None and record.error is not None:
                return False
            if write:
                self._write_granted = True
            else:
                self._running_reads = 1
            return True
        finally:
            lock.release()

    def revoke(self, write: bool) -> None:
        """Take back a :meth:`try_grant` whose operation will not run (push lock still held)."""
        with self._lock:
            if write:
                self._write_granted = False
            else:
                self._running_reads -= 1

    def retire(self, callback: Any) -> None:
        """Mark the variable deleted and call ``callback()`` once nothing holds or awaits it.

        This is deletion without an engine push: the callback runs now if the variable is
        idle, else in the thread that completes its last pending operation. The caller
        guarantees nobody pushes on the variable again (NDArray chunks use it to return
        their block to the pool).
        """
        with self._lock:
            self.deleted = True
            if self._queue or self._write_granted or self._running_reads:
                self._on_idle = callback
                return
        callback()

    def retire_if_idle_nowait(self) -> bool:
        """Mark the variable deleted and return True if nothing holds or awaits it, without blocking.

        False (and nothing changed) when it is busy or its lock is taken. For finalizers, which
        may run while this very thread holds the lock (in ``complete_write``, say), where
        :meth:`retire` could wait forever.
        """
        if not self._lock.acquire(False):  # without blocking; positional: a keyword costs more than the lock
            return False
        try:
            if self._queue or self._write_granted or self._running_reads:
                return False
            self.deleted = True
            return True
        finally:
            self._lock.release()

    def _take_on_idle(self) -> Any:
        callback = self._on_idle
        if callback is not None and not self._queue and not self._write_granted and self._running_reads == 0:
            self._on_idle = None
            return callback
        return None

    def idle(self) -> bool:
        """True when no operation holds or waits for this variable."""
        with self._lock:
            return not self._queue and not self._write_granted and self._running_reads == 0

    def __repr__(self) -> str:
        return f"<Var {self.id} {self.name!r} v{self.version}>"
