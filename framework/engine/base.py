"""The engine interface and the machinery every engine type shares.

An engine receives functions with the variables they read and write and promises one
rule: two functions that share a variable, at least one of them writing it, run in push
order; everything else may overlap. Subclasses decide *how* operations wait and where they
run (``_schedule``, ``_release_dependencies``); this class owns the rest: waiting, operator
handles, deletion, bulking and events, with the argument checks (:mod:`.checks`) and the
exception propagation (:mod:`.exceptions`) as its bases.

Exceptions (MXNet 1.x semantics): a function that raises poisons every variable it writes;
later operations touching a poisoned variable are skipped and inherit the same error;
``wait_for_var`` / ``throw`` re-raise it once (clearing it for every variable sharing it),
``wait_for_all`` re-raises the first unreported one and clears them all.
"""

from __future__ import annotations

import abc
import atexit
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from .. import backend, config, events
from ..base import EngineError, EngineTimeoutError
from ..context import Context
from .bulk import BulkCollector, fuse_segment
from .checks import ArgumentChecks
from .exceptions import ExceptionPropagation
from .op_events import OperationEvents, clock, error_message
from .operation import PROP_NORMAL, FnProperty, Operation, OperatorHandle, RunContext
from .var import ExceptionRecord, Var

_engine_ids = itertools.count(1)
_log = logging.getLogger("framework.engine")
_CPU0 = Context("cpu", 0)

SyncFn = Callable[[RunContext], Any]
AsyncFn = Callable[[RunContext, Callable[..., None]], Any]


def _operation_name(fn: Callable[..., Any], name: str | None) -> str:
    """The name events and errors show for an operation: the given one, else the function's."""
    return name or str(getattr(fn, "__name__", "fn"))


class Completion:
    """The ``on_complete`` callback handed to async functions; call it exactly once.

    ``on_complete()`` reports success, ``on_complete(error)`` reports failure with an
    exception that is then propagated like one raised by a synchronous function.
    """

    __slots__ = ("_engine", "_op", "_worker", "_stream", "_once")

    def __init__(self, engine: Engine, op: Operation, worker: str, stream: Any) -> None:
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


class _BulkSetting(threading.local):
    """One thread's bulk size; the class attribute is every new thread's default (1: off).

    A class default makes reading the size a plain attribute lookup on every push, where
    ``getattr(local, "size", 1)`` would raise and swallow an AttributeError each time.
    """

    size = 1


class Engine(ArgumentChecks, ExceptionPropagation, OperationEvents, abc.ABC):
    """Base class of NaiveEngine, ThreadedEngine and ThreadedEnginePerDevice."""

    #: The engine type name, as accepted by ``MXLAB_ENGINE_TYPE``.
    type_name: ClassVar[str] = "Engine"
    #: Whether pushes may be fused into bulk segments (the naive engine runs each at once).
    supports_bulk: ClassVar[bool] = True
    #: The class of the variables ``new_variable`` creates. ``create(..., var_class=...)``
    #: swaps in another implementation of var.py's queue (the engine exercise plugs the
    #: learner's in); every variable of one engine has this exact class.
    var_class: type[Var] = Var

    _default: ClassVar[Engine | None] = None
    _default_lock: ClassVar[threading.Lock] = threading.Lock()
    #: Builds the process-wide engine on first ``get()``. The engine types live in modules
    #: that import this one, so framework/engine/__init__.py installs its ``create`` here.
    default_factory: ClassVar[Callable[[], Engine] | None] = None

    def __init__(self) -> None:
        self.id = next(_engine_ids)
        self._stopped = False
        self._shutdown = False
        # Operations pushed and not yet completed, by id: the engine's pending count.
        self._inflight: dict[int, Operation] = {}
        self._idle = threading.Condition(threading.Lock())
        # Threads inside _wait_idle. A completion that empties the engine takes the condition's
        # lock to wake them only when there are some: most completions have nobody to wake.
        self._idle_waiters = 0
        self._exceptions: list[ExceptionRecord] = []
        self._exceptions_lock = threading.Lock()
        # Held while an operation appends itself to its variables' queues, so that two
        # threads pushing at once give every variable the same relative order (otherwise
        # A-before-B on one variable and B-before-A on another would deadlock).
        self._push_lock = threading.Lock()
        self._checked_contexts: set[Context] = set()
        self._bulk = BulkCollector()
        # The bulk size is per thread, as in MXNet: one thread's ``with bulk(n)`` never
        # changes what another thread's pushes do.
        self._bulk_local = _BulkSetting()
        #: How many threads have a bulk size above 1. Reading a thread-local attribute costs
        #: several times a plain one, so the direct paths (``run_now_into_new``) read this count
        #: first: at zero no thread bulks, this one included. A thread that ends inside a bulk
        #: block leaves it above zero: correct, only the per-thread reads come back.
        self.threads_bulking = 0
        self._bulking_lock = threading.Lock()
        # A KeyboardInterrupt / SystemExit raised by a function on a worker thread, waiting
        # to be re-raised in the program's next push or wait (see _complete).
        self._pending_interrupt: BaseException | None = None
        #: Default timeout (seconds) of waits, and of NaiveEngine's wait for an async
        #: operation's on_complete; None waits forever. ``MXLAB_ENGINE_WAIT_TIMEOUT`` sets it.
        self.wait_timeout: float | None = config.get("MXLAB_ENGINE_WAIT_TIMEOUT") or None
        #: Pushers of small functions (the imperative path) ask for inline execution only when
        #: their arrays hold at most this many elements in all; 0 turns inline execution off.
        #: ``MXLAB_ENGINE_INLINE_MAX_ELEMENTS`` sets it.
        self.inline_max_elements: int = config.get("MXLAB_ENGINE_INLINE_MAX_ELEMENTS")
        self._init_operation_events()

    # ----------------------------------------------------------------- the default engine
    @staticmethod
    def get() -> Engine:
        """The process-wide engine, created on first use from ``MXLAB_ENGINE_TYPE``."""
        engine = Engine._default
        if engine is None:
            with Engine._default_lock:
                if Engine._default is None:
                    if Engine.default_factory is None:
                        raise EngineError("Engine.get: no engine factory installed (import framework.engine)")
                    Engine._default = Engine.default_factory()
                engine = Engine._default
        return engine

    @staticmethod
    def set(engine: Engine | None) -> Engine | None:
        """Replace the process-wide engine (used by tests and demos); returns the old one."""
        if engine is not None and not isinstance(engine, Engine):
            raise EngineError(f"Engine.set expects an Engine or None, got {type(engine).__name__}")
        with Engine._default_lock:
            previous, Engine._default = Engine._default, engine
        return previous

    # ----------------------------------------------------------------- variables
    def new_variable(self, name: str | None = None) -> Var:
        """A fresh dependency token; ``name`` appears in events, traces and error messages."""
        if name is not None and not isinstance(name, str):
            raise EngineError(f"new_variable: name must be a str, got {type(name).__name__}")
        var = self.var_class(self.id, name)
        if events.enabled:  # emit: the fields as a tuple, what a sole buffer keeps without a dict
            events.emit("engine.var_new", var.id, var.name)
        return var

    def delete_variable(self, fn: SyncFn | None, ctx: Context, var: Var) -> None:
        """Run ``fn`` (may be None) after every operation pushed on ``var``, then retire it.

        The variable is unusable from this call on: pushing it again raises.
        """
        if fn is not None:
            self._check_fn(fn, "delete_variable")
        self._check_vars((), (var,), "delete_variable", "delete_variable")
        self._check_context(ctx, "delete_variable")
        self._flush_all_bulk()
        var.deleted = True

        def retire(run_ctx: RunContext) -> None:
            try:
                if fn is not None:
                    fn(run_ctx)
            finally:
                if events.enabled:
                    events.publish("engine.var_delete", var=var.id, name=var.name)

        self._submit(
            Operation(retire, False, ctx, (), (var,), FnProperty.DELETE_VAR, 0, f"delete_variable({var.name})")
        )

    # ----------------------------------------------------------------- pushing
    def push_sync(
        self,
        fn: SyncFn,
        ctx: Context,
        const_vars: Iterable[Var] = (),
        mutable_vars: Iterable[Var] = (),
        prop: FnProperty = FnProperty.NORMAL,
        priority: int = 0,
        name: str | None = None,
        *,
        inline_if_ready: bool = False,
    ) -> None:
        """Schedule ``fn(run_ctx)``; it is complete when it returns. Returns at once.

        ``inline_if_ready=True`` says ``fn`` is short: if nothing it touches is pending, a
        threaded engine runs it in the calling thread (its events name the worker "inline")
        before returning, which costs less than handing it to a worker. The order of
        operations and the travel of exceptions are the same either way.
        """
        if self._pending_interrupt is not None:
            self._raise_pending_interrupt()
        self._check_fn(fn, "push_sync")
        name = _operation_name(fn, name)
        reads, writes = self._check_vars(const_vars, mutable_vars, "push_sync", name)
        self._check_context(ctx, "push_sync")
        self._check_prop(prop, priority, "push_sync")
        self._push_sync_checked(fn, ctx, reads, writes, prop, priority, name, inline_if_ready)

    def push_prepared(
        self,
        fn: SyncFn,
        ctx: Context,
        reads: tuple[Var, ...],
        writes: tuple[Var, ...],
        name: str,
        inline_if_ready: bool,
    ) -> None:
        """``push_sync`` for framework code whose variables come from live arrays (the imperative path).

        The caller guarantees what ``push_sync`` would otherwise check: ``fn`` is callable,
        ``ctx`` was validated when the arrays were allocated, ``reads`` and ``writes`` are
        tuples of distinct variables with none in both. Only what can still go wrong for
        such a caller is checked: a variable of another engine instance (arrays made before
        ``Engine.set``) or one retired by ``delete_variable``.
        """
        if self._pending_interrupt is not None:
            self._raise_pending_interrupt()
        engine_id = self.id
        for var in reads:
            if var.engine_id != engine_id or var.deleted:
                self._check_vars(reads, writes, "push_sync", name)  # raises the precise error
        for var in writes:
            if var.engine_id != engine_id or var.deleted:
                self._check_vars(reads, writes, "push_sync", name)
        # _push_sync_checked's inline case, one call shorter (the count first: see threads_bulking)
        if inline_if_ready and (not self.threads_bulking or self._bulk_local.size <= 1):
            if not self._run_now_if_free(fn, ctx, reads, writes, name):
                self._submit_sync(fn, ctx, reads, writes, PROP_NORMAL, 0, name, True)
            return
        self._push_sync_checked(fn, ctx, reads, writes, PROP_NORMAL, 0, name, inline_if_ready)

    def _push_sync_checked(
        self,
        fn: SyncFn,
        ctx: Context,
        reads: tuple[Var, ...],
        writes: tuple[Var, ...],
        prop: FnProperty,
        priority: int,
        name: str,
        inline_if_ready: bool,
    ) -> None:
        """Bulk or submit a validated synchronous push."""
        size = self._bulk_local.size
        if size > 1:
            if self.supports_bulk and prop is PROP_NORMAL and priority == 0:
                segment = self._bulk.add(fn, ctx, reads, writes, name, size)
                if segment is not None:
                    self._push_segments([segment])
                return
            self._flush_own_bulk()
        if inline_if_ready and self._run_now_if_free(fn, ctx, reads, writes, name, prop, priority):
            return
        self._submit_sync(fn, ctx, reads, writes, prop, priority, name, inline_if_ready)

    def _submit_sync(
        self,
        fn: SyncFn,
        ctx: Context,
        reads: tuple[Var, ...],
        writes: tuple[Var, ...],
        prop: FnProperty,
        priority: int,
        name: str,
        inline_if_ready: bool,
    ) -> None:
        """Submit a synchronous push as an Operation (it was neither bulked nor run at once)."""
        operation = Operation(fn, False, ctx, reads, writes, prop, priority, name)
        operation.inline_if_ready = inline_if_ready
        self._submit(operation)

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
        """Threaded engines: run a short push at once when nothing it touches is pending; False if not done.

        The base engine never does (NaiveEngine runs every push at once anyway).
        """
        return False

    def run_now_into_new(
        self, fn: Callable[..., Any], args: tuple, ctx: Context, read: Var, new_write: Var, name: str
    ) -> bool:
        """Run ``fn(*args)`` at once if ``read`` is free; it writes only ``new_write``, made for this call.

        For the imperative path's most common call (one input, one freshly allocated output,
        ``b = a + 1``): True if it ran, False (nothing done) if the caller must push it
        instead. ``new_write`` must be a variable of this engine that no other code has seen
        yet, so nothing can be pending on it. The base engine never does (see
        ThreadedEngineBase).
        """
        return False

    def run_now_in_place(self, fn: Callable[..., Any], args: tuple, ctx: Context, var: Var, name: str) -> bool:
        """Run ``fn(*args)`` at once if ``var`` is free; it reads and writes ``var`` and nothing else.

        For the imperative path's in-place call (``a += 1``): True if it ran, False (nothing
        done) if the caller must push it instead. The base engine never does (see
        ThreadedEngineBase).
        """
        return False

    def push_async(
        self,
        fn: AsyncFn,
        ctx: Context,
        const_vars: Iterable[Var] = (),
        mutable_vars: Iterable[Var] = (),
        prop: FnProperty = FnProperty.NORMAL,
        priority: int = 0,
        name: str | None = None,
    ) -> None:
        """Schedule ``fn(run_ctx, on_complete)``; it is complete when it calls ``on_complete``.

        On NaiveEngine this call itself waits for ``on_complete``, at most ``wait_timeout``.
        """
        if self._pending_interrupt is not None:
            self._raise_pending_interrupt()
        self._check_fn(fn, "push_async")
        name = _operation_name(fn, name)
        reads, writes = self._check_vars(const_vars, mutable_vars, "push_async", name)
        self._check_context(ctx, "push_async")
        self._check_prop(prop, priority, "push_async")
        self._flush_own_bulk()
        self._submit(Operation(fn, True, ctx, reads, writes, prop, priority, name))

    def new_operator(
        self,
        fn: SyncFn | AsyncFn,
        const_vars: Iterable[Var] = (),
        mutable_vars: Iterable[Var] = (),
        prop: FnProperty = FnProperty.NORMAL,
        name: str | None = None,
        is_async: bool = False,
    ) -> OperatorHandle:
        """Declare an operation once and push it many times with :meth:`push`.

        ``fn`` takes ``(run_ctx)``, or ``(run_ctx, on_complete)`` when ``is_async``.
        """
        self._check_fn(fn, "new_operator")
        name = _operation_name(fn, name)
        reads, writes = self._check_vars(const_vars, mutable_vars, "new_operator", name)
        self._check_prop(prop, 0, "new_operator")
        return OperatorHandle(fn, bool(is_async), reads, writes, prop, name, self.id)

    def push(self, op: OperatorHandle, ctx: Context, priority: int = 0, profiling: bool = True) -> None:
        """Push a handle from :meth:`new_operator`. ``profiling=False`` keeps it out of events."""
        if self._pending_interrupt is not None:
            self._raise_pending_interrupt()
        if not isinstance(op, OperatorHandle):
            raise EngineError(f"push: expected a handle from new_operator, got {type(op).__name__}")
        if op.engine_id != self.id:
            raise EngineError(f"push: operator {op.name!r} belongs to another engine instance")
        if op.deleted or op.fn is None:
            raise EngineError(f"push: operator {op.name!r} was deleted by delete_operator")
        for var in op.reads + op.writes:
            if var.deleted:
                raise EngineError(f"push: operator {op.name!r} uses variable {var.name!r}, which was deleted")
        self._check_context(ctx, "push")
        self._check_prop(op.prop, priority, "push")
        self._flush_own_bulk()
        operation = Operation(op.fn, op.is_async, ctx, op.reads, op.writes, op.prop, priority, op.name)
        operation.profiled = bool(profiling)
        self._submit(operation)

    def delete_operator(self, op: OperatorHandle) -> None:
        """Retire a handle once the pushes already made with it have run."""
        if not isinstance(op, OperatorHandle) or op.engine_id != self.id:
            raise EngineError(f"delete_operator: expected a handle of this engine, got {op!r}")
        if op.deleted:
            raise EngineError(f"delete_operator: operator {op.name!r} was already deleted")
        op.deleted = True
        self._flush_all_bulk()
        live = tuple(dict.fromkeys(v for v in op.reads + op.writes if not v.deleted))

        def release_handle(run_ctx: RunContext) -> None:
            op.fn = None  # drop the closure (and whatever it keeps alive)

        self._submit(
            Operation(release_handle, False, _CPU0, (), live, FnProperty.DELETE_VAR, 0, f"delete_operator({op.name})")
        )

    # ----------------------------------------------------------------- waiting
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

    # ----------------------------------------------------------------- lifecycle
    def stop(self) -> None:
        """Finish all pending work and stop the worker threads; pushing then raises."""
        self._flush_all_bulk()
        self._wait_idle(None)
        self._stopped = True
        self._stop_workers()

    def start(self) -> None:
        """Restart after :meth:`stop`."""
        self._stopped = False

    def notify_shutdown(self) -> None:
        """Tell the engine the process is exiting: unreported errors are then not warned about."""
        self._shutdown = True

    @property
    def stopped(self) -> bool:
        return self._stopped

    # ----------------------------------------------------------------- bulking
    def bulk_size(self) -> int:
        """How many consecutive small pushes of the calling thread are fused into one operation (1 = off)."""
        return self._bulk_local.size

    def set_bulk_size(self, size: int) -> int:
        """Set the calling thread's bulk size (0 or 1 turns bulking off); returns its previous size.

        Per thread, as MXNet's: other threads keep their own sizes and open segments.
        """
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise EngineError(f"set_bulk_size: size must be an int >= 0, got {size!r}")
        segment = self._bulk.take_own()
        if segment is not None:
            self._push_segments([segment])
        previous = self.bulk_size()
        size = max(size, 1)
        if (previous > 1) != (size > 1):
            with self._bulking_lock:
                self.threads_bulking += 1 if size > 1 else -1
        self._bulk_local.size = size
        return previous

    @contextmanager
    def bulk(self, size: int) -> Iterator[None]:
        """``with engine.bulk(64):`` fuses this thread's pushes inside the block (``mx.engine.bulk``)."""
        previous = self.set_bulk_size(size)
        try:
            yield
        finally:
            self.set_bulk_size(previous)

    def set_wait_timeout(self, seconds: float | None) -> float | None:
        """Set :attr:`wait_timeout` (None or 0: wait forever); returns the previous value."""
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0):
            raise EngineError(f"set_wait_timeout: seconds must be a number >= 0 or None, got {seconds!r}")
        previous, self.wait_timeout = self.wait_timeout, (seconds or None)
        return previous

    def _flush_own_bulk(self) -> None:
        if self._bulk_local.size > 1:
            segment = self._bulk.take_own()
            if segment is not None:
                self._push_segments([segment])

    def _flush_all_bulk(self) -> None:
        segments = self._bulk.take_all()
        if segments:
            self._push_segments(segments)

    def _push_segments(self, segments: list[Any]) -> None:
        """Submit segments taken from the bulk collector, then report them landed.

        Only once a segment's operation is on its variables' queues may those variables look
        idle again: until ``landed``, the collector is not ``quiet`` and dying arrays keep
        their blocks (framework/ndarray/chunk.py).
        """
        try:
            for segment in segments:
                self._submit(fuse_segment(segment, self._record_exception))
        finally:
            self._bulk.landed(len(segments))

    # ----------------------------------------------------------------- execution core
    def _submit(self, op: Operation) -> None:
        """Register a validated operation: count it pending, publish it, schedule it."""
        if self._stopped:
            raise EngineError(f"cannot push {op.name!r}: the engine is stopped (call start())")
        self._inflight[op.id] = op
        if events.enabled and op.profiled:
            if events.combine_operations:
                self._defer(op)  # published at its end, or by _publish_long_running (op_events.py)
            else:
                # emit: positional fields in events.KINDS order, no dict on the hot path
                events.emit("engine.push", *self._push_fields(op))
        self._schedule(op)

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

    # ----------------------------------------------------------------- subclass hooks
    @abc.abstractmethod
    def _schedule(self, op: Operation) -> None:
        """Make ``op`` wait for its variables, then run it (each engine type decides how)."""

    @abc.abstractmethod
    def _release_dependencies(self, op: Operation) -> None:
        """Let the variables of the completed ``op`` grant the operations queued behind it."""

    @abc.abstractmethod
    def _stop_workers(self) -> None:
        """Join the worker threads (after every pending operation has finished)."""

    def __repr__(self) -> str:
        return f"<{self.type_name} #{self.id}{' stopped' if self._stopped else ''}>"


def _warn_unreported_at_exit() -> None:
    engine = Engine._default
    if engine is None or engine._stopped:
        return
    engine._flush_all_bulk()
    engine._wait_idle(5.0)
    if engine._shutdown:
        return
    if engine._pending_interrupt is not None:
        _log.warning(
            "an engine operation raised %r on a worker thread and no push or wait re-raised it",
            engine._pending_interrupt,
        )
    pending = [r for r in engine._exceptions if r.error is not None]
    if pending:
        _log.warning(
            "%d engine error(s) were never reported by a wait; the first, from %r: %r",
            len(pending),
            pending[0].op_name,
            pending[0].error,
        )


atexit.register(_warn_unreported_at_exit)
