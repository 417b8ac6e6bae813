"""The distributed store's pieces that need no Ray: the server's batched rounds, the time split, layer batches.

``KVServer`` is a plain class whose methods are coroutines (Ray runs it as an asyncio actor), so
two "workers" are two coroutines on one event loop here. Received arrays are made read-only,
as Ray's zero-copy deserialisation delivers them.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from kvstore_helpers import frozen, run, sync_server

from framework.kvstore.base import KVStoreError
from framework.kvstore.server import KVServer, sum_into
from framework.kvstore.timing import CallLog, CallRecord, split_step
from framework.module.aggregation import layer_batches, layer_of


def test_sum_into_adds_read_only_arrays_into_the_servers_array():
    a, b, c = frozen([1, 2]), frozen([10, 20]), frozen([100, 200])
    out = np.zeros(2, np.float32)
    sum_into([a], out)
    np.testing.assert_array_equal(out, [1, 2])
    sum_into([a, b], out)
    np.testing.assert_array_equal(out, [11, 22])
    sum_into([a, b, c], out)
    np.testing.assert_array_equal(out, [111, 222])
    np.testing.assert_array_equal(a, [1, 2])  # the received arrays are untouched


def test_a_batched_push_is_answered_once_every_worker_pushed_every_shard():
    async def scenario():
        server = await sync_server()
        await server.init(("w", 0), np.zeros(2, np.float32))
        await server.init(("b", 0), np.zeros(3, np.float32))
        # worker 0 sends both shards in one message; worker 1 sends them one by one, later
        first = asyncio.ensure_future(server.push(0, [(("w", 0), frozen([1, 2])), (("b", 0), frozen([1, 1, 1]))]))
        await asyncio.sleep(0.05)
        assert not first.done()  # held: worker 1 has pushed nothing
        assert await server.push(1, [(("w", 0), frozen([10, 20]))]) == pytest.approx(0.0, abs=0.01)
        await asyncio.sleep(0.01)
        assert not first.done()  # still held: 'b' misses worker 1
        await server.push(1, [(("b", 0), frozen([2, 2, 2]))])
        waited = await first
        pulled = await server.pull([("w", 0), ("b", 0)])
        return waited, pulled, (await server.ping())["pushes"]

    waited, (w, b), pushes = run(scenario())
    assert waited >= 0.05  # the server reports how long it held worker 0's message
    np.testing.assert_array_equal(w, [11, 22])
    np.testing.assert_array_equal(b, [3, 3, 3])
    assert pushes == 4  # shards pushed, not messages


def test_the_updater_runs_once_per_round_on_the_sum():
    async def scenario():
        server = await sync_server()
        seen = []

        def add(key, merged, stored):
            seen.append((key, merged.asnumpy().tolist()))
            stored += merged

        await server.set_updater(add)
        await server.init(("k", 0), np.ones(2, np.float32))
        for _ in range(2):  # two rounds
            pushes = [server.push(0, [(("k", 0), frozen([1, 2]))]), server.push(1, [(("k", 0), frozen([3, 4]))])]
            await asyncio.gather(*pushes)
        (value,) = await server.pull([("k", 0)])
        return seen, value

    seen, value = run(scenario())
    assert seen == [("k", [4.0, 6.0]), ("k", [4.0, 6.0])]
    np.testing.assert_array_equal(value, [9, 13])


def test_bad_pushes_are_refused_naming_the_key():
    async def scenario():
        server = await sync_server()
        await server.init(("w", 0), np.zeros(2, np.float32))
        wrong_shape = r"push\('w'\): worker 1 sent float32 \(3,\), the server holds float32 \(2,\)"
        with pytest.raises(KVStoreError, match=wrong_shape):
            await server.push(1, [(("w", 0), frozen([1, 2, 3]))])
        with pytest.raises(KVStoreError, match=r"pull: key 'nope' has not been initialized on server 0"):
            await server.pull([("nope", 0)])
        held = asyncio.ensure_future(server.push(0, [(("w", 0), frozen([1, 2]))]))
        await asyncio.sleep(0)
        with pytest.raises(KVStoreError, match=r"worker 0 pushed twice before the others pushed once"):
            await server.push(0, [(("w", 0), frozen([1, 2]))])
        held.cancel()

    run(scenario())


def test_a_missing_worker_fails_the_batch_after_the_timeout_naming_it():
    async def scenario():
        server = await sync_server(timeout=0.2)
        await server.init(("a", 0), np.zeros(1, np.float32))
        await server.init(("b", 0), np.zeros(1, np.float32))
        with pytest.raises(KVStoreError) as caught:
            await server.push(0, [(("a", 0), frozen([1])), (("b", 0), frozen([1]))])
        with pytest.raises(KVStoreError, match="job was aborted"):  # and the job is over for everyone
            await server.pull([("a", 0)])
        return str(caught.value)

    message = run(scenario())
    assert "server 0 waited 0.2 s for worker(s) [1]" in message and "MXLAB_KV_TIMEOUT" in message


def test_async_mode_applies_each_batch_at_once():
    async def scenario():
        server = KVServer(0, 1, 2, 5.0)
        await server.configure(0, 2, False)
        await server.init(("w", 0), np.zeros(2, np.float32))
        with pytest.raises(KVStoreError, match="dist_async store applies every push with an updater"):
            await server.push(0, [(("w", 0), frozen([1, 1]))])

        def add(key, merged, stored):
            stored += merged

        await server.set_updater(add)
        assert await server.push(0, [(("w", 0), frozen([1, 2]))]) == 0.0
        (value,) = await server.pull([("w", 0)])
        return value

    np.testing.assert_array_equal(run(scenario()), [1, 2])


def call(sent, answered, waited=0.0, verb="push", nbytes=8):
    return CallRecord(verb, 0, sent, answered, waited, nbytes)


def test_split_step_counts_each_moment_once():
    # step [0, 10]: messages in flight [2, 5] and [4, 8] (union 6 s), the second held for its last 3 s
    split = split_step(3, 0.0, 10.0, [call(2.0, 5.0), call(4.0, 8.0, waited=3.0, verb="pull", nbytes=4)])
    assert (split.step, split.ray_calls, split.nbytes) == (3, 2, 12)
    assert split.wall_s == pytest.approx(10.0)
    assert split.wait_s == pytest.approx(3.0)
    assert split.comm_s == pytest.approx(3.0)
    assert split.compute_s == pytest.approx(4.0)
    assert split.compute_s + split.comm_s + split.wait_s == pytest.approx(split.wall_s)
    # a hold longer than its call (clock granularity) is cut to the call; calls outside the step are clipped
    clipped = split_step(0, 0.0, 4.0, [call(1.0, 2.0, waited=5.0), call(3.0, 6.0)])
    assert (clipped.wait_s, clipped.comm_s, clipped.compute_s) == pytest.approx((1.0, 1.0, 2.0))
    with pytest.raises(ValueError, match="ends"):
        split_step(0, 2.0, 1.0, [])


def test_call_log_counts_messages_and_hands_each_step_its_calls():
    log = CallLog()
    for _ in range(3):
        log.sent()
    log.answered(call(1.0, 2.0))
    log.answered(call(5.0, 6.0))
    assert log.count == 3
    assert [c.sent for c in log.since(4.0)] == [5.0]
    assert [c.sent for c in log.since(0.0)] == [5.0]  # older calls were forgotten


def test_layer_batches_group_a_layers_parameters_last_layer_first():
    names = ["fc1_weight", "fc1_bias", "bn_gamma", "bn_beta", "fc2_weight", "fc2_bias", "out"]
    grads = [[object()], [object()], [None], [object()], [object()], [object()], [object()]]
    assert layer_of("fc1_weight") == "fc1" and layer_of("out") == "out"
    # bn_gamma has no gradient (fixed): skipped; bn_beta alone is the bn layer's batch
    assert layer_batches(names, grads) == [[6], [4, 5], [3], [0, 1]]


def test_layer_batches_join_neighbouring_layers_one_backward_segment_finishes():
    names = ["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias", "fc3_weight", "fc3_bias"]
    grads = [[object()] for _ in names]
    # fc3 and fc2 finished by backward segment 0, fc1 by segment 1: two messages, last layers first
    assert layer_batches(names, grads, [1, 1, 0, 0, 0, 0]) == [[2, 3, 4, 5], [0, 1]]
    assert layer_batches(names, grads, [0] * 6) == [[0, 1, 2, 3, 4, 5]]
    # unknown segments (None) never join layers
    assert layer_batches(names, grads, [None] * 6) == [[4, 5], [2, 3], [0, 1]]
