"""Which server holds which part of a key: MXNet's key-to-server mapping, as pure functions.

A distributed store spreads its keys over ``num_servers`` server processes so that no single
server carries all the traffic. MXNet (``KVStoreDist::EncodeDefaultKey``) does it in two ways:

* a **small** array (fewer than ``bigarray_bound`` elements, ``MXNET_KVSTORE_BIGARRAY_BOUND``,
  default 1,000,000) lives whole on one server, chosen by hashing the key:
  ``(key * 9973) % num_servers``;
* a **big** array is flattened and cut into ``num_servers`` contiguous slices of (almost)
  equal length, slice ``i`` on server ``i``, so every server moves and updates a share of it.

Every worker computes the same layout from the key and the array size alone, so nobody has to
ask where a key lives. String keys are hashed with CRC-32 (Python's ``hash()`` of a string
differs between processes, so it cannot be used to agree across machines).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from .. import config

#: MXNet's default MXNET_KVSTORE_BIGARRAY_BOUND: arrays with at least this many elements are split.
DEFAULT_BIGARRAY_BOUND = config.setting("MXLAB_KVSTORE_BIGARRAY_BOUND").default
#: The multiplier MXNet uses to scatter integer keys over the servers.
KEY_SCATTER = 9973

Key = int | str


@dataclass(frozen=True)
class Shard:
    """One contiguous slice ``[start, stop)`` of a key's flattened array, kept by server ``server``."""

    key: Key
    part: int
    server: int
    start: int
    stop: int

    @property
    def name(self) -> tuple[Key, int]:
        """How the server files this slice: ``(key, part)``."""
        return (self.key, self.part)

    @property
    def size(self) -> int:
        return self.stop - self.start


def bigarray_bound_from_env() -> int:
    """``MXLAB_KVSTORE_BIGARRAY_BOUND`` (or MXNet's ``MXNET_KVSTORE_BIGARRAY_BOUND``), default 1e6."""
    return config.get("MXLAB_KVSTORE_BIGARRAY_BOUND")


def key_hash(key: Key) -> int:
    """A non-negative integer for ``key`` that every process computes the same way."""
    if isinstance(key, str):
        return zlib.crc32(key.encode("utf-8"))
    return abs(key)


def server_of(key: Key, num_servers: int) -> int:
    """The server that holds a small (unsplit) key."""
    if num_servers < 1:
        raise ValueError(f"server_of: num_servers must be at least 1, got {num_servers}")
    return (key_hash(key) * KEY_SCATTER) % num_servers


def layout(key: Key, size: int, num_servers: int, bigarray_bound: int = DEFAULT_BIGARRAY_BOUND) -> list[Shard]:
    """The slices of a ``size``-element array under ``key``: one shard, or one per server when big."""
    if size < 0:
        raise ValueError(f"layout({key!r}): size must be non-negative, got {size}")
    if size < bigarray_bound or num_servers == 1 or size < num_servers:
        return [Shard(key, 0, server_of(key, num_servers), 0, size)]
    base, extra = divmod(size, num_servers)
    shards, start = [], 0
    for server in range(num_servers):
        stop = start + base + (1 if server < extra else 0)  # the first `extra` slices take one more
        shards.append(Shard(key, server, server, start, stop))
        start = stop
    return shards


__all__ = [
    "DEFAULT_BIGARRAY_BOUND",
    "KEY_SCATTER",
    "Shard",
    "bigarray_bound_from_env",
    "key_hash",
    "layout",
    "server_of",
]
