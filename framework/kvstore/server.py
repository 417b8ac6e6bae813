"""A KVStore server: one Ray actor holding a share of the keys (MXNet's ``KVStoreDistServer``).

Workers never talk to each other; they push gradients to the servers and pull weights back.
A server keeps, for each *shard* (a whole small key, or one slice of a big key; see
:mod:`.sharding`), the stored array and, once ``set_optimizer`` has been called, the optimizer
state. What a push does depends on the mode the workers created the store in:

* ``dist_sync``: the server keeps each worker's pushed shard and *does not answer* until all
  ``num_workers`` workers have pushed it. Then it sums them with one vectorised NumPy operation
  per shard, straight into an array it owns (:func:`sum_into`), applies the update once
  (``updater(key, merged, stored)``, or ``stored = merged`` without an updater) and answers
  every waiting push together. A worker pulls only after its push was answered, so its pull
  sees the update: this is how synchronous SGD is made out of asynchronous messages.
* ``dist_async``: every push is applied at once (an updater is required), so workers never
  wait for each other and each pull sees whatever has been applied so far.

A worker sends **all** the shards of one ``push(list)`` that live on this server in one call
(:meth:`KVServer.push`, a list of ``(shard, array)``), and fetches them with one
:meth:`KVServer.pull`: one message per server per batch instead of one per key. The arrays
arrive through Ray's object store: NumPy arrays of a call's arguments are deserialised as
*read-only views* of the shared memory, without a copy, so the server never writes into a
received array; it sums them into a new one. The answer to a push says how long this server
held it waiting for the other workers, so the worker can tell waiting from communication.

The actor is an *asyncio* actor: all its methods run on one event loop, one at a time between
``await`` points, so the merge buffers need no locks, and a push waiting for the others is a
suspended coroutine, not a blocked thread. Waits are bounded by ``timeout`` seconds: when a
worker is missing for that long, or the launcher reports a dead process (:meth:`abort`), every
waiting and later call fails with an error that says who is missing, instead of hanging.

Workers on the server's own host skip the object store in ``dist_sync``: :meth:`share` gives
them a shared-memory block per shard (:mod:`.shared_blocks`), and :meth:`push_shared`,
:meth:`pushpull_shared` and :meth:`pull_shared` carry only the shards' names; the pushes are
read from, and the new values written to, the blocks.

Server 0 also runs the job-wide :meth:`barrier` (the role of ps-lite's scheduler).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import os
import pickle
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import ndarray as nd
from .. import optimizer as opt
from ..ndarray import NDArray
from .base import KVStoreError
from .channel import serve
from .shared_blocks import BlockSpec, SharedBlock, block_dir

ShardName = tuple[Any, int]  # (key, part)
#: glibc's ``mallopt`` parameters: serve blocks up to this size from the heap, keep this much freed.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
HEAP_BLOCK_LIMIT = 64 << 20


def keep_freed_memory() -> bool:
    """Let this process reuse freed memory for large arrays instead of asking the kernel each time.

    The optimizer's arithmetic makes temporaries of a key's size. glibc gives a block above a
    threshold (128 KB to 32 MB, adjusted as it goes) fresh pages from the kernel and returns them
    on ``free``, so each temporary of a 1.6 MB gradient costs some 400 page faults: 2 ms for
    the MLP's first layer on the development machine, against 0.2 ms with reused memory. The
    server does that arithmetic every step, so it keeps up to 64 MB blocks in its heap. Returns
    whether the C library took the setting (False off glibc, where nothing changes).
    """
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError, TypeError):  # not glibc (or no C library found): keep the default
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, HEAP_BLOCK_LIMIT)) and bool(mallopt(M_TRIM_THRESHOLD, 4 * HEAP_BLOCK_LIMIT))


def sum_into(values: list[np.ndarray], out: np.ndarray) -> None:
    """Write the sum of the workers' pushes of one shard into ``out``, the server's own array.

    The received arrays are read-only views of Ray's object store, so the sum goes straight
    into an array the server owns: one worker's push is copied in, two (the common case) take
    one ``np.add``, each further worker one in-place add. No intermediate array is made.
    """
    if len(values) == 1:
        np.copyto(out, values[0])
        return
    np.add(values[0], values[1], out=out)
    for value in values[2:]:
        np.add(out, value, out=out)


class _Round:
    """One synchronous round of a shard (or of the barrier): who has arrived, with which arrays."""

    def __init__(self) -> None:
        self.done: asyncio.Future = asyncio.get_running_loop().create_future()
        # the exception of a failed round is read by every waiter; mark it as retrieved for asyncio
        self.done.add_done_callback(lambda f: f.cancelled() or f.exception())
        self.ranks: set[int] = set()
        self.values: list[np.ndarray] = []  # the pushed arrays, summed once the last worker arrives


class KVServer:
    """Server ``index`` of ``num_servers``, for a job of ``num_workers`` workers (a Ray actor class).

    :func:`framework.kvstore.cluster.start_servers` turns it into named actors.
    """

    def __init__(self, index: int, num_servers: int, num_workers: int, timeout: float) -> None:
        self.index = index
        self.num_servers = num_servers
        self.num_workers = num_workers
        self.timeout = float(timeout)
        keep_freed_memory()
        self._store: dict[ShardName, NDArray] = {}
        self._merged: dict[ShardName, NDArray] = {}  # per shard, the sum of a round's pushes
        self._rounds: dict[ShardName, _Round] = {}
        self._barrier: _Round | None = None
        self._barrier_count = 0
        self._mode: str | None = None  # 'sync' or 'async', set by the workers' configure()
        self._mode_from: int | None = None
        self._updater: Callable[[Any, NDArray, NDArray], None] | None = None
        self._failure: str | None = None
        self._pushes = 0
        self._blocks: dict[ShardName, SharedBlock] = {}  # shards shared with workers on this host
        self._mapped: dict[ShardName, set[int]] = {}  # which workers have mapped each block
        self._block_prefix = f"mxlab-kv-{os.getpid()}-{uuid.uuid4().hex[:8]}-{index}"
        self._channel_path: str | None = None  # the Unix socket of the shared-memory verbs (.channel)
        # the listening server: asyncio closes a server's socket when nothing references it any more
        self._channel_server: asyncio.AbstractServer | None = None
        self._channel_users: set[int] = set()  # workers that have connected (and mapped) at least once

    # ------------------------------------------------------------------ job set-up
    async def ping(self) -> dict[str, Any]:
        """Liveness and a summary: who I am, the mode, the shards, pushes and shared-memory blocks I hold."""
        return {
            "index": self.index,
            "num_servers": self.num_servers,
            "num_workers": self.num_workers,
            "pid": os.getpid(),
            "mode": self._mode,
            "shards": sorted(((k, p, a.size) for (k, p), a in self._store.items()), key=lambda t: (repr(t[0]), t[1])),
            "pushes": self._pushes,
            "shared_blocks": len(self._blocks),
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

    async def push(self, rank: int, items: list[tuple[ShardName, np.ndarray]]) -> float:
        """Add a worker's pushes of several shards; in sync mode answer when every worker pushed them.

        Returns the seconds this call waited for the other workers (0 for the last one to arrive).
        """
        self._check_alive()
        for shard, value in items:
            stored = self._stored(shard, "push")
            if value.shape != tuple(stored.shape) or value.dtype != stored.dtype:
                raise KVStoreError(
                    f"push({shard[0]!r}): worker {rank} sent {value.dtype} {value.shape}, the server holds "
                    f"{np.dtype(stored.dtype).name} {tuple(stored.shape)}"
                )
        self._pushes += len(items)
        if self._mode != "sync":
            if self._updater is None:
                keys = [shard[0] for shard, _ in items]
                raise KVStoreError(
                    f"push({keys[0]!r}): a dist_async store applies every push with an updater; "
                    "call set_optimizer (or set_updater) first"
                )
            self._apply([(shard, [value]) for shard, value in items])
            return 0.0
        arrived = time.perf_counter()
        waiting, complete = [], []
        for shard, value in items:
            round_ = self._rounds.get(shard)
            if round_ is None:
                round_ = self._rounds[shard] = _Round()
            if rank in round_.ranks:
                raise KVStoreError(f"push({shard[0]!r}): worker {rank} pushed twice before the others pushed once")
            round_.ranks.add(rank)
            round_.values.append(value)
            if len(round_.ranks) == self.num_workers:
                del self._rounds[shard]  # the next push of this shard starts a new round
                complete.append((shard, round_))
            else:
                waiting.append((shard, round_))
        if complete:
            self._complete(complete)
        if waiting:
            await self._wait([round_ for _, round_ in waiting], f"push({waiting[0][0][0]!r})")
        return time.perf_counter() - arrived

    async def pull(self, shards: list[ShardName]) -> list[np.ndarray]:
        """The stored values of several shards (workers order their pulls after their pushes).

        In ``dist_sync`` the arrays go out as they are: Ray copies them into its object store as
        this call returns, and no round can overwrite them before, since a round needs this
        worker's next push of the key, which its engine orders after this pull's answer.
        """
        self._check_alive()
        values = []
        for shard in shards:
            stored = self._stored(shard, "pull")
            stored.wait_to_read()
            # dist_async updates stored values in place while other calls run: send a copy then
            values.append(stored._data if self._mode == "sync" else stored.asnumpy())
        return values

    async def pushpull(self, rank: int, items: list[tuple[ShardName, np.ndarray]]) -> tuple[float, list[np.ndarray]]:
        """:meth:`push`, then answer with the shards' new values: a push and a pull in one message."""
        waited = await self.push(rank, items)
        return waited, await self.pull([shard for shard, _ in items])

    # ------------------------------------------------------------------ the verbs, through shared memory
    async def share(self, shards: list[ShardName]) -> dict[str, Any]:
        """Make (once) a shared-memory block per shard; where they are, the host, and the channel.

        A worker compares ``node`` with its own Ray node: only a worker on this host can map the
        blocks, and connect to the Unix socket ``channel`` (:mod:`.channel`) that carries the
        shared-memory verbs. Only ``dist_sync`` shares (see :mod:`.shared_blocks` for why).
        """
        self._check_alive()
        if self._mode != "sync":
            raise KVStoreError(f"share: server {self.index} shares memory only with dist_sync workers")
        if self._channel_path is None:
            path = os.path.join(tempfile.gettempdir(), f"{self._block_prefix}.sock")
            verbs = {"push_shared": self.push_shared, "pushpull_shared": self.pushpull_shared}
            self._channel_server = await serve(path, {**verbs, "pull_shared": self.pull_shared})
            self._channel_path = path
        specs = []
        for shard in shards:
            block = self._blocks.get(shard)
            if block is None:
                stored = self._stored(shard, "share")
                path = os.path.join(block_dir(), f"{self._block_prefix}-{len(self._blocks)}")
                spec = BlockSpec(path, int(stored.size), np.dtype(stored.dtype).str, self.num_workers)
                block = self._blocks[shard] = SharedBlock(spec, create=True)
                self._mapped[shard] = set()
                stored.wait_to_read()
                np.copyto(block.value, stored._data.reshape(-1))
            specs.append(block.spec)
        return {"node": _node_id(), "blocks": specs, "channel": self._channel_path}

    async def mapped(self, rank: int, shards: list[ShardName]) -> None:
        """Worker ``rank`` has mapped these blocks and connected (or will not); once all have, delete the names."""
        self._channel_users.add(rank)
        if len(self._channel_users) == self.num_workers:
            self._unlink_channel()
        for shard in shards:
            ranks = self._mapped.get(shard)
            if ranks is None:
                continue
            ranks.add(rank)
            if len(ranks) == self.num_workers:
                self._blocks[shard].unlink()

    async def push_shared(self, rank: int, shards: list[ShardName]) -> float:
        """:meth:`push`, the arrays read from worker ``rank``'s regions of the shards' blocks."""
        return await self.push(rank, [(shard, self._block(shard, "push").pushes[rank]) for shard in shards])

    async def pushpull_shared(self, rank: int, shards: list[ShardName]) -> float:
        """:meth:`push_shared`; the answer means the new values are in the blocks' value regions."""
        return await self.push_shared(rank, shards)

    async def pull_shared(self, shards: list[ShardName]) -> None:
        """Nothing to send: every completed round has written the blocks' value regions already."""
        self._check_alive()
        for shard in shards:
            self._block(shard, "pull")

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
            await self._wait([round_], "barrier")
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
        for block in self._blocks.values():  # a worker that never mapped its blocks must not leak them
            block.unlink()
        self._unlink_channel()

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

    def _unlink_channel(self) -> None:
        """Delete the socket's name; connected workers keep their connections."""
        if self._channel_path is not None and os.path.exists(self._channel_path):
            os.unlink(self._channel_path)

    def _block(self, shard: ShardName, what: str) -> SharedBlock:
        block = self._blocks.get(shard)
        if block is None:
            raise KVStoreError(
                f"{what}: key {shard[0]!r} (part {shard[1]}) has no shared-memory block on server {self.index}; "
                "the worker must call share first"
            )
        return block

    def _complete(self, rounds: list[tuple[ShardName, _Round]]) -> None:
        """Every worker pushed these shards: sum, update, and wake the waiting pushes (or fail them)."""
        try:
            self._apply([(shard, round_.values) for shard, round_ in rounds])
        except Exception as err:  # every waiting worker gets the updater's error
            for _, round_ in rounds:
                round_.done.set_exception(err)
            raise
        for _, round_ in rounds:
            round_.done.set_result(None)

    def _apply(self, pushes: list[tuple[ShardName, list[np.ndarray]]]) -> None:
        """Update the stored values from the workers' pushes: the updater's rule on their sum, or replace.

        Without an updater the sum is written over the stored value in place. With one, it goes
        into the shard's merge buffer (allocated once), which the updater reads; every update
        has finished when this returns, so the next round may overwrite the buffer.
        """
        updated = []
        for shard, values in pushes:
            stored = self._store[shard]
            if self._updater is None:
                stored.wait_to_read()
                sum_into(values, stored._data)
                updated.append((shard, stored))
                continue
            merged = self._merged.get(shard)
            if merged is None:
                merged = self._merged[shard] = nd.empty(stored.shape, stored.context, stored.dtype)
            merged.wait_to_read()
            sum_into(values, merged._data)
            self._updater(shard[0], merged, stored)
            updated.append((shard, stored))
        for shard, stored in updated:  # the updates ran in parallel on the engine; an updater error surfaces here
            stored.wait_to_read()
            block = self._blocks.get(shard)
            if block is not None:  # workers on this host read the new value from the block
                np.copyto(block.value, stored._data.reshape(-1))

    def _optimizer_updater(self, what: str) -> opt.Updater:
        if not isinstance(self._updater, opt.Updater):
            raise KVStoreError(f"{what}: the servers have no optimizer (call set_optimizer first)")
        return self._updater

    async def _wait(self, rounds: list[_Round], what: str) -> None:
        """Wait for rounds to complete, at most ``timeout`` seconds in all; then fail the whole job.

        A held push should resume as soon as its last round completes: the last worker's answer
        leaves at once, and each turn of the event loop this one lags behind lets the server
        handle requests already queued (each with its sums and updates) first, so this worker
        starts its next step later. Hence one future for the whole wait, set by the last
        round's completion (two turns), rather than ``wait_for(gather(shield(...)))``, whose
        layers each add a turn.
        """
        loop = asyncio.get_running_loop()
        pending = [r.done for r in rounds if not r.done.done()]
        if pending:
            woken = loop.create_future()
            left = len(pending)

            def one_done(_: asyncio.Future) -> None:
                nonlocal left
                left -= 1
                if left == 0 and not woken.done():
                    woken.set_result(None)

            for done in pending:
                done.add_done_callback(one_done)
            # the timer wakes the wait too: rounds still open then mean a missing worker (below)
            timer = loop.call_later(self.timeout, lambda: woken.done() or woken.set_result(None))
            try:
                await woken
            finally:
                timer.cancel()
        try:
            if any(not r.done.done() for r in rounds):
                raise TimeoutError
            for r in rounds:
                r.done.result()  # a failed round (the updater raised, the job was aborted) raises here
        except TimeoutError:
            pending = [r.ranks for r in rounds if not r.done.done()]
            arrived = set.intersection(*pending) if pending else set(range(self.num_workers))
            missing = sorted(set(range(self.num_workers)) - arrived)
            reason = (
                f"{what}: server {self.index} waited {self.timeout:g} s for worker(s) {missing} "
                "(dead or stalled?); MXLAB_KV_TIMEOUT sets this limit"
            )
            await self.abort(reason)
            raise KVStoreError(reason) from None


def _node_id() -> str | None:
    """The Ray node this process runs on (None outside Ray): processes on one node share memory."""
    try:
        import ray  # noqa: PLC0415 - the server runs inside Ray; tests may build it without
    except ImportError:
        return None
    return ray.get_runtime_context().get_node_id() if ray.is_initialized() else None


__all__ = ["KVServer", "keep_freed_memory", "sum_into"]
