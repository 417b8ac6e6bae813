"""The engine interface: its state, the push calls, and the hooks each engine type fills in.

An engine receives functions with the variables they read and write and promises one
rule: two functions that share a variable, at least one of them writing it, run in push
order; everything else may overlap. Subclasses decide *how* operations wait and where they
run (``_schedule``, ``_release_dependencies``); this class owns the state every engine type
shares (set up in ``Engine.__init__``, one place for all of it) and the way in: the push
calls, which check their arguments, bulk or run at once what may be, and hand the rest to
``_submit``. The rest of an engine's shared work lives in bases of their own, one idea each:
the argument checks (:mod:`.checks`), exception propagation (:mod:`.exceptions`), events
(:mod:`.op_events`), variables and operator handles (:mod:`.handles`), per-thread bulking
(:mod:`.bulk_control`), waiting (:mod:`.waiting`), and running and completing an operation
(:mod:`.execution`). They are mixins rather than objects the engine calls so that a push
costs no extra Python frame: each method is found on the engine's class, as if written here.

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
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from .. import config, events
from ..base import EngineError
from ..context import Context
from .bulk import BulkCollector
from .bulk_control import BulkControl, _BulkSetting
from .checks import ArgumentChecks
from .exceptions import ExceptionPropagation
from .execution import Completion, Execution
from .handles import Handles
from .op_events import OperationEvents
from .operation import PROP_NORMAL, AsyncFn, FnProperty, Operation, SyncFn, operation_name
from .var import ExceptionRecord, Var
from .waiting import Waiting

_engine_ids = itertools.count(1)
_log = logging.getLogger("framework.engine")

# Re-exported: these names were defined here before the engine's bases got modules of their own.
__all__ = ["AsyncFn", "Completion", "Engine", "SyncFn"]


class Engine(ArgumentChecks, ExceptionPropagation, OperationEvents, Handles, BulkControl, Waiting, Execution, abc.ABC):
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
        name = operation_name(fn, name)
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
        name = operation_name(fn, name)
        reads, writes = self._check_vars(const_vars, mutable_vars, "push_async", name)
        self._check_context(ctx, "push_async")
        self._check_prop(prop, priority, "push_async")
        self._flush_own_bulk()
        self._submit(Operation(fn, True, ctx, reads, writes, prop, priority, name))

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

    # ----------------------------------------------------------------- submitting
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
