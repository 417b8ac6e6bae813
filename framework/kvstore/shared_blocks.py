"""Shared-memory blocks: how a server and the workers on its host exchange arrays without Ray's object store.

A message through Ray carries its arrays: Ray serialises them into its object store on the way
to the server and the answer's arrays on the way back, about 3 ms per megabyte on a small
machine, much more than the copy itself costs. When a worker runs on the same host as the
server, both can instead map the same memory, and the message only *names* the shards.

The server makes one **block** per shard: a file in ``/dev/shm`` (memory, not disk) holding
``1 + num_workers`` regions of the shard's size::

    region 0       the shard's current value; the server writes it after every update
    region 1 + r   worker r's latest push of the shard; worker r writes it before its message

Every process maps the file with ``mmap``, so each region is a NumPy view that all of them see.

No locks are needed, because in ``dist_sync`` the messages already order every access:

* worker ``r`` writes region ``1 + r`` only after its previous message about the shard has
  been answered (the worker's engine orders the two operations, both write the key's buffer);
  the server reads it only while that message's round is open, that is before it answers;
* the server writes region 0 when a round completes, which needs every worker's push; a worker
  reads region 0 after the answer and before its next push of the shard, so no round can
  complete (and overwrite the value) while it reads.

``dist_async`` has no rounds (the server updates while other workers read), so it keeps Ray.

Lifetime: the server deletes the file's *name* once every worker has mapped it. A mapping
outlives the name, and the memory is returned when the last process holding it exits, even a
killed one: a crashed job leaves nothing behind in ``/dev/shm``.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
from dataclasses import dataclass

import numpy as np

from .base import KVStoreError

#: Regions start on cache-line boundaries, so two processes never write the same cache line.
ALIGNMENT = 64


def block_dir() -> str:
    """Where blocks live: ``/dev/shm`` (a memory file system) when the system has one."""
    return "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()


@dataclass(frozen=True)
class BlockSpec:
    """What a worker needs to map a server's block: where it is and how it is laid out."""

    path: str
    size: int  # elements of the shard
    dtype: str  # NumPy's dtype string, e.g. '<f4'
    num_workers: int

    @property
    def region_bytes(self) -> int:
        nbytes = self.size * np.dtype(self.dtype).itemsize
        return -(-nbytes // ALIGNMENT) * ALIGNMENT

    @property
    def total_bytes(self) -> int:
        return max(ALIGNMENT, self.region_bytes * (1 + self.num_workers))


class SharedBlock:
    """One shard's block mapped into this process: :attr:`value` and one push region per worker."""

    def __init__(self, spec: BlockSpec, create: bool = False) -> None:
        self.spec = spec
        try:
            if create:
                fd = os.open(spec.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
                os.ftruncate(fd, spec.total_bytes)
            else:
                fd = os.open(spec.path, os.O_RDWR)
        except OSError as err:
            raise KVStoreError(
                f"shared memory: cannot {'create' if create else 'open'} block {spec.path!r}: {err}"
            ) from None
        try:
            found = os.fstat(fd).st_size
            if found != spec.total_bytes:
                raise KVStoreError(
                    f"shared memory: block {spec.path!r} has {found} bytes, expected {spec.total_bytes} "
                    f"({spec.size} x {spec.dtype} for 1 + {spec.num_workers} regions)"
                )
            self._map = mmap.mmap(fd, spec.total_bytes)
        finally:
            os.close(fd)  # the mapping keeps the memory; the descriptor is no longer needed
        dtype, size, step = np.dtype(spec.dtype), spec.size, spec.region_bytes
        #: region 0: the shard's value as of the last completed round
        self.value = np.frombuffer(self._map, dtype, size, offset=0)
        #: region 1 + r: worker r's latest push
        self.pushes = [np.frombuffer(self._map, dtype, size, offset=step * (1 + r)) for r in range(spec.num_workers)]

    def unlink(self) -> None:
        """Delete the block's name (every process that mapped it keeps its memory until it exits)."""
        with contextlib.suppress(FileNotFoundError):  # already deleted: nothing left to do
            os.unlink(self.spec.path)


__all__ = ["ALIGNMENT", "BlockSpec", "SharedBlock", "block_dir"]
