"""Device contexts: ``mx.cpu(i)``, ``mx.gpu(i)`` and the default-context stack.

A context names where data lives and where work runs. Several ``cpu(i)`` are distinct
devices as far as MXLab is concerned (each gets its own engine worker pool and memory
pool), which makes multi-device logic testable on a machine without a GPU.
"""

from __future__ import annotations

import numbers
import threading
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from .base import ContextError


class _ContextType(type):
    """Gives the class MXNet's ``Context.default_ctx`` (a class-level property)."""

    @property
    def default_ctx(cls) -> Context:
        """The context arrays go to outside every ``with ctx:`` block (MXNet: deprecated, still used)."""
        return getattr(_local, "base", None) or Context("cpu", 0)

    @default_ctx.setter
    def default_ctx(cls, ctx: Context) -> None:
        if not isinstance(ctx, Context):
            raise ContextError(f"Context.default_ctx must be a Context such as mx.cpu(0), got {ctx!r}")
        _local.base = ctx


class Context(metaclass=_ContextType):
    """A device: ``device_type`` is ``"cpu"`` or ``"gpu"``, ``device_id`` a non-negative int.

    Contexts compare and hash by value, print as MXNet does (``cpu(0)``), and work as
    ``with`` blocks that make them the default for array creation.
    """

    devtype2str: ClassVar[dict[int, str]] = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type: ClassVar[dict[str, int]] = {name: code for code, name in devtype2str.items()}
    __slots__ = ("device_type", "device_id")

    def __init__(self, device_type: str | Context, device_id: int = 0) -> None:
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        if not isinstance(device_type, str) or device_type not in ("cpu", "gpu"):
            raise ContextError(f"Context: device_type must be 'cpu' or 'gpu', got {device_type!r}")
        # Any integer, NumPy's included (mx.cpu(np.int64(1))), as MXNet accepts; never a bool.
        if isinstance(device_id, bool | np.bool_) or not isinstance(device_id, numbers.Integral) or device_id < 0:
            raise ContextError(f"Context: device_id must be a non-negative int, got {device_id!r}")
        device_id = int(device_id)
        self.device_type: str = device_type
        self.device_id: int = device_id

    @property
    def device_typeid(self) -> int:
        """MXNet's numeric device type (1 = cpu, 2 = gpu), as stored in .params files."""
        return self.devstr2type[self.device_type]

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Context) and self.device_type == other.device_type and self.device_id == other.device_id
        )

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id))

    def __repr__(self) -> str:
        return f"{self.device_type}({self.device_id})"

    __str__ = __repr__

    def __enter__(self) -> Context:
        _default_stack().append(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _default_stack().pop()

    def empty_cache(self) -> None:
        """Return this device's pooled blocks to the system (MXNet's ``Context.empty_cache``)."""
        if _release_pooled is None:
            raise ContextError("empty_cache: no storage pool is loaded (framework.storage installs it)")
        _release_pooled(self)


_local = threading.local()

# The pools live in framework.storage, which builds on contexts; so this module cannot call it.
# Instead storage installs its ``release_all`` here when it is imported (always, with framework).
_release_pooled: Callable[[Context], None] | None = None


def set_pool_releaser(release: Callable[[Context], None]) -> None:
    """Install what :meth:`Context.empty_cache` calls (done by framework.storage at import)."""
    global _release_pooled
    if not callable(release):
        raise TypeError(f"set_pool_releaser: expected a callable, got {type(release).__name__}")
    _release_pooled = release


def _default_stack() -> list[Context]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def cpu(device_id: int = 0) -> Context:
    """The CPU device ``device_id``; distinct ids are distinct devices to the engine."""
    return Context("cpu", device_id)


def gpu(device_id: int = 0) -> Context:
    """The GPU ``device_id``. Creating it always works; using it needs CUDA (see backend)."""
    return Context("gpu", device_id)


def cpu_pinned(device_id: int = 0) -> Context:
    """MXNet's page-locked host memory for fast GPU copies. MXLab has no pinned memory (NumPy
    arrays are ordinary host memory), so this is ``cpu(device_id)`` (docs/differences.md)."""
    return cpu(device_id)


def cpu_shared(device_id: int = 0) -> Context:
    """MXNet's shared-memory host context (for DataLoader workers). MXLab's processes share
    no arrays through it, so this is ``cpu(device_id)`` (docs/differences.md)."""
    return cpu(device_id)


def current_context() -> Context:
    """The innermost context of the ``with ctx:`` blocks of this thread, else
    ``Context.default_ctx`` (``cpu(0)`` unless set)."""
    stack = _default_stack()
    return stack[-1] if stack else Context.default_ctx
