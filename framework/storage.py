"""The pooled storage allocator: where every array's memory comes from (MXNet's ``storage``).

Why a pool
    Asking the system (or the CUDA driver) for memory is slow compared with the small
    operators a network runs thousands of times per second, and a training loop asks for
    the same sizes again and again. So a freed block is not given back: it is kept in a
    pool, and the next request of the same size takes it from there. Taking a block from
    the pool is a *hit*; going to the system is a *miss*. After the first iteration almost
    every allocation is a hit.

Why round
    A pool keyed by exact byte counts would rarely match (a 1000-byte request would never
    reuse a 1001-byte block). Rounding every request up to one of a few sizes makes blocks
    interchangeable, at the price of some wasted bytes. Three strategies, as in MXNet
    (``MXNET_GPU_MEM_POOL_TYPE``):

    * ``Round`` (MXLab's default): the next power of two up to ``2**cutoff`` bytes, then a
      multiple of the large-allocation size. Few distinct sizes, so many hits; up to half of
      a small block may be wasted.
    * ``Naive``: a multiple of the page size (4 KiB), above 2 MiB a multiple of 2 MiB. Little
      waste; only blocks of exactly the same rounded size are reused.
    * ``Unpooled``: no rounding, no pool: every free goes straight back to the system. The
      baseline against which the other two are measured.

The API
    ``alloc(nbytes, ctx)`` returns a :class:`Handle` whose ``buffer`` is a 1-D ``uint8``
    array of the rounded length on the device; an NDArray is a view (shape, dtype, offset)
    of it. ``free(handle)`` returns the block to its pool; ``release_all(ctx)`` (MXNet's
    ``Context.empty_cache()``) hands the pooled blocks back to the system. ``stats(ctx)``
    reports bytes in use and pooled, the peak, hits and misses.

    Each context has its own manager, created on first use, with one lock: engine worker
    threads allocate and free concurrently. When the device runs out of memory, the manager
    releases its pool and retries once before giving up with a :class:`StorageError`.

Settings, read when a context's manager is created: ``MXLAB_MEM_POOL_TYPE`` (or the per-device
``MXLAB_CPU_MEM_POOL_TYPE`` / ``MXLAB_GPU_MEM_POOL_TYPE``), ``MXLAB_MEM_POOL_ROUND_LINEAR_CUTOFF``,
``MXLAB_MEM_LARGE_ALLOC_ROUND_SIZE`` and ``MXLAB_MEM_POOL_PAGE_SIZE``; their defaults and meanings
are rows of :mod:`framework.config`. MXNet defaults its GPU pool to ``Naive``; MXLab defaults to
``Round`` on every device.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from . import backend, config, context, events
from .base import StorageError
from .config import MAX_ROUND_CUTOFF
from .context import Context, current_context

_handle_ids = itertools.count(1)
# How many distinct request sizes a manager remembers the size class of (beyond that, it rounds each time).
_SIZE_CLASS_CACHE_LIMIT = 4096


# --------------------------------------------------------------------------- rounding
def _round_up(nbytes: int, step: int) -> int:
    """The smallest multiple of ``step`` that is >= ``nbytes``."""
    return -(-nbytes // step) * step


class RoundStrategy:
    """``Round``: the next power of two up to ``2**cutoff`` bytes, multiples of ``large_round`` above."""

    name = "Round"
    pooled = True

    def __init__(self, cutoff: int = 24, large_round: int = 2 << 20) -> None:
        _check_setting("cutoff", cutoff, 0, MAX_ROUND_CUTOFF)
        _check_setting("large_round", large_round, 1)
        self.cutoff = cutoff
        self.large_round = large_round

    def round(self, nbytes: int) -> int:
        """The pool size class of a request of ``nbytes`` bytes."""
        if nbytes <= 1 << self.cutoff:
            return 0 if nbytes == 0 else 1 << (nbytes - 1).bit_length()
        return _round_up(nbytes, self.large_round)

    def __repr__(self) -> str:
        return f"RoundStrategy(cutoff={self.cutoff}, large_round={self.large_round})"


class NaiveStrategy:
    """``Naive``: a multiple of ``page_size``, and above ``large_round`` a multiple of ``large_round``."""

    name = "Naive"
    pooled = True

    def __init__(self, page_size: int = 4096, large_round: int = 2 << 20) -> None:
        _check_setting("page_size", page_size, 1)
        _check_setting("large_round", large_round, 1)
        self.page_size = page_size
        self.large_round = large_round

    def round(self, nbytes: int) -> int:
        """The pool size class of a request of ``nbytes`` bytes."""
        if nbytes > self.large_round:
            return _round_up(nbytes, self.large_round)
        return _round_up(nbytes, self.page_size)

    def __repr__(self) -> str:
        return f"NaiveStrategy(page_size={self.page_size}, large_round={self.large_round})"


class UnpooledStrategy:
    """``Unpooled``: exact sizes, and every free returns the block to the system."""

    name = "Unpooled"
    pooled = False

    def round(self, nbytes: int) -> int:
        """Requests are not rounded: there is no pool to share blocks with."""
        return nbytes

    def __repr__(self) -> str:
        return "UnpooledStrategy()"


Strategy = RoundStrategy | NaiveStrategy | UnpooledStrategy


def _check_setting(name: str, value: Any, minimum: int, maximum: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise StorageError(f"storage: {name} must be an int >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise StorageError(f"storage: {name} must be <= {maximum}, got {value!r}")


def strategy_from_env(device_type: str) -> Strategy:
    """The strategy the environment asks for on ``device_type`` ("cpu" or "gpu").

    ``MXLAB_{CPU,GPU}_MEM_POOL_TYPE`` wins over ``MXLAB_MEM_POOL_TYPE``; malformed values
    raise an error naming the variable.
    """
    overall = config.get("MXLAB_MEM_POOL_TYPE")
    pool_type = config.get(f"MXLAB_{device_type.upper()}_MEM_POOL_TYPE") or overall
    if pool_type == "Unpooled":
        return UnpooledStrategy()
    large_round = config.get("MXLAB_MEM_LARGE_ALLOC_ROUND_SIZE")
    if pool_type == "Naive":
        return NaiveStrategy(config.get("MXLAB_MEM_POOL_PAGE_SIZE"), large_round)
    cutoff = config.get("MXLAB_MEM_POOL_ROUND_LINEAR_CUTOFF")
    return RoundStrategy(cutoff, large_round)


# --------------------------------------------------------------------------- handles
class Handle:
    """One allocated block: ``buffer`` is a 1-D uint8 array of ``rounded`` bytes on ``ctx``.

    ``nbytes`` is what was asked for; the caller may use the first ``nbytes`` bytes of
    ``buffer``. After :func:`free`, ``freed`` is True and ``buffer`` is None, so that a
    use after free fails loudly instead of scribbling on a block somebody else now owns.

    ``view`` is free for the owner to keep a typed view of the block in (NDArray allocation
    does). It travels with the block through the pool, so the next owner of the block may
    find the view it needs already made (an array of the same shape and dtype, as a loop
    allocates again and again) instead of building one.
    """

    __slots__ = ("_manager", "buffer", "ctx", "freed", "id", "nbytes", "rounded", "view")

    def __init__(self, manager: PooledStorageManager, nbytes: int, rounded: int, buffer: Any, view: Any = None) -> None:
        self.id = next(_handle_ids)
        self.ctx = manager.ctx
        self.nbytes = nbytes
        self.rounded = rounded
        self.buffer = buffer
        self.freed = False
        self._manager = manager
        self.view = view

    def release(self) -> None:
        """Return the block to the manager that allocated it (``storage.free(handle)``)."""
        self._manager.free(self)

    def __repr__(self) -> str:
        state = " freed" if self.freed else ""
        return f"<Handle {self.id} {self.ctx} {self.nbytes}B (block {self.rounded}B){state}>"


# --------------------------------------------------------------------------- the pool
class PooledStorageManager:
    """The allocator of one context: a pool of free blocks per rounded size, and counters.

    Thread-safe: every method takes the manager's lock. Build one directly with a strategy
    to experiment (``PooledStorageManager(cpu(0), NaiveStrategy())``); the module-level
    functions use one manager per context configured from the environment.
    """

    def __init__(self, ctx: Context, strategy: Strategy | None = None) -> None:
        backend.check_context(ctx)
        self.ctx = ctx
        self._ctx_name = str(ctx)  # what the storage events name the context: formatted once, not per event
        self.strategy = strategy if strategy is not None else strategy_from_env(ctx.device_type)
        if not hasattr(self.strategy, "round") or not hasattr(self.strategy, "pooled"):
            raise StorageError(f"PooledStorageManager: strategy must be a rounding strategy, got {strategy!r}")
        # The strategy is fixed for the manager's life, so what follows from it is worked out once:
        self._pooled = self.strategy.pooled
        self._size_classes: dict[int, int] = {}  # request size -> rounded size, filled as sizes are asked for
        self._lock = threading.Lock()
        self._pool: dict[int, list[tuple[Any, Any]]] = {}  # rounded size -> free (buffer, view) of that size
        self.bytes_in_use = 0
        self.peak_bytes_in_use = 0  # and the event counters: set by reset_stats
        self.reset_stats()

    # Two figures of stats() follow from others, so alloc and free do not keep them up to date
    # (one counter fewer each, on the path every temporary array takes):
    @property
    def bytes_pooled(self) -> int:
        """Bytes held in the pool: the blocks of each size class waiting there (a snapshot)."""
        return sum(rounded * len(blocks) for rounded, blocks in list(self._pool.items()))

    @property
    def allocs(self) -> int:
        """Allocations since the last reset_stats: each one was a hit or a miss."""
        return self.hits + self.misses

    # ---- the mechanism
    def alloc(self, nbytes: int) -> Handle:
        """A block of at least ``nbytes`` bytes: from the pool if one fits, else from the system."""
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
            raise StorageError(f"storage.alloc: nbytes must be an int >= 0, got {nbytes!r}")
        return self.alloc_checked(nbytes)

    def alloc_checked(self, nbytes: int) -> Handle:
        """:meth:`alloc` for callers that know ``nbytes`` is an int >= 0 (NDArray allocation, per call).

        The size class of each request size is computed once (``_size_classes``): a loop that
        allocates the same shapes again and again then pays one dictionary lookup for it.
        """
        rounded = self._size_classes.get(nbytes)
        if rounded is None:
            rounded = self.strategy.round(nbytes)
            if len(self._size_classes) < _SIZE_CLASS_CACHE_LIMIT:
                self._size_classes[nbytes] = rounded
        lock = self._lock
        lock.acquire()  # not ``with``, which builds two bound methods per use (as in engine/var.py)
        try:
            free_blocks = self._pool.get(rounded)
            view = None
            if free_blocks:
                hit = True
                buffer, view = free_blocks.pop()
                self.hits += 1
            else:
                hit = False
                buffer = self._allocate_from_system(nbytes, rounded)
                self.misses += 1
            handle = Handle(self, nbytes, rounded, buffer, view)
            in_use = self.bytes_in_use = self.bytes_in_use + rounded
            if in_use > self.peak_bytes_in_use:  # noqa: PLR1730 - a comparison costs less than calling max()
                self.peak_bytes_in_use = in_use
        finally:
            lock.release()
        if events.enabled:
            events.emit("storage.alloc", handle.id, self._ctx_name, nbytes, rounded, hit)
        return handle

    def free(self, handle: Handle) -> None:
        """Give ``handle``'s block back: to the pool, or to the system when unpooled."""
        if not isinstance(handle, Handle):
            raise StorageError(f"storage.free: expected a Handle from storage.alloc, got {type(handle).__name__}")
        if handle._manager is not self:
            raise StorageError(f"storage.free: {handle!r} was not allocated by the {self.ctx} manager")
        with self._lock:
            buffer = self._take_back(handle)
        pooled = self._pooled
        if not pooled:
            del buffer  # the last reference: the block goes back to the system now
            backend.release_cached_memory(self.ctx)  # on a GPU, past CuPy's own cache too
        if events.enabled:
            events.emit("storage.free", handle.id, self._ctx_name, handle.nbytes, handle.rounded, pooled)

    def free_nowait(self, handle: Handle) -> bool:
        """:meth:`free` for a finalizer: never blocks; False (nothing done) if it cannot.

        A finalizer may run while this very thread holds the manager's lock (the garbage
        collector can strike inside :meth:`alloc_checked`), so waiting for the lock could wait
        forever: this only tries it. Unpooled blocks, and any free while events go to a
        subscriber that runs code of its own (anything but event buffers,
        ``events.only_buffers``), are left to :meth:`free` at a safe point.
        """
        if handle._manager is not self:
            raise StorageError(f"storage.free: {handle!r} was not allocated by the {self.ctx} manager")
        # acquire(False): "do not block", passed positionally (a keyword argument costs the lock's
        # argument parser more than the whole acquisition)
        watched = events.enabled
        if (watched and not events.only_buffers) or not self._pooled or not self._lock.acquire(False):
            return False
        try:
            self._take_back(handle)
        finally:
            self._lock.release()
        if watched:
            events.emit("storage.free", handle.id, self._ctx_name, handle.nbytes, handle.rounded, True)
        return True

    def _take_back(self, handle: Handle) -> Any:
        """Mark ``handle`` freed, pool its buffer (if pooling) and count it; returns the buffer (lock held)."""
        if handle.freed:
            raise StorageError(f"storage.free: double free of {handle!r}")
        buffer, view = handle.buffer, handle.view
        handle.buffer, handle.view, handle.freed = None, None, True
        rounded = handle.rounded
        if self._pooled:
            free_blocks = self._pool.get(rounded)
            if free_blocks is None:
                self._pool[rounded] = [(buffer, view)]
            else:
                free_blocks.append((buffer, view))
        self.frees += 1
        self.bytes_in_use -= rounded
        return buffer

    def release_all(self) -> None:
        """Hand every pooled block back to the system (blocks in use are not touched)."""
        with self._lock:
            self._release_locked()

    def _release_locked(self) -> None:
        self._pool.clear()
        self.releases += 1
        backend.release_cached_memory(self.ctx)

    def _allocate_from_system(self, nbytes: int, rounded: int) -> Any:
        """A fresh buffer; on out-of-memory, empty the pool and try once more (lock held)."""
        out_of_memory = backend.out_of_memory_errors()
        try:
            return backend.empty_buffer(self.ctx, rounded)
        except out_of_memory:
            pass  # retry below, outside the handler, so a second failure does not chain to this one
        pooled_before = self.bytes_pooled
        self._release_locked()
        try:
            return backend.empty_buffer(self.ctx, rounded)
        except out_of_memory as err:
            raise StorageError(
                f"storage.alloc: out of memory on {self.ctx}: could not allocate {nbytes} bytes "
                f"(a {rounded}-byte block, {self.strategy.name} pool), even after releasing the "
                f"{pooled_before} pooled bytes; {self.bytes_in_use} bytes are in use"
            ) from err

    # ---- statistics
    def stats(self) -> dict[str, Any]:
        """A snapshot of the counters; byte counts are of rounded blocks (what the device holds)."""
        with self._lock:
            return {
                "bytes_in_use": self.bytes_in_use,
                "bytes_pooled": self.bytes_pooled,
                "peak_bytes_in_use": self.peak_bytes_in_use,
                "hits": self.hits,
                "misses": self.misses,
                "allocs": self.allocs,
                "frees": self.frees,
                "releases": self.releases,
                "pool_type": self.strategy.name,
            }

    def reset_stats(self) -> None:
        """Zero the event counters and set the peak to the current use; the pool is kept."""
        with self._lock:
            self.hits = self.misses = self.frees = self.releases = 0
            self.peak_bytes_in_use = self.bytes_in_use

    def __repr__(self) -> str:
        return f"<PooledStorageManager {self.ctx} {self.strategy.name}>"


# --------------------------------------------------------------------------- one manager per context
_managers: dict[Context, PooledStorageManager] = {}
_managers_lock = threading.Lock()


# The context object asked for last, the table it was found in and its manager. A loop allocates
# on the very same Context object again and again (outputs take their inputs' context); checking
# identity first skips hashing a Context (Python-level __hash__ and __eq__) per allocation. One
# tuple, replaced whole, so a thread never sees a context paired with another context's manager;
# the table's identity is part of it, so replacing ``_managers`` (tests do) invalidates it.
_last_lookup: tuple[Any, Any, Any] = (None, None, None)


def manager(ctx: Context | None = None) -> PooledStorageManager:
    """The manager of ``ctx`` (default: the current context), created on first use."""
    global _last_lookup
    last_ctx, table, found = _last_lookup
    if ctx is last_ctx and table is _managers:
        return found
    ctx = current_context() if ctx is None else ctx
    found = _managers.get(ctx) if isinstance(ctx, Context) else None
    if found is None:
        backend.check_context(ctx)
        with _managers_lock:
            found = _managers.get(ctx)
            if found is None:
                found = _managers[ctx] = PooledStorageManager(ctx)
    _last_lookup = (ctx, _managers, found)
    return found


def alloc(nbytes: int, ctx: Context | None = None) -> Handle:
    """Allocate a block of ``nbytes`` bytes on ``ctx`` (default: the current context)."""
    return manager(ctx).alloc(nbytes)


def free(handle: Handle) -> None:
    """Return ``handle``'s block to its context's pool. Freeing twice raises StorageError."""
    if not isinstance(handle, Handle):
        raise StorageError(f"storage.free: expected a Handle from storage.alloc, got {type(handle).__name__}")
    handle._manager.free(handle)


def release_all(ctx: Context | None = None) -> None:
    """Empty the pool of ``ctx``, or of every context when ``ctx`` is None (``Context.empty_cache``)."""
    if ctx is not None:
        backend.check_context(ctx)
    with _managers_lock:
        targets = list(_managers.values()) if ctx is None else [m for c, m in _managers.items() if c == ctx]
    for target in targets:
        target.release_all()


context.set_pool_releaser(release_all)


def stats(ctx: Context | None = None) -> dict[str, Any]:
    """Counters of ``ctx``'s pool (default: the current context): see PooledStorageManager.stats."""
    return manager(ctx).stats()


def reset_stats(ctx: Context | None = None) -> None:
    """Zero the counters and peak of ``ctx``, or of every context when ``ctx`` is None."""
    if ctx is not None:
        manager(ctx).reset_stats()
        return
    with _managers_lock:
        targets = list(_managers.values())
    for target in targets:
        target.reset_stats()
