"""What the Ray-free tests of the distributed store share: arrays as Ray delivers them, a coroutine
run from any thread, and a KVServer whose workers have all joined in synchronous mode.

test_dist_server.py and test_shared_blocks.py import from here; no test module imports another.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from framework.kvstore.server import KVServer


def frozen(values) -> np.ndarray:
    """An array as Ray delivers it: a read-only view."""
    array = np.asarray(values, dtype=np.float32)
    array.flags.writeable = False
    return array


def run(coro):
    """``coro`` on an event loop of its own, in a helper thread: this thread may already run a loop
    (Playwright's sync API keeps one while browser tests share the session), where asyncio.run refuses."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def sync_server(num_workers: int = 2, timeout: float = 5.0) -> KVServer:
    """A server of one shard that ``num_workers`` workers joined, in synchronous mode."""
    server = KVServer(0, 1, num_workers, timeout)
    for rank in range(num_workers):
        await server.configure(rank, num_workers, True)
    return server
