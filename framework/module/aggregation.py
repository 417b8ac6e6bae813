"""Gradient aggregation across devices: the KVStore-shaped seam of data-parallel training.

With several devices every executor computes the gradient of its own slice of the batch.
Before the optimizer may step, those gradients must be summed, and after the step every
device must hold the same new weights. MXNet does this through a *KVStore*, a key-value
store with three verbs:

* ``init(key, value)``: store the first value of a key (a weight);
* ``push(key, [grad_dev0, grad_dev1, ...])``: sum the pushed values; with an optimizer
  installed (``set_optimizer`` / ``set_updater``) the store then calls
  ``updater(key, summed_grad, stored_weight)``, without one the stored value becomes the sum;
* ``pull(key, [weight_dev0, weight_dev1, ...])``: copy the stored value to every device.

One training step is then ``push(grads)`` + ``pull(weights)`` per parameter
(:func:`update_params_on_kvstore`); a Module speaks to the store through nothing else.

:class:`LocalAggregator` is the smallest store that keeps that contract on one machine:
``'local'`` keeps the weights and sums on ``cpu(0)`` (MXNet's host-side store), ``'device'``
sums on the device of the first pushed value. It works through ordinary engine pushes (a
copy per device, one ``add_n``, the optimizer's update operator, one copy back per device),
so the aggregation of one parameter overlaps with the backward pass of the others. The full
KVStore (``framework.kvstore``, with distributed and compressed variants) is its own piece of
work; when that package exists, :func:`create_kvstore` creates stores from it, and any object
with ``init``/``push``/``pull`` may be passed to ``Module.fit(kvstore=...)``.

Differences from MXNet's local store: ``priority`` is accepted and ignored (the engine
already orders by data dependencies); ``set_gradient_compression`` is refused.
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import events
from .. import ndarray as nd
from .. import optimizer as opt
from ..atomic_file import write_bytes_atomic
from ..base import MXLabError
from ..context import Context, cpu
from ..ndarray import NDArray

#: ``is_capable`` capability: the store can run the optimizer itself.
OPTIMIZER = "optimizer"
#: MXNet's limit above which a local store updates on the devices instead (elements).
_LOCAL_UPDATE_LIMIT = 1024 * 1024 * 16

Key = int | str
Updater = Callable[[Any, NDArray, NDArray], None]


class AggregationError(MXLabError, ValueError):
    """A store was used wrongly: unknown key, double init, shape mismatch, unknown type."""


def _pairs(key: Any, value: Any, what: str) -> list[tuple[Key, Any]]:
    """``(key, value)`` pairs from one key or a list of keys (with a list of values)."""
    if isinstance(key, list | tuple):
        if not isinstance(value, list | tuple) or len(value) != len(key):
            raise AggregationError(f"{what}: {len(key)} keys need a list of {len(key)} values, got {value!r}")
        return list(zip(key, value, strict=True))
    return [(key, value)]


def _arrays(value: Any, key: Key, what: str) -> list[NDArray]:
    values = [value] if isinstance(value, NDArray) else list(value)
    if not values or not all(isinstance(v, NDArray) for v in values):
        raise AggregationError(f"{what}({key!r}): expected an NDArray or a list of NDArrays, got {value!r}")
    return values


class LocalAggregator:
    """A single-machine KVStore: sums per-device values, optionally updates, broadcasts.

    Args:
        kv_type: ``'local'`` (store and sum on ``cpu(0)``) or ``'device'`` (sum on the
            device of the first pushed value).
    """

    def __init__(self, kv_type: str = "local") -> None:
        if kv_type not in ("local", "device"):
            raise AggregationError(f"LocalAggregator: type must be 'local' or 'device', got {kv_type!r}")
        self.type = kv_type
        self.rank = 0
        self.num_workers = 1
        self._store: dict[Key, NDArray] = {}
        self._merged: dict[Key, NDArray] = {}
        self._staging: dict[tuple[Key, Context], NDArray] = {}
        self._updater: Updater | None = None
        self._optimizer: opt.Optimizer | None = None

    def __repr__(self) -> str:
        return f"<LocalAggregator type={self.type!r} keys={len(self._store)}>"

    # ------------------------------------------------------------------ the three verbs
    def init(self, key: Key | Sequence[Key], value: NDArray | Sequence[NDArray]) -> None:
        """Store the first value of ``key`` (a copy; initialising a key twice is an error)."""
        for k, v in _pairs(key, value, "init"):
            if k in self._store:
                raise AggregationError(f"init: key {k!r} is already initialized")
            if not isinstance(v, NDArray):
                raise AggregationError(f"init({k!r}): expected an NDArray, got {type(v).__name__}")
            home = cpu(0) if self.type == "local" else v.context
            self._store[k] = v.copyto(home)

    def push(self, key: Key | Sequence[Key], value: Any, priority: int = 0) -> None:
        """Sum the values pushed for ``key`` (one per device); update or replace the stored value."""
        for k, v in _pairs(key, value, "push"):
            stored = self._stored(k, "push")
            values = _arrays(v, k, "push")
            for array in values:
                if tuple(array.shape) != tuple(stored.shape):
                    raise AggregationError(
                        f"push({k!r}): pushed shape {tuple(array.shape)} does not match the stored shape "
                        f"{tuple(stored.shape)}"
                    )
                if events.enabled:
                    events.publish(
                        "kvstore.push", key=k, nbytes=array.size * array.dtype.itemsize, ctx=str(array.context)
                    )
            merged = self._sum(k, values, stored)
            if self._updater is not None:
                self._updater(k, merged, stored)
            else:
                merged.copyto(stored)

    def pull(self, key: Key | Sequence[Key], out: Any = None, priority: int = 0, ignore_sparse: bool = True) -> None:
        """Copy the stored value of ``key`` into every array of ``out``."""
        if out is None:
            raise AggregationError(f"pull({key!r}): out= (the arrays to fill) is required")
        for k, o in _pairs(key, out, "pull"):
            stored = self._stored(k, "pull")
            for target in _arrays(o, k, "pull"):
                if tuple(target.shape) != tuple(stored.shape):
                    raise AggregationError(
                        f"pull({k!r}): target shape {tuple(target.shape)} does not match the stored shape "
                        f"{tuple(stored.shape)}"
                    )
                if target is not stored:
                    stored.copyto(target)
                if events.enabled:
                    events.publish(
                        "kvstore.pull", key=k, nbytes=target.size * target.dtype.itemsize, ctx=str(target.context)
                    )

    def pushpull(self, key: Key | Sequence[Key], value: Any, out: Any = None, priority: int = 0) -> None:
        """``push`` then ``pull`` (into ``value`` itself when ``out`` is None)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key: Key | Sequence[Key], value: Any, out: Any, priority: int = 0) -> None:
        """``init`` then ``pull``: give every device the initial value."""
        self.init(key, value)
        self.pull(key, out, priority)

    # ------------------------------------------------------------------ the optimizer
    def set_updater(self, updater: Updater) -> None:
        """Run ``updater(key, summed_grad, stored_weight)`` on every push."""
        if not callable(updater):
            raise AggregationError(f"set_updater: expected a callable (key, grad, weight), got {updater!r}")
        self._updater = updater

    def set_optimizer(self, optimizer: opt.Optimizer) -> None:
        """Update the stored weights with ``optimizer`` on every push."""
        if not isinstance(optimizer, opt.Optimizer):
            raise AggregationError(f"set_optimizer: expected an mx.optimizer.Optimizer, got {optimizer!r}")
        self._optimizer = optimizer
        self._updater = opt.get_updater(optimizer)

    def is_capable(self, capability: str) -> bool:
        """Whether the store can do ``capability`` (``'optimizer'``: update on push)."""
        return capability == OPTIMIZER

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Write the optimizer states (momentum etc.) of the stored weights to ``fname``."""
        updater = self._opt_updater("save_optimizer_states")
        write_bytes_atomic(fname, updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname: str) -> None:
        """Restore optimizer states written by :meth:`save_optimizer_states`."""
        updater = self._opt_updater("load_optimizer_states")
        with open(fname, "rb") as f:
            updater.set_states(f.read())

    def set_gradient_compression(self, compression_params: Mapping[str, Any]) -> None:
        raise AggregationError(
            "gradient compression needs the full KVStore (framework.kvstore); the local aggregation sums "
            f"uncompressed gradients (got {dict(compression_params)})"
        )

    # ------------------------------------------------------------------ internals
    def _stored(self, key: Key, what: str) -> NDArray:
        stored = self._store.get(key)
        if stored is None:
            raise AggregationError(f"{what}: key {key!r} has not been initialized; call init({key!r}, value) first")
        return stored

    def _opt_updater(self, what: str) -> opt.Updater:
        if not isinstance(self._updater, opt.Updater):
            raise AggregationError(f"{what}: no optimizer is installed on this store (call set_optimizer first)")
        return self._updater

    def _sum(self, key: Key, values: list[NDArray], stored: NDArray) -> NDArray:
        """The sum of ``values`` in a buffer on the merge device (one engine op per copy, one add_n)."""
        home = stored.context if self.type == "local" else values[0].context
        merged = self._merged.get(key)
        if merged is None or merged.context != home:
            merged = self._merged[key] = nd.empty(stored.shape, home, stored.dtype)
        if len(values) == 1:
            values[0].copyto(merged)
            return merged
        local = []
        for array in values:
            if array.context == home:
                local.append(array)
                continue
            buffer = self._staging.get((key, array.context))
            if buffer is None:
                buffer = self._staging[(key, array.context)] = nd.empty(stored.shape, home, stored.dtype)
            array.copyto(buffer)
            local.append(buffer)
        nd.add_n(*local, out=merged)
        return merged


def create(name: str = "local") -> LocalAggregator:
    """A local store of type ``name`` (``'local'`` or ``'device'``)."""
    if not isinstance(name, str):
        raise AggregationError(f"create: the store type must be a string, got {name!r}")
    if name.startswith("dist") or name in ("nccl", "horovod", "byteps"):
        raise AggregationError(
            f"kvstore type {name!r} needs the full KVStore package (framework.kvstore); "
            "only 'local' and 'device' are available here"
        )
    return LocalAggregator(name)


def is_kvstore_like(obj: Any) -> bool:
    """Whether ``obj`` has the three verbs a Module uses (``init``, ``push``, ``pull``)."""
    return all(callable(getattr(obj, verb, None)) for verb in ("init", "push", "pull"))


def _store_factory() -> Callable[[str], Any]:
    """``framework.kvstore.create`` once that package exists, else :func:`create`."""
    package = __name__.rsplit(".", 2)[0] + ".kvstore"
    if importlib.util.find_spec(package) is not None:
        return importlib.import_module(package).create
    return create


# ----------------------------------------------------------------------------- the training step
def create_kvstore(kvstore: Any, num_device: int, arg_params: Mapping[str, NDArray]) -> tuple[Any, bool]:
    """The store to use and whether the optimizer runs inside it (MXNet's ``_create_kvstore``).

    ``None`` means no store. A string makes a store, except that one device on one machine
    needs none. A store object is used as given. The optimizer runs inside the store unless
    ``MXLAB_UPDATE_ON_KVSTORE=0``, the store cannot, or a ``'local'`` store would hold a
    parameter of more than 16M elements (then each device updates its own copy).
    """
    update_on_kvstore = os.environ.get("MXLAB_UPDATE_ON_KVSTORE", "1").strip() not in ("0", "false", "False")
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None
        else:
            kv = _store_factory()(kvstore)
            if kvstore == "local" and arg_params:
                largest = max(math.prod(p.shape) for p in arg_params.values())
                if largest > _LOCAL_UPDATE_LIMIT:
                    update_on_kvstore = False
    elif is_kvstore_like(kvstore):
        kv = kvstore
    else:
        raise AggregationError(
            f"kvstore must be a string ('local', 'device'), None or a KVStore-like object with init/push/pull, "
            f"got {type(kvstore).__name__}"
        )
    if kv is None:
        return None, False
    capable = getattr(kv, "is_capable", None)
    can_update = capable(OPTIMIZER) if callable(capable) else callable(getattr(kv, "set_optimizer", None))
    return kv, bool(update_on_kvstore and can_update)


def initialize_kvstore(
    kvstore: Any,
    param_arrays: Sequence[Sequence[NDArray]],
    arg_params: Mapping[str, NDArray],
    param_names: Sequence[str],
    update_on_kvstore: bool,
) -> None:
    """``init`` every parameter; ``pull`` so every device starts equal when the store updates.

    With several workers (a distributed store) the pull also happens when each worker updates
    its own copies: only rank 0's initial values are stored, and every worker must start from them.
    """
    distributed = getattr(kvstore, "num_workers", 1) > 1
    for index, per_device in enumerate(param_arrays):
        name = param_names[index]
        kvstore.init(name, arg_params[name])
        if update_on_kvstore or distributed:
            kvstore.pull(name, list(per_device), priority=-index)


def update_params_on_kvstore(
    param_arrays: Sequence[Sequence[NDArray]],
    grad_arrays: Sequence[Sequence[NDArray | None]],
    kvstore: Any,
    param_names: Sequence[str],
) -> None:
    """One step with the optimizer in the store: push each gradient list, pull the new weights."""
    for index, (weights, grads) in enumerate(zip(param_arrays, grad_arrays, strict=True)):
        if grads[0] is None:
            continue
        name = param_names[index]
        kvstore.push(name, list(grads), priority=-index)
        kvstore.pull(name, list(weights), priority=-index)


def update_params(
    param_arrays: Sequence[Sequence[NDArray]],
    grad_arrays: Sequence[Sequence[NDArray | None]],
    updater: Callable[..., None],
    num_device: int,
    kvstore: Any = None,
    param_names: Sequence[str] | None = None,
) -> None:
    """One step with the optimizer on each device: (sum gradients through the store,) update locally.

    Device ``k``'s copy of parameter ``i`` is updated under index ``i * num_device + k`` so
    that every copy keeps its own optimizer state (MXNet's convention).
    """
    updates: list[tuple[list, list, list]] = [([], [], []) for _ in range(num_device)]
    for index, (weights, grads) in enumerate(zip(param_arrays, grad_arrays, strict=True)):
        if grads[0] is None:
            continue
        if kvstore is not None:
            name = param_names[index]
            kvstore.push(name, list(grads), priority=-index)
            kvstore.pull(name, list(grads), priority=-index)
        for k, (w, g) in enumerate(zip(weights, grads, strict=True)):
            indices, gs, ws = updates[k]
            indices.append(index * num_device + k)
            gs.append(g)
            ws.append(w)
    for indices, gs, ws in updates:
        if indices:
            updater(indices, gs, ws)


__all__ = [
    "AggregationError",
    "LocalAggregator",
    "create",
    "create_kvstore",
    "initialize_kvstore",
    "is_kvstore_like",
    "update_params",
    "update_params_on_kvstore",
]
