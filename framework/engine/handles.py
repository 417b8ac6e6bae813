"""The engine's handles: variables and operator handles, made and retired.

A program holds two kinds of engine objects across pushes. A variable (``new_variable``)
stands for a resource; an operator handle (``new_operator``) is an operation declared once,
its variables checked once, and pushed many times with ``push``. Both are retired the same
way: ``delete_variable`` and ``delete_operator`` mark the object deleted at once (pushing it
again raises) and queue a ``DELETE_VAR`` operation behind everything already pushed on its
variables, which does the retiring (runs the caller's function, drops the handle's closure)
only once that work has run.

Separate from base.py, which owns pushing one function: this module is about the lifetime
of what outlives a push.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .. import events
from ..base import EngineError
from ..context import Context
from .operation import AsyncFn, FnProperty, Operation, OperatorHandle, RunContext, SyncFn, operation_name
from .var import Var

_CPU0 = Context("cpu", 0)


class Handles:
    """Variables and operator handles of one engine (mixed into ``Engine``)."""

    id: int
    var_class: type[Var]
    # provided by the engine's other bases and by Engine (base.py)
    _check_fn: Callable[[Any, str], None]
    _check_vars: Callable[[Iterable[Var], Iterable[Var], str, str], tuple[tuple[Var, ...], tuple[Var, ...]]]
    _check_context: Callable[[Any, str], None]
    _check_prop: Callable[[Any, Any, str], None]
    _flush_own_bulk: Callable[[], None]
    _flush_all_bulk: Callable[[], None]
    _raise_pending_interrupt: Callable[[], None]
    _submit: Callable[[Operation], None]
    _pending_interrupt: BaseException | None

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
        name = operation_name(fn, name)
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
