"""The one array seam: which array library computes for a context, and how devices sync.

``cpu(i)`` computes with NumPy; ``gpu(i)`` with CuPy, imported lazily the first time a GPU
is used. No other module imports CuPy: everything numerical asks :func:`array_module`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import numpy as np
import scipy.linalg
import scipy.special

from .base import ContextError
from .context import Context

_cupy: ModuleType | None = None
_cupy_import_error: str | None = None


def _load_cupy() -> ModuleType | None:
    """Import CuPy once; remember why it failed so the error can say so."""
    global _cupy, _cupy_import_error
    if _cupy is None and _cupy_import_error is None:
        try:
            import cupy  # noqa: PLC0415 - optional (the [gpu] extra): imported on first GPU use only

            cupy.cuda.runtime.getDeviceCount()
            _cupy = cupy
        except Exception as err:  # ImportError, or CUDA driver/runtime missing
            _cupy_import_error = f"{type(err).__name__}: {err}"
    return _cupy


def num_gpus() -> int:
    """Number of CUDA devices visible to CuPy, 0 without CuPy or a driver."""
    cupy = _load_cupy()
    return 0 if cupy is None else int(cupy.cuda.runtime.getDeviceCount())


def check_context(ctx: Any) -> Context:
    """Return ``ctx`` if it is a usable Context, else raise a ContextError saying why."""
    if not isinstance(ctx, Context):
        raise ContextError(f"expected a Context such as mx.cpu(0), got {ctx!r}")
    if ctx.device_type == "gpu":
        count = num_gpus()
        if count == 0:
            reason = _cupy_import_error or "CuPy found no CUDA device"
            raise ContextError(
                f"{ctx} requested but no GPU is available ({reason}); "
                "install the [gpu] extra on a machine with CUDA, or use mx.cpu()"
            )
        if ctx.device_id >= count:
            raise ContextError(f"{ctx} requested but only {count} GPU(s) exist")
    return ctx


def array_module(ctx: Context) -> ModuleType:
    """``numpy`` for CPU contexts, ``cupy`` for GPU contexts."""
    if ctx.device_type == "cpu":
        return np
    check_context(ctx)
    return _cupy  # type: ignore[return-value]


def scipy_linalg(ctx: Context) -> ModuleType:
    """The ``scipy.linalg``-like module for ``ctx``: SciPy's on CPU, ``cupyx.scipy.linalg`` on GPU.

    NumPy's ``linalg`` lacks the LAPACK pieces some operators keep between passes (the LU
    factors of ``linalg_det``); both modules offer ``lu_factor``/``lu_solve``.
    """
    if ctx.device_type == "cpu":
        return scipy.linalg
    check_context(ctx)  # CuPy is there: cupyx comes with it
    import cupyx.scipy.linalg  # noqa: PLC0415 - optional (the [gpu] extra), like cupy itself

    return cupyx.scipy.linalg


@contextlib.contextmanager
def device(ctx: Context) -> Iterator[None]:
    """Make ``ctx`` the current CUDA device inside the block (no-op on CPU)."""
    if ctx.device_type == "cpu":
        yield
        return
    with array_module(ctx).cuda.Device(ctx.device_id):
        yield


def new_stream(ctx: Context) -> Any:
    """A fresh stream for one engine worker: a CuPy non-blocking stream on GPU, None on CPU."""
    if ctx.device_type == "cpu":
        return None
    cupy = array_module(ctx)
    with cupy.cuda.Device(ctx.device_id):
        return cupy.cuda.Stream(non_blocking=True)


@contextlib.contextmanager
def use_stream(ctx: Context, stream: Any) -> Iterator[None]:
    """Run the block with ``stream`` current on ``ctx`` (no-op on CPU)."""
    if stream is None:
        yield
        return
    with device(ctx), stream:
        yield


def synchronize_stream(stream: Any) -> None:
    """Block until the work queued on ``stream`` has finished (no-op for None)."""
    if stream is not None:
        stream.synchronize()


def synchronize(ctx: Context) -> None:
    """Block until every stream of ``ctx`` is idle (no-op on CPU, whose work is synchronous)."""
    if ctx.device_type == "gpu":
        cupy = array_module(ctx)
        with cupy.cuda.Device(ctx.device_id):
            cupy.cuda.Device(ctx.device_id).synchronize()


def stream_name(stream: Any) -> str | None:
    """A short printable id of a stream for events and traces (None on CPU)."""
    return None if stream is None else f"stream{stream.ptr:#x}"


def empty_buffer(ctx: Context, nbytes: int) -> Any:
    """A raw uint8 buffer of ``nbytes`` on ``ctx``: the unit the storage pool hands out."""
    xp = array_module(ctx)
    with device(ctx):
        return xp.empty(nbytes, dtype=np.uint8)


def out_of_memory_errors() -> tuple[type[BaseException], ...]:
    """The exceptions that mean "this device is out of memory", for the storage pool's retry.

    NumPy raises (a subclass of) ``MemoryError``; CuPy raises its own ``OutOfMemoryError``,
    which is listed once CuPy has been loaded (before that no GPU buffer can exist).
    """
    if _cupy is None:
        return (MemoryError,)
    return (MemoryError, _cupy.cuda.memory.OutOfMemoryError)


def release_cached_memory(ctx: Context) -> None:
    """Return the blocks CuPy's own allocator caches for ``ctx`` to the device (no-op on CPU).

    CuPy pools freed device memory itself; after MXLab's pool drops its blocks, this hands
    them back to CUDA so that ``Context.empty_cache()`` really frees device memory.
    """
    if ctx.device_type == "gpu":
        with device(ctx):
            array_module(ctx).get_default_memory_pool().free_all_blocks()


def special_functions(xp: ModuleType) -> ModuleType:
    """The special-functions module (``erf``, ``gamma``, ``digamma``...) for array module ``xp``.

    ``scipy.special`` for NumPy, ``cupyx.scipy.special`` for CuPy: the only place that
    imports cupyx, as this module is the only one that imports cupy.
    """
    if xp is np:
        return scipy.special
    import cupyx.scipy.special  # noqa: PLC0415 - optional (the [gpu] extra), like cupy itself

    return cupyx.scipy.special


def random_generator(ctx: Context, seed: np.random.SeedSequence) -> Any:
    """A random generator on ``ctx`` seeded from ``seed``.

    ``numpy.random.Generator`` (PCG64) on a CPU; ``cupy.random.Generator`` (XORWOW, created
    on the device) on a GPU. Both offer the same sampling methods (``normal``, ``uniform``...).
    """
    if ctx.device_type == "cpu":
        return np.random.Generator(np.random.PCG64(seed))
    with device(ctx):
        return array_module(ctx).random.default_rng(seed)


def gpu_memory_info(device_id: int = 0) -> tuple[int, int]:
    """``(free, total)`` bytes of GPU ``device_id`` from CUDA (``cudaMemGetInfo``)."""
    ctx = check_context(Context("gpu", device_id))
    with device(ctx):
        free, total = _cupy.cuda.runtime.memGetInfo()
    return int(free), int(total)


def gpu_compute_capability(device_id: int) -> int:
    """The CUDA compute capability of GPU ``device_id`` as MXNet writes it (7.5 -> 75)."""
    ctx = check_context(Context("gpu", device_id))
    with device(ctx):
        return int(_cupy.cuda.Device(device_id).compute_capability)
