"""DataLoader: batches from a dataset, optionally made by worker processes (``mx.gluon.data.DataLoader``).

With ``num_workers=0`` the loader reads and batchifies in the calling thread. With
``num_workers > 0`` a pool of **forked worker processes** does it, as in MXNet:

1. Each batch of indices (from the batch sampler) becomes a task; up to ``prefetch`` tasks
   are in flight, and batches are returned in sampler order whatever order workers finish.
2. A worker reads the samples and stacks them with NumPy, then writes every array of the
   batch into a block of **shared memory** (``multiprocessing.shared_memory``) and returns
   only the blocks' names, shapes and dtypes through the pool's pipe.
3. The parent maps each block, copies it into an NDArray and unlinks the block.

A forked child has only the thread that called ``fork``: the parent's engine worker threads
are gone. Each worker therefore installs a :class:`~framework.engine.NaiveEngine` that
adopts the parent engine's id, so NDArrays copied from the parent (an ``ArrayDataset`` of
NDArrays, say) keep working and any operator a transform calls runs synchronously in the
worker. The parent waits for all pending operations before forking, so no copied variable
has work queued that no thread would ever run.

``thread_pool=True`` uses threads instead (no fork, no shared memory, the engine shared);
a worker that raises sends back its traceback text, which the caller's exception carries.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.pool
import os
import random
import traceback
import weakref
from collections.abc import Callable, Iterator
from multiprocessing import resource_tracker
from multiprocessing.shared_memory import SharedMemory
from typing import Any

import numpy as np

from ... import events
from ... import ndarray as nd
from ... import random as mx_random
from ...engine import Engine, NaiveEngine
from ...ndarray.ndarray import NDArray
from .dataset import DataError, Dataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler


class DataLoaderWorkerError(DataError, RuntimeError):
    """A worker failed to make a batch; the message carries the worker's traceback."""


class DataLoaderTimeoutError(DataError, TimeoutError):
    """No batch arrived from the workers within ``timeout`` seconds."""


def default_batchify_fn(data: list[Any]) -> Any:
    """Stack a list of samples into a batch: NDArrays with ``nd.stack``, tuples element-wise (a list back).

    Anything else goes through ``np.asarray`` and becomes an NDArray of its dtype.
    """
    if isinstance(data[0], NDArray):
        return nd.stack(*data)
    if isinstance(data[0], tuple):
        return [default_batchify_fn(list(field)) for field in zip(*data, strict=True)]
    values = np.asarray(data)
    return nd.array(values, dtype=values.dtype)


def _stack_numpy(data: list[Any]) -> Any:
    """What :func:`default_batchify_fn` computes, as NumPy (a worker sends arrays, not NDArrays)."""
    if isinstance(data[0], tuple):
        return [_stack_numpy(list(field)) for field in zip(*data, strict=True)]
    if isinstance(data[0], NDArray):
        return np.stack([x.asnumpy() for x in data])
    return np.asarray(data)


# ---------------------------------------------------------------------------- shared memory
# A batch crosses the process boundary as a tree whose array leaves are ("shm", kind, name,
# shape, dtype); kind "nd" becomes an NDArray in the parent, "np" a NumPy array.
def _to_shared(obj: Any, numpy_kind: str) -> Any:
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_shared(x, numpy_kind) for x in obj)
    kind = numpy_kind
    if isinstance(obj, NDArray):
        obj, kind = obj.asnumpy(), "nd"
    if not isinstance(obj, np.ndarray) or obj.dtype.hasobject:
        return ("obj", obj)  # pickled through the pipe
    obj = np.ascontiguousarray(obj)
    block = SharedMemory(create=True, size=max(obj.nbytes, 1))
    np.ndarray(obj.shape, obj.dtype, buffer=block.buf)[...] = obj
    block.close()
    return ("shm", kind, block.name, obj.shape, obj.dtype.str)


def _from_shared(obj: Any) -> Any:
    if isinstance(obj, list):
        return [_from_shared(x) for x in obj]
    if isinstance(obj, tuple) and obj and obj[0] == "obj":
        return obj[1]
    if isinstance(obj, tuple) and obj and obj[0] == "shm":
        _, kind, name, shape, dtype = obj
        block = SharedMemory(name=name)
        try:
            view = np.ndarray(shape, np.dtype(dtype), buffer=block.buf)
            value = nd.array(view, dtype=view.dtype) if kind == "nd" else view.copy()  # both copy now
        finally:
            block.close()
            block.unlink()
        return value
    if isinstance(obj, tuple):
        return tuple(_from_shared(x) for x in obj)
    return obj


# ---------------------------------------------------------------------------- the workers
_worker_dataset: Dataset | None = None
_worker_batchify: Callable[[list[Any]], Any] | None = None


def _worker_init(dataset: Dataset, batchify_fn: Callable | None, engine_id: int, seed: int) -> None:
    """Runs once in each forked worker: keep the dataset, adopt the engine, reseed, mute events."""
    global _worker_dataset, _worker_batchify
    _worker_dataset, _worker_batchify = dataset, batchify_fn
    engine = NaiveEngine()
    engine.id = engine_id  # the parent's variables (copied by fork) check this id
    Engine.set(engine)
    # the parent's event subscribers (a server's queue, say) have no reader in this process
    events._subscriptions = ()
    events._rebuild_routes()
    # forked workers share the parent's generator state: give each its own stream
    worker_seed = (seed + os.getpid()) % (2**32)
    np.random.seed(worker_seed)
    random.seed(worker_seed)
    mx_random.seed(worker_seed)  # the random image operators (RandomFlipLeftRight, ...) draw from mx.random


def _process_worker_fn(indices: list[int]) -> tuple[str, Any]:
    """Make one batch in a worker process: ("ok", shared-memory tree) or ("error", traceback text)."""
    try:
        assert _worker_dataset is not None, "worker not initialised"
        samples = [_worker_dataset[i] for i in indices]
        if _worker_batchify is None:
            return "ok", _to_shared(_stack_numpy(samples), "nd")
        return "ok", _to_shared(_worker_batchify(samples), "np")
    except BaseException:  # every failure goes back to the caller as text
        return "error", traceback.format_exc()


def _thread_worker_fn(dataset: Dataset, batchify_fn: Callable, indices: list[int]) -> tuple[str, Any]:
    """Make one batch in a pool thread (shared address space: the batch itself comes back)."""
    try:
        return "ok", batchify_fn([dataset[i] for i in indices])
    except BaseException:  # every failure goes back to the caller as text
        return "error", traceback.format_exc()


class _MultiWorkerIter:
    """One epoch over a worker pool, keeping ``prefetch`` batches in flight and the sampler's order."""

    def __init__(self, loader: DataLoader, pool: Any) -> None:
        self._loader = loader
        self._pool = pool
        self._batches = iter(loader._batch_sampler)
        self._pending: dict[int, multiprocessing.pool.AsyncResult] = {}
        self._sent = 0
        self._received = 0
        for _ in range(loader._prefetch):
            self._push_next()

    def _push_next(self) -> None:
        indices = next(self._batches, None)
        if indices is None:
            return
        loader = self._loader
        if loader._thread_pool:
            task = self._pool.apply_async(_thread_worker_fn, (loader._dataset, loader._batchify_fn, indices))
        else:
            task = self._pool.apply_async(_process_worker_fn, (indices,))
        self._pending[self._sent] = task
        self._sent += 1

    def __iter__(self) -> _MultiWorkerIter:
        return self

    def __next__(self) -> Any:
        if self._received == self._sent:
            raise StopIteration
        self._push_next()
        task = self._pending.pop(self._received)
        number = self._received
        self._received += 1
        try:
            status, payload = task.get(self._loader._timeout)
        except multiprocessing.TimeoutError:
            self.close()
            raise DataLoaderTimeoutError(
                f"DataLoader: batch {number} did not arrive within timeout={self._loader._timeout}s "
                "(a worker may have died, or one batch takes longer: raise the timeout)"
            ) from None
        if status == "error":
            self.close()
            raise DataLoaderWorkerError(f"DataLoader: a worker raised while making batch {number}:\n{payload}")
        return payload if self._loader._thread_pool else _from_shared(payload)

    def close(self) -> None:
        """Free the shared memory of batches still in flight (waits briefly for them)."""
        pending, self._pending = self._pending, {}
        self._received = self._sent
        if self._loader._thread_pool:
            return
        finalizer = self._loader._finalizer
        # a stopped pool's killed workers deliver nothing more: take only the batches already made
        alive = self._loader._pool is self._pool and finalizer is not None and finalizer.alive
        for task in pending.values():
            if alive:
                task.wait(min(self._loader._timeout, 5.0))
            if task.ready() and task.successful():
                status, payload = task.get()
                if status == "ok":
                    _from_shared(payload)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # the interpreter may be shutting down
            pass


class DataLoader:
    """Batches of a dataset (``mx.gluon.data.DataLoader``, MXNet 1.9.1's arguments).

    Args:
        dataset: anything with ``len`` and ``[i]``.
        batch_size, shuffle, sampler, last_batch: build the batch sampler (``keep``, ``discard`` or
            ``rollover``); or pass ``batch_sampler`` instead of all four.
        batchify_fn: list of samples -> batch (default: :func:`default_batchify_fn`).
        num_workers: worker processes (0: load in the calling thread).
        pin_memory, pin_device_id: accepted for compatibility; CPU arrays are never pinned in MXLab.
        prefetch: batches in flight (default ``2 * num_workers``).
        thread_pool: use threads instead of processes.
        timeout: seconds to wait for one batch from the workers before raising.
        auto_reload: start the next epoch (its workers' prefetching) as soon as one ends, and at
            construction; otherwise an epoch starts when iterated or on :meth:`refresh`.
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = None,
        shuffle: bool = False,
        sampler: Sampler | None = None,
        last_batch: str | None = None,
        batch_sampler: Any = None,
        batchify_fn: Callable[[list[Any]], Any] | None = None,
        num_workers: int = 0,
        pin_memory: bool = False,
        pin_device_id: int = 0,
        prefetch: int | None = None,
        thread_pool: bool = False,
        timeout: float = 120,
        auto_reload: bool = False,
        try_nopython: bool | None = None,
    ) -> None:
        if not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
            raise DataError(f"DataLoader: dataset must support len() and indexing, got {type(dataset).__name__}")
        self._dataset = dataset
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise DataError(f"DataLoader: timeout must be a positive number of seconds, got {timeout!r}")
        self._timeout = float(timeout)
        if batch_sampler is None:
            if batch_size is None:
                raise DataError("DataLoader: batch_size must be specified unless batch_sampler is specified")
            if sampler is None:
                sampler = RandomSampler(len(dataset)) if shuffle else SequentialSampler(len(dataset))
            elif shuffle:
                raise DataError("DataLoader: shuffle must not be specified if sampler is specified")
            batch_sampler = BatchSampler(sampler, batch_size, last_batch if last_batch else "keep")
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise DataError(
                "DataLoader: batch_size, shuffle, sampler and last_batch must not be specified "
                "if batch_sampler is specified"
            )
        self._batch_sampler = batch_sampler
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise DataError(f"DataLoader: num_workers must be an int >= 0, got {num_workers!r}")
        self._num_workers = num_workers
        self._thread_pool = bool(thread_pool)
        if prefetch is None:
            prefetch = 2 * num_workers
        if isinstance(prefetch, bool) or not isinstance(prefetch, int) or prefetch < 0:
            raise DataError(f"DataLoader: prefetch must be an int >= 0, got {prefetch!r}")
        self._prefetch = max(1, prefetch)
        self._user_batchify = batchify_fn
        self._batchify_fn = batchify_fn if batchify_fn is not None else default_batchify_fn
        self._pool: Any = None
        self._finalizer: weakref.finalize | None = None
        self._iter: Iterator[Any] | None = None  # an epoch started ahead (refresh), not yet iterated
        self.auto_reload = bool(auto_reload)
        if self.auto_reload:
            self.refresh()

    def _worker_pool(self) -> Any:
        """The pool, started at the first epoch and kept until the loader is collected."""
        if self._pool is None:
            if self._thread_pool:
                self._pool = multiprocessing.pool.ThreadPool(self._num_workers)
            else:
                nd.waitall()  # nothing may be queued on variables the workers inherit
                resource_tracker.ensure_running()  # one tracker, shared by the workers, for the blocks
                context = multiprocessing.get_context("fork")
                seed = int(np.random.randint(0, 2**31 - 1))
                self._pool = context.Pool(
                    self._num_workers,
                    initializer=_worker_init,
                    initargs=(self._dataset, self._user_batchify, Engine.get().id, seed),
                )
            self._finalizer = weakref.finalize(self, _shutdown_pool, self._pool)
        return self._pool

    def __iter__(self) -> Iterator[Any]:
        """One epoch: the one started ahead by :meth:`refresh`, or a new one."""
        if self._iter is None:
            self.refresh()
        epoch, self._iter = self._iter, None  # an epoch is iterated once
        assert epoch is not None
        return self._reloading(epoch) if self.auto_reload else epoch

    def _reloading(self, epoch: Iterator[Any]) -> Iterator[Any]:
        yield from epoch
        if self._iter is None:  # the epoch ended: start the next one now, so workers prefetch it
            self.refresh()

    def refresh(self) -> None:
        """Start an epoch now (with workers, its first ``prefetch`` batches are made right away)."""
        self.clean()
        if self._num_workers == 0:
            self._iter = self._same_thread_iter()
        else:
            self._iter = _MultiWorkerIter(self, self._worker_pool())

    def clean(self) -> None:
        """Drop the epoch started ahead, freeing its batches in flight; the next ``iter`` starts afresh."""
        epoch, self._iter = self._iter, None
        if isinstance(epoch, _MultiWorkerIter):
            epoch.close()

    def _same_thread_iter(self) -> Iterator[Any]:
        for indices in self._batch_sampler:
            yield self._batchify_fn([self._dataset[i] for i in indices])

    def __len__(self) -> int:
        return len(self._batch_sampler)

    def close(self) -> None:
        """Stop the worker pool now (it is also stopped when the loader is garbage-collected)."""
        self.clean()
        if self._finalizer is not None:
            self._finalizer()
        self._pool = None
        self._finalizer = None

    def __del__(self) -> None:
        """MXNet's hook: stop the workers. MXLab's weakref finalizer already does; this runs it early."""
        finalizer = getattr(self, "_finalizer", None)  # a constructor that raised leaves no finalizer
        if finalizer is not None:
            finalizer()


def _shutdown_pool(pool: Any) -> None:
    pool.terminate()
    pool.join()
