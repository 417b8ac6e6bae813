"""Shared-memory blocks and the server's verbs that use them, without Ray (see test_dist_server.py).

A "worker" here maps a block the way a worker process does, from the spec the server sends; in
one process the two mappings are still two views of the same memory, which is what is tested.
"""

from __future__ import annotations

import asyncio
import os

import numpy as np
import pytest
from kvstore_helpers import frozen, run, sync_server

from framework.kvstore.base import KVStoreError
from framework.kvstore.server import KVServer
from framework.kvstore.shared_blocks import ALIGNMENT, BlockSpec, SharedBlock


def spec_in(tmp_path, size: int = 3, dtype: str = "<f4", workers: int = 2) -> BlockSpec:
    return BlockSpec(str(tmp_path / "block"), size, dtype, workers)


def test_a_block_is_one_memory_seen_by_every_mapping(tmp_path):
    spec = spec_in(tmp_path)
    server = SharedBlock(spec, create=True)
    worker = SharedBlock(spec)
    assert spec.region_bytes == ALIGNMENT and os.path.getsize(spec.path) == 3 * ALIGNMENT
    np.copyto(worker.pushes[1], [1, 2, 3])
    np.testing.assert_array_equal(server.pushes[1], [1, 2, 3])
    np.testing.assert_array_equal(server.pushes[0], [0, 0, 0])  # the regions do not overlap
    np.copyto(server.value, [7, 8, 9])
    server.unlink()
    assert not os.path.exists(spec.path)
    np.testing.assert_array_equal(worker.value, [7, 8, 9])  # a mapping outlives the name
    server.unlink()  # a second unlink is harmless


def test_blocks_that_cannot_be_mapped_are_named(tmp_path):
    spec = spec_in(tmp_path)
    with pytest.raises(KVStoreError, match=r"cannot open block '.*block'"):
        SharedBlock(spec)
    SharedBlock(spec, create=True)
    with pytest.raises(KVStoreError, match=r"cannot create block '.*block'"):
        SharedBlock(spec, create=True)  # never two servers on one block
    other_layout = spec_in(tmp_path, size=100)
    with pytest.raises(KVStoreError, match=r"has 192 bytes, expected 1344 \(100 x <f4 for 1 \+ 2 regions\)"):
        SharedBlock(other_layout)
    os.unlink(spec.path)


def test_shared_pushes_are_summed_and_the_value_appears_in_the_block():
    async def scenario():
        server = await sync_server()

        def add(key, merged, stored):
            stored += merged

        await server.set_updater(add)
        await server.init(("w", 0), np.ones(2, np.float32))
        (spec,) = (await server.share([("w", 0)]))["blocks"]
        assert (await server.share([("w", 0)]))["blocks"] == [spec]  # made once, for every worker
        workers = [SharedBlock(spec), SharedBlock(spec)]
        np.testing.assert_array_equal(workers[0].value, [1, 1])  # the initial value is in the block
        await server.mapped(0, [("w", 0)])
        assert os.path.exists(spec.path)  # worker 1 has not mapped it yet
        await server.mapped(1, [("w", 0)])
        assert not os.path.exists(spec.path)
        values = []
        for step in range(2):
            np.copyto(workers[0].pushes[0], [1, 2])
            np.copyto(workers[1].pushes[1], [10 * (step + 1), 20])
            held = asyncio.ensure_future(server.pushpull_shared(0, [("w", 0)]))
            await asyncio.sleep(0.02)
            assert not held.done()  # a round still needs every worker
            await server.push_shared(1, [("w", 0)])
            await held
            await server.pull_shared([("w", 0)])
            values.append(workers[0].value.copy())
        (pulled,) = await server.pull([("w", 0)])
        return values, pulled, (await server.ping())["shared_blocks"]

    values, pulled, shared = run(scenario())
    np.testing.assert_array_equal(values[0], [12, 23])
    np.testing.assert_array_equal(values[1], [33, 45])
    np.testing.assert_array_equal(pulled, values[1])  # the store and the block agree
    assert shared == 1


def test_shared_verbs_refuse_what_was_not_shared():
    async def scenario():
        server = await sync_server()
        await server.init(("w", 0), np.zeros(2, np.float32))
        with pytest.raises(KVStoreError, match=r"push: key 'w' \(part 0\) has no shared-memory block on server 0"):
            await server.push_shared(0, [("w", 0)])
        with pytest.raises(KVStoreError, match=r"pull: key 'w' \(part 0\) has no shared-memory block"):
            await server.pull_shared([("w", 0)])
        with pytest.raises(KVStoreError, match=r"share: key 'nope' has not been initialized on server 0"):
            await server.share([("nope", 0)])
        (spec,) = (await server.share([("w", 0)]))["blocks"]
        held = asyncio.ensure_future(server.push(0, [(("w", 0), frozen([1, 2]))]))
        await asyncio.sleep(0)
        await server.abort("worker 1 died")  # a job that ends before every worker mapped its blocks
        with pytest.raises(KVStoreError, match="aborted: worker 1 died"):
            await held
        return spec

    spec = run(scenario())
    assert not os.path.exists(spec.path)  # the abort deleted the block's name: nothing leaks


def test_async_servers_do_not_share():
    async def scenario():
        server = KVServer(0, 1, 2, 5.0)
        await server.configure(0, 2, False)
        await server.init(("w", 0), np.zeros(2, np.float32))
        with pytest.raises(KVStoreError, match="shares memory only with dist_sync workers"):
            await server.share([("w", 0)])

    run(scenario())
