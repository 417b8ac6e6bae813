# The exercise stub: fill in every `# TODO(exercise)` gap (generated from the reference solution).
# ruff: noqa: F401, RUF100  (the imports are the ones your code will need)
"""Exercise ``engine_var``: the dependency engine's per-variable queue of readers and writers.

An engine variable stands for a resource (an array's memory). Every pushed operation
declares which variables it reads and which it writes; each variable turns those
declarations into an order (MXNet's architecture notes, "Execution Engine"; docs/engine.md, section 1):

* consecutive reads run together;
* a write waits for every earlier read and write, and runs alone;
* reads pushed after a write wait for that write;
* a read queued behind a *waiting* write never overtakes it (writers cannot starve).

``ExerciseVar`` has the interface of ``framework/engine/var.py``'s ``Var``; the checker
plugs it into a real ``ThreadedEngine`` (``create(..., var_class=ExerciseVar)``). The
locking, versions, deletion and errors are given: fill in the four bookkeeping methods.
They run with ``self._lock`` held and use three fields:

* ``_queue``: a deque of ``(op, is_write)`` not yet granted, in push order;
* ``_running_reads``: how many granted reads have not completed;
* ``_write_granted``: whether a granted write has not completed.

Contract:

* ``_grant_read(op) -> bool``: True if the read may start now (then count it as
  running); otherwise queue it and return False.
* ``_grant_write(op) -> bool``: True if the write may start now (then mark the write as
  granted); otherwise queue it and return False.
* ``_read_done() -> list``: a granted read finished; return the operations this grants
  (a queued write, once the last running read is done), updating the fields.
* ``_write_done() -> list``: the granted write finished; return what this grants: every
  read at the head of the queue (up to the next write), or else the next write.

The engine counts every grant as one satisfied dependency of the operation; an operation
granted twice, or never, breaks the engine.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from typing import Any

from framework.engine.var import ExceptionRecord

_ids = itertools.count(1)


class ExerciseVar:
    """A dependency token with its queue (same interface as framework.engine.var.Var)."""

    __slots__ = (
        "id",
        "name",
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
        self.id = next(_ids)
        self.name = name or f"var{self.id}"
        self.engine_id = engine_id
        self.version = 0  # completed writes
        self.deleted = False
        self.exception_record: ExceptionRecord | None = None
        self._lock = threading.Lock()
        self._queue: deque[tuple[Any, bool]] = deque()
        self._running_reads = 0
        self._write_granted = False
        self._on_idle: Any = None

    # ------------------------------------------------------------------ the gaps
    def _grant_read(self, op: Any) -> bool:
        """A read by ``op`` arrives: grant it now (True) or queue it (False)."""
        # TODO(exercise): grant the read if nothing is queued and no write holds the variable
        raise NotImplementedError("exercise gap in _grant_read")

    def _grant_write(self, op: Any) -> bool:
        """A write by ``op`` arrives: grant it now (True) or queue it (False)."""
        # TODO(exercise): grant the write only if nothing is queued, running or granted
        raise NotImplementedError("exercise gap in _grant_write")

    def _read_done(self) -> list[Any]:
        """A granted read completed: the operations this grants (the queued write, if last)."""
        # TODO(exercise): count the read out; the last one grants the write at the queue head
        raise NotImplementedError("exercise gap in _read_done")

    def _write_done(self) -> list[Any]:
        """The granted write completed: grant the reads at the head of the queue, or the next write."""
        # TODO(exercise): release the write; grant the leading reads together, else the next write
        raise NotImplementedError("exercise gap in _write_done")

    # ------------------------------------------------------------------ given: the engine's interface
    @property
    def exception(self) -> BaseException | None:
        record = self.exception_record
        return None if record is None else record.error

    def append_read(self, op: Any) -> bool:
        with self._lock:
            return self._grant_read(op)

    def append_write(self, op: Any) -> bool:
        with self._lock:
            return self._grant_write(op)

    def complete_read(self) -> list[Any]:
        with self._lock:
            granted = self._read_done()
            retired = None if granted else self._take_on_idle()
        if retired is not None:
            retired()
        return granted

    def complete_write(self) -> list[Any]:
        with self._lock:
            self.version += 1
            granted = self._write_done()
            retired = None if granted else self._take_on_idle()
        if retired is not None:
            retired()
        return granted

    def retire(self, callback: Any) -> None:
        """Mark deleted; call ``callback()`` once nothing holds or awaits the variable."""
        with self._lock:
            self.deleted = True
            if self._queue or self._write_granted or self._running_reads:
                self._on_idle = callback
                return
        callback()

    def _take_on_idle(self) -> Any:
        callback = self._on_idle
        if callback is not None and not self._queue and not self._write_granted and self._running_reads == 0:
            self._on_idle = None
            return callback
        return None

    def idle(self) -> bool:
        with self._lock:
            return not self._queue and not self._write_granted and self._running_reads == 0

    def __repr__(self) -> str:
        return f"<ExerciseVar {self.id} {self.name!r} v{self.version}>"
