"""ThreadedEngine: dependency-driven scheduling onto worker threads.

Pushing an operation appends it to the queue of every variable it touches (``Var``); each
variable that can grant access at once counts the operation's pending counter down by
one, and the last grant dispatches it to a worker. When an operation completes, its
variables grant the operations queued behind it, which may dispatch them in turn. No lock
is held while functions run: the only engine-wide lock orders the *appending* of
dependencies, so that concurrent pushes from several threads stay consistent.

``ThreadedEngine`` sends everything to one shared pool; ``ThreadedEnginePerDevice``
(per_device.py) chooses a pool per device and kind of work.
"""

from __future__ import annotations

import abc
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from .. import config, events
from ..base import EngineError
from ..context import Context
from .base import Engine
from .op_events import clock, error_message
from .operation import PROP_NORMAL, FnProperty, Operation, RunContext, SyncFn, new_operation_id
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


#: The worker name of operations run in the thread that pushed or readied them.
INLINE_WORKER = "inline"


class _InlineRun(threading.local):
    """Per thread: the operations queued by the inline run in progress (None when none is)."""

    pending: deque | None = None


def _revoke(reads: tuple[Var, ...], writes: tuple[Var, ...]) -> None:
    """Give back grants of ``Var.try_grant`` whose operation will not run inline after all."""
    for var in reads:
        var.revoke(False)
    for var in writes:
        var.revoke(True)


class ThreadedEngineBase(Engine):
    """Scheduling shared by the threaded engines; subclasses choose the pool (``_pool_for``)."""

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
