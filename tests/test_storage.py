"""The pooled storage allocator: rounding, pooling, counters, events, errors, threads, OOM."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import framework
from framework import backend, events, storage
from framework.base import ContextError, MXLabError, StorageError
from framework.context import cpu, gpu
from framework.storage import NaiveStrategy, PooledStorageManager, RoundStrategy, UnpooledStrategy

MiB = 1 << 20
ENV_VARS = (
    "MXLAB_MEM_POOL_TYPE",
    "MXLAB_CPU_MEM_POOL_TYPE",
    "MXLAB_GPU_MEM_POOL_TYPE",
    "MXLAB_MEM_POOL_ROUND_LINEAR_CUTOFF",
    "MXLAB_MEM_LARGE_ALLOC_ROUND_SIZE",
    "MXLAB_MEM_POOL_PAGE_SIZE",
)


@pytest.fixture(autouse=True)
def fresh_storage(monkeypatch):
    """Each test gets its own per-context managers and a clean pool environment."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(storage, "_managers", {})


needs_gpu = pytest.mark.skipif(framework.num_gpus() == 0, reason="needs a CUDA GPU")


# --------------------------------------------------------------------------- rounding
@pytest.mark.parametrize(
    ("nbytes", "expected"),
    [
        (0, 0),
        (1, 1),
        (3, 4),
        (4096, 4096),
        (4097, 8192),
        (2**20 + 1, 2**21),
        (2**24, 2**24),
        (2**24 + 1, 2**24 + 2 * MiB),
        (3 * 2**24 + 5, 3 * 2**24 + 2 * MiB),
        (10**9, 477 * 2 * MiB),
    ],
)
def test_round_strategy_powers_of_two_then_linear(nbytes, expected):
    assert RoundStrategy().round(nbytes) == expected


@pytest.mark.parametrize(
    ("nbytes", "expected"),
    [
        (0, 0),
        (1, 4096),
        (4096, 4096),
        (4097, 8192),
        (2**20 + 1, 2**20 + 4096),
        (2 * MiB, 2 * MiB),
        (2 * MiB + 1, 4 * MiB),
        (2**24, 2**24),
        (2**24 + 1, 2**24 + 2 * MiB),
        (10**9, 477 * 2 * MiB),
    ],
)
def test_naive_strategy_pages_then_large_steps(nbytes, expected):
    assert NaiveStrategy().round(nbytes) == expected


@pytest.mark.parametrize("nbytes", [0, 1, 4096, 2**20 + 1, 2**24, 2**24 + 1, 10**9])
def test_unpooled_strategy_keeps_exact_sizes(nbytes):
    assert UnpooledStrategy().round(nbytes) == nbytes
    assert UnpooledStrategy.pooled is False


def test_strategies_take_their_parameters():
    small = RoundStrategy(cutoff=10, large_round=4096)
    assert [small.round(n) for n in (1000, 1024, 1025, 5000)] == [1024, 1024, 4096, 8192]
    assert NaiveStrategy(page_size=512, large_round=8192).round(8193) == 16384
    assert NaiveStrategy(page_size=512, large_round=8192).round(513) == 1024


@pytest.mark.parametrize(
    "make",
    [
        lambda: RoundStrategy(cutoff=-1),
        lambda: RoundStrategy(cutoff=99),
        lambda: RoundStrategy(large_round=0),
        lambda: NaiveStrategy(page_size=1.5),
        lambda: NaiveStrategy(large_round=True),
    ],
)
def test_strategy_parameters_are_validated(make):
    with pytest.raises(StorageError, match="must be"):
        make()


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=2**40), st.sampled_from([RoundStrategy(), NaiveStrategy()]))
def test_rounding_properties(nbytes, strategy):
    rounded = strategy.round(nbytes)
    assert rounded >= nbytes
    assert strategy.round(rounded) == rounded  # a rounded size is its own size class
    assert strategy.round(nbytes + 1) >= rounded  # monotone
    if isinstance(strategy, RoundStrategy) and 0 < nbytes <= 2**24:
        assert rounded & (rounded - 1) == 0 and rounded < 2 * nbytes


# --------------------------------------------------------------------------- configuration
def test_pool_type_from_environment(monkeypatch):
    assert storage.stats(cpu(0))["pool_type"] == "Round"
    monkeypatch.setenv("MXLAB_MEM_POOL_TYPE", "Naive")
    assert isinstance(storage.strategy_from_env("cpu"), NaiveStrategy)
    monkeypatch.setenv("MXLAB_GPU_MEM_POOL_TYPE", "Unpooled")
    assert isinstance(storage.strategy_from_env("cpu"), NaiveStrategy)  # a GPU override leaves CPUs alone
    assert isinstance(storage.strategy_from_env("gpu"), UnpooledStrategy)
    monkeypatch.setenv("MXLAB_CPU_MEM_POOL_TYPE", "Unpooled")
    assert storage.stats(cpu(1))["pool_type"] == "Unpooled"


def test_rounding_parameters_from_environment(monkeypatch):
    monkeypatch.setenv("MXLAB_MEM_POOL_TYPE", "Naive")
    monkeypatch.setenv("MXLAB_MEM_POOL_PAGE_SIZE", "1024")
    monkeypatch.setenv("MXLAB_MEM_LARGE_ALLOC_ROUND_SIZE", "65536")
    strategy = storage.strategy_from_env("cpu")
    assert (strategy.round(1), strategy.round(65537)) == (1024, 131072)
    monkeypatch.setenv("MXLAB_MEM_POOL_TYPE", "Round")
    monkeypatch.setenv("MXLAB_MEM_POOL_ROUND_LINEAR_CUTOFF", "12")
    assert storage.strategy_from_env("cpu").round(4097) == 65536


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MXLAB_MEM_POOL_TYPE", "naive"),
        ("MXLAB_CPU_MEM_POOL_TYPE", "Pooled"),
        ("MXLAB_MEM_POOL_ROUND_LINEAR_CUTOFF", "twenty"),
        ("MXLAB_MEM_POOL_ROUND_LINEAR_CUTOFF", "99"),
        ("MXLAB_MEM_LARGE_ALLOC_ROUND_SIZE", "0"),
    ],
)
def test_malformed_environment_raises_naming_the_variable(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(MXLabError, match=name):
        storage.alloc(8, cpu(0))


# --------------------------------------------------------------------------- pooling and counters
def test_free_then_alloc_of_the_same_size_class_hits():
    pool = PooledStorageManager(cpu(0), RoundStrategy())
    first = pool.alloc(1000)
    assert (first.nbytes, first.rounded, first.ctx) == (1000, 1024, cpu(0))
    assert first.buffer.dtype == np.uint8 and first.buffer.shape == (1024,)
    second = pool.alloc(3000)
    block = first.buffer
    pool.free(first)
    assert first.freed and first.buffer is None
    assert pool.stats()["bytes_pooled"] == 1024
    third = pool.alloc(600)  # rounds to 1024 as well: the freed block comes back
    assert third.buffer is block and third.id != first.id
    fourth = pool.alloc(1025)  # 2048: a different size class, so a miss
    assert pool.stats() == {
        "bytes_in_use": 1024 + 4096 + 2048,
        "bytes_pooled": 0,
        "peak_bytes_in_use": 1024 + 4096 + 2048,
        "hits": 1,
        "misses": 3,
        "allocs": 4,
        "frees": 1,
        "releases": 0,
        "pool_type": "Round",
    }
    for handle in (second, third, fourth):
        pool.free(handle)
    stats = pool.stats()
    assert (stats["bytes_in_use"], stats["bytes_pooled"], stats["peak_bytes_in_use"]) == (0, 7168, 7168)


def test_naive_pool_reuses_exact_rounded_sizes_only():
    pool = PooledStorageManager(cpu(0), NaiveStrategy())
    pool.free(pool.alloc(5000))  # 8192
    small = pool.alloc(4000)  # 4096: the 8192 block is not split or borrowed
    assert pool.stats()["hits"] == 0
    same = pool.alloc(8000)  # 8192: hit
    assert (same.rounded, small.rounded) == (8192, 4096)
    assert pool.stats()["hits"] == 1 and pool.stats()["misses"] == 2


def test_unpooled_free_returns_memory_to_the_system():
    pool = PooledStorageManager(cpu(0), UnpooledStrategy())
    handle = pool.alloc(1000)
    assert handle.rounded == 1000 and handle.buffer.size == 1000
    pool.free(handle)
    pool.alloc(1000)
    stats = pool.stats()
    assert (stats["bytes_pooled"], stats["hits"], stats["misses"], stats["pool_type"]) == (0, 0, 2, "Unpooled")


def test_zero_byte_alloc_gives_an_empty_buffer():
    handle = storage.alloc(0, cpu(0))
    assert handle.nbytes == handle.rounded == 0 and handle.buffer.size == 0
    storage.free(handle)
    assert storage.stats(cpu(0))["bytes_in_use"] == 0


def test_reset_stats_keeps_the_pool_and_sets_the_peak_to_current_use():
    kept = storage.alloc(4096, cpu(0))
    storage.free(storage.alloc(8192, cpu(0)))
    storage.reset_stats()
    stats = storage.stats(cpu(0))
    assert (stats["hits"], stats["misses"], stats["allocs"], stats["frees"], stats["releases"]) == (0, 0, 0, 0, 0)
    assert stats["peak_bytes_in_use"] == stats["bytes_in_use"] == 4096
    assert stats["bytes_pooled"] == 8192
    storage.alloc(8192, cpu(0))
    assert storage.stats(cpu(0))["hits"] == 1  # the pooled block survived the reset
    storage.free(kept)


def test_alloc_uses_the_current_context_by_default():
    with cpu(3):
        handle = storage.alloc(16)
    assert handle.ctx == cpu(3)
    assert storage.stats(cpu(3))["allocs"] == 1
    assert storage.stats(cpu(0))["allocs"] == 0


def test_release_all_empties_one_pool_or_every_pool():
    for ctx in (cpu(0), cpu(1)):
        storage.free(storage.alloc(4096, ctx))
    storage.release_all(cpu(0))
    assert storage.stats(cpu(0))["bytes_pooled"] == 0 and storage.stats(cpu(0))["releases"] == 1
    assert storage.stats(cpu(1))["bytes_pooled"] == 4096
    storage.release_all()
    assert storage.stats(cpu(1))["bytes_pooled"] == 0
    storage.alloc(4096, cpu(1))
    assert storage.stats(cpu(1))["misses"] == 2  # nothing left to hit


def test_context_empty_cache_releases_the_pool():
    in_use = storage.alloc(100, cpu(2))
    storage.free(storage.alloc(100, cpu(2)))
    cpu(2).empty_cache()
    stats = storage.stats(cpu(2))
    assert (stats["bytes_pooled"], stats["bytes_in_use"]) == (0, 128)
    assert in_use.buffer is not None  # blocks in use are untouched


# --------------------------------------------------------------------------- events
def test_alloc_and_free_publish_the_contract_fields():
    with events.record(["storage.alloc", "storage.free"]) as rec:
        first = storage.alloc(100, cpu(0))
        storage.free(first)
        second = storage.alloc(120, cpu(0))
    allocs, frees = rec.of_kind("storage.alloc"), rec.of_kind("storage.free")
    for event in allocs + frees:
        assert set(event) == {"kind", "t_ns", *events.KINDS[event["kind"]]}
    assert [(e["handle"], e["ctx"], e["nbytes"], e["rounded"], e["pool_hit"]) for e in allocs] == [
        (first.id, "cpu(0)", 100, 128, False),
        (second.id, "cpu(0)", 120, 128, True),
    ]
    assert [(e["handle"], e["ctx"], e["nbytes"], e["rounded"], e["pooled"]) for e in frees] == [
        (first.id, "cpu(0)", 100, 128, True)
    ]


def test_unpooled_free_event_says_not_pooled():
    pool = PooledStorageManager(cpu(0), UnpooledStrategy())
    with events.record(["storage.free"]) as rec:
        pool.free(pool.alloc(10))
    assert [e["pooled"] for e in rec.events] == [False]


# --------------------------------------------------------------------------- errors
def test_double_free_raises():
    handle = storage.alloc(64, cpu(0))
    storage.free(handle)
    with pytest.raises(StorageError, match="double free"):
        storage.free(handle)
    assert storage.stats(cpu(0))["frees"] == 1


@pytest.mark.parametrize("thing", [object(), None, np.zeros(4, np.uint8), 42])
def test_freeing_something_that_is_not_a_handle_raises(thing):
    with pytest.raises(StorageError, match="expected a Handle"):
        storage.free(thing)


def test_freeing_another_managers_handle_raises():
    mine, theirs = PooledStorageManager(cpu(0)), PooledStorageManager(cpu(0))
    handle = theirs.alloc(64)
    with pytest.raises(StorageError, match="not allocated by"):
        mine.free(handle)
    assert not handle.freed and mine.stats()["frees"] == 0
    theirs.free(handle)


@pytest.mark.parametrize("nbytes", [-1, 1.5, True, "8", None, np.float64(8)])
def test_alloc_rejects_bad_sizes_naming_the_value(nbytes):
    with pytest.raises(StorageError, match="nbytes must be an int >= 0") as info:
        storage.alloc(nbytes, cpu(0))
    assert repr(nbytes) in str(info.value)


def test_alloc_rejects_a_non_context():
    with pytest.raises(ContextError, match="expected a Context"):
        storage.alloc(8, "cpu(0)")


@pytest.mark.skipif(framework.num_gpus() > 0, reason="checks the no-GPU error")
def test_gpu_alloc_without_a_gpu_says_so():
    with pytest.raises(ContextError, match="no GPU"):
        storage.alloc(8, gpu(0))


# --------------------------------------------------------------------------- out of memory
def _failing_empty_buffer(monkeypatch, failures):
    """Make backend.empty_buffer raise MemoryError ``failures`` times, then work."""
    real = backend.empty_buffer
    calls = []

    def empty_buffer(ctx, nbytes):
        calls.append(nbytes)
        if len(calls) <= failures:
            raise MemoryError(f"simulated: cannot allocate {nbytes} bytes")
        return real(ctx, nbytes)

    monkeypatch.setattr(backend, "empty_buffer", empty_buffer)
    return calls


def test_out_of_memory_releases_the_pool_and_retries_once(monkeypatch):
    pool = PooledStorageManager(cpu(0), RoundStrategy())
    pool.free(pool.alloc(MiB))
    calls = _failing_empty_buffer(monkeypatch, failures=1)
    handle = pool.alloc(3000)
    assert calls == [4096, 4096]
    assert handle.buffer.size == 4096
    stats = pool.stats()
    assert (stats["bytes_pooled"], stats["releases"], stats["bytes_in_use"], stats["misses"]) == (0, 1, 4096, 2)


def test_out_of_memory_twice_raises_storage_error(monkeypatch):
    pool = PooledStorageManager(cpu(0), RoundStrategy())
    kept = pool.alloc(512)
    pool.free(pool.alloc(MiB))
    calls = _failing_empty_buffer(monkeypatch, failures=2)
    with pytest.raises(StorageError) as info:
        pool.alloc(3000)
    message = str(info.value)
    expected = [
        "out of memory on cpu(0)",
        "3000 bytes",
        "4096-byte block",
        f"{MiB} pooled bytes",
        "512 bytes are in use",
    ]
    for part in expected:
        assert part in message
    assert isinstance(info.value.__cause__, MemoryError)
    assert len(calls) == 2
    stats = pool.stats()  # a failed alloc leaves the books balanced
    assert (stats["allocs"], stats["bytes_in_use"], stats["bytes_pooled"]) == (2, 512, 0)
    pool.free(kept)


# --------------------------------------------------------------------------- threads
def test_concurrent_alloc_and_free_keep_counters_consistent():
    pool = PooledStorageManager(cpu(0), RoundStrategy())
    n_threads, rounds = 4, 150
    barrier = threading.Barrier(n_threads)
    errors, ids = [], [[] for _ in range(n_threads)]

    def work(tag):
        rng = np.random.default_rng(tag)
        try:
            barrier.wait()
            held = []
            for i in range(rounds):
                handle = pool.alloc(int(rng.integers(1, 5000)))
                handle.buffer[:] = tag  # nobody else may own this block now
                held.append(handle)
                ids[tag].append(handle.id)
                if len(held) > 3 or i == rounds - 1:
                    for h in held:
                        assert (h.buffer == tag).all(), "a block was handed to two owners"
                        pool.free(h)
                    held = []
        except BaseException as err:  # reported below, from the main thread
            errors.append(err)

    threads = [threading.Thread(target=work, args=(tag,)) for tag in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    all_ids = [i for per_thread in ids for i in per_thread]
    assert len(set(all_ids)) == len(all_ids) == n_threads * rounds
    stats = pool.stats()
    assert stats["allocs"] == stats["frees"] == n_threads * rounds
    assert stats["hits"] + stats["misses"] == stats["allocs"]
    assert stats["bytes_in_use"] == 0
    assert stats["bytes_pooled"] == sum(size * len(blocks) for size, blocks in pool._pool.items())
    assert stats["hits"] > 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 20_000)), max_size=40))
def test_counters_match_a_simple_model(program):
    """Random alloc/free programs: the manager agrees with a dictionary-of-counts model."""
    strategy = RoundStrategy()
    pool = PooledStorageManager(cpu(0), strategy)
    live, pooled_blocks, hits = [], {}, 0
    for do_free, size in program:
        if do_free and live:
            handle = live.pop(size % len(live))
            pool.free(handle)
            pooled_blocks[handle.rounded] = pooled_blocks.get(handle.rounded, 0) + 1
        else:
            rounded = strategy.round(size)
            if pooled_blocks.get(rounded, 0):
                pooled_blocks[rounded] -= 1
                hits += 1
            live.append(pool.alloc(size))
    stats = pool.stats()
    assert stats["hits"] == hits
    assert stats["bytes_in_use"] == sum(h.rounded for h in live)
    assert stats["bytes_pooled"] == sum(size * count for size, count in pooled_blocks.items())


# --------------------------------------------------------------------------- GPU
@pytest.mark.gpu
@needs_gpu
def test_gpu_blocks_are_device_buffers_and_pool_like_cpu_ones():
    handle = storage.alloc(1000, gpu(0))
    xp = backend.array_module(gpu(0))
    assert isinstance(handle.buffer, xp.ndarray) and handle.buffer.size == 1024
    block = handle.buffer
    storage.free(handle)
    again = storage.alloc(900, gpu(0))
    assert again.buffer is block and storage.stats(gpu(0))["hits"] == 1
    storage.free(again)
    gpu(0).empty_cache()
    assert storage.stats(gpu(0))["bytes_pooled"] == 0


# --------------------------------------------------------------------------- the finalizer's free
def test_alloc_checked_rounds_like_alloc_and_remembers_the_size_class():
    pool = PooledStorageManager(cpu(0), RoundStrategy())
    handle = pool.alloc_checked(1000)
    assert (handle.nbytes, handle.rounded) == (1000, 1024)
    assert pool._size_classes == {1000: 1024}
    again = pool.alloc_checked(1000)
    assert again.rounded == 1024 and pool.stats()["allocs"] == 2


def test_free_nowait_pools_the_block_when_the_lock_is_free():
    pool = PooledStorageManager(cpu(0), RoundStrategy())
    handle = pool.alloc(100)
    block = handle.buffer
    assert pool.free_nowait(handle) is True
    assert handle.freed and pool.stats()["bytes_in_use"] == 0 and pool.stats()["frees"] == 1
    assert pool.alloc(100).buffer is block
    with pytest.raises(StorageError, match="double free"):
        pool.free(handle)


def test_free_nowait_gives_up_without_waiting_when_the_lock_is_held():
    pool = PooledStorageManager(cpu(0), RoundStrategy())
    handle = pool.alloc(100)
    with pool._lock:  # as if the garbage collector struck inside alloc_checked on this thread
        assert pool.free_nowait(handle) is False
    assert not handle.freed and pool.stats()["bytes_in_use"] == 128
    pool.free(handle)  # what the safe point does later
    assert pool.stats()["bytes_in_use"] == 0


def test_free_nowait_leaves_unpooled_blocks_and_published_frees_to_free():
    unpooled = PooledStorageManager(cpu(0), UnpooledStrategy())
    handle = unpooled.alloc(100)
    assert unpooled.free_nowait(handle) is False and not handle.freed
    pooled = PooledStorageManager(cpu(0), RoundStrategy())
    other = pooled.alloc(100)
    with events.record(["storage.free"]):
        assert pooled.free_nowait(other) is False and not other.freed


def test_free_nowait_frees_and_publishes_when_only_event_buffers_listen():
    pool = PooledStorageManager(cpu(0), RoundStrategy())
    handle = pool.alloc(100)
    buffer = events.EventBuffer(10)
    with events.subscribe_buffer(buffer):  # appending runs no subscriber code: safe in a finalizer
        assert events.only_buffers
        assert pool.free_nowait(handle) is True and handle.freed
    (_, _, values), *_ = [raw for raw in buffer.take(10) if raw[0] == "storage.free"]
    assert values == (handle.id, "cpu(0)", 100, 128, True)  # what free() publishes for a pooled block
    other = pool.alloc(100)
    with events.subscribe_buffer(buffer), events.record(["kvstore.push"]):  # a callback somewhere: not safe
        assert not events.only_buffers
        assert pool.free_nowait(other) is False and not other.freed


def test_free_nowait_refuses_a_handle_of_another_manager():
    first = PooledStorageManager(cpu(0), RoundStrategy())
    second = PooledStorageManager(cpu(0), RoundStrategy())
    with pytest.raises(StorageError, match="not allocated by"):
        second.free_nowait(first.alloc(10))


def test_the_manager_lookup_follows_a_replaced_manager_table(monkeypatch):
    ctx = cpu(0)
    first = storage.manager(ctx)
    assert storage.manager(ctx) is first  # the same Context object: the remembered lookup
    monkeypatch.setattr(storage, "_managers", {})
    assert storage.manager(ctx) is not first


def test_a_blocks_view_travels_with_it_through_the_pool():
    pool = PooledStorageManager(cpu(0), RoundStrategy())
    first = pool.alloc(64)
    typed = np.ndarray((16,), np.float32, first.buffer)
    first.view = typed
    pool.free(first)
    assert first.view is None and first.buffer is None  # nothing left to scribble through
    second = pool.alloc(60)  # the same size class: the same block, with its view
    assert second.view is typed and second.buffer is typed.base
    assert pool.alloc(64).view is None  # a fresh block has none
