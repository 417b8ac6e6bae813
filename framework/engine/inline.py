"""Running a short push in the pushing thread, at once, when nothing it touches is pending.

Handing an operation to a worker costs more than computing ``a += 1`` on 16 numbers: a lock,
a queue, a thread wake-up and a GIL hand-over each way. These paths run such a push before
the push call returns, *without* building an ``Operation``, when every variable it touches
is free at that moment; otherwise they refuse (return False, nothing done) and the caller
pushes as usual. What may not change is the engine's rule: the variables are granted exactly
as a queued operation's would be (so a push from another thread still waits behind this
one), an error poisons what the function writes, an interrupt is kept for the program's
next push or wait, and a watched run is published as the one ``engine.op`` the deferred
path would publish.

Three entry points, from the most general to the shortest: :meth:`InlineRuns._run_now_if_free`
(any variables, granted under the push lock), :meth:`InlineRuns.run_now_into_new` (one read,
one write to a variable nobody has seen yet) and :meth:`InlineRuns.run_now_in_place` (one
variable, written). Separate from threaded.py, which schedules operations onto workers: this
is the way around that scheduling, and the engine's hottest code, kept flat on purpose (see
``run_now_in_place``). The inline *operations* (waiters, ``inline_if_ready`` operations that
had to wait) are ordinary operations and stay in threaded.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .. import events
from ..context import Context
from .bulk_control import _BulkSetting
from .op_events import clock, error_message
from .operation import PROP_NORMAL, FnProperty, Operation, RunContext, SyncFn, new_operation_id
from .var import ExceptionRecord, Var

#: The worker name of operations run in the thread that pushed or readied them.
INLINE_WORKER = "inline"


def _revoke(reads: tuple[Var, ...], writes: tuple[Var, ...]) -> None:
    """Give back grants of ``Var.try_grant`` whose operation will not run inline after all."""
    for var in reads:
        var.revoke(False)
    for var in writes:
        var.revoke(True)


class InlineRuns:
    """The inline paths of the threaded engines (a base of ``ThreadedEngineBase``, before ``Engine``)."""

    id: int
    var_class: type[Var]
    threads_bulking: int
    _bulk_local: _BulkSetting
    _stopped: bool
    _pending_interrupt: BaseException | None
    _push_lock: threading.Lock
    _inline_run_ctx: RunContext
    # provided by the engine's other bases and by ThreadedEngineBase (threaded.py)
    _record_exception: Callable[[BaseException, str, int, Context, str], ExceptionRecord]
    _keep_interrupt: Callable[[BaseException], None]
    _publish_whole: Callable[..., None]
    _dispatch: Callable[[Operation], None]
    _release_vars: Callable[[tuple[Var, ...], tuple[Var, ...]], None]

    def _run_now_if_free(
        self,
        fn: SyncFn,
        ctx: Context,
        reads: tuple[Var, ...],
        writes: tuple[Var, ...],
        name: str,
        prop: FnProperty = FnProperty.NORMAL,
        priority: int = 0,
    ) -> bool:
        """Run a short push in this thread, before returning, if every variable is free now.

        This is the inline path without an ``Operation``: it is taken when nobody listens to
        events, or when the only listener is the combining buffer (``events.combine_operations``):
        the push is then published as the one ``engine.op`` the deferred path would publish
        for it (an operation id from the same counter, worker "inline", its push and start at
        one clock read). With any other subscriber ``_schedule`` runs it inline as an
        operation, with its three events. Only on a CPU, and only when no variable carries an
        error (the regular path then skips the function and passes the error on). The
        variables are granted under the push lock, exactly as an operation's would be, so a
        push from another thread queues behind this one; the function's error poisons what
        it writes, as on a worker.
        """
        watched = events.enabled
        if (watched and not events.combine_operations) or ctx.device_type != "cpu" or self._stopped:
            return False
        with self._push_lock:
            # Nothing can append while we hold the lock, and completions only free variables:
            # what is idle when checked is still idle when granted.
            if self.var_class is Var:
                # Check and grant in one step per variable (Var.try_grant); if a variable is
                # busy, give back the grants already made.
                for var in reads:
                    if not var.try_grant(False):
                        _revoke(reads[: reads.index(var)], ())
                        return False
                for var in writes:
                    if not var.try_grant(True):
                        _revoke(reads, writes[: writes.index(var)])
                        return False
            else:  # a learner's variable class: only the public Var interface
                for group in (reads, writes):
                    for var in group:
                        record = var.exception_record
                        if (record is not None and record.error is not None) or not var.idle():
                            return False
                for var in reads:
                    var.append_read(None)
                for var in writes:
                    var.append_write(None)
        run_ctx = self._inline_run_ctx
        if run_ctx.ctx is not ctx:
            run_ctx = self._inline_run_ctx = RunContext(ctx, None, INLINE_WORKER)
        if watched:
            op_id, t_push = new_operation_id(), clock()
        message = None
        try:
            fn(run_ctx)
        except Exception as err:
            record = self._record_exception(err, name, op_id if watched else new_operation_id(), ctx, INLINE_WORKER)
            for var in writes:
                var.exception_record = record
            message = error_message(err)
        except BaseException as interrupt:  # KeyboardInterrupt, SystemExit: the program's, see _complete
            self._keep_interrupt(interrupt)
        if watched:  # published before the variables free their waiters, as _complete does
            self._publish_whole(
                op_id, name, ctx, reads, writes, priority, prop, t_push, None, INLINE_WORKER, None, message
            )
        self._release_vars(reads, writes)
        return True

    def run_now_into_new(
        self, fn: Callable[..., Any], args: tuple, ctx: Context, read: Var, new_write: Var, name: str
    ) -> bool:
        """The inline path for one read and one write to a variable nobody else has seen yet.

        Two things make it cheaper than :meth:`_run_now_if_free`. The new variable needs no
        grant: no other code holds it, so nothing can be queued on it or wait for it; it only
        gets its new version afterwards, as ``complete_write`` would give it. And the read is
        granted with one ``Var.try_grant`` *without* the push lock: that lock keeps the
        relative order of operations the same on every variable they share, and this
        operation shares only ``read`` with anyone, so whichever order the variable's own lock
        decides is consistent (an operation queued there after the grant waits for this read,
        one appended before makes the grant fail). Everything else is as in
        ``_run_now_if_free``: only with nobody listening to events or the combining buffer as
        the only listener (one ``engine.op`` then, as there), outside bulking, on a CPU, and
        only when ``read`` carries no error; an error poisons ``new_write``.
        """
        watched = events.enabled
        if (
            (watched and not events.combine_operations)
            or (self.threads_bulking and self._bulk_local.size > 1)
            or self._stopped
            or self._pending_interrupt is not None
            or ctx.device_type != "cpu"
            or self.var_class is not Var
            or read.engine_id != self.id
            or read.deleted
            or not read.try_grant(False)
        ):
            return False
        if watched:
            op_id, t_push = new_operation_id(), clock()
        message = None
        try:
            fn(*args)
        except Exception as err:
            record = self._record_exception(err, name, op_id if watched else new_operation_id(), ctx, INLINE_WORKER)
            new_write.exception_record = record
            message = error_message(err)
        except BaseException as interrupt:  # KeyboardInterrupt, SystemExit: the program's, see _complete
            self._keep_interrupt(interrupt)
        if watched:
            self._publish_whole(
                op_id,
                name,
                ctx,
                (read,),
                (new_write,),
                0,
                PROP_NORMAL,
                t_push,
                None,
                INLINE_WORKER,
                None,
                message,
            )
        new_write.version += 1
        for ready in read.complete_read():
            if ready.release(1):
                self._dispatch(ready)
        return True

    def run_now_in_place(self, fn: Callable[..., Any], args: tuple, ctx: Context, var: Var, name: str) -> bool:
        """The inline path for an operation whose only variable is ``var``, which it writes.

        The argument of :meth:`run_now_into_new` for its one read holds for this one write: an
        operation that shares a single variable with the rest of the program needs no push
        lock, because there is no second variable on which two operations could be ordered the
        other way round; ``var``'s own lock orders it (``Var.try_grant`` fails if anything is
        queued on or holds ``var``). After the run, ``complete_write`` gives ``var`` its new
        version and grants what was queued behind it meanwhile. The conditions are those of
        :meth:`run_now_into_new`; an error poisons ``var``.

        Its checks, its run and its ``engine.op`` repeat :meth:`run_now_into_new`'s line for line
        instead of sharing a helper: on a 2.6 us ``a += 1`` one more Python call per operation
        is a measurable share. A change to one belongs in the other; tests/engine/test_inline.py
        holds both to the same conditions, errors and events.
        """
        watched = events.enabled
        if (
            (watched and not events.combine_operations)
            or (self.threads_bulking and self._bulk_local.size > 1)
            or self._stopped
            or self._pending_interrupt is not None
            or ctx.device_type != "cpu"
            or self.var_class is not Var
            or var.engine_id != self.id
            or var.deleted
            or not var.try_grant(True)
        ):
            return False
        if watched:
            op_id, t_push = new_operation_id(), clock()
        message = None
        try:
            fn(*args)
        except Exception as err:
            record = self._record_exception(err, name, op_id if watched else new_operation_id(), ctx, INLINE_WORKER)
            var.exception_record = record
            message = error_message(err)
        except BaseException as interrupt:  # KeyboardInterrupt, SystemExit: the program's, see _complete
            self._keep_interrupt(interrupt)
        if watched:
            self._publish_whole(
                op_id, name, ctx, (), (var,), 0, PROP_NORMAL, t_push, None, INLINE_WORKER, None, message
            )
        for ready in var.complete_write():
            if ready.release(1):
                self._dispatch(ready)
        return True
