"""mx.kv: the key-value store that sums gradients and shares weights (MXNet's KVStore).

Data-parallel training runs one copy of the network per device. Each copy computes the
gradient of its own slice of the batch; before the optimizer may step, the gradients must be
*summed*, and afterwards every device must hold the *same* new weights. A KVStore is the
object that does this, with three verbs on integer or string keys (one key per parameter):

* ``init(key, value)`` stores the first value (the initial weight);
* ``push(key, [grad_on_dev0, grad_on_dev1])`` sums the pushed values, then either hands the
  sum to an updater (``updater(key, summed, stored)``, e.g. an optimizer step) or replaces
  the stored value by it;
* ``pull(key, out=[weight_on_dev0, weight_on_dev1])`` copies the stored value to every output.

Every verb returns at once: the work is pushed to the dependency engine, reading and writing
the arrays' variables, so the sum of one layer's gradients runs while the backward pass of the
layers below is still computing, and a ``pull`` after a ``push`` sees the pushed value
without any explicit wait.

:func:`create` makes a store by name. ``'local'`` sums and keeps the values on ``cpu(0)``;
``'device'`` sums on the devices the values live on (spreading keys over them). The
distributed types (``'dist_sync'``, ``'dist_async'``, ``'dist_device_sync'``) keep the keys on
server actors of a Ray cluster and are shared by several worker processes started with
``python -m framework.kvstore.launch`` (:mod:`.dist`, :mod:`.server`, :mod:`.launch`).
"""

from __future__ import annotations

from . import base
from . import base as kvstore  # MXNet's module path of the KVStore class (mx.kv.kvstore.KVStore)
from .base import DIST_TYPES, LOCAL_TYPES, Key, KVStore, KVStoreError, Updater
from .dist import DistKVStore
from .local import LocalKVStore

#: MXNet 1.9.1 names the store interface ``KVStoreBase`` (plug-in stores subclass it and
#: ``register``) and its C++-backed store ``KVStore``; in MXLab the interface is ``KVStore``
#: and the stores are its subclasses, so both names are the interface.
KVStoreBase = KVStore


def create(name: str = "local") -> KVStore:
    """A new store of type ``name``: a registered class (``KVStoreBase.register``), ``'local'``,
    ``'device'``, or a ``dist_*`` type inside a launched job."""
    if not isinstance(name, str):
        raise KVStoreError(f"create: the store type must be a string, got {type(name).__name__} {name!r}")
    if name.lower() in KVStore.kv_registry:
        return KVStore.kv_registry[name.lower()]()
    if name in LOCAL_TYPES:
        return LocalKVStore(name)
    if name in DIST_TYPES:
        return DistKVStore(name)
    known = sorted(LOCAL_TYPES) + sorted(DIST_TYPES)
    raise KVStoreError(f"create: unknown store type {name!r}; known types are {known}")


__all__ = [
    "DIST_TYPES",
    "KVStore",
    "KVStoreBase",
    "KVStoreError",
    "Key",
    "LOCAL_TYPES",
    "LocalKVStore",
    "Updater",
    "base",
    "create",
    "kvstore",
]
