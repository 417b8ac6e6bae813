"""A KVStore server: one Ray actor holding a share of the keys (MXNet's ``KVStoreDistServer``).

Workers never talk to each other; they push gradients to the servers and pull weights back.
A server keeps, for each *shard* (a whole small key, or one slice of a big key; see
:mod:`.sharding`), the stored array and, once ``set_optimizer`` has been called, the optimizer
state. What a push does depends on the mode the workers created the store in:

* ``dist_sync``: the server adds each worker's push into a merge buffer and *does not answer*
  until all ``num_workers`` workers have pushed that shard. Then it applies the update once
  (``updater(key, merged, stored)``, or ``stored = merged`` without an updater) and answers
  every waiting push together. A worker pulls only after its push was answered, so its pull
  sees the update: this is how synchronous SGD is made out of asynchronous messages.
* ``dist_async``: every push is applied at once (an updater is required), so workers never
  wait for each other and each pull sees whatever has been applied so far.

The actor is an *asyncio* actor: all its methods run on one event loop, one at a time between
``await`` points, so the merge buffers need no locks, and a push waiting for the others is a
suspended coroutine, not a blocked thread. Waits are bounded by ``timeout`` seconds: when a
worker is missing for that long, or the launcher reports a dead process (:meth:`abort`), every
waiting and later call fails with an error that says who is missing, instead of hanging.

Server 0 also runs the job-wide :meth:`barrier` (the role of ps-lite's scheduler).
"""

from __future__ import annotations

import asyncio
import os
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import ndarray as nd
from .. import optimizer as opt
from ..ndarray import NDArray
from .base import KVStoreError

ShardName = tuple[Any, int]  # (key, part)


class _Round:
    """One synchronous round of a shard (or of the barrier): who has arrived, and the merged sum."""

    def __init__(self) -> None:
        self.done: asyncio.Future = asyncio.get_running_loop().create_future()
        # the exception of a failed round is read by every waiter; mark it as retrieved for asyncio
        self.done.add_done_callback(lambda f: f.cancelled() or f.exception())
        self.ranks: set[int] = set()
        self.merged: np.ndarray | None = None


class KVServer:
    """Server ``index`` of ``num_servers``, for a job of ``num_workers`` workers (a Ray actor class).

    :func:`framework.kvstore.cluster.start_servers` turns it into named actors.
    """

    def __init__(self, index: int, num_servers: int, num_workers: int, timeout: float) -> None:
        self.index = index
        self.num_servers = num_servers
        self.num_workers = num_workers
        self.timeout = float(timeout)
        self._store: dict[ShardName, NDArray] = {}
        self._rounds: dict[ShardName, _Round] = {}
        self._barrier: _Round | None = None
        self._barrier_count = 0
        self._mode: str | None = None  # 'sync' or 'async', set by the workers' configure()
        self._mode_from: int | None = None
        self._updater: Callable[[Any, NDArray, NDArray], None] | None = None
        self._failure: str | None = None
        self._pushes = 0

    # ------------------------------------------------------------------ job set-up
    async def ping(self) -> dict[str, Any]:
        """Liveness and a summary: who I am, the mode, how many shards and pushes I hold."""
        return {
            "index": self.index,
            "num_servers": self.num_servers,
            "num_workers": self.num_workers,
            "pid": os.getpid(),
            "mode": self._mode,
            "shards": sorted(((k, p, a.size) for (k, p), a in self._store.items()), key=lambda t: (repr(t[0]), t[1])),
            "pushes": self._pushes,
            "failure": self._failure,
        }

    async def configure(self, rank: int, num_workers: int, sync: bool) -> None:
        """A worker announces its store type; every worker of a job must agree."""
        self._check_alive()
        if num_workers != self.num_workers:
            raise KVStoreError(
                f"worker {rank} expects {num_workers} workers but server {self.index} was started for "
                f"{self.num_workers}"
            )
        mode = "sync" if sync else "async"
        if self._mode is None:
            self._mode, self._mode_from = mode, rank
        elif self._mode != mode:
            raise KVStoreError(
                f"worker {rank} created a dist_{mode} store but worker {self._mode_from} created dist_{self._mode}; "
                "every worker of a job must create the same store type"
            )

    async def set_optimizer(self, pickled_optimizer: bytes) -> None:
        """Install the optimizer the workers pickled (MXNet sends it the same way)."""
        self._check_alive()
        optimizer = pickle.loads(pickled_optimizer)
        if not isinstance(optimizer, opt.Optimizer):
            raise KVStoreError(f"set_optimizer: the servers received a {type(optimizer).__name__}, not an Optimizer")
        self._updater = opt.get_updater(optimizer)

    async def set_updater(self, updater: Callable[[Any, NDArray, NDArray], None]) -> None:
        """Install a plain ``updater(key, merged, stored)`` function (shipped by Ray's cloudpickle)."""
        self._check_alive()
        self._updater = updater

    # ------------------------------------------------------------------ the verbs
    async def init(self, shard: ShardName, value: np.ndarray) -> None:
        """Store the first value of a shard (only rank 0 sends it)."""
        self._check_alive()
        if shard in self._store:
            raise KVStoreError(f"init: duplicate init of key {shard[0]!r} (part {shard[1]}) on server {self.index}")
        self._store[shard] = nd.array(value, dtype=value.dtype)

    async def push(self, shard: ShardName, rank: int, value: np.ndarray) -> None:
        """Add a worker's push; in sync mode answer only when every worker pushed (or fail)."""
        self._check_alive()
        stored = self._stored(shard, "push")
        if value.shape != tuple(stored.shape) or value.dtype != stored.dtype:
            raise KVStoreError(
                f"push({shard[0]!r}): worker {rank} sent {value.dtype} {value.shape}, the server holds "
                f"{stored.dtype} {tuple(stored.shape)}"
            )
        self._pushes += 1
        if self._mode != "sync":
            if self._updater is None:
                raise KVStoreError(
                    f"push({shard[0]!r}): a dist_async store applies every push with an updater; "
                    "call set_optimizer (or set_updater) first"
                )
            self._apply(shard, value)
            return
        round_ = self._rounds.get(shard)
        if round_ is None:
            round_ = self._rounds[shard] = _Round()
        if rank in round_.ranks:
            raise KVStoreError(f"push({shard[0]!r}): worker {rank} pushed twice before the others pushed once")
        round_.ranks.add(rank)
        round_.merged = value.copy() if round_.merged is None else np.add(round_.merged, value, out=round_.merged)
        if len(round_.ranks) == self.num_workers:
            del self._rounds[shard]  # the next push of this shard starts a new round
            try:
                self._apply(shard, round_.merged)
            except Exception as err:  # every waiting worker gets the updater's error
                round_.done.set_exception(err)
                raise
            round_.done.set_result(None)
            return
        await self._wait(round_, f"push({shard[0]!r})")

    async def pull(self, shard: ShardName) -> np.ndarray:
        """The stored value of a shard (workers order their pulls after their pushes)."""
        self._check_alive()
        return self._stored(shard, "pull").asnumpy()

    async def barrier(self, rank: int) -> int:
        """Return when all workers have called ``barrier`` (server 0 only); returns the barrier count."""
        self._check_alive()
        if self._barrier is None:
            self._barrier = _Round()
        round_ = self._barrier
        if rank in round_.ranks:
            raise KVStoreError(f"barrier: worker {rank} entered the same barrier twice")
        round_.ranks.add(rank)
        if len(round_.ranks) == self.num_workers:
            self._barrier = None
            self._barrier_count += 1
            round_.done.set_result(None)
        else:
            await self._wait(round_, "barrier")
        return self._barrier_count

    # ------------------------------------------------------------------ optimizer states
    async def get_states(self, dump_optimizer: bool = False) -> bytes:
        """This server's optimizer states (one entry per key it updates)."""
        self._check_alive()
        return self._optimizer_updater("save_optimizer_states").get_states(dump_optimizer)

    async def set_states(self, states: bytes) -> None:
        """Restore states written by :meth:`get_states`."""
        self._check_alive()
        self._optimizer_updater("load_optimizer_states").set_states(states)

    # ------------------------------------------------------------------ failure
    async def abort(self, reason: str) -> None:
        """Fail every waiting and later call with ``reason`` (the launcher saw a process die)."""
        if self._failure is None:
            self._failure = reason
        error = KVStoreError(f"the distributed KVStore job was aborted: {self._failure}")
        pending = list(self._rounds.values()) + ([self._barrier] if self._barrier else [])
        for round_ in pending:
            if not round_.done.done():
                round_.done.set_exception(error)
        self._rounds.clear()
        self._barrier = None

    # ------------------------------------------------------------------ internals
    def _check_alive(self) -> None:
        if self._failure is not None:
            raise KVStoreError(f"the distributed KVStore job was aborted: {self._failure}")

    def _stored(self, shard: ShardName, what: str) -> NDArray:
        stored = self._store.get(shard)
        if stored is None:
            raise KVStoreError(
                f"{what}: key {shard[0]!r} has not been initialized on server {self.index}; call init first"
            )
        return stored

    def _apply(self, shard: ShardName, merged: np.ndarray) -> None:
        """Update the stored value from the merged pushes: the updater's rule, or replace."""
        stored = self._store[shard]
        if self._updater is None:
            self._store[shard] = nd.array(merged, dtype=merged.dtype)
            return
        self._updater(shard[0], nd.array(merged, dtype=merged.dtype), stored)
        stored.wait_to_read()  # an updater error surfaces here, in this push's answer

    def _optimizer_updater(self, what: str) -> opt.Updater:
        if not isinstance(self._updater, opt.Updater):
            raise KVStoreError(f"{what}: the servers have no optimizer (call set_optimizer first)")
        return self._updater

    async def _wait(self, round_: _Round, what: str) -> None:
        """Wait for a round to complete, at most ``timeout`` seconds; then fail the whole job."""
        try:
            await asyncio.wait_for(asyncio.shield(round_.done), self.timeout)
        except TimeoutError:
            missing = sorted(set(range(self.num_workers)) - round_.ranks)
            reason = (
                f"{what}: server {self.index} waited {self.timeout:g} s for worker(s) {missing} "
                "(dead or stalled?); MXLAB_KV_TIMEOUT sets this limit"
            )
            await self.abort(reason)
            raise KVStoreError(reason) from None


__all__ = ["KVServer"]
