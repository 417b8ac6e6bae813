"""The KVStore interface, its error and its type names: what every store and its users share.

:mod:`framework.kvstore` (``mx.kv``) explains what a store does; the stores themselves are
:mod:`.local` and :mod:`.dist`, both built on this module.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ..base import MXLabError
from ..errors import check_stype

Key = int | str
Updater = Callable[[Any, Any, Any], None]

#: Single-machine store types and the local store they make (MXNet's names and aliases).
LOCAL_TYPES: dict[str, str] = {
    "local": "local",
    "local_update_cpu": "local",
    "local_allreduce_cpu": "local",
    "device": "device",
    "local_allreduce_device": "device",
}
#: Store types whose keys live on Ray server actors, shared by several worker processes.
DIST_TYPES: tuple[str, ...] = ("dist_sync", "dist_async", "dist_device_sync", "dist_sync_device", "dist")


class KVStoreError(MXLabError, ValueError):
    """A store was used wrongly: unknown key, double init, shape or dtype mismatch, unknown type."""


class KVStore(ABC):
    """The interface every store keeps (MXNet 1.x ``mx.kv.KVStore``).

    A Module or a training loop talks to a store through these methods only, so a
    single-machine store and a distributed one are interchangeable.
    """

    #: ``is_capable`` capability: the store can run the optimizer itself on push.
    OPTIMIZER = "optimizer"
    #: Store classes added with :meth:`register`, by lower-case class name: ``mx.kv.create(name)``
    #: looks here before the built-in types (how MXNet plugs in Horovod or BytePS stores).
    kv_registry: ClassVar[dict[str, type[KVStore]]] = {}
    #: Whether one call with several keys is cheaper than one call per key (a distributed store
    #: sends one message per server per call): a Module then pushes and pulls a layer at a time.
    prefers_batches: ClassVar[bool] = False

    @staticmethod
    def register(klass: type[KVStore]) -> type[KVStore]:
        """Class decorator: make ``mx.kv.create(klass.__name__.lower())`` return ``klass()``.

        ``klass`` must subclass this interface (MXNet's ``KVStoreBase``). Registering a name
        again replaces the earlier class, with a warning, as in MXNet.
        """
        if not (isinstance(klass, type) and issubclass(klass, KVStore)):
            raise KVStoreError(f"register: {klass!r} is not a subclass of mx.kv.KVStoreBase")
        name = klass.__name__.lower()
        if name in KVStore.kv_registry:
            warnings.warn(f"KVStore {name!r} was already registered; {klass.__qualname__} replaces it", stacklevel=2)
        KVStore.kv_registry[name] = klass
        return klass

    @property
    @abstractmethod
    def type(self) -> str:
        """The name the store was created with (``'local'``, ``'device'``, ...)."""

    @property
    def rank(self) -> int:
        """This worker's index among ``num_workers`` (0 on one machine)."""
        return 0

    @property
    def num_workers(self) -> int:
        """How many workers push to the store (1 on one machine)."""
        return 1

    @abstractmethod
    def init(self, key: Key | Sequence[Key], value: Any) -> None:
        """Store the first value of each key."""

    @abstractmethod
    def push(self, key: Key | Sequence[Key], value: Any, priority: int = 0) -> None:
        """Sum the values pushed for each key, then update or replace the stored value."""

    @abstractmethod
    def pull(self, key: Key | Sequence[Key], out: Any = None, priority: int = 0, ignore_sparse: bool = True) -> None:
        """Copy the stored value of each key into every output array."""

    def pushpull(self, key: Key | Sequence[Key], value: Any, out: Any = None, priority: int = 0) -> None:
        """``push`` then ``pull`` (into ``value`` itself when ``out`` is None): one all-reduce."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key: Key | Sequence[Key], value: Any, out: Any, priority: int = 0) -> None:
        """``init`` then ``pull``: give every device the same initial value."""
        self.init(key, value)
        self.pull(key, out, priority)

    @abstractmethod
    def set_updater(self, updater: Updater) -> None:
        """Call ``updater(key, summed, stored)`` on every push instead of replacing the value."""

    def _set_updater(self, updater: Updater) -> None:
        """MXNet 1.x's name for :meth:`set_updater` (private in MXNet, yet used by its examples)."""
        self.set_updater(updater)

    @abstractmethod
    def set_optimizer(self, optimizer: Any) -> None:
        """Run ``optimizer`` inside the store on every push."""

    def is_capable(self, capability: str) -> bool:
        """Whether the store supports ``capability`` (``'optimizer'``: update on push)."""
        if capability.lower() == self.OPTIMIZER:
            return True
        raise KVStoreError(f"is_capable: unknown capability {capability!r} (known: {self.OPTIMIZER!r})")

    def barrier(self) -> None:
        """Wait until every worker reaches this point (nothing to wait for on one machine)."""
        return None

    @abstractmethod
    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Write the optimizer states of the stored weights to ``fname``."""

    @abstractmethod
    def load_optimizer_states(self, fname: str) -> None:
        """Restore optimizer states written by :meth:`save_optimizer_states`."""

    def row_sparse_pull(
        self, key: Key | Sequence[Key], out: Any = None, priority: int = 0, row_ids: Any = None
    ) -> None:
        """MXNet pulls selected rows of ``row_sparse`` values; MXLab has no sparse storage."""
        check_stype("row_sparse", "row_sparse_pull")

    def set_gradient_compression(self, compression_params: dict[str, Any]) -> None:
        """MXNet compresses gradients on their way to the servers; MXLab does not implement it."""
        raise KVStoreError(
            f"set_gradient_compression: not supported by the {self.type!r} store "
            f"(gradient compression is not implemented in MXLab; got {dict(compression_params)})"
        )
