"""``mx.util``: the NumPy-shape switch, environment variables and GPU queries, as MXNet 1.x names them.

The shape switch itself lives in :mod:`framework.shape_mode` (low in the layers, so that
NDArray and Symbol can read it); this module adds the scope and the decorator users write.
GPU questions go through :mod:`framework.backend`, the one module that talks to CuPy.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

from . import backend
from .base import ContextError, MXLabError
from .context import Context
from .shape_mode import is_np_shape
from .shape_mode import set_np_shape as _set_np_shape

T = TypeVar("T")

_announced = False


def set_np_shape(active: bool | int) -> bool:
    """Turn NumPy shape semantics on (``True``: this thread; ``2``: every thread) or off.

    Under NumPy shape semantics ``()`` is a scalar's shape and a 0 in a shape is a real
    zero-size dimension; under the default legacy semantics a 0 means "unknown".
    Returns the previous state of the calling thread.
    """
    global _announced
    if active and not _announced:
        logging.info("NumPy-shape semantics activated: () is a scalar's shape, 0 is a zero-size dimension.")
        _announced = True
    return _set_np_shape(active)


class _NumpyShapeScope:
    """``with np_shape(active):``: the semantics inside the block, the previous ones restored after."""

    def __init__(self, active: bool | None) -> None:
        self._active = active
        self._previous: bool | None = None

    def __enter__(self) -> _NumpyShapeScope:
        if self._active is not None:
            self._previous = set_np_shape(self._active)
        return self

    def __exit__(
        self, ptype: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._active is not None and self._previous != bool(self._active):
            set_np_shape(self._previous)


def np_shape(active: bool = True) -> _NumpyShapeScope:
    """A ``with`` scope in which NumPy shape semantics are ``active`` (this thread only)."""
    return _NumpyShapeScope(active)


def _scoped(func: Callable[..., T]) -> Callable[..., T]:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        with np_shape(True):
            return func(*args, **kwargs)

    return wrapper


def use_np_shape(func: Any) -> Any:
    """Decorator: run a function, or every method and property of a class, under NumPy shape semantics."""
    if inspect.isclass(func):
        for name, member in list(vars(func).items()):
            if isinstance(member, property):
                wrapped = property(
                    *(None if accessor is None else _scoped(accessor) for accessor in (member.fget, member.fset)),
                    None if member.fdel is None else _scoped(member.fdel),
                    member.__doc__,
                )
            elif isinstance(member, staticmethod):
                wrapped = staticmethod(_scoped(member.__func__))
            elif isinstance(member, classmethod):
                wrapped = classmethod(_scoped(member.__func__))
            elif inspect.isfunction(member):
                wrapped = _scoped(member)
            else:
                continue
            setattr(func, name, wrapped)
        return func
    if callable(func):
        return _scoped(func)
    raise MXLabError(f"use_np_shape decorates a function or a class, got {type(func).__name__}")


def is_np_array() -> bool:
    """Always False: MXLab has no ``mx.np`` arrays, so NumPy *array* semantics are never on."""
    return False


def getenv(name: str) -> str | None:
    """The value of environment variable ``name``, or None when it is not set."""
    return os.environ.get(name)


def setenv(name: str, value: str | None) -> None:
    """Set environment variable ``name`` to ``value``; ``None`` removes it."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


def get_gpu_count() -> int:
    """How many CUDA devices are visible (0 without CuPy or a GPU)."""
    return backend.num_gpus()


def get_gpu_memory(gpu_dev_id: int) -> tuple[int, int]:
    """``(free, total)`` bytes of GPU ``gpu_dev_id``, as CUDA reports them."""
    count = backend.num_gpus()
    if not 0 <= int(gpu_dev_id) < count:
        raise ContextError(f"get_gpu_memory: no GPU {gpu_dev_id} (this machine has {count})")
    return backend.gpu_memory_info(int(gpu_dev_id))


def get_cuda_compute_capability(ctx: Context) -> int:
    """The compute capability of the GPU ``ctx`` names, as an integer (7.5 is 75)."""
    if not isinstance(ctx, Context) or ctx.device_type != "gpu":
        raise ContextError(f"get_cuda_compute_capability expects a GPU context such as mx.gpu(0), got {ctx!r}")
    return backend.gpu_compute_capability(ctx.device_id)


__all__ = [
    "get_cuda_compute_capability",
    "get_gpu_count",
    "get_gpu_memory",
    "getenv",
    "is_np_array",
    "is_np_shape",
    "np_shape",
    "set_np_shape",
    "setenv",
    "use_np_shape",
]
