"""The ResourceManager: reproducible random streams on every engine, temporary space, seeding."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import framework
from framework import backend, engine, resource, storage
from framework import random as mx_random
from framework.base import ContextError, EngineError, MXLabError
from framework.context import cpu, gpu
from framework.engine import ENGINE_TYPES
from framework.resource import DEFAULT_SEED, ResourceError, ResourceManager, ResourceRequest

RANDOM, TEMP = ResourceRequest.RANDOM, ResourceRequest.TEMP_SPACE
needs_gpu = pytest.mark.skipif(framework.num_gpus() == 0, reason="needs a CUDA GPU")


@pytest.fixture(autouse=True)
def fresh_state(monkeypatch):
    """Process-wide seeds, storage pools and settings start clean in every test."""
    for name in ("MXLAB_SEED", "MXLAB_CPU_TEMP_COPY", "MXLAB_GPU_TEMP_COPY", "MXLAB_MEM_POOL_TYPE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(resource, "_seeds", resource._Seeds())
    monkeypatch.setattr(storage, "_managers", {})


@pytest.fixture
def build_engine():
    """``build_engine(type)`` builds an engine (2 workers when threaded); all are stopped after the test."""
    made = []

    def make(engine_type="ThreadedEnginePerDevice"):
        workers = None if engine_type == "NaiveEngine" else 2
        eng = engine.create(engine_type, num_workers=workers)
        made.append(eng)
        return eng

    yield make
    for eng in made:
        eng.stop()


def reference(seed, ctx, count, size=3):
    """What a device's stream must produce: PCG64 seeded from (seed, device type, device id)."""
    gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, ctx.device_typeid, ctx.device_id])))
    return [gen.normal(size=size) for _ in range(count)]


def push_draws(eng, res, out, count, *, size=3, slow_first=False):
    """Push ``count`` draws from ``res`` (each mutating res.var), appending to ``out``."""
    for i in range(count):

        def draw(run_ctx, i=i):
            if slow_first and i == 0:
                time.sleep(0.05)  # a reseed pushed after this must still wait for it
            out.append(res.generator.normal(size=size))

        eng.push_sync(draw, res.ctx, mutable_vars=[res.var], name=f"draw{i}")


def as_list(arrays):
    return [a.tolist() for a in arrays]


# --------------------------------------------------------------------------- random streams
def test_seeded_draws_are_identical_on_every_engine_type(build_engine):
    results = {}
    for engine_type in ENGINE_TYPES:
        eng = build_engine(engine_type)
        with engine.use(eng):
            mx_random.seed(42)
            manager = ResourceManager.get()
            streams = {ctx: [] for ctx in (cpu(0), cpu(1))}
            for ctx, out in streams.items():
                push_draws(eng, manager.request(ctx, RANDOM), out, 5, slow_first=True)
            mx_random.seed(7)  # ordered after the draws above, before those below
            for ctx, out in streams.items():
                push_draws(eng, manager.request(ctx, RANDOM), out, 5)
            eng.wait_for_all()
        results[engine_type] = {ctx: as_list(out) for ctx, out in streams.items()}
    assert results["NaiveEngine"] == results["ThreadedEngine"] == results["ThreadedEnginePerDevice"]
    for ctx in (cpu(0), cpu(1)):
        expected = as_list(reference(42, ctx, 5) + reference(7, ctx, 5))
        assert results["ThreadedEngine"][ctx] == expected


def test_contexts_draw_different_but_reproducible_streams(build_engine):
    eng = build_engine("ThreadedEngine")
    manager = ResourceManager(eng)
    first = {ctx: [] for ctx in (cpu(0), cpu(1))}
    again = {ctx: [] for ctx in (cpu(0), cpu(1))}
    for outputs in (first, again):
        manager.seed(3)
        for ctx, out in outputs.items():
            push_draws(eng, manager.request(ctx, RANDOM), out, 4)
        eng.wait_for_all()
    assert as_list(first[cpu(0)]) != as_list(first[cpu(1)])
    for ctx in (cpu(0), cpu(1)):
        assert as_list(first[ctx]) == as_list(again[ctx]) == as_list(reference(3, ctx, 4))


def test_seeding_one_context_leaves_the_others_alone(build_engine):
    eng = build_engine("ThreadedEnginePerDevice")
    manager = ResourceManager(eng)
    manager.seed(5)
    res0, res1 = manager.request(cpu(0), RANDOM), manager.request(cpu(1), RANDOM)
    out0, out1 = [], []
    push_draws(eng, res0, out0, 1)
    push_draws(eng, res1, out1, 1)
    manager.seed(11, cpu(1))
    push_draws(eng, res0, out0, 1)
    push_draws(eng, res1, out1, 1)
    eng.wait_for_all()
    assert as_list(out0) == as_list(reference(5, cpu(0), 2))  # cpu(0) continued its stream
    assert as_list(out1) == as_list(reference(5, cpu(1), 1) + reference(11, cpu(1), 1))
    assert (res0.seed_state, res1.seed_state) == (5, 11)


def test_a_device_seeded_before_first_use_starts_from_its_seed(build_engine):
    eng = build_engine("NaiveEngine")
    manager = ResourceManager(eng)
    manager.seed(9, cpu(2))
    out = []
    push_draws(eng, manager.request(cpu(2), RANDOM), out, 2)
    push_draws(eng, manager.request(cpu(3), RANDOM), out, 1)
    assert as_list(out) == as_list(reference(9, cpu(2), 2) + reference(DEFAULT_SEED, cpu(3), 1))
    manager.seed(4)  # seeding every device forgets the per-device seed
    assert resource._seeds.for_device(cpu(2)) == 4


def test_unseeded_generators_use_the_fixed_default_or_mxlab_seed(build_engine, monkeypatch):
    eng = build_engine("NaiveEngine")
    out = []
    push_draws(eng, ResourceManager(eng).request(cpu(0), RANDOM), out, 1)
    assert as_list(out) == as_list(reference(DEFAULT_SEED, cpu(0), 1)) and DEFAULT_SEED == 0
    monkeypatch.setenv("MXLAB_SEED", "123")
    out = []
    push_draws(eng, ResourceManager(eng).request(cpu(0), RANDOM), out, 1)
    assert as_list(out) == as_list(reference(123, cpu(0), 1))
    monkeypatch.setenv("MXLAB_SEED", "lots")
    with pytest.raises(MXLabError, match="MXLAB_SEED"):
        ResourceManager(eng).request(cpu(0), RANDOM)


def test_a_seed_set_under_one_engine_carries_to_a_new_engine(build_engine):
    with engine.use(build_engine("NaiveEngine")):
        mx_random.seed(77)
    eng = build_engine("ThreadedEngine")
    with engine.use(eng):
        out = []
        push_draws(eng, ResourceManager.get().request(cpu(0), RANDOM), out, 1)
        eng.wait_for_all()
    assert as_list(out) == as_list(reference(77, cpu(0), 1))


# --------------------------------------------------------------------------- one manager per engine
def test_each_engine_has_its_own_manager(build_engine):
    first, second = build_engine("NaiveEngine"), build_engine("ThreadedEngine")
    with engine.use(first):
        manager = ResourceManager.get()
        assert ResourceManager.get() is manager
        res = manager.request(cpu(0), RANDOM)
        with engine.use(second):
            other = ResourceManager.get()
            assert other is not manager
            assert other.request(cpu(0), RANDOM) is not res
            with pytest.raises(EngineError, match="another engine"):
                second.push_sync(lambda run_ctx: None, cpu(0), mutable_vars=[res.var])
    assert res.var.engine_id == first.id
    assert manager.request(cpu(0), RANDOM) is res  # one random resource per context


def test_request_validates_its_arguments(build_engine):
    manager = ResourceManager(build_engine("NaiveEngine"))
    with pytest.raises(ResourceError, match="ResourceRequest"):
        manager.request(cpu(0), "random")
    with pytest.raises(ContextError, match="expected a Context"):
        manager.request("cpu", RANDOM)
    with pytest.raises(ResourceError, match="expected an Engine"):
        ResourceManager("engine")


@pytest.mark.skipif(framework.num_gpus() > 0, reason="checks the no-GPU error")
def test_requesting_a_gpu_resource_without_a_gpu_says_so(build_engine):
    with pytest.raises(ContextError, match="no GPU"):
        ResourceManager(build_engine("NaiveEngine")).request(gpu(0), RANDOM)


# --------------------------------------------------------------------------- temporary space
def test_temp_space_grows_to_the_largest_request_and_is_reused(build_engine):
    space = ResourceManager(build_engine("NaiveEngine")).request(cpu(0), TEMP)
    small = space.get_space((10,), np.float32)
    first = space.handle
    assert small.shape == (10,) and small.dtype == np.float32 and space.capacity == 64
    big = space.get_space((100,), "float64")  # 800 bytes: grows, the old block is freed
    grown = space.handle
    assert grown is not first and first.freed and space.capacity == 1024
    again = space.get_space((5, 5), np.int32)  # fits: same block, no allocation
    assert space.handle is grown and again.shape == (5, 5) and again.dtype == np.int32
    assert np.shares_memory(big, again)
    empty = space.get_space((0, 3), np.float16)
    assert empty.shape == (0, 3) and space.handle is grown
    stats = storage.stats(cpu(0))
    assert (stats["allocs"], stats["frees"], stats["bytes_in_use"]) == (2, 1, 1024)


def test_temp_space_copies_are_handed_out_round_robin(build_engine, monkeypatch):
    manager = ResourceManager(build_engine("NaiveEngine"))
    handed = [manager.request(cpu(0), TEMP) for _ in range(9)]
    assert len({id(s) for s in handed[:4]}) == 4
    assert handed[4:8] == handed[:4] and handed[8] is handed[0]
    assert len({s.var.id for s in handed[:4]}) == 4  # each copy has its own variable
    assert manager.request(cpu(1), TEMP) not in handed
    monkeypatch.setenv("MXLAB_CPU_TEMP_COPY", "2")
    manager = ResourceManager(build_engine("NaiveEngine"))
    handed = [manager.request(cpu(0), TEMP) for _ in range(4)]
    assert handed[0] is handed[2] and handed[1] is handed[3] and handed[0] is not handed[1]
    monkeypatch.setenv("MXLAB_CPU_TEMP_COPY", "0")
    with pytest.raises(MXLabError, match="MXLAB_CPU_TEMP_COPY"):
        ResourceManager(build_engine("NaiveEngine")).request(cpu(0), TEMP)


def test_users_of_one_temp_copy_are_serialized_by_its_variable(build_engine):
    eng = build_engine("ThreadedEngine")
    space = ResourceManager(eng).request(cpu(0), TEMP)
    overlaps, active = [], []
    lock = threading.Lock()

    def use_space(run_ctx, tag):
        with lock:
            active.append(tag)
            overlaps.append(len(active))
        scratch = space.get_space((256,), np.int64)
        scratch[:] = tag
        time.sleep(0.01)
        assert (scratch == tag).all()
        with lock:
            active.remove(tag)

    for tag in range(6):
        eng.push_sync(lambda run_ctx, tag=tag: use_space(run_ctx, tag), cpu(0), mutable_vars=[space.var])
    eng.wait_for_all()
    assert overlaps == [1] * 6


@pytest.mark.parametrize("shape", ["abc", 5, (2, -1), (2.0, 3), (True,), None, (2, None)])
def test_get_space_rejects_bad_shapes(build_engine, shape):
    space = ResourceManager(build_engine("NaiveEngine")).request(cpu(0), TEMP)
    with pytest.raises(ResourceError, match="shape must"):
        space.get_space(shape, np.float32)
    assert space.handle is None


@pytest.mark.parametrize("dtype", ["not_a_dtype", object, "U4", "datetime64[s]"])
def test_get_space_rejects_bad_dtypes(build_engine, dtype):
    space = ResourceManager(build_engine("NaiveEngine")).request(cpu(0), TEMP)
    with pytest.raises(ResourceError, match="numeric dtype"):
        space.get_space((2,), dtype)


def test_get_space_accepts_numpy_integer_dimensions(build_engine):
    space = ResourceManager(build_engine("NaiveEngine")).request(cpu(0), TEMP)
    assert space.get_space([np.int64(2), 3], np.uint8).shape == (2, 3)


# --------------------------------------------------------------------------- mx.random.seed
@pytest.mark.parametrize("bad", [1.5, "1", True, None, -1, [1]])
def test_random_seed_requires_a_non_negative_int(build_engine, bad):
    with engine.use(build_engine("NaiveEngine")), pytest.raises(ResourceError, match="seed_state must be") as info:
        mx_random.seed(bad)
    assert isinstance(info.value, ValueError)  # as MXNet's mx.random.seed raises


@pytest.mark.parametrize("ctx", ["cpu", "ALL", 0, None])
def test_random_seed_requires_all_or_a_context(build_engine, ctx):
    with engine.use(build_engine("NaiveEngine")), pytest.raises(ResourceError, match="'all' or a Context"):
        mx_random.seed(1, ctx)


def test_random_seed_with_a_context_reseeds_only_that_device(build_engine):
    eng = build_engine("NaiveEngine")
    with engine.use(eng):
        manager = ResourceManager.get()
        res0, res1 = manager.request(cpu(0), RANDOM), manager.request(cpu(1), RANDOM)
        mx_random.seed(np.int64(8))
        mx_random.seed(21, cpu(1))
    assert (res0.seed_state, res1.seed_state) == (8, 21)
    out0, out1 = [], []
    push_draws(eng, res0, out0, 1)
    push_draws(eng, res1, out1, 1)
    assert as_list(out0) == as_list(reference(8, cpu(0), 1))
    assert as_list(out1) == as_list(reference(21, cpu(1), 1))


# --------------------------------------------------------------------------- GPU
@pytest.mark.gpu
@needs_gpu
def test_gpu_draws_are_reproducible_across_engines(build_engine):
    results = []
    for engine_type in ENGINE_TYPES:
        eng = build_engine(engine_type)
        with engine.use(eng):
            mx_random.seed(42)
            out = []
            push_draws(eng, ResourceManager.get().request(gpu(0), RANDOM), out, 3)
            eng.wait_for_all()
        results.append([backend.array_module(gpu(0)).asnumpy(a).tolist() for a in out])
    assert results[0] == results[1] == results[2]


@pytest.mark.gpu
@needs_gpu
def test_gpu_temp_space_is_one_device_block(build_engine):
    manager = ResourceManager(build_engine("NaiveEngine"))
    space = manager.request(gpu(0), TEMP)
    assert manager.request(gpu(0), TEMP) is space  # one copy per GPU by default
    scratch = space.get_space((4, 4), np.float32)
    assert isinstance(scratch, backend.array_module(gpu(0)).ndarray) and scratch.shape == (4, 4)
