"""Scheduling behaviour: overlap, ordering, priorities, deletion, handles, bulking, lifecycle."""

from __future__ import annotations

import random
import threading
import time
import tracemalloc

import pytest

import framework as mx
from framework import events
from framework.base import EngineError, EngineTimeoutError, MXLabError
from framework.engine import Engine, FnProperty, NaiveEngine, create


def test_push_returns_before_the_function_runs_on_threaded_engines(threaded_engine):
    gate = threading.Event()
    var = threaded_engine.new_variable("x")
    ran = []
    threaded_engine.push_sync(lambda rc: (gate.wait(5), ran.append(1)), mx.cpu(), mutable_vars=[var])
    assert ran == []  # push returned while the function waits on the gate
    gate.set()
    threaded_engine.wait_for_var(var)
    assert ran == [1]


def test_naive_engine_runs_each_push_before_returning(make_engine):
    engine = make_engine("NaiveEngine")
    var = engine.new_variable()
    ran = []
    engine.push_sync(lambda rc: ran.append(rc.worker), mx.cpu(), mutable_vars=[var])
    assert ran == ["naive"]


@pytest.mark.parametrize("kind", ["ThreadedEngine", "ThreadedEnginePerDevice"])
def test_reads_between_two_writes_run_concurrently(make_engine, kind):
    engine = make_engine(kind, 2)
    var = engine.new_variable("x")
    both_reading = threading.Barrier(2, timeout=5)  # breaks unless both reads run at once
    order = []
    engine.push_sync(lambda rc: order.append("w1"), mx.cpu(), mutable_vars=[var])
    for name in ("r1", "r2"):
        engine.push_sync(lambda rc, n=name: (both_reading.wait(), order.append(n)), mx.cpu(), const_vars=[var])
    engine.push_sync(lambda rc: order.append("w2"), mx.cpu(), mutable_vars=[var])
    engine.wait_for_all(timeout=10)
    assert order[0] == "w1" and order[-1] == "w2"
    assert sorted(order[1:3]) == ["r1", "r2"]


def test_writes_to_one_variable_never_overlap(threaded_engine):
    var = threaded_engine.new_variable()
    active, overlaps = [0], []
    lock = threading.Lock()

    def write(rc):
        with lock:
            active[0] += 1
            overlaps.append(active[0])
        time.sleep(0.001)
        with lock:
            active[0] -= 1

    for _ in range(20):
        threaded_engine.push_sync(write, mx.cpu(), mutable_vars=[var])
    threaded_engine.wait_for_all(timeout=10)
    assert max(overlaps) == 1


@pytest.mark.parametrize("kind", ["ThreadedEngine", "ThreadedEnginePerDevice"])
def test_independent_chains_run_in_parallel(make_engine, kind):
    engine = make_engine(kind, 2)
    a, b = engine.new_variable("a"), engine.new_variable("b")
    meet = threading.Barrier(2, timeout=5)
    engine.push_sync(lambda rc: meet.wait(), mx.cpu(), mutable_vars=[a])
    engine.push_sync(lambda rc: meet.wait(), mx.cpu(), mutable_vars=[b])
    engine.wait_for_all(timeout=10)  # raises BrokenBarrierError if they did not overlap


@pytest.mark.parametrize("kind", ["ThreadedEngine", "ThreadedEnginePerDevice"])
def test_ready_operations_run_highest_priority_first(make_engine, kind):
    engine = make_engine(kind, 1)
    gate, started = threading.Event(), threading.Event()
    blocker = engine.new_variable("blocker")
    engine.push_sync(lambda rc: (started.set(), gate.wait(5)), mx.cpu(), mutable_vars=[blocker])
    assert started.wait(5)  # the single worker is now busy with the gate, however slow the machine
    order = []
    for priority in (0, 5, -1, 10, 5):
        var = engine.new_variable()
        engine.push_sync(lambda rc, p=priority: order.append(p), mx.cpu(), mutable_vars=[var], priority=priority)
    gate.set()
    engine.wait_for_all(timeout=10)
    assert order == [10, 5, 5, 0, -1]


def test_delete_variable_runs_after_pending_work_and_retires_the_variable(engine):
    var = engine.new_variable("doomed")
    log = []
    for i in range(5):
        engine.push_sync(lambda rc, i=i: (time.sleep(0.001), log.append(i)), mx.cpu(), mutable_vars=[var])
    with events.record(["engine.var_delete"]) as rec:
        engine.delete_variable(lambda rc: log.append("deleted"), mx.cpu(), var)
        engine.wait_for_all(timeout=10)
    assert log == [0, 1, 2, 3, 4, "deleted"]
    assert [e["var"] for e in rec.events] == [var.id]
    with pytest.raises(EngineError, match="was deleted"):
        engine.push_sync(lambda rc: None, mx.cpu(), mutable_vars=[var])
    with pytest.raises(EngineError, match="was deleted"):
        engine.delete_variable(None, mx.cpu(), var)


def test_operator_handles_are_reusable_and_deletable(engine):
    var = engine.new_variable()
    count = [0]

    def bump(rc):
        count[0] += 1

    handle = engine.new_operator(bump, mutable_vars=[var], name="bump")
    for _ in range(100):
        engine.push(handle, mx.cpu())
    engine.delete_operator(handle)
    engine.wait_for_all(timeout=10)
    assert count[0] == 100
    assert handle.fn is None  # the closure was released after the pending pushes ran
    with pytest.raises(EngineError, match="deleted"):
        engine.push(handle, mx.cpu())
    with pytest.raises(EngineError, match="already deleted"):
        engine.delete_operator(handle)


def test_async_operator_handle(engine):
    var = engine.new_variable()
    done = []

    def start(rc, on_complete):
        threading.Timer(0.01, lambda: (done.append(1), on_complete())).start()

    handle = engine.new_operator(start, mutable_vars=[var], is_async=True)
    engine.push(handle, mx.cpu())
    engine.push(handle, mx.cpu())
    engine.wait_for_var(var, timeout=10)
    assert done == [1, 1]


def test_push_with_profiling_false_is_not_published(threaded_engine):
    var = threaded_engine.new_variable()
    handle = threaded_engine.new_operator(lambda rc: None, mutable_vars=[var], name="quiet")
    with events.record(["engine.push", "engine.start", "engine.end"]) as rec:
        threaded_engine.push(handle, mx.cpu(), profiling=False)
        threaded_engine.push(handle, mx.cpu())
        threaded_engine.wait_for_all(timeout=10)
    pushed = [e["op"] for e in rec.events if e["kind"] == "engine.push" and e["name"] == "quiet"]
    assert len(pushed) == 1
    assert [e["kind"] for e in rec.events if e["op"] in pushed] == ["engine.push", "engine.start", "engine.end"]


def test_async_functions_complete_when_they_call_back(engine):
    var = engine.new_variable()
    log = []

    def later(rc, on_complete):
        threading.Timer(0.02, lambda: (log.append("async"), on_complete())).start()

    engine.push_async(later, mx.cpu(), mutable_vars=[var])
    engine.push_sync(lambda rc: log.append("after"), mx.cpu(), mutable_vars=[var])
    engine.wait_for_all(timeout=10)
    assert log == ["async", "after"]


def test_async_prop_runs_inline_without_a_worker_hop(threaded_engine):
    var = threaded_engine.new_variable()
    workers = []
    threaded_engine.push_async(
        lambda rc, done: (workers.append(rc.worker), done()), mx.cpu(), mutable_vars=[var], prop=FnProperty.ASYNC
    )
    threaded_engine.wait_for_all(timeout=10)
    assert workers == ["inline"]


def test_long_chain_of_inline_async_operations_does_not_recurse(threaded_engine):
    var = threaded_engine.new_variable()
    count = [0]

    def step(rc, done):
        count[0] += 1
        done()

    gate = threading.Event()
    threaded_engine.push_sync(lambda rc: gate.wait(5), mx.cpu(), mutable_vars=[var])
    for _ in range(5000):  # all become ready one after another when the gate opens
        threaded_engine.push_async(step, mx.cpu(), mutable_vars=[var], prop=FnProperty.ASYNC)
    gate.set()
    threaded_engine.wait_for_all(timeout=20)
    assert count[0] == 5000


def test_per_device_engine_routes_work_to_pools_by_device_and_property(make_engine):
    engine = make_engine("ThreadedEnginePerDevice", 2)
    seen = {}

    def record(key):
        return lambda rc: seen.setdefault(key, rc.worker)

    cases = {
        "cpu0": (mx.cpu(0), FnProperty.NORMAL),
        "cpu1": (mx.cpu(1), FnProperty.NORMAL),
        "copy": (mx.cpu(1), FnProperty.COPY_TO_GPU),
        "prio": (mx.cpu(0), FnProperty.CPU_PRIORITIZED),
    }
    for key, (ctx, prop) in cases.items():
        engine.push_sync(record(key), ctx, mutable_vars=[engine.new_variable()], prop=prop)
    engine.wait_for_all(timeout=10)
    assert seen["cpu0"].startswith("cpu(0)/normal/")
    assert seen["cpu1"].startswith("cpu(1)/normal/")
    assert seen["copy"].startswith("cpu(1)/copy/")
    assert seen["prio"].startswith("cpu/priority/")
    assert set(engine.workers()) >= {"cpu(0)/normal/0", "cpu(1)/normal/1", "cpu(1)/copy/0"}


def test_shared_pool_engine_uses_one_pool_for_every_device(make_engine):
    engine = make_engine("ThreadedEngine", 2)
    workers = set()
    for device in (0, 1, 2):
        engine.push_sync(lambda rc: workers.add(rc.worker), mx.cpu(device), mutable_vars=[engine.new_variable()])
    engine.wait_for_all(timeout=10)
    assert workers <= {"shared/0", "shared/1"}


def run_counter_program(engine, bulk_size):
    variables = [engine.new_variable(f"v{i}") for i in range(3)]
    state = [[0], [0], [0]]
    rng = random.Random(7)
    engine.set_bulk_size(bulk_size)
    with events.record(["engine.push"]) as rec:
        for _ in range(300):
            src, dst = rng.sample(range(3), 2)
            engine.push_sync(
                lambda rc, s=src, d=dst: state[d].append(state[d][-1] + state[s][-1] + 1),
                mx.cpu(),
                const_vars=[variables[src]],
                mutable_vars=[variables[dst]],
            )
        engine.wait_for_all(timeout=10)
    engine.set_bulk_size(1)
    ids = {v.id for v in variables}
    return state, len([e for e in rec.events if ids & set(e["writes"])])


@pytest.mark.parametrize("kind", ["ThreadedEngine", "ThreadedEnginePerDevice"])
def test_bulk_mode_gives_the_same_results_with_fewer_engine_operations(make_engine, kind):
    unbulked, pushes = run_counter_program(make_engine(kind, 2), 1)
    bulked, bulk_pushes = run_counter_program(make_engine(kind, 2), 16)
    assert bulked == unbulked
    assert pushes == 300
    assert bulk_pushes == 300 // 16 + 1


def test_bulk_segments_flush_on_wait_and_on_context_change(make_engine):
    engine = make_engine("ThreadedEnginePerDevice", 2)
    var0, var1 = engine.new_variable(), engine.new_variable()
    log = []
    with events.record(["engine.push"]) as rec, engine.bulk(100):
        engine.push_sync(lambda rc: log.append(0), mx.cpu(0), mutable_vars=[var0])
        engine.push_sync(lambda rc: log.append(1), mx.cpu(0), mutable_vars=[var0])
        engine.push_sync(lambda rc: log.append(rc.ctx.device_id), mx.cpu(1), mutable_vars=[var1])
        mine = [e for e in rec.events if {var0.id, var1.id} & set(e["writes"])]
        assert len(mine) == 1  # the cpu(0) segment went out when the context changed
        engine.wait_for_var(var1, timeout=10)  # a wait flushes the open cpu(1) segment
        assert log == [0, 1, 1]
    assert engine.bulk_size() == 1


def test_stop_finishes_work_refuses_pushes_and_start_resumes(threaded_engine):
    var = threaded_engine.new_variable()
    log = []
    threaded_engine.push_sync(lambda rc: (time.sleep(0.02), log.append(1)), mx.cpu(), mutable_vars=[var])
    threaded_engine.stop()
    assert log == [1]
    assert threaded_engine.stopped
    with pytest.raises(EngineError, match="stopped"):
        threaded_engine.push_sync(lambda rc: None, mx.cpu(), mutable_vars=[var])
    threaded_engine.start()
    threaded_engine.push_sync(lambda rc: log.append(2), mx.cpu(), mutable_vars=[var])
    threaded_engine.wait_for_var(var, timeout=10)
    assert log == [1, 2]


def test_push_from_four_threads_at_once_is_safe(engine):
    variables = [engine.new_variable(f"v{i}") for i in range(4)]
    counts = [0] * 4
    errors = []

    def pusher(seed):
        rng = random.Random(seed)
        try:
            for _ in range(1500):
                a, b = rng.sample(range(4), 2)  # opposite orders across threads on purpose

                def bump(rc, a=a, b=b):
                    counts[a] += 1
                    counts[b] += 1

                engine.push_sync(bump, mx.cpu(rng.randrange(2)), mutable_vars=[variables[a], variables[b]])
        except Exception as err:
            errors.append(err)

    threads = [threading.Thread(target=pusher, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    engine.wait_for_all(timeout=60)
    assert errors == []
    assert sum(counts) == 4 * 1500 * 2  # no lost update: every write to a var was exclusive


@pytest.mark.slow  # 100,000 operations: seconds
def test_one_hundred_thousand_tiny_operations_finish_without_growth(make_engine):
    engine = make_engine("ThreadedEnginePerDevice", 2)
    variables = [engine.new_variable() for _ in range(4)]

    def noop(rc):
        return None

    for i in range(2000):  # warm up pools, caches and free lists
        engine.push_sync(noop, mx.cpu(), mutable_vars=[variables[i & 3]])
    engine.wait_for_all(timeout=30)
    tracemalloc.start()
    baseline = tracemalloc.get_traced_memory()[0]
    for i in range(100_000):
        engine.push_sync(noop, mx.cpu(), const_vars=[variables[(i + 1) & 3]], mutable_vars=[variables[i & 3]])
    engine.wait_for_all(timeout=120)
    retained = tracemalloc.get_traced_memory()[0] - baseline
    tracemalloc.stop()
    assert engine.pending_operations() == []
    assert all(v.idle() for v in variables)
    assert retained < 1_000_000, f"{retained} bytes still held after 100,000 completed operations"


def test_wait_for_var_timeout_names_the_operation_that_never_completed(threaded_engine):
    var = threaded_engine.new_variable("stuck")
    callbacks = []
    threaded_engine.push_async(lambda rc, done: callbacks.append(done), mx.cpu(), mutable_vars=[var], name="forgetful")
    with pytest.raises(EngineTimeoutError, match=r"forgetful.*running"):
        threaded_engine.wait_for_var(var, timeout=0.2)
    with pytest.raises(EngineTimeoutError, match="forgetful"):
        threaded_engine.wait_for_all(timeout=0.2)
    callbacks[0]()  # complete it so the engine drains
    threaded_engine.wait_for_var(var, timeout=10)


def test_engine_events_describe_every_operation(engine):
    a, b = engine.new_variable("a"), engine.new_variable("b")
    with events.record() as rec:
        engine.push_sync(lambda rc: None, mx.cpu(), mutable_vars=[a], name="make_a", priority=3)
        engine.push_sync(lambda rc: None, mx.cpu(), const_vars=[a], mutable_vars=[b], name="a_to_b")
        engine.wait_for_var(b, timeout=10)
    pushes = [p for p in rec.of_kind("engine.push") if p["name"] in ("make_a", "a_to_b")]
    assert [(p["name"], p["reads"], p["writes"], p["priority"]) for p in pushes] == [
        ("make_a", [], [a.id], 3),
        ("a_to_b", [a.id], [b.id], 0),
    ]
    assert all(p["ctx"] == "cpu(0)" and p["prop"] == "normal" for p in pushes)
    ours = {p["op"] for p in pushes}
    starts = [e for e in rec.of_kind("engine.start") if e["op"] in ours]
    ends = [e for e in rec.of_kind("engine.end") if e["op"] in ours]
    assert sorted(e["op"] for e in starts) == sorted(e["op"] for e in ends) == sorted(p["op"] for p in pushes)
    assert all(e["error"] is None and e["stream"] is None and e["worker"] for e in ends)
    assert b.id in [e["var"] for e in rec.of_kind("engine.wait_begin")]
    assert b.id in [e["var"] for e in rec.of_kind("engine.wait_end")]
    t = [e["t_ns"] for e in rec.events]
    assert all(isinstance(x, int) for x in t)


def test_new_variable_publishes_an_event(engine):
    with events.record(["engine.var_new"]) as rec:
        var = engine.new_variable("weights")
    assert rec.events[0]["var"] == var.id and rec.events[0]["name"] == "weights"


def test_default_engine_comes_from_the_environment(monkeypatch):
    previous = Engine.set(None)
    try:
        monkeypatch.setenv("MXLAB_ENGINE_TYPE", "NaiveEngine")
        assert isinstance(Engine.get(), NaiveEngine)
        assert Engine.get() is Engine.get()
        Engine.set(None)
        monkeypatch.setenv("MXLAB_ENGINE_TYPE", "TurboEngine")
        with pytest.raises(MXLabError, match="MXLAB_ENGINE_TYPE.*NaiveEngine"):
            Engine.get()
        monkeypatch.setenv("MXLAB_ENGINE_TYPE", "ThreadedEngine")
        monkeypatch.setenv("MXLAB_CPU_WORKER_NTHREADS", "three")
        with pytest.raises(MXLabError, match="MXLAB_CPU_WORKER_NTHREADS must be an integer"):
            create()
    finally:
        Engine.set(previous)


def test_module_level_bulk_helpers_use_the_default_engine(make_engine):
    engine = make_engine("ThreadedEngine", 2)
    with mx.engine.use(engine):
        assert Engine.get() is engine
        with mx.engine.bulk(8):
            assert engine.bulk_size() == 8
        assert mx.engine.set_bulk_size(4) == 1
        assert mx.engine.set_bulk_size(1) == 4
    assert Engine.get() is not engine


@pytest.mark.gpu
def test_gpu_workers_hand_each_function_a_stream(make_engine):
    engine = make_engine("ThreadedEnginePerDevice", 2)
    streams = []
    engine.push_sync(lambda rc: streams.append(rc.stream), mx.gpu(0), mutable_vars=[engine.new_variable()])
    engine.push_sync(
        lambda rc: streams.append(rc.stream),
        mx.gpu(0),
        mutable_vars=[engine.new_variable()],
        prop=FnProperty.COPY_TO_GPU,
    )
    engine.wait_for_all(timeout=30)
    assert all(s is not None for s in streams)
    assert streams[0] is not streams[1]  # compute and copy workers own different streams
