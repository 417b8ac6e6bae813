"""A chunk: one storage block plus the engine variable that guards it.

An NDArray and all its views share one chunk. Writing through any of them mutates the
chunk's variable, so the engine orders every access to the same memory.

When the last array using a chunk disappears, its variable is retired (``Var.retire``):
the block returns to the pool at once if no operation is pending on it, otherwise as soon
as the last pending operation completes — the effect of MXNet's ``delete_variable`` push,
without the cost of one push per temporary array.

``__del__`` never waits for a lock: finalizers may run at any allocation (arrays recorded
by autograd live in reference cycles, which the cyclic garbage collector frees), possibly
while this very thread holds an engine or storage lock, and waiting there could deadlock.
So it only *tries*: when the engine's bulk collector is ``quiet`` (no segment open or on
its way to the engine), the variable is idle and both the variable's and the pool's locks
are free (``Var.retire_if_idle_nowait``, ``free_nowait``), the block goes back at once;
this is the common case of a temporary dying. Otherwise, and whenever events go to a
subscriber other than event buffers (``events.only_buffers``), it appends to a
*graveyard*, and the retirement happens later, at a safe point: the next allocation or
wait (:func:`bury_the_dead`).

Why the collector must be asked: a bulked operation sits in a segment, not on its
variables' queues, until the segment is pushed, so its variables look idle meanwhile, even
during the push itself (the segment taken out, not yet queued). Freeing a block then would
let the next allocation reuse memory the segment still writes. :func:`bury_the_dead` pushes
every open segment first, and leaves a dead chunk in the graveyard while some other
thread's segment is still in transit.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from .. import storage
from ..context import Context
from ..engine import Engine, Var

# (engine, variable, storage handle) of chunks that died; deque appends/pops are atomic.
_graveyard: deque[tuple[Engine, Var, Any]] = deque()


def bury_the_dead() -> None:
    """Retire the variables of dead chunks so their blocks go back to the pool.

    A bulk segment not yet pushed may still use a dead block, so every engine's segments
    are pushed first (all threads': bulk sizes are per thread). A segment that another
    thread took out before that push and has not queued yet is invisible to the
    variables; while one is in transit, the dead of that engine stay for the next call.
    """
    if len(_graveyard) == 1:  # the common case: one temporary died since the last allocation
        try:
            engine, var, handle = _graveyard.popleft()
        except IndexError:  # another thread emptied it first
            return
        engine._flush_all_bulk()
        if engine._bulk.in_transit():
            _graveyard.append((engine, var, handle))
            return
        var.retire(handle.release)
        return
    dead = []
    for _ in range(len(_graveyard)):  # the chunks dead now; later deaths wait for the next call
        try:
            dead.append(_graveyard.popleft())
        except IndexError:  # another thread emptied it first
            break
    engines = {engine for engine, _, _ in dead}  # engines hash by identity
    for engine in engines:
        engine._flush_all_bulk()
    waiting = {engine for engine in engines if engine._bulk.in_transit()}
    for entry in dead:
        if entry[0] in waiting:
            _graveyard.append(entry)
        else:
            entry[1].retire(entry[2].release)


class Chunk:
    """Storage handle + engine variable + the engine they belong to (``nbytes``: an int >= 0)."""

    __slots__ = ("handle", "var", "ctx", "engine", "__weakref__")

    def __init__(self, nbytes: int, ctx: Context, engine: Engine | None = None, name: str | None = None) -> None:
        if _graveyard:
            bury_the_dead()
        self.engine = engine or Engine._default or Engine.get()
        self.ctx = ctx
        self.handle = storage.manager(ctx).alloc_checked(nbytes)  # nbytes: shape x itemsize, always valid
        self.var: Var = self.engine.new_variable(name)

    @property
    def buffer(self) -> Any:
        return self.handle.buffer

    def __del__(self) -> None:
        try:
            var = self.var
        except AttributeError:  # __init__ failed before the variable existed
            return
        if var.deleted:
            return
        engine, handle = self.engine, self.handle
        # The common case at once: no bulk segment may hold the variable (the collector is quiet),
        # nothing holds or awaits it, and both locks are free (never waited for). Otherwise, or if
        # events go to a subscriber other than event buffers, the next safe point retires it. A
        # variable retired here whose block could not go back is retired again there, idle: its
        # block then goes back.
        if not engine._bulk.quiet or not var.retire_if_idle_nowait() or not handle._manager.free_nowait(handle):
            _graveyard.append((engine, var, handle))
