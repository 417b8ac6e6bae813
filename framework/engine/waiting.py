"""Waiting for the engine: ``wait_for_var``, ``wait_for_all``, and what is still pending.

A wait is not a lock on the engine: ``wait_for_var(v)`` pushes a tiny read of ``v`` that sets
an event, so it is granted exactly when every write pushed on ``v`` before it has finished
(the variable's own queue does the ordering), and ``wait_for_all`` waits until the count of
operations in flight (``_inflight``, lowered by execution.py) reaches zero. Both first flush
the bulk segments still being collected, or they would wait for work never queued, and both
re-raise what the engine owes the program: a kept interrupt, then the error of the variable
(``wait_for_var``) or the first unreported one (``wait_for_all``).

Separate from execution.py because it only watches that count; a timeout (``wait_timeout``,
``MXLAB_ENGINE_WAIT_TIMEOUT``) turns a hang into an ``EngineTimeoutError`` naming the
operations still pending, which is how an async function that never calls ``on_complete``
is found.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from .. import events
from ..base import EngineError, EngineTimeoutError
from ..context import Context
from .operation import FnProperty, Operation
from .var import ExceptionRecord, Var

_CPU0 = Context("cpu", 0)


class Waiting:
    """Waits and the pending-work report shared by every engine type (mixed into ``Engine``)."""

    wait_timeout: float | None
    _inflight: dict[int, Operation]
    _idle: threading.Condition
    _idle_waiters: int
    _exceptions: list[ExceptionRecord]
    _exceptions_lock: threading.Lock
    _pending_interrupt: BaseException | None
    # provided by the engine's other bases and by Engine (base.py)
    _check_vars: Callable[[Iterable[Var], Iterable[Var], str, str], tuple[tuple[Var, ...], tuple[Var, ...]]]
    _flush_all_bulk: Callable[[], None]
    _submit: Callable[[Operation], None]
    _raise_pending_interrupt: Callable[[], None]
    throw: Callable[[Var], None]

    def wait_for_var(self, var: Var, timeout: float | None = None) -> None:
        """Block until every operation pushed so far that writes ``var`` has finished.

        Re-raises (once) the exception ``var`` carries. With ``timeout`` (seconds; default
        the engine's ``wait_timeout``), raises EngineTimeoutError naming the operations still
        pending on ``var``, which is how an async function that never calls ``on_complete``
        is found.
        """
        self._check_vars((var,), (), "wait_for_var", "wait_for_var")
        if timeout is None:
            timeout = self.wait_timeout
        self._flush_all_bulk()
        reached = threading.Event()
        waiter = Operation(
            lambda run_ctx: reached.set(), False, _CPU0, (var,), (), FnProperty.NO_SKIP, 0, f"wait_for_var({var.name})"
        )
        waiter.inline = True
        waiter.profiled = False
        if events.enabled:
            events.publish("engine.wait_begin", var=var.id)
        try:
            self._submit(waiter)
            if not reached.wait(timeout):
                raise EngineTimeoutError(
                    f"wait_for_var({var.name!r}) timed out after {timeout}s; pending operations on it: "
                    + self._describe_pending(lambda o: var in o.reads or var in o.writes, exclude=waiter)
                )
        finally:
            if events.enabled:
                events.publish("engine.wait_end", var=var.id)
        if self._pending_interrupt is not None:
            self._raise_pending_interrupt()
        self.throw(var)

    def wait_for_all(self, timeout: float | None = None) -> None:
        """Block until every pushed operation has finished; re-raise the first unreported error."""
        if timeout is None:
            timeout = self.wait_timeout
        self._flush_all_bulk()
        if events.enabled:
            events.publish("engine.wait_begin", var="all")
        try:
            if not self._wait_idle(timeout):
                raise EngineTimeoutError(
                    f"wait_for_all timed out after {timeout}s; pending operations: "
                    + self._describe_pending(lambda o: True)
                )
        finally:
            if events.enabled:
                events.publish("engine.wait_end", var="all")
        if self._pending_interrupt is not None:
            self._raise_pending_interrupt()
        with self._exceptions_lock:
            records, self._exceptions = self._exceptions, []
        first = None
        for record in records:
            if record.error is not None:
                first = first or record.error
                record.error = None
        if first is not None:
            raise first

    def pending_operations(self) -> list[Operation]:
        """The operations pushed and not yet finished (a snapshot, for diagnosis)."""
        return list(self._inflight.values())

    def set_wait_timeout(self, seconds: float | None) -> float | None:
        """Set :attr:`wait_timeout` (None or 0: wait forever); returns the previous value."""
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0):
            raise EngineError(f"set_wait_timeout: seconds must be a number >= 0 or None, got {seconds!r}")
        previous, self.wait_timeout = self.wait_timeout, (seconds or None)
        return previous

    def _wait_idle(self, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._idle:
            # Counted before looking at _inflight: a completion that empties it afterwards
            # then sees the count and wakes us (one that emptied it before, we see empty).
            self._idle_waiters += 1
            try:
                while self._inflight:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return False
                    self._idle.wait(remaining if remaining is not None else 1.0)
            finally:
                self._idle_waiters -= 1
        return True

    def _describe_pending(self, match: Callable[[Operation], bool], exclude: Operation | None = None) -> str:
        found = [o for o in list(self._inflight.values()) if o is not exclude and match(o)]
        if not found:
            return "none"
        shown = ", ".join(f"{o.name!r} (op #{o.id}, {o.state})" for o in found[:10])
        return shown + (f" and {len(found) - 10} more" if len(found) > 10 else "")
