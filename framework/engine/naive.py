"""NaiveEngine: runs every pushed function at once, in the pushing thread.

Push order is execution order, so there is nothing to schedule: the easiest engine to
debug with (MXNet recommends ``MXNET_ENGINE_TYPE=NaiveEngine`` for the same reason).
Exceptions still travel through variables exactly as in the threaded engines, so a
program behaves the same on every engine type. Bulking is accepted and ignored. A
KeyboardInterrupt (Ctrl+C) or SystemExit raised by a function propagates out of ``push`` at
once. An async function that never calls ``on_complete`` makes ``push`` raise
EngineTimeoutError after the engine's ``wait_timeout`` (if one is set).
"""

from __future__ import annotations

import threading
from typing import Any

from .. import backend
from ..base import EngineTimeoutError
from ..context import Context
from .base import Engine
from .operation import Operation


class NaiveEngine(Engine):
    """Synchronous engine: ``push_*`` returns after the function has completed."""

    type_name = "NaiveEngine"
    supports_bulk = False

    def __init__(self) -> None:
        super().__init__()
        # One function at a time even when several threads push; re-entrant so that a
        # function may itself push (it then runs nested, immediately).
        self._run_lock = threading.RLock()
        self._streams: dict[Context, Any] = {}

    def _schedule(self, op: Operation) -> None:
        if op.is_async:
            op.done = threading.Event()
        with self._run_lock:
            stream = None
            if op.ctx.device_type == "gpu":
                stream = self._streams.get(op.ctx)
                if stream is None:
                    stream = self._streams[op.ctx] = backend.new_stream(op.ctx)
            self._execute(op, "naive", stream)
        # Wait for on_complete outside the lock: an async function may hand its work to
        # another thread that pushes more work (which needs the lock) before calling back.
        timeout = self.wait_timeout
        if op.done is not None and not op.done.wait(timeout):
            raise EngineTimeoutError(
                f"NaiveEngine: async operation {op.name!r} (op #{op.id}) did not call on_complete within "
                f"{timeout}s (the engine's wait_timeout); it stays pending"
            )
        if op.interrupted is not None:
            interrupt, op.interrupted = op.interrupted, None
            raise interrupt

    def _interrupt(self, op: Operation, interrupt: BaseException) -> None:
        """Raised by ``_schedule`` in the pushing thread, right after the operation."""
        op.interrupted = interrupt

    def _release_dependencies(self, op: Operation) -> None:
        """Nothing waits in a naive engine: every operation ran before the next was pushed."""
        for var in op.writes:
            var.version += 1

    def _stop_workers(self) -> None:
        """The naive engine has no workers."""
