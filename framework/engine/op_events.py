"""How the engine publishes its operations: engine.push/start/end, or one engine.op.

Every profiled operation is published with three events: pushed, started, ended. When
nobody but the server's event buffer listens (``events.combine_operations``), most of that
work can wait: an operation is *deferred* at push (its push time noted, nothing published),
its start only notes a time, and at its end one ``engine.op`` event carries all of it. For
the tiny operations that dominate an imperative program this is one event instead of three,
and no event fields built while the operation waits.

Watching live still shows waiting and running work: on each pass of the buffer's consumer
(``events.run_samplers``) :meth:`OperationEvents._publish_long_running` publishes the push,
and the start once there is one, of every deferred operation in flight for longer than
``events.SAMPLE_AFTER_NS``, with their real times; its end is then published on its own.
The consumer's side turns ``engine.op`` back into the three events (``events.expand``), so
clients and traces see only those.

"Publish from the sampler" and "end" are made exclusive by a claim that only the rare side
pays for. The sampler *claims* an operation (enters it in ``_sampled``) and then looks
whether it is already ending (``op.state == "done"``, which the engine sets before it
publishes an end); the end looks for a claim only after that state is set. Each side acts
after its own mark and reads the other's afterwards (every bytecode is atomic under the
GIL), so at least one of them sees the other: an end that finds no claim publishes the
whole ``engine.op`` and the sampler, which must then find the state ``done``, leaves the
operation alone; an end that finds a claim waits for the sampler's pass (its lock) and
publishes what the sampler did not, and marks the operation ended (``published`` 3) under
the sampler's lock, since a later pass may still find it in its copy of the operations in
flight. An operation that ends young costs one truth test of an (almost always empty) dict,
no dict insert or removal.
"""

from __future__ import annotations

import operator
import threading
import time
from typing import Any

from .. import events
from ..context import Context
from .operation import PROP_NORMAL, FnProperty, Operation
from .var import Var

#: The events' clock (their ``t_ns``).
clock = time.perf_counter_ns
_CPU0 = Context("cpu", 0)
_var_id = operator.attrgetter("id")


#: ``Operation.published`` once a claimed operation's end is out: the sampler leaves it alone.
ENDED = 3


def var_ids(variables: tuple[Var, ...]) -> list[int]:
    """The ids of ``variables`` for events: a list, with the common cases of none and one
    variable built without an iterator (a comprehension costs about three times as much)."""
    if not variables:
        return []
    if len(variables) == 1:
        return [variables[0].id]
    return list(map(_var_id, variables))


def var_id_tuple(variables: tuple[Var, ...]) -> tuple[int, ...]:
    """:func:`var_ids` as a tuple, for ``engine.op``: a tuple of ints is dropped from the cyclic
    collector's watch the first time a collection looks at it (a list is watched as long as
    it lives), and a waiting ``engine.op`` holding only such values then costs it nothing more."""
    if not variables:
        return ()
    if len(variables) == 1:
        return (variables[0].id,)
    return tuple(map(_var_id, variables))


def error_message(cause: BaseException) -> str:
    """How an engine.end (or engine.op) event names the error an operation raised."""
    return f"{type(cause).__name__}: {cause}"


def prop_name(prop: FnProperty) -> str:
    """``prop.value`` without the enum's property lookup in the common case."""
    return "normal" if prop is PROP_NORMAL else prop.value


class OperationEvents:
    """The engine's event publication (a base of :class:`~.base.Engine`, which provides
    ``_inflight``: the operations pushed and not yet completed, in push order)."""

    _inflight: dict[int, Operation]

    def _init_operation_events(self) -> None:
        # The last context named in an event and its name: most pushes repeat one context
        # object, and an identity check is cheaper than formatting it each time. One tuple, so
        # that threads replacing it concurrently never pair a context with another's name.
        self._named_context: tuple[Context, str] = (_CPU0, str(_CPU0))
        # Deferred operations the sampler claimed (see the module notes), by id; their end removes them.
        self._sampled: dict[int, Operation] = {}
        self._sampling = threading.Lock()  # held by a sampler pass
        self._last_sampled = 0
        events.add_sampler(self._publish_long_running)

    def _context_name(self, ctx: Context) -> str:
        """``str(ctx)`` for events, remembered for the last context seen."""
        named = self._named_context
        if named[0] is ctx:
            return named[1]
        name = str(ctx)
        self._named_context = (ctx, name)
        return name

    def _push_fields(self, op: Operation) -> tuple[Any, ...]:
        """The fields of ``op``'s engine.push event, in ``events.KINDS`` order."""
        return self._push_values(op.id, op.name, op.ctx, op.reads, op.writes, op.priority, op.prop)

    def _push_values(
        self,
        op_id: int,
        name: str,
        ctx: Context,
        reads: tuple[Var, ...],
        writes: tuple[Var, ...],
        priority: int,
        prop: FnProperty,
    ) -> tuple[Any, ...]:
        """An engine.push event's fields, in ``events.KINDS`` order, from its parts."""
        return (op_id, name, self._context_name(ctx), var_ids(reads), var_ids(writes), priority, prop_name(prop))

    def _defer(self, op: Operation) -> None:
        """Note ``op``'s push time and publish nothing yet (see the module notes)."""
        op.published = 0
        op.started = None
        op.t_push = clock()
        op.deferred = True

    def _publish_deferred_end(self, op: Operation, worker: str, stream: str | None, message: str | None) -> None:
        """The end of a deferred operation: one engine.op, or what the sampler did not publish.

        Called once ``op.state`` is ``"done"``. The common case, no claim by the sampler and
        the buffer still the only subscriber, is this one frame: the ``engine.op`` goes
        straight into the buffer (``events.emit``'s fast path, inlined), its values built in
        place, as :meth:`_publish_whole` builds them for a push run at once (the tests compare
        both).
        """
        buffer = events.operation_buffer
        sampled = self._sampled
        if buffer is not None and (not sampled or op.id not in sampled):
            pending = buffer.pending
            if len(pending) >= buffer.bound:
                buffer.overflowed("engine.op")
                return
            # Plain locals, not a tuple unpacking: each of these costs two bytecodes.
            ctx = op.ctx
            named = self._named_context
            reads = op.reads
            writes = op.writes
            prop = op.prop
            t_push = op.t_push
            started = op.started
            pending.append(
                (
                    "engine.op",
                    clock(),
                    (
                        op.id,
                        op.name,
                        named[1] if named[0] is ctx else self._context_name(ctx),
                        () if not reads else (reads[0].id,) if len(reads) == 1 else var_id_tuple(reads),
                        () if not writes else (writes[0].id,) if len(writes) == 1 else var_id_tuple(writes),
                        op.priority,
                        "normal" if prop is PROP_NORMAL else prop.value,
                        worker,
                        stream,
                        message,
                        t_push,
                        t_push if started is None else started[0],
                    ),
                )
            )
            return
        self._publish_claimed_end(op, worker, stream, message)

    def _publish_claimed_end(self, op: Operation, worker: str, stream: str | None, message: str | None) -> None:
        """:meth:`_publish_deferred_end` when the sampler claimed the operation, or the buffer is
        no longer the only subscriber (then the three classic events)."""
        if op.id in self._sampled:
            # Wait for the sampler's pass to finish (what it published is then out), then
            # publish what it did not: nothing yet (it found the operation ending), the start
            # and the end, or the end.
            with self._sampling:
                self._sampled.pop(op.id, None)  # gone if the sampler found it ending and let go
                published = op.published
                # Ended: a later pass may still hold it in its copy of the operations in flight
                # (the engine removes it only after this end), and must not publish its start again.
                op.published = ENDED
            if published:
                if events.enabled and published == 1 and op.started is not None:
                    events.emit_at("engine.start", op.started[0], op.id, op.started[1], op.started[2])
                if events.enabled:
                    events.emit("engine.end", op.id, worker, stream, message)
                return
        self._publish_whole(
            op.id,
            op.name,
            op.ctx,
            op.reads,
            op.writes,
            op.priority,
            op.prop,
            op.t_push,
            op.started,
            worker,
            stream,
            message,
        )

    def _publish_whole(
        self,
        op_id: int,
        name: str,
        ctx: Context,
        reads: tuple[Var, ...],
        writes: tuple[Var, ...],
        priority: int,
        prop: FnProperty,
        t_push: int,
        started: tuple[int, str, str | None] | None,
        worker: str,
        stream: str | None,
        message: str | None,
    ) -> None:
        """Publish an ended operation none of whose events is out yet: one engine.op.

        For a push the threaded engine ran at once without an ``Operation`` (``started`` is
        then None: it started at ``t_push``, in ``worker``), and for a deferred operation whose
        buffer stopped being the only subscriber (``started`` is ``(t_start, worker, stream)``
        or None). If the subscribers changed since the push, the three classic events come
        instead. Like :meth:`_publish_deferred_end`'s common case (the same values, in
        ``events.KINDS`` order), one frame per operation: the event goes straight into the
        buffer, the context name and the id tuples are built in place.
        """
        buffer = events.operation_buffer
        if buffer is not None:
            pending = buffer.pending
            if len(pending) >= buffer.bound:
                buffer.overflowed("engine.op")
                return
            named = self._named_context
            pending.append(
                (
                    "engine.op",
                    clock(),
                    (
                        op_id,
                        name,
                        named[1] if named[0] is ctx else self._context_name(ctx),
                        () if not reads else (reads[0].id,) if len(reads) == 1 else var_id_tuple(reads),
                        () if not writes else (writes[0].id,) if len(writes) == 1 else var_id_tuple(writes),
                        priority,
                        "normal" if prop is PROP_NORMAL else prop.value,
                        worker,
                        stream,
                        message,
                        t_push,
                        t_push if started is None else started[0],
                    ),
                )
            )
            return
        if not events.enabled:
            return
        # The subscribers changed since the push: the three events one by one.
        events.emit_at("engine.push", t_push, *self._push_values(op_id, name, ctx, reads, writes, priority, prop))
        if started is None:  # as engine.op would say: it started at its push, where it ended
            events.emit_at("engine.start", t_push, op_id, worker, stream)
        else:
            events.emit_at("engine.start", started[0], op_id, started[1], started[2])
        events.emit("engine.end", op_id, worker, stream, message)

    def _publish_long_running(self) -> None:
        """Publish the push, and the start once it started, of deferred operations in flight for long.

        The engine's operations in flight are in push order, so a pass looks only at those
        older than ``SAMPLE_AFTER_NS`` and stops at the first younger one: the many that end
        within microseconds are never looked at. At most one pass per ``SAMPLE_AFTER_NS / 2``.
        """
        if not events.combine_operations or not self._sampling.acquire(blocking=False):
            return
        try:
            now = clock()
            if now - self._last_sampled < events.SAMPLE_AFTER_NS // 2:
                return
            self._last_sampled = now
            cutoff = now - events.SAMPLE_AFTER_NS
            sampled = self._sampled
            for op in list(self._inflight.values()):  # a copy (one C call): completions remove entries
                if not op.deferred:
                    continue
                if op.t_push > cutoff:
                    break  # this one and the later ones are younger
                if op.published == 0:
                    sampled[op.id] = op  # the claim first, then the look at its state: see the module notes
                    if op.state == "done":  # it is ending, and its end may not have seen the claim
                        del sampled[op.id]
                        continue  # its end publishes it whole
                    events.emit_at("engine.push", op.t_push, *self._push_fields(op))
                    op.published = 1
                started = op.started
                if op.published == 1 and started is not None:  # 2: its start is out already
                    events.emit_at("engine.start", started[0], op.id, started[1], started[2])
                    op.published = 2
        finally:
            self._sampling.release()
