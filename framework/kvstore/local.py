"""The single-machine stores ``'local'`` and ``'device'``: sum, update, broadcast through the engine.

A push of ``[g0, g1]`` (the gradient of one parameter on two devices) becomes **one** engine
operation, ``KVStoreReduce(key)``, that reads the variables of ``g0`` and ``g1`` and writes the
variable of a merge buffer. A pull becomes one ``KVStoreBroadcast(key)`` copy per output, reading
the stored value and writing the output. Because these are ordinary engine operations:

* the reduction of a parameter starts as soon as the backward pass has written its gradient on
  every device, while the gradients of the other layers are still being computed;
* a ``pull`` after a ``push`` reads the stored value only after the push (and the optimizer
  update it triggered) wrote it: the engine orders them, nobody has to wait;
* ``priority`` is handed to the engine, so with MXNet's convention ``priority=-index`` the
  first layers (needed first by the next forward pass) are communicated first.

The two types differ only in *where* a key is summed (MXNet's ``CommCPU`` and ``CommDevice``):
``'local'`` keeps every stored value and merge buffer on ``cpu(0)``; ``'device'`` assigns each key
to one of the devices its values come from, the one with the fewest bytes assigned so far, so
the reductions of different keys run on different devices in parallel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import backend, events
from .. import ndarray as nd
from .. import optimizer as opt
from ..atomic_file import write_bytes_atomic
from ..context import Context, cpu
from ..engine import FnProperty
from ..ndarray import NDArray
from .base import LOCAL_TYPES, Key, KVStore, KVStoreError, Updater


def _check_key(key: Any, what: str) -> Key:
    if isinstance(key, bool) or not isinstance(key, int | str):
        raise KVStoreError(f"{what}: keys must be int or str, got {type(key).__name__} {key!r}")
    return key


def _arrays(value: Any, key: Key, what: str) -> list[NDArray]:
    """One NDArray or a list of NDArrays, as a list."""
    values = [value] if isinstance(value, NDArray) else list(value) if isinstance(value, list | tuple) else None
    if not values or not all(isinstance(v, NDArray) for v in values):
        raise KVStoreError(f"{what}({key!r}): expected an NDArray or a non-empty list of NDArrays, got {value!r}")
    return values


def _key_values(key: Any, value: Any, what: str) -> list[tuple[Key, list[NDArray]]]:
    """``(key, [arrays])`` per key, from MXNet's forms: one key, or a list of keys with a list of values.

    For one key the value is an NDArray or a list of them (one per device); for a list of keys,
    ``value[i]`` belongs to ``key[i]`` and is itself an NDArray or a list of them.
    """
    if isinstance(key, list | tuple):
        if not isinstance(value, list | tuple) or len(value) != len(key):
            got = f"{len(value)} values" if isinstance(value, list | tuple) else repr(value)
            raise KVStoreError(f"{what}: {len(key)} keys need a list of {len(key)} values, got {got}")
        keys = [_check_key(k, what) for k in key]
        if len({type(k) for k in keys}) > 1:
            raise KVStoreError(f"{what}: keys in one call must be all int or all str, got {keys!r}")
        return [(k, _arrays(v, k, what)) for k, v in zip(keys, value, strict=True)]
    k = _check_key(key, what)
    return [(k, _arrays(value, k, what))]


def _nbytes(array: NDArray) -> int:
    return array.size * np.dtype(array.dtype).itemsize


def _fetch(data: Any, src: Context, dst: Context) -> Any:
    """``data`` (living on ``src``) as an array usable on ``dst``; CPU contexts share one memory."""
    if src == dst or (src.device_type == "cpu" and dst.device_type == "cpu"):
        return data
    if dst.device_type == "cpu":
        return data.get()
    return backend.array_module(dst).asarray(data)


class LocalKVStore(KVStore):
    """A KVStore on one machine (``mx.kv.create('local')`` or ``mx.kv.create('device')``).

    Args:
        name: ``'local'`` (sum on ``cpu(0)``) or ``'device'`` (sum on the values' devices),
            or one of MXNet's aliases (``'local_update_cpu'``, ``'local_allreduce_device'``, ...).
    """

    def __init__(self, name: str = "local") -> None:
        if name not in LOCAL_TYPES:
            raise KVStoreError(f"LocalKVStore: type must be one of {sorted(LOCAL_TYPES)}, got {name!r}")
        self._type = name
        self._on_device = LOCAL_TYPES[name] == "device"
        self._store: dict[Key, NDArray] = {}
        self._merged: dict[Key, NDArray] = {}
        self._merge_ctx: dict[Key, Context] = {}
        self._device_load: dict[Context, int] = {}
        self._updater: Updater | None = None

    @property
    def type(self) -> str:
        return self._type

    def __repr__(self) -> str:
        return f"<LocalKVStore type={self._type!r} keys={len(self._store)}>"

    # ------------------------------------------------------------------ the three verbs
    def init(self, key: Key | Sequence[Key], value: Any) -> None:
        """Store a copy of the first value of each key; initialising a key twice is an error."""
        for k, values in _key_values(key, value, "init"):
            stored_type = type(next(iter(self._store))) if self._store else type(k)
            if type(k) is not stored_type:  # MXNet refuses to mix int and str keys in one store
                raise KVStoreError(f"init: mixed key types are not allowed: {k!r} among {stored_type.__name__} keys")
            if k in self._store or len(values) != 1:
                raise KVStoreError(f"init: duplicate init of key {k!r} (a key is initialised once, with one value)")
            home = values[0].context if self._on_device else cpu(0)
            self._store[k] = values[0].copyto(home)

    def push(self, key: Key | Sequence[Key], value: Any, priority: int = 0) -> None:
        """Sum the values pushed for each key; hand the sum to the updater, or store it."""
        grouped: dict[Key, list[NDArray]] = {}
        for k, values in _key_values(key, value, "push"):
            grouped.setdefault(k, []).extend(values)  # a key listed twice: all its values are summed
        for k, values in grouped.items():
            stored = self._stored(k, "push")
            for array in values:
                self._check_like(array, stored, k, "push", "pushed")
                if events.enabled:
                    events.publish("kvstore.push", key=k, nbytes=_nbytes(array), ctx=str(array.context))
            home = self._merge_context(k, values, stored)
            if self._updater is None:
                if stored.context != home:  # 'device': the stored value follows its merge device
                    stored = self._store[k] = nd.empty(stored.shape, home, stored.dtype)
                self._reduce(k, values, stored, priority)
                continue
            merged = self._merged.get(k)
            if merged is None:
                merged = self._merged[k] = nd.empty(stored.shape, home, stored.dtype)
            if stored.context != home:
                stored = self._store[k] = stored.copyto(home)
            self._reduce(k, values, merged, priority)
            self._updater(k, merged, stored)

    def pull(self, key: Key | Sequence[Key], out: Any = None, priority: int = 0, ignore_sparse: bool = True) -> None:
        """Copy the stored value of each key into every array of ``out`` (a broadcast)."""
        if out is None:
            raise KVStoreError(f"pull({key!r}): out= (the array or arrays to fill) is required")
        for k, targets in _key_values(key, out, "pull"):
            stored = self._stored(k, "pull")
            for target in targets:
                self._check_like(target, stored, k, "pull", "output")
                if target._chunk.var is not stored._chunk.var:
                    self._copy(k, stored, target, priority)
                if events.enabled:
                    events.publish("kvstore.pull", key=k, nbytes=_nbytes(target), ctx=str(target.context))

    # ------------------------------------------------------------------ the optimizer
    def set_updater(self, updater: Updater) -> None:
        """Call ``updater(key, summed, stored)`` on every push (it must update ``stored`` in place)."""
        if not callable(updater):
            raise KVStoreError(f"set_updater: expected a callable updater(key, summed, stored), got {updater!r}")
        self._updater = updater

    def set_optimizer(self, optimizer: opt.Optimizer) -> None:
        """Update the stored weights with ``optimizer`` on every push (the store keeps its states)."""
        if not isinstance(optimizer, opt.Optimizer):
            raise KVStoreError(f"set_optimizer: expected an mx.optimizer.Optimizer, got {optimizer!r}")
        self._updater = opt.get_updater(optimizer)

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Write the optimizer states (momentum etc.; with ``dump_optimizer`` the optimizer too)."""
        updater = self._optimizer_updater("save_optimizer_states")
        write_bytes_atomic(fname, updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname: str) -> None:
        """Restore the states written by :meth:`save_optimizer_states`."""
        updater = self._optimizer_updater("load_optimizer_states")
        with open(fname, "rb") as f:
            updater.set_states(f.read())

    # ------------------------------------------------------------------ internals
    def _stored(self, key: Key, what: str) -> NDArray:
        stored = self._store.get(key)
        if stored is None:
            raise KVStoreError(f"{what}: key {key!r} has not been initialized; call init({key!r}, value) first")
        return stored

    @staticmethod
    def _check_like(array: NDArray, stored: NDArray, key: Key, what: str, role: str) -> None:
        if tuple(array.shape) != tuple(stored.shape):
            raise KVStoreError(
                f"{what}({key!r}): {role} shape {tuple(array.shape)} does not match the stored shape "
                f"{tuple(stored.shape)}"
            )
        if array.dtype != stored.dtype:
            raise KVStoreError(
                f"{what}({key!r}): {role} dtype {np.dtype(array.dtype).name} does not match the stored dtype "
                f"{np.dtype(stored.dtype).name}"
            )

    def _optimizer_updater(self, what: str) -> opt.Updater:
        if not isinstance(self._updater, opt.Updater):
            raise KVStoreError(f"{what}: the store has no optimizer (call set_optimizer first)")
        return self._updater

    def _merge_context(self, key: Key, values: list[NDArray], stored: NDArray) -> Context:
        """Where ``key`` is summed: ``cpu(0)`` for 'local'; for 'device' a fixed, least-loaded device."""
        if not self._on_device:
            return stored.context
        home = self._merge_ctx.get(key)
        if home is None:
            candidates = list(dict.fromkeys(v.context for v in values))
            home = min(candidates, key=lambda c: self._device_load.get(c, 0))
            self._device_load[home] = self._device_load.get(home, 0) + _nbytes(stored)
            self._merge_ctx[key] = home
        return home

    @staticmethod
    def _reduce(key: Key, values: list[NDArray], target: NDArray, priority: int) -> None:
        """One engine op: ``target = sum(values)``, reading every value's variable, writing ``target``'s."""
        values = [v.copy() if v._chunk.var is target._chunk.var else v for v in values]
        home = target.context
        sources = [(v._data, v.context) for v in values]
        out = target._data
        xp = backend.array_module(home)

        def reduce(run_ctx: Any) -> None:
            with backend.device(home):
                arrays = [_fetch(data, ctx, home) for data, ctx in sources]
                if len(arrays) == 1:
                    out[...] = arrays[0]
                    return
                xp.add(arrays[0], arrays[1], out=out)
                for array in arrays[2:]:
                    xp.add(out, array, out=out)

        reads = list(dict.fromkeys(v._chunk.var for v in values))
        target._chunk.engine.push_sync(
            reduce, home, reads, [target._chunk.var], priority=priority, name=f"KVStoreReduce({key!r})"
        )

    @staticmethod
    def _copy(key: Key, source: NDArray, target: NDArray, priority: int) -> None:
        """One engine op: ``target[...] = source``, run on the target's device (a CPU target's own worker)."""
        src, dst = source._data, target._data
        src_ctx, dst_ctx = source.context, target.context
        prop = FnProperty.NORMAL
        run_on = dst_ctx
        if src_ctx.device_type == "gpu" and dst_ctx.device_type == "cpu":
            prop, run_on = FnProperty.COPY_FROM_GPU, src_ctx
        elif src_ctx != dst_ctx and dst_ctx.device_type == "gpu":
            prop = FnProperty.COPY_TO_GPU

        def broadcast(run_ctx: Any) -> None:
            with backend.device(dst_ctx):
                dst[...] = _fetch(src, src_ctx, dst_ctx)

        target._chunk.engine.push_sync(
            broadcast,
            run_on,
            [source._chunk.var],
            [target._chunk.var],
            prop=prop,
            priority=priority,
            name=f"KVStoreBroadcast({key!r})",
        )


__all__ = ["LocalKVStore"]
