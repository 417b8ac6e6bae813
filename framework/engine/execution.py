"""Running one ready operation, and the bookkeeping after it: the engine's execution core.

Every engine type ends up here once an operation's variables have granted it: a worker
thread (or the pushing thread, for inline work) calls :meth:`Execution._execute`, which
skips the function if an input carries an error, else runs it, and :meth:`Execution._complete`
then records its error on the variables it writes, publishes its end, lets the variables
grant what queued behind it (the engine type's ``_release_dependencies``) and counts it
finished. An async function instead gets a :class:`Completion`, and ``_complete`` runs when
it calls that.

Separate from the push side (base.py) because this is the other end of an operation's
life, and from waiting (waiting.py), which only watches the count this module lowers.
State (set by ``Engine.__init__``): ``_inflight``, the operations pushed and not yet
completed, by id; ``_idle`` and ``_idle_waiters``, how a completion that empties
``_inflight`` wakes the threads waiting for all work. Invariant: an operation leaves
``_inflight`` only after its variables released their grants, so a waiter never sees the
engine idle while some operation still holds a variable.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from .. import backend, events
from ..base import EngineError
from ..context import Context
from .op_events import clock, error_message
from .operation import Operation, RunContext
from .var import ExceptionRecord

_log = logging.getLogger("framework.engine")


class Completion:
    """The ``on_complete`` callback handed to async functions; call it exactly once.

    ``on_complete()`` reports success, ``on_complete(error)`` reports failure with an
    exception that is then propagated like one raised by a synchronous function.
    """

    __slots__ = ("_engine", "_op", "_worker", "_stream", "_once")

    def __init__(self, engine: Execution, op: Operation, worker: str, stream: Any) -> None:
        self._engine = engine
        self._op = op
        self._worker = worker
        self._stream = stream
        # Taken by the first call: an atomic "called" flag, so that two threads racing to
        # complete the same operation cannot both get through.
        self._once = threading.Lock()

    def __call__(self, error: BaseException | None = None) -> None:
        if error is not None and not isinstance(error, BaseException):
            raise EngineError(f"on_complete of {self._op.name!r} takes an exception or nothing, got {error!r}")
        if not self._once.acquire(blocking=False):
            raise EngineError(f"on_complete of operation {self._op.name!r} was called twice")
        self._engine._complete(self._op, error, self._worker, self._stream)

    @property
    def called(self) -> bool:
        return self._once.locked()


class Execution:
    """Running ready operations and completing them, shared by every engine type (mixed into ``Engine``)."""

    _inflight: dict[int, Operation]
    _idle: threading.Condition
    _idle_waiters: int
    # provided by the engine's other bases (exceptions.py, op_events.py) and its type
    _interrupt: Callable[[Operation, BaseException], None]
    _record_exception: Callable[[BaseException, str, int, Context, str], ExceptionRecord]
    _publish_deferred_end: Callable[[Operation, str, str | None, str | None], None]
    _release_dependencies: Callable[[Operation], None]

    def _execute(self, op: Operation, worker: str, stream: Any) -> None:
        """Run one ready operation on the calling thread (a worker, or inline)."""
        op.state = "running"
        if events.enabled and op.profiled:
            if op.deferred:  # one store: _publish_long_running reads it from another thread
                op.started = (clock(), worker, None if stream is None else backend.stream_name(stream))
            else:
                events.emit("engine.start", op.id, worker, None if stream is None else backend.stream_name(stream))
        if not (op.no_skip or op.handles_exceptions):
            for var in op.reads + op.writes:
                record = var.exception_record
                if record is not None and record.error is not None:
                    op.exception_record = record  # skipped: inherit the upstream error
                    self._complete(op, None, worker, stream)
                    return
        run_ctx = RunContext(op.ctx, stream, worker)
        if op.is_async:
            on_complete = Completion(self, op, worker, stream)
            try:
                op.fn(run_ctx, on_complete)
            except BaseException as err:
                if not on_complete.called:
                    on_complete(err)
                elif isinstance(err, Exception):
                    _log.error("async operation %r raised after calling on_complete: %r", op.name, err)
                else:
                    self._interrupt(op, err)
            return
        error = None
        try:
            if stream is None:
                op.fn(run_ctx)
            else:
                with backend.use_stream(op.ctx, stream):
                    op.fn(run_ctx)
                backend.synchronize_stream(stream)
        except BaseException as err:
            error = err
        self._complete(op, error, worker, stream)

    def _complete(self, op: Operation, error: BaseException | None, worker: str, stream: Any) -> None:
        """Bookkeeping after an operation ran (or was skipped): errors, dependants, counters.

        A KeyboardInterrupt or SystemExit (any BaseException that is not an Exception) is the
        program's, not the operation's failure: it is never stored on variables. The
        operation counts as finished (its outputs may be partial) and :meth:`_interrupt`
        hands the interrupt back to the program.
        """
        if error is not None and not isinstance(error, Exception):
            self._interrupt(op, error)
            error = None
        if error is not None:
            op.exception_record = self._record_exception(error, op.name, op.id, op.ctx, worker)
        record = op.exception_record
        if record is not None:
            for var in op.writes:
                var.exception_record = record
        op.state = "done"
        if op.profiled and (events.enabled or op.deferred):
            message = None
            if record is not None and record.error is not None:
                message = error_message(record.error)
                if error is None:
                    message = f"skipped after error in {record.op_name!r}: {message}"
            stream_name = None if stream is None else backend.stream_name(stream)
            if op.deferred:
                self._publish_deferred_end(op, worker, stream_name, message)
            else:
                events.emit("engine.end", op.id, worker, stream_name, message)
        self._release_dependencies(op)
        del self._inflight[op.id]
        if op.done is not None:
            op.done.set()
        if not self._inflight and self._idle_waiters:
            with self._idle:
                self._idle.notify_all()
