"""What the engine schedules: function properties, run contexts, pushed operations and handles."""

from __future__ import annotations

import enum
import itertools
import threading
from collections.abc import Callable
from typing import Any

from ..context import Context
from .var import ExceptionRecord, Var

_op_ids = itertools.count(1)


def new_operation_id() -> int:
    """The next operation number (events, traces and error notes name operations by it)."""
    return next(_op_ids)


class FnProperty(enum.Enum):
    """How a function should be scheduled (MXNet's ``FnProperty``).

    * NORMAL: computation on the device's normal workers.
    * COPY_FROM_GPU / COPY_TO_GPU: device transfers, on copy workers with their own streams
      so that they overlap with computation.
    * CPU_PRIORITIZED / GPU_PRIORITIZED: short, latency-sensitive work on a priority pool.
    * ASYNC: a function that only starts work elsewhere; it runs in the thread that made it
      ready, without a worker hop, and finishes when it calls ``on_complete``.
    * DELETE_VAR: deletion of a variable (internal; see ``delete_variable``).
    * NO_SKIP: runs even when its inputs carry an exception (used for cleanup work).
    """

    NORMAL = "normal"
    COPY_FROM_GPU = "copy_from_gpu"
    COPY_TO_GPU = "copy_to_gpu"
    CPU_PRIORITIZED = "cpu_prioritized"
    ASYNC = "async"
    DELETE_VAR = "delete_var"
    GPU_PRIORITIZED = "gpu_prioritized"
    NO_SKIP = "no_skip"


# Properties whose functions run inline in the dispatching thread.
#: FnProperty.NORMAL read once: an enum member looked up on its class costs about 80 ns on
#: Python 3.11, and a push would pay it several times (its engine, its Operation, its events).
PROP_NORMAL = FnProperty.NORMAL

INLINE_PROPS = frozenset({FnProperty.ASYNC, FnProperty.DELETE_VAR})
# Properties whose functions run even when an input carries an exception.
NO_SKIP_PROPS = frozenset({FnProperty.DELETE_VAR, FnProperty.NO_SKIP})


class RunContext:
    """Handed to every pushed function: where it runs (``ctx``), on which worker and stream.

    ``stream`` is the worker's CuPy stream on a GPU and None on a CPU; a GPU function must
    queue its kernels on it.
    """

    __slots__ = ("ctx", "stream", "worker")

    def __init__(self, ctx: Context, stream: Any, worker: str) -> None:
        self.ctx = ctx
        self.stream = stream
        self.worker = worker

    def __repr__(self) -> str:
        return f"RunContext(ctx={self.ctx}, worker={self.worker!r}, stream={self.stream!r})"


SyncFn = Callable[[RunContext], Any]
AsyncFn = Callable[[RunContext, Callable[..., None]], Any]


def operation_name(fn: Callable[..., Any], name: str | None) -> str:
    """The name events and errors show for an operation: the given one, else the function's."""
    return name or str(getattr(fn, "__name__", "fn"))


class Operation:
    """One pushed function with its dependencies (MXNet's ``OprBlock``).

    ``wait`` starts at reads + writes + 1 and counts down as variables grant access; the
    extra 1 is released only after every dependency is registered, so an operation can
    never start half-registered. At zero the operation is dispatched.
    """

    __slots__ = (
        "id",
        "fn",
        "is_async",
        "ctx",
        "reads",
        "writes",
        "prop",
        "priority",
        "name",
        "wait",
        "lock",
        "state",
        "exception_record",
        "handles_exceptions",
        "inline",
        "inline_if_ready",
        "no_skip",
        "profiled",
        "deferred",
        "published",
        "t_push",
        "started",
        "done",
        "interrupted",
    )
    # Set only on deferred operations (see ``deferred`` and engine/op_events.py).
    published: int
    started: tuple[int, str, str | None] | None
    t_push: int

    def __init__(
        self,
        fn: Callable[..., Any],
        is_async: bool,
        ctx: Context,
        reads: tuple[Var, ...],
        writes: tuple[Var, ...],
        prop: FnProperty,
        priority: int,
        name: str,
    ) -> None:
        self.id = new_operation_id()
        self.fn = fn
        self.is_async = is_async
        self.ctx = ctx
        self.reads = reads
        self.writes = writes
        self.prop = prop
        self.priority = priority
        self.name = name
        self.wait = len(reads) + len(writes) + 1
        self.lock = threading.Lock()
        self.state = "waiting"  # waiting -> ready -> running -> done
        self.exception_record: ExceptionRecord | None = None
        #: True for operations (bulk segments) that attach exceptions to variables themselves.
        self.handles_exceptions = False
        if prop is PROP_NORMAL:  # the common case, without hashing the enum (a Python call)
            self.inline = self.no_skip = False
        else:
            #: Runs in the thread that made it ready instead of hopping to a worker.
            self.inline = prop in INLINE_PROPS
            #: Runs even when a variable it touches carries an exception.
            self.no_skip = prop in NO_SKIP_PROPS
        #: The pusher vouches that ``fn`` is short: if every variable grants access at push
        #: time, a threaded engine runs it in the pushing thread (worker "inline") instead of
        #: paying a hand-off to a worker that costs more than the function itself.
        self.inline_if_ready = False
        #: Published as engine.push/start/end events (False for internal waits).
        self.profiled = True
        #: True when its events wait for its end (``events.combine_operations`` at push): then
        #: ``t_push``, ``started`` (None, then ``(t_ns, worker, stream)``) and ``published``
        #: (what the sampler published: 0 nothing, 1 the push, 2 push and start, 3 its end is
        #: out) are set, see Engine._submit and engine/op_events.py.
        self.deferred = False
        #: Set on completion when somebody needs to block on this one operation.
        self.done: threading.Event | None = None
        #: A KeyboardInterrupt / SystemExit (any BaseException that is not an Exception) the
        #: function raised: never stored as the operation's error, re-raised to the program.
        self.interrupted: BaseException | None = None

    def release(self, count: int) -> bool:
        """Count down ``count`` granted dependencies; True exactly once, when none remain."""
        with self.lock:
            self.wait -= count
            return self.wait == 0

    def __repr__(self) -> str:
        return f"<Operation {self.id} {self.name!r} {self.state}>"


class OperatorHandle:
    """A reusable pre-declared operation from ``Engine.new_operator`` (MXNet's ``OprHandle``).

    Pushing a handle skips re-validating its function and variables each time, which is
    what makes it cheaper than ``push_sync`` for work repeated many times.
    """

    __slots__ = ("fn", "is_async", "reads", "writes", "prop", "name", "engine_id", "deleted")

    def __init__(
        self,
        fn: Callable[..., Any],
        is_async: bool,
        reads: tuple[Var, ...],
        writes: tuple[Var, ...],
        prop: FnProperty,
        name: str,
        engine_id: int,
    ) -> None:
        self.fn: Callable[..., Any] | None = fn  # None once delete_operator has released it
        self.is_async = is_async
        self.reads = reads
        self.writes = writes
        self.prop = prop
        self.name = name
        self.engine_id = engine_id
        self.deleted = False

    def __repr__(self) -> str:
        return f"<OperatorHandle {self.name!r}{' deleted' if self.deleted else ''}>"
