"""How a distributed store's messages travel: engine operations out, the servers' answers back.

:class:`~.dist.DistKVStore` turns ``push``, ``pull`` and ``pushpull`` into engine operations on
its communication buffers; this module holds what those operations do. Each verb sends one
message per server (every shard of the call that the server holds): through Ray, or, for a
server on the worker's host, as names over the server's Unix socket (:mod:`.channel`) with the
arrays in shared-memory blocks (:mod:`.shared_blocks`).

An engine operation must not block a worker thread for a whole network round trip, so the
operations are *asynchronous*: the engine thread only sends, and hands the answer's future to
a small pool of answer threads (:data:`ANSWER_THREADS`), which wait for it, write the received
data into the buffers (or the outputs, :meth:`~.dist.DistKVStore.pushpull`), log the call for
the step's time split (:mod:`.timing`) and call ``on_complete``. A failure becomes the
operation's exception. Every wait is bounded by ``MXLAB_KV_TIMEOUT`` plus a margin, so that a
server's own, clearer timeout message (naming the missing workers) arrives first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import numpy as np

from .. import backend
from ..context import cpu
from ..ndarray import NDArray
from .base import Key, KVStoreError
from .channel import Channel, ChannelClosed
from .cluster import DistConfig, server_name
from .local import _fetch
from .sharding import Shard
from .shared_blocks import SharedBlock
from .timing import CallLog, CallRecord

#: Threads that wait for the servers' answers (an engine worker never blocks on the network).
ANSWER_THREADS = 4

RefList = list[tuple[int, Any]]  # (server index, Ray ObjectRef)


class ServerMessages:
    """The engine operations of a worker's messages and the waits for the servers (a base of
    :class:`~.dist.DistKVStore`, which sets the attributes below up)."""

    _config: DistConfig
    _ray: Any  # the ray module
    _servers: list[Any]  # the server actors, by index
    _layouts: dict[Key, list[Shard]]  # each key's shards
    _blocks: dict[Any, SharedBlock]  # shard name -> its server's block, when on this host
    _channels: dict[int, Channel]  # server index -> the channel of its shared-memory verbs
    _answers: ThreadPoolExecutor
    _calls: CallLog

    # ------------------------------------------------------------------ engine operations
    def _by_server(self, bufs: dict[Key, NDArray]) -> dict[int, list[Shard]]:
        """The shards of ``bufs``' keys, grouped by the server that holds them (in key order)."""
        groups: dict[int, list[Shard]] = {}
        for k in bufs:
            for shard in self._layouts[k]:
                groups.setdefault(shard.server, []).append(shard)
        return groups

    def _send(
        self,
        server: int,
        shards: list[Shard],
        bufs: dict[Key, NDArray],
        priority: int,
        pull_back: bool,
        sources: dict[Key, NDArray] | None = None,
        targets: dict[Key, NDArray] | None = None,
    ) -> None:
        """``KVStoreDistPush``: one message with every shard this server holds; done when it answers.

        The operation writes the buffers' variables, so a later pull of any of these keys waits
        for the answer (which, in ``dist_sync``, comes once the round's update is applied). With
        ``pull_back`` (``KVStoreDistPushPull``) the answer also carries the updated values,
        written into the buffers. ``sources`` and ``targets`` replace the buffers as what is
        sent and what the answer is written into (:meth:`_one_to_one`): the operation then
        reads the sources' variables and writes the targets' too.
        """
        actor, rank, calls = self._servers[server], self._config.rank, self._calls
        keys = list(dict.fromkeys(s.key for s in shards))
        sent_from = sources if sources is not None else bufs
        written = targets if targets is not None else bufs
        sources_data = {k: (sent_from[k]._data, sent_from[k].context) for k in keys}
        ctx = bufs[keys[0]].context
        verb = "pushpull" if pull_back else "push"
        blocks = self._shared(shards)
        channel = self._channels.get(server)
        write = self._writer(shards, written, blocks) if pull_back else None

        def send(run_ctx: Any, on_complete: Callable[..., None]) -> None:
            flats = {k: np.asarray(_fetch(data, c, cpu(0))).reshape(-1) for k, (data, c) in sources_data.items()}
            nbytes = sum(s.size * flats[s.key].itemsize for s in shards) * (2 if pull_back else 1)
            sent = time.perf_counter()
            if blocks is not None:  # shared memory: write this worker's regions, send only the names
                for shard, block in zip(shards, blocks, strict=True):
                    np.copyto(block.pushes[rank], flats[shard.key][shard.start : shard.stop])
                names = [s.name for s in shards]
                ref = channel.call("pushpull_shared" if pull_back else "push_shared", rank, names)
            else:
                # views of the buffers: Ray serialises them into its object store during .remote(),
                # so the buffers may change as soon as it returns
                items = [(s.name, flats[s.key][s.start : s.stop]) for s in shards]
                ref = (actor.pushpull if pull_back else actor.push).remote(rank, items)
            calls.sent()
            self._answers.submit(
                self._complete, verb, server, ref, sent, nbytes, keys, on_complete, write, blocks is not None
            )

        vars_ = list(dict.fromkeys([bufs[k]._chunk.var for k in keys] + [written[k]._chunk.var for k in keys]))
        reads = [v for v in dict.fromkeys(sent_from[k]._chunk.var for k in keys) if v not in vars_]
        name = f"KVStoreDist{'PushPull' if pull_back else 'Push'}({_names(keys)})"
        self._engine(bufs).push_async(send, ctx, reads, vars_, priority=priority, name=name)

    def _shared(self, shards: list[Shard]) -> list[SharedBlock] | None:
        """The shards' shared-memory blocks if this worker mapped all of them, else None (use Ray).

        A worker maps a server's blocks and connects to its channel together (:meth:`_share`).
        """
        blocks = [self._blocks.get(s.name) for s in shards]
        return None if any(b is None for b in blocks) else blocks

    @staticmethod
    def _writer(
        shards: list[Shard], bufs: dict[Key, NDArray], blocks: list[SharedBlock] | None
    ) -> Callable[[list[np.ndarray] | None], None]:
        """A function writing a server's answer (one array per shard, or the blocks' values) into the buffers."""
        targets = {s.key: (bufs[s.key]._data, bufs[s.key].context) for s in shards}

        def write(answer: list[np.ndarray] | None) -> None:
            # the parts are read-only views of Ray's object store, or the blocks' value regions
            # (which no round overwrites before this worker's next push): copy each once, into its buffer
            parts = answer if blocks is None else [b.value for b in blocks]
            for shard, part in zip(shards, parts, strict=True):
                data, c = targets[shard.key]
                with backend.device(c):
                    data.reshape(-1)[shard.start : shard.stop] = backend.array_module(c).asarray(part)

        return write

    def _receive(self, server: int, shards: list[Shard], bufs: dict[Key, NDArray], priority: int) -> None:
        """``KVStoreDistPull``: one message fetching every shard this server holds into the buffers."""
        actor, calls = self._servers[server], self._calls
        keys = list(dict.fromkeys(s.key for s in shards))
        ctx = bufs[keys[0]].context
        blocks = self._shared(shards)
        channel = self._channels.get(server)
        write = self._writer(shards, bufs, blocks)

        def receive(run_ctx: Any, on_complete: Callable[..., None]) -> None:
            sent = time.perf_counter()
            names = [s.name for s in shards]
            ref = actor.pull.remote(names) if blocks is None else channel.call("pull_shared", names)
            calls.sent()
            nbytes = sum(s.size * np.dtype(bufs[s.key].dtype).itemsize for s in shards)
            self._answers.submit(
                self._complete, "pull", server, ref, sent, nbytes, keys, on_complete, write, blocks is not None
            )

        vars_ = list(dict.fromkeys(bufs[k]._chunk.var for k in keys))
        self._engine(bufs).push_async(
            receive, ctx, [], vars_, priority=priority, name=f"KVStoreDistPull({_names(keys)})"
        )

    @staticmethod
    def _engine(bufs: dict[Key, NDArray]) -> Any:
        return next(iter(bufs.values()))._chunk.engine

    def _complete(
        self,
        verb: str,
        server: int,
        ref: Any,
        sent: float,
        nbytes: int,
        keys: list[Key],
        on_complete: Callable[..., None],
        deliver: Callable[[list | None], None] | None,
        shared: bool,
    ) -> None:
        """On an answer thread: wait for the server, deliver the data, log the call, report to the engine."""
        try:
            what = f"{verb}({_names(keys)})"
            answer = self._answer(server, ref, what) if shared else self._wait([(server, ref)], what)[0]
            answered = time.perf_counter()
            # a push answers the seconds it was held, a pull the values, a pushpull both; through
            # shared memory the values are in the blocks, and a pull answers nothing
            if shared:
                waited, values = (0.0 if verb == "pull" else answer), None
            else:
                waited, values = {"push": (answer, None), "pull": (0.0, answer), "pushpull": answer}[verb]
            if deliver is not None:
                deliver(values)
            waited = float(waited)
            self._calls.answered(CallRecord(verb, server, sent, answered, waited, nbytes))
        except BaseException as err:
            on_complete(err)
            return
        on_complete()

    # ------------------------------------------------------------------ waiting for servers
    def _to_all(self, call: Callable[[Any], Any]) -> RefList:
        return [(i, call(s)) for i, s in enumerate(self._servers)]

    def _wait(self, refs: RefList, what: str) -> list[Any]:
        """The servers' answers, or a :class:`KVStoreError` saying which server failed and why.

        A server bounds its own waits by the timeout and then names the missing workers; the
        worker waits a little longer so that this clearer message is the one that arrives.
        """
        ray = self._ray
        limit = self._config.timeout + max(2.0, 0.25 * self._config.timeout)
        deadline = time.monotonic() + limit
        results = []
        for index, ref in refs:
            try:
                results.append(ray.get(ref, timeout=max(0.0, deadline - time.monotonic())))
            except ray.exceptions.GetTimeoutError:
                raise KVStoreError(
                    f"{what}: KVStore server {index} did not answer within {limit:g} s ({self._liveness()})"
                ) from None
            except ray.exceptions.RayActorError:
                raise KVStoreError(
                    f"{what}: KVStore server {index} ({server_name(index)}) has died; the job cannot continue "
                    f"({self._liveness()})"
                ) from None
            except ray.exceptions.RayTaskError as err:
                cause = err.cause
                if isinstance(cause, KVStoreError):
                    raise KVStoreError(f"{cause}") from None
                raise KVStoreError(f"{what}: server {index} failed: {type(cause).__name__}: {cause}") from None
        return results

    def _answer(self, index: int, future: Future, what: str) -> Any:
        """A channel call's answer, bounded like :meth:`_wait` and with the same errors."""
        limit = self._config.timeout + max(2.0, 0.25 * self._config.timeout)
        try:
            return future.result(timeout=limit)
        except FutureTimeout:
            raise KVStoreError(
                f"{what}: KVStore server {index} did not answer within {limit:g} s ({self._liveness()})"
            ) from None
        except ChannelClosed as err:
            raise KVStoreError(
                f"{what}: KVStore server {index} ({server_name(index)}) has died; the job cannot continue "
                f"({err}; {self._liveness()})"
            ) from None

    def _liveness(self) -> str:
        """Which servers still answer a ping (asked when something went wrong)."""
        ray = self._ray
        alive, dead = [], []
        for index, server in enumerate(self._servers):
            try:
                ray.get(server.ping.remote(), timeout=2.0)
                alive.append(index)
            except Exception:
                dead.append(index)
        return f"servers answering: {alive}, not answering: {dead}"


def _names(keys: list[Key]) -> str:
    """The keys of one message as an operation name shows them: ``'fc1_weight', 'fc1_bias'``."""
    return ", ".join(repr(k) for k in keys)


__all__ = ["ANSWER_THREADS", "RefList", "ServerMessages"]
