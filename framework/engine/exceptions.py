"""How an error raised inside an engine operation travels back to the program (MXNet 1.x semantics).

An ``Exception`` is wrapped in an :class:`~framework.engine.var.ExceptionRecord` that poisons
the variables the operation writes; ``throw`` re-raises it once. A ``KeyboardInterrupt`` or
``SystemExit`` is the program's, not the operation's: it is kept aside and re-raised by the
program's next push or wait. :class:`ExceptionPropagation` is a base of
:class:`~framework.engine.base.Engine`; it owns the list of records and the pending interrupt.
"""

from __future__ import annotations

import threading

from ..base import EngineError
from ..context import Context
from .operation import Operation
from .var import ExceptionRecord, Var


class ExceptionPropagation:
    """Error records, ``throw`` and interrupt hand-back shared by every engine type (mixed into ``Engine``)."""

    var_class: type[Var]
    _exceptions: list[ExceptionRecord]
    _exceptions_lock: threading.Lock
    _pending_interrupt: BaseException | None

    def throw(self, var: Var) -> None:
        """Raise (once) the exception ``var`` carries, without waiting; no-op if it has none."""
        if not isinstance(var, self.var_class):
            raise EngineError(f"throw: expected an engine variable, got {type(var).__name__}")
        record = var.exception_record
        if record is not None and record.error is not None:
            error, record.error = record.error, None
            raise error

    def _record_exception(
        self, error: BaseException, op_name: str, op_id: int, ctx: Context, worker: str
    ) -> ExceptionRecord:
        """Wrap a raised error so it can travel with variables; say where it came from."""
        try:
            error.add_note(f"(raised in engine operation {op_name!r}, op #{op_id}, on {ctx}, worker {worker})")
        except AttributeError:
            pass
        record = ExceptionRecord(error, op_name)
        with self._exceptions_lock:
            self._exceptions.append(record)
        return record

    def _interrupt(self, op: Operation, interrupt: BaseException) -> None:
        """Keep an interrupt for the program's next push or wait, in whichever thread.

        Threaded engines run functions on worker threads, where raising would only end the
        worker; the first interrupt waits here instead (NaiveEngine raises it in the pushing
        thread at once).
        """
        op.interrupted = interrupt
        self._keep_interrupt(interrupt)

    def _keep_interrupt(self, interrupt: BaseException) -> None:
        """Remember the first interrupt until the program's next push or wait re-raises it."""
        with self._exceptions_lock:
            if self._pending_interrupt is None:
                self._pending_interrupt = interrupt

    def _raise_pending_interrupt(self) -> None:
        """Re-raise (once) the interrupt a worker caught."""
        with self._exceptions_lock:
            interrupt, self._pending_interrupt = self._pending_interrupt, None
        if interrupt is not None:
            raise interrupt
