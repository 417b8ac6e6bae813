"""Gradient aggregation across devices: how a Module speaks to a KVStore.

With several devices every executor computes the gradient of its own slice of the batch.
Before the optimizer may step, those gradients must be summed, and after the step every
device must hold the same new weights. MXNet does this through a *KVStore*
(:mod:`framework.kvstore`), a key-value store with three verbs: ``init`` stores a weight,
``push`` sums the values pushed for a key (and, with an optimizer installed, updates the
stored weight with the sum), ``pull`` copies the stored value to every device.

One training step is then ``push(grads)`` + ``pull(weights)`` per parameter
(:func:`update_params_on_kvstore`), or, when each device runs the optimizer itself,
``push(grads)`` + ``pull(grads)`` followed by a local update (:func:`update_params`). A Module
uses nothing but these verbs, so any object with ``init``/``push``/``pull`` may be passed to
``Module.fit(kvstore=...)``. These are MXNet's ``model.py`` helpers (``_create_kvstore`` and
friends), with the same rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import config
from .. import kvstore as kvs
from ..base import MXLabError
from ..ndarray import NDArray

#: ``is_capable`` capability: the store can run the optimizer itself.
OPTIMIZER = kvs.KVStore.OPTIMIZER
#: MXNet's limit above which a local store updates on the devices instead (elements).
_LOCAL_UPDATE_LIMIT = 1024 * 1024 * 16


class AggregationError(MXLabError, ValueError):
    """``Module`` was given something that is not a store: not a type name, None or a KVStore-like object."""


def is_kvstore_like(obj: Any) -> bool:
    """Whether ``obj`` has the three verbs a Module uses (``init``, ``push``, ``pull``)."""
    return all(callable(getattr(obj, verb, None)) for verb in ("init", "push", "pull"))


# ----------------------------------------------------------------------------- the training step
def create_kvstore(kvstore: Any, num_device: int, arg_params: Mapping[str, NDArray]) -> tuple[Any, bool]:
    """The store to use and whether the optimizer runs inside it (MXNet's ``_create_kvstore``).

    ``None`` means no store. A string makes a store, except that one device on one machine
    needs none. A store object is used as given. The optimizer runs inside the store unless
    ``MXLAB_UPDATE_ON_KVSTORE=0``, the store cannot, or a ``'local'`` store would hold a
    parameter of more than 16M elements (then each device updates its own copy).
    """
    update_on_kvstore = config.get("MXLAB_UPDATE_ON_KVSTORE")
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None
        else:
            kv = kvs.create(kvstore)
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


def layer_of(param_name: str) -> str:
    """The layer a parameter belongs to, by MXNet's naming: ``fc1_weight`` and ``fc1_bias`` -> ``fc1``."""
    return param_name.rsplit("_", 1)[0]


def layer_batches(
    param_names: Sequence[str],
    grad_arrays: Sequence[Sequence[NDArray | None]],
    grad_segments: Sequence[int | None] | None = None,
) -> list[list[int]]:
    """The indices of the parameters with gradients, in runs of consecutive parameters of one layer.

    Listed last layer first: the backward pass computes the gradients in that order. With
    ``grad_segments`` (the backward segment that finishes each gradient), neighbouring layers
    whose gradients one segment finishes form one run: they are ready at the same moment, so a
    message per layer would overlap nothing and only add round trips.
    """
    batches: list[list[int]] = []
    for index, grads in enumerate(grad_arrays):
        if grads[0] is None:
            continue
        if batches and _same_batch(batches[-1][-1], index, param_names, grad_segments):
            batches[-1].append(index)
        else:
            batches.append([index])
    return batches[::-1]


def _same_batch(last: int, index: int, param_names: Sequence[str], grad_segments: Sequence[int | None] | None) -> bool:
    if layer_of(param_names[last]) == layer_of(param_names[index]):
        return True
    if not grad_segments:
        return False
    segment = grad_segments[index]
    return segment is not None and segment == grad_segments[last]


def update_params_on_kvstore(
    param_arrays: Sequence[Sequence[NDArray]],
    grad_arrays: Sequence[Sequence[NDArray | None]],
    kvstore: Any,
    param_names: Sequence[str],
    grad_segments: Sequence[int | None] | None = None,
) -> None:
    """One step with the optimizer in the store: push each gradient list, pull the new weights.

    Priorities are MXNet's, ``-index``: when several transfers are ready, the first layers' go
    first, because the next forward pass needs those weights first. A store that sends one
    message per server per call (``prefers_batches``, the distributed store) gets one
    ``pushpull`` per *layer*, last layer first, rather than a push and a pull per parameter:
    each layer's gradients leave as soon as the backward pass has computed them, while it
    computes the layers below, and the new weights come back in the same message. Layers whose
    gradients one backward bulk segment finishes (``grad_segments``) share one message.
    """
    if getattr(kvstore, "prefers_batches", False):
        for batch in layer_batches(param_names, grad_arrays, grad_segments):
            names = [param_names[i] for i in batch]
            grads, weights = [list(grad_arrays[i]) for i in batch], [list(param_arrays[i]) for i in batch]
            kvstore.pushpull(names, grads, out=weights, priority=-batch[0])
        return
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
    grad_segments: Sequence[int | None] | None = None,
) -> None:
    """One step with the optimizer on each device: (sum gradients through the store,) update locally.

    Device ``k``'s copy of parameter ``i`` is updated under index ``i * num_device + k`` so
    that every copy keeps its own optimizer state (MXNet's convention).
    """
    updates: list[tuple[list, list, list]] = [([], [], []) for _ in range(num_device)]
    if kvstore is not None and getattr(kvstore, "prefers_batches", False):
        for batch in layer_batches(param_names, grad_arrays, grad_segments):  # as in update_params_on_kvstore
            names = [param_names[i] for i in batch]
            kvstore.pushpull(names, [list(grad_arrays[i]) for i in batch], priority=-batch[0])
        kvstore = None  # summed: the loop below only updates
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
    "create_kvstore",
    "initialize_kvstore",
    "is_kvstore_like",
    "layer_batches",
    "layer_of",
    "update_params",
    "update_params_on_kvstore",
]
