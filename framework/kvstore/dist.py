"""The worker side of the distributed store: ``mx.kv.create('dist_sync' | 'dist_async' | 'dist_device_sync')``.

Each worker process keeps, per key, one **communication buffer** (MXNet's ``comm_buf_``) and
turns every verb into engine operations on the buffers' variables:

``push(keys, [[g0, g1], ...])``
    ``KVStoreReduce`` sums the worker's own devices into each key's buffer (as the local store
    does); then one ``KVStoreDistPush`` *per server* sends every shard of these keys that the
    server holds (:mod:`.sharding`) in one message, and completes when it answers. In
    ``dist_sync`` a server answers only once *all* workers have pushed and the update has
    been applied (:mod:`.server`).
``pull(keys, out=[[w0, w1], ...])``
    one ``KVStoreDistPull`` per server fetches the shards into the buffers, then
    ``KVStoreBroadcast`` copies each buffer to its outputs.
``pushpull(keys, grads, out=weights)``
    a push whose answer brings the updated values back (``KVStoreDistPushPull``): one message
    and one round trip per server instead of two. A Module sends one per layer.

The network operations *write* the buffers' variables, so the engine runs them in program
order: a pull issued after a push starts only when the push has been answered, hence sees the
update. And because they are engine operations, ``push`` and ``pull`` return at once; the
gradient of the last layer travels while the backward pass is still computing the earlier ones.
An engine operation must not block a worker thread for a whole network round trip, so the
operations are *asynchronous*: they hand Ray's answers to a small thread pool, which writes
the received data and calls ``on_complete`` (:mod:`.messages`: how the messages travel).

On the servers' own host, a ``dist_sync`` worker moves the arrays through shared memory
instead of Ray's object store (:mod:`.shared_blocks`): before sending, it copies each shard into
its region of the shard's block, the message names the shards, and after the answer it copies
the new values out of the block. These small messages skip Ray too: they travel over a Unix
socket to the server (:mod:`.channel`). ``MXLAB_KV_TRANSPORT=ray`` keeps every message and
array in Ray.

Failures become exceptions on the buffer's variable: the engine skips the operations that
depend on it and re-raises the error where the user reads a result (``asnumpy``,
``wait_to_read``, ``mx.nd.waitall``). Every wait is bounded by ``MXLAB_KV_TIMEOUT``.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .. import events
from .. import ndarray as nd
from .. import optimizer as opt
from ..atomic_file import write_bytes_atomic
from ..context import cpu
from ..ndarray import NDArray
from .base import Key, KVStore, KVStoreError, Updater
from .channel import Channel
from .cluster import DistConfig, find_servers, import_ray, server_name
from .local import LocalKVStore, _key_values, _nbytes
from .messages import ANSWER_THREADS, RefList, ServerMessages
from .sharding import Shard, layout
from .shared_blocks import SharedBlock
from .timing import CallLog, StepSplit, split_step

#: Distributed type -> (synchronous?, sum a worker's devices on a device?). MXNet treats any
#: ``dist*`` name without ``_async`` as synchronous; ``dist`` alone is ``dist_sync``.
DIST_MODES: dict[str, tuple[bool, bool]] = {
    "dist_sync": (True, False),
    "dist": (True, False),
    "dist_device_sync": (True, True),
    "dist_sync_device": (True, True),
    "dist_async": (False, False),
}
#: The tag of the optimizer-state files written by :meth:`DistKVStore.save_optimizer_states`.
STATES_FORMAT = "mxlab-dist-optimizer-states-1"


class DistKVStore(ServerMessages, KVStore):
    """A store whose keys live on Ray server actors, shared by ``num_workers`` worker processes.

    Args:
        name: ``'dist_sync'``, ``'dist_async'`` or ``'dist_device_sync'`` (or MXNet's aliases
            ``'dist'``, ``'dist_sync_device'``).
        config: the job (rank, workers, servers, namespace, ...); read from the launcher's
            environment variables when omitted (:meth:`DistConfig.from_env`).

    Creating the store connects to Ray, finds the servers and waits until every worker of the
    job has created its store (a barrier), like MXNet's ps-lite start-up.
    """

    prefers_batches = True

    def __init__(self, name: str = "dist_sync", config: DistConfig | None = None) -> None:
        if name not in DIST_MODES:
            raise KVStoreError(f"DistKVStore: type must be one of {sorted(DIST_MODES)}, got {name!r}")
        self._type = name
        self._sync, self._on_device = DIST_MODES[name]
        self._config = config if config is not None else DistConfig.from_env()
        self._ray = import_ray()
        self._servers = find_servers(self._config)
        self._bufs: dict[Key, NDArray] = {}
        self._layouts: dict[Key, list[Shard]] = {}
        self._placed: set[Key] = set()  # dist_device_sync: keys whose buffer moved to the pushing device
        self._blocks: dict[Any, SharedBlock] = {}  # shard name -> its server's block, when on this host
        self._channels: dict[int, Channel] = {}  # server index -> the channel of its shared-memory verbs
        self._answers = ThreadPoolExecutor(ANSWER_THREADS, thread_name_prefix=f"kvstore-rank{self.rank}")
        self._calls = CallLog()
        self._step = 0
        self._step_start: float | None = None
        self._step_stop = time.perf_counter()
        rank, workers = self._config.rank, self._config.num_workers
        try:
            self._wait(self._to_all(lambda s: s.configure.remote(rank, workers, self._sync)), "create")
        except KVStoreError as err:  # a misconfigured job: stop the other workers now, not at their timeout
            for server in self._servers:
                server.abort.remote(f"worker {rank} could not join: {err}")
            raise
        self.barrier()

    # ------------------------------------------------------------------ identity
    @property
    def type(self) -> str:
        return self._type

    @property
    def rank(self) -> int:
        return self._config.rank

    @property
    def num_workers(self) -> int:
        return self._config.num_workers

    @property
    def num_servers(self) -> int:
        return self._config.num_servers

    def __repr__(self) -> str:
        return (
            f"<DistKVStore type={self._type!r} rank={self.rank}/{self.num_workers} servers={self.num_servers} "
            f"keys={len(self._bufs)}>"
        )

    # ------------------------------------------------------------------ the verbs
    def init(self, key: Key | Sequence[Key], value: Any) -> None:
        """Every worker declares the keys; rank 0's values are stored; then all workers meet (barrier)."""
        pairs = _key_values(key, value, "init")
        for k, values in pairs:
            if k in self._bufs or len(values) != 1:
                raise KVStoreError(f"init: duplicate init of key {k!r} (a key is initialised once, with one value)")
        refs: RefList = []
        for k, values in pairs:
            v = values[0]
            shards = layout(k, v.size, self.num_servers, self._config.bigarray_bound)
            self._layouts[k] = shards
            self._bufs[k] = nd.empty(v.shape, v.context if self._on_device else cpu(0), v.dtype)
            if self.rank == 0:
                flat = v.asnumpy().reshape(-1)
                for s in shards:
                    refs.append((s.server, self._servers[s.server].init.remote(s.name, flat[s.start : s.stop])))
        self._wait(refs, "init")
        self.barrier()
        if self._sync and self._config.transport == "auto":  # after rank 0's values are stored
            self._share([s for k, _ in pairs for s in self._layouts[k]])
            self.barrier()  # every worker leaves init with the job's keys shared

    def _share(self, shards: list[Shard]) -> None:
        """Map the servers' shared-memory blocks of these shards, for the servers on this host."""
        groups: dict[int, list[Shard]] = {}
        for shard in shards:
            groups.setdefault(shard.server, []).append(shard)
        refs = [(i, self._servers[i].share.remote([s.name for s in group])) for i, group in groups.items()]
        answers = self._wait(refs, "init (shared memory)")
        here = self._ray.get_runtime_context().get_node_id()
        try:
            for (index, group), answer in zip(groups.items(), answers, strict=True):
                if answer["node"] != here:  # another host: this server's messages keep travelling through Ray
                    continue
                if index not in self._channels:
                    describe = f"KVStore server {index} ({server_name(index)})"
                    self._channels[index] = Channel(answer["channel"], describe)
                for shard, spec in zip(group, answer["blocks"], strict=True):
                    self._blocks[shard.name] = SharedBlock(spec)
        finally:  # mapped or not, tell the servers, which delete a block's name once every worker answered
            rank = self.rank
            self._wait(
                [(i, self._servers[i].mapped.remote(rank, [s.name for s in group])) for i, group in groups.items()],
                "init (shared memory)",
            )

    def push(self, key: Key | Sequence[Key], value: Any, priority: int = 0) -> None:
        """Sum this worker's values per key, then send the sums: one message per server (engine ops)."""
        bufs = self._reduce(key, value, priority, "push")
        for server, shards in self._by_server(bufs).items():
            self._send(server, shards, bufs, priority, pull_back=False)

    def pull(self, key: Key | Sequence[Key], out: Any = None, priority: int = 0, ignore_sparse: bool = True) -> None:
        """Fetch the keys' values into their buffers (one message per server), then copy them to the outputs."""
        if out is None:
            raise KVStoreError(f"pull({key!r}): out= (the array or arrays to fill) is required")
        pairs = self._targets(key, out, "pull")
        bufs = {k: self._bufs[k] for k, _ in pairs}
        for server, shards in self._by_server(bufs).items():
            self._receive(server, shards, bufs, priority)
        self._broadcast(pairs, priority)

    def pushpull(self, key: Key | Sequence[Key], value: Any, out: Any = None, priority: int = 0) -> None:
        """``push`` then ``pull`` in one message per server: the push's answer carries the new values.

        In ``dist_sync`` a pull after a push waits for the push's answer anyway; fusing them
        saves a round trip and a message per server.
        """
        pairs = self._targets(key, value if out is None else out, "pushpull")
        direct = self._one_to_one(key, value, pairs)
        if direct is not None:  # no detour through the buffers (below)
            grads, outs = direct
            bufs = {k: self._bufs[k] for k in grads}
            for server, shards in self._by_server(bufs).items():
                self._send(server, shards, bufs, priority, pull_back=True, sources=grads, targets=outs)
            return
        bufs = self._reduce(key, value, priority, "pushpull")
        for server, shards in self._by_server(bufs).items():
            self._send(server, shards, bufs, priority, pull_back=True)
        self._broadcast(pairs, priority)

    def _one_to_one(
        self, key: Key | Sequence[Key], value: Any, pairs: list[tuple[Key, list[NDArray]]]
    ) -> tuple[dict[Key, NDArray], dict[Key, NDArray]] | None:
        """Each key's one gradient and one output, when the buffers would only be a detour; else None.

        With one CPU array per key on each side, ``KVStoreReduce`` copies the gradient into the
        buffer, the message copies the buffer out, the answer is copied into the buffer and
        ``KVStoreBroadcast`` copies it to the output: two of the four copies of the whole model
        per step are the buffer's. Then the message reads the gradient itself and its answer
        is written into the output. The buffers' variables still order the key's messages.
        """
        if self._on_device:  # dist_device_sync moves the buffers to the pushing device: keep them
            return None
        grads: dict[Key, NDArray] = {}
        for k, values in _key_values(key, value, "pushpull"):
            if k in grads or len(values) != 1 or values[0].context.device_type != "cpu":
                return None
            LocalKVStore._check_like(values[0], self._buffer(k, "pushpull"), k, "pushpull", "pushed")
            grads[k] = values[0]
        outs: dict[Key, NDArray] = {}
        for k, targets in pairs:
            # the answer is written through a flat view: a strided output (a column view) takes the buffer
            if len(targets) != 1 or targets[0].context.device_type != "cpu" or not _flat(targets[0]):
                return None
            outs[k] = targets[0]
        if events.enabled:  # what _reduce and _broadcast would have said
            for k, grad in grads.items():
                events.publish("kvstore.push", key=k, nbytes=_nbytes(grad), ctx=str(grad.context))
                events.publish("kvstore.pull", key=k, nbytes=_nbytes(outs[k]), ctx=str(outs[k].context))
        return grads, outs

    def _reduce(self, key: Key | Sequence[Key], value: Any, priority: int, what: str) -> dict[Key, NDArray]:
        """``KVStoreReduce``: sum each key's values on this worker into its buffer; the buffers by key."""
        grouped: dict[Key, list[NDArray]] = {}
        for k, values in _key_values(key, value, what):
            grouped.setdefault(k, []).extend(values)
        bufs: dict[Key, NDArray] = {}
        for k, values in grouped.items():
            buf = self._buffer(k, what)
            for array in values:
                LocalKVStore._check_like(array, buf, k, what, "pushed")
            buf = self._place(k, values)
            for array in values:
                if events.enabled:
                    events.publish("kvstore.push", key=k, nbytes=_nbytes(array), ctx=str(array.context))
            LocalKVStore._reduce(k, values, buf, priority)
            bufs[k] = buf
        return bufs

    def _targets(self, key: Key | Sequence[Key], out: Any, what: str) -> list[tuple[Key, list[NDArray]]]:
        """The outputs of each key, checked against its buffer."""
        pairs = _key_values(key, out, what)
        for k, targets in pairs:
            buf = self._buffer(k, what)
            for target in targets:
                LocalKVStore._check_like(target, buf, k, what, "output")
        return pairs

    def _broadcast(self, pairs: list[tuple[Key, list[NDArray]]], priority: int) -> None:
        """``KVStoreBroadcast``: copy each key's buffer to its outputs."""
        for k, targets in pairs:
            buf = self._bufs[k]
            for target in targets:
                if target._chunk.var is not buf._chunk.var:
                    LocalKVStore._copy(k, buf, target, priority)
                if events.enabled:
                    events.publish("kvstore.pull", key=k, nbytes=_nbytes(target), ctx=str(target.context))

    # ------------------------------------------------------------------ steps: counters and the time split
    @property
    def ray_calls(self) -> int:
        """How many push and pull messages this worker has sent to the servers (one per server per batch).

        Ray calls, or, through shared memory, messages on the servers' Unix sockets.
        """
        return self._calls.count

    def begin_step(self) -> None:
        """Mark the start of a training step for :meth:`end_step`."""
        self._step_start = time.perf_counter()

    def end_step(self) -> StepSplit:
        """Wait for the step's work, then split its time into compute, communication and waiting.

        Publishes the split as a ``kvstore.step`` event (what the web UI's KVStore view draws)
        and returns it. Without a :meth:`begin_step`, the step starts where the last one ended.
        """
        nd.waitall()
        stop = time.perf_counter()
        start = self._step_start if self._step_start is not None else self._step_stop
        split = split_step(self._step, start, stop, self._calls.since(start))
        self._step += 1
        self._step_start, self._step_stop = None, stop
        if events.enabled:
            events.publish(
                "kvstore.step",
                rank=self.rank,
                step=split.step,
                compute_ms=split.compute_s * 1e3,
                comm_ms=split.comm_s * 1e3,
                wait_ms=split.wait_s * 1e3,
                calls=split.ray_calls,
                nbytes=split.nbytes,
            )
        return split

    def barrier(self) -> None:
        """Return when every worker has called ``barrier`` (run by server 0; bounded by the timeout)."""
        self._wait([(0, self._servers[0].barrier.remote(self.rank))], "barrier")

    # ------------------------------------------------------------------ the optimizer, on the servers
    def set_optimizer(self, optimizer: opt.Optimizer) -> None:
        """Pickle ``optimizer`` to every server (rank 0 sends it); servers then update on push."""
        if not isinstance(optimizer, opt.Optimizer):
            raise KVStoreError(f"set_optimizer: expected an mx.optimizer.Optimizer, got {optimizer!r}")
        try:
            pickled = pickle.dumps(optimizer)
        except Exception as err:
            raise KVStoreError(f"set_optimizer: {optimizer!r} cannot be pickled for the servers: {err}") from err
        if self.rank == 0:
            self._wait(self._to_all(lambda s: s.set_optimizer.remote(pickled)), "set_optimizer")
        self.barrier()

    def set_updater(self, updater: Updater) -> None:
        """Ship ``updater(key, merged, stored)`` to the servers (rank 0's function is the one used)."""
        if not callable(updater):
            raise KVStoreError(f"set_updater: expected a callable updater(key, summed, stored), got {updater!r}")
        if self.rank == 0:
            self._wait(self._to_all(lambda s: s.set_updater.remote(updater)), "set_updater")
        self.barrier()

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Gather every server's optimizer states into one file (after the pending pushes finish)."""
        nd.waitall()
        states = self._wait(self._to_all(lambda s: s.get_states.remote(dump_optimizer)), "save_optimizer_states")
        payload = {
            "format": STATES_FORMAT,
            "num_servers": self.num_servers,
            "bigarray_bound": self._config.bigarray_bound,
            "servers": states,
        }
        write_bytes_atomic(fname, pickle.dumps(payload))

    def load_optimizer_states(self, fname: str) -> None:
        """Give every server back its states from :meth:`save_optimizer_states` (same server layout)."""
        try:
            with open(fname, "rb") as f:
                payload = pickle.load(f)
        except (OSError, pickle.UnpicklingError, EOFError) as err:
            raise KVStoreError(f"load_optimizer_states: cannot read {fname!r}: {err}") from err
        if not isinstance(payload, dict) or payload.get("format") != STATES_FORMAT:
            raise KVStoreError(
                f"load_optimizer_states: {fname!r} is not a distributed optimizer-state file "
                "(write it with save_optimizer_states of a dist store)"
            )
        layout_now = (self.num_servers, self._config.bigarray_bound)
        layout_then = (payload["num_servers"], payload["bigarray_bound"])
        if layout_then != layout_now:
            raise KVStoreError(
                f"load_optimizer_states: {fname!r} was saved with (servers, bigarray bound) {layout_then}, "
                f"this job has {layout_now}; the keys are split differently"
            )
        nd.waitall()
        states = payload["servers"]
        self._wait([(i, s.set_states.remote(states[i])) for i, s in enumerate(self._servers)], "load_optimizer_states")

    def set_gradient_compression(self, compression_params: dict[str, Any]) -> None:
        """MXNet's 2-bit compression is not implemented in MXLab's distributed store."""
        raise KVStoreError(
            f"set_gradient_compression: gradient compression is not implemented by MXLab's {self.type!r} store "
            f"(got {dict(compression_params)}); gradients travel uncompressed"
        )

    def server_info(self) -> list[dict[str, Any]]:
        """Each server's summary (mode, shards held, pushes served): for tests and curious readers."""
        return self._wait(self._to_all(lambda s: s.ping.remote()), "server_info")

    # ------------------------------------------------------------------ buffers
    def _buffer(self, key: Key, what: str) -> NDArray:
        buf = self._bufs.get(key)
        if buf is None:
            raise KVStoreError(f"{what}: key {key!r} has not been initialized; call init({key!r}, value) first")
        return buf

    def _place(self, key: Key, values: list[NDArray]) -> NDArray:
        """``dist_device_sync`` sums a worker's devices on the first pushing device: move the buffer there once."""
        buf = self._bufs[key]
        if not self._on_device or key in self._placed:
            return buf
        self._placed.add(key)
        home = values[0].context
        if home != buf.context:
            buf = self._bufs[key] = nd.empty(buf.shape, home, buf.dtype)
        return buf


def _flat(array: NDArray) -> bool:
    """Whether ``array``'s memory is one C-ordered run, so that a flat view of it writes into it."""
    return bool(array._data.flags.c_contiguous)


__all__ = ["DIST_MODES", "DistKVStore", "STATES_FORMAT"]
