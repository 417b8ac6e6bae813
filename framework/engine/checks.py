"""The checks every engine runs on the arguments of its public calls, before anything is queued.

A wrong argument (a function that is not callable, a variable from another engine or
listed both as read and written, an unknown device) must fail in the caller's thread with
a message naming the call, not later on a worker. :class:`ArgumentChecks` is a base of
:class:`~framework.engine.base.Engine`; it reads the engine's ``id``, ``var_class`` and the
set of devices already checked.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import backend
from ..base import EngineError
from ..context import Context
from .operation import FnProperty
from .var import Var


class ArgumentChecks:
    """Argument validation shared by every engine type (mixed into ``Engine``)."""

    id: int
    var_class: type[Var]
    _checked_contexts: set[Context]

    def _check_fn(self, fn: Any, api: str) -> None:
        if not callable(fn):
            raise EngineError(f"{api}: fn must be callable, got {type(fn).__name__} {fn!r:.60}")

    def _check_vars(
        self, const_vars: Iterable[Var], mutable_vars: Iterable[Var], api: str, name: str
    ) -> tuple[tuple[Var, ...], tuple[Var, ...]]:
        reads = tuple(const_vars)
        writes = tuple(mutable_vars)
        for var in reads + writes:
            if type(var) is not self.var_class:
                raise EngineError(
                    f"{api}({name!r}): expected engine variables from new_variable(), got {type(var).__name__}"
                )
            if var.engine_id != self.id:
                raise EngineError(f"{api}({name!r}): variable {var.name!r} belongs to another engine instance")
            if var.deleted:
                raise EngineError(f"{api}({name!r}): variable {var.name!r} was deleted by delete_variable")
        if len(reads) > 1 and len(set(reads)) != len(reads):
            raise EngineError(f"{api}({name!r}): a variable appears twice in const_vars")
        if len(writes) > 1 and len(set(writes)) != len(writes):
            raise EngineError(f"{api}({name!r}): a variable appears twice in mutable_vars")
        if reads and writes and not set(reads).isdisjoint(writes):
            both = ", ".join(repr(v.name) for v in set(reads) & set(writes))
            raise EngineError(
                f"{api}({name!r}): variable(s) {both} listed as both read (const_vars) and mutated "
                "(mutable_vars); list a variable you modify only in mutable_vars"
            )
        return reads, writes

    def _check_context(self, ctx: Any, api: str) -> None:
        if type(ctx) is not Context or ctx not in self._checked_contexts:
            try:
                backend.check_context(ctx)
            except Exception as err:
                raise type(err)(f"{api}: {err}") from None
            self._checked_contexts.add(ctx)

    def _check_prop(self, prop: Any, priority: Any, api: str) -> None:
        if type(prop) is not FnProperty:
            raise EngineError(f"{api}: prop must be a FnProperty, got {prop!r}")
        if type(priority) is not int:
            raise EngineError(f"{api}: priority must be an int, got {priority!r}")
