"""``b = a + 1``'s direct path (``imperative.invoke_single`` and ``Engine.run_now_into_new``).

It must behave exactly as the general path: same values, same order behind pending work,
same errors, autograd and events; only cheaper when nothing stands in its way.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import framework as mx
from framework import events, storage
from framework.base import EngineError, MXLabError
from framework.engine import Engine
from framework.ndarray import imperative
from framework.operator import registry
from framework.operator.infer import elemwise_shape, elemwise_type
from framework.operator.registry import register


@pytest.fixture
def default_engine(make_engine, monkeypatch):
    """A fresh ThreadedEnginePerDevice installed as the process-wide engine for one test, and an
    empty call-pattern cache of the test's own: the first call of a pattern is then the first in
    this test (earlier tests learned the shared cache's patterns, and may have filled it)."""
    monkeypatch.setattr(imperative, "_call_cache", {})
    engine = make_engine("ThreadedEnginePerDevice", 2)
    previous = Engine.set(engine)
    yield engine
    engine.wait_for_all(timeout=10)
    Engine.set(previous)


def _count_direct_runs(engine, monkeypatch):
    runs = []
    real = engine.run_now_into_new

    def counting(*args):
        ran = real(*args)
        runs.append(ran)
        return ran

    monkeypatch.setattr(engine, "run_now_into_new", counting)
    return runs


def test_a_repeated_call_runs_directly_with_the_same_values(default_engine, monkeypatch):
    runs = _count_direct_runs(default_engine, monkeypatch)
    a = mx.nd.array([1.0, 2.0, 3.0])
    a.wait_to_read()  # its filling went to a worker: an input still being written is pushed, not run directly
    results = [a + 1 for _ in range(3)]
    assert runs == [True, True]  # the first call learns the pattern through invoke
    for b in results:
        assert b.asnumpy().tolist() == [2.0, 3.0, 4.0]
    assert (2 - a).asnumpy().tolist() == [1.0, 0.0, -1.0]  # a reversed scalar operator too
    assert (a * 0.5).dtype == np.float32


def test_an_input_with_pending_work_is_pushed_and_waits_for_it(default_engine, monkeypatch):
    a = mx.nd.zeros((4,))
    _ = a + 1  # the pattern is known
    mx.nd.waitall()
    runs = _count_direct_runs(default_engine, monkeypatch)
    gate = threading.Event()
    data = a._data
    default_engine.push_sync(lambda rc: (gate.wait(5), data.fill(5.0)), mx.cpu(), [], [a._chunk.var], name="slow")
    b = a + 1
    assert runs == [False]  # the input was busy: an ordinary push, queued behind the writer
    gate.set()
    assert b.asnumpy().tolist() == [6.0] * 4


def _fail_on_negative(attrs, op_ctx, inputs, req, outputs):
    if (inputs[0] < 0).any():
        raise ValueError("negative input")
    outputs[0][...] = inputs[0]


register("_test_fail_on_negative", override=True).set_num_inputs(1).set_infer_shape(elemwise_shape).set_infer_type(
    elemwise_type
).set_compute(_fail_on_negative)


def test_an_error_in_the_direct_path_travels_with_the_output(default_engine, monkeypatch):
    op = registry.get("_test_fail_on_negative")
    attrs = imperative.parse_attrs(op, {})
    imperative.invoke_single(op, attrs, mx.nd.ones((3,))).wait_to_read()  # learn the pattern
    runs = _count_direct_runs(default_engine, monkeypatch)
    bad = mx.nd.array([1.0, -1.0, 2.0])
    bad.wait_to_read()
    out = imperative.invoke_single(op, attrs, bad)  # returns: the error is the output's
    assert runs == [True]
    with pytest.raises(ValueError, match="negative input"):
        out.asnumpy()
    assert bad.asnumpy().tolist() == [1.0, -1.0, 2.0]  # the input is untouched and not poisoned


def test_autograd_recording_takes_the_taped_path(default_engine):
    x = mx.nd.array([1.0, 2.0])
    _ = x * 3.0  # the pattern is known, so only the recording flag sends it elsewhere
    x.attach_grad()
    with mx.autograd.record():
        y = x * 3.0
    y.backward()
    assert x.grad.asnumpy().tolist() == [3.0, 3.0]


def test_with_a_listener_the_operation_is_published_as_an_inline_one(default_engine):
    a = mx.nd.ones((4,))
    _ = a + 1
    mx.nd.waitall()
    with events.record(["engine.push", "engine.start"]) as rec:
        b = a + 1
        mx.nd.waitall()
    pushed = [e for e in rec.events if e["kind"] == "engine.push" and e["name"] == "_plus_scalar"]
    started = [e["worker"] for e in rec.events if e["kind"] == "engine.start" and e["op"] == pushed[0]["op"]]
    assert len(pushed) == 1 and started == ["inline"]
    assert b.asnumpy().tolist() == [2.0] * 4


def test_large_arrays_go_to_the_workers(default_engine, monkeypatch):
    a = mx.nd.ones((default_engine.inline_max_elements,))
    _ = a + 1
    runs = _count_direct_runs(default_engine, monkeypatch)
    b = a + 1
    assert runs == []  # not even asked: the call touches more elements than run inline
    np.testing.assert_allclose(b.asnumpy(), 2.0)


def test_bad_inputs_are_named_as_on_the_general_path(default_engine, make_engine):
    op = registry.get("_plus_scalar")
    attrs = imperative.parse_attrs(op, {"scalar": 1.0})
    with pytest.raises(MXLabError, match="_plus_scalar: input 'data' must be an NDArray, got list"):
        imperative.invoke_single(op, attrs, [1.0, 2.0])
    other = make_engine("ThreadedEngine", 1)
    Engine.set(other)
    try:
        elsewhere = mx.nd.ones((4,))  # made by another engine than the one that will compute
        _ = elsewhere + 1
    finally:
        Engine.set(default_engine)
    with pytest.raises(EngineError, match="another engine"):
        _ = elsewhere + 1


# ---------------------------------------------------------------------- ``a += 1``: invoke_in_place, run_now_in_place
def _count_in_place_runs(engine, monkeypatch):
    runs = []
    real = engine.run_now_in_place

    def counting(*args):
        ran = real(*args)
        runs.append(ran)
        return ran

    monkeypatch.setattr(engine, "run_now_in_place", counting)
    return runs


def test_in_place_repeats_run_directly_with_the_values_and_versions_of_the_general_path(default_engine, monkeypatch):
    runs = _count_in_place_runs(default_engine, monkeypatch)
    a = mx.nd.array([1.0, 2.0, 3.0])
    a.wait_to_read()
    data, version = a._data, a._chunk.var.version
    for _ in range(3):
        a += 1
    a -= 0.5  # another operator: its own pattern, learned through invoke
    a -= 0.5
    assert runs == [True, True, True]  # the first call of each pattern goes through invoke
    assert a._data is data  # written in place: no new array
    assert a.asnumpy().tolist() == [3.0, 4.0, 5.0]
    assert a._chunk.var.version == version + 5  # one new version per write, as complete_write gives


def test_in_place_looks_up_the_key_invoke_stored(default_engine):
    """``invoke_in_place`` repeats invoke's key for one input with out=: if the two drift apart, it never hits."""
    op = registry.get("_mul_scalar")
    attrs = imperative.parse_attrs(op, {"scalar": 2.0})
    a = mx.nd.ones((2, 3), dtype="float64")
    imperative.invoke(op, [a], out=a, attrs=attrs)
    (key,) = [key for key in imperative._call_cache if key[0] is attrs]
    data = a._data
    assert key == (attrs, "cpu", 0, data.shape, data.dtype, (data.shape, data.dtype))
    assert imperative._call_cache[key].direct_compute is not None


def test_in_place_on_a_busy_array_is_pushed_and_ordered_behind_its_reader_and_writer(default_engine, monkeypatch):
    a = mx.nd.zeros((4,))
    a += 1  # the pattern is known
    mx.nd.waitall()
    runs = _count_in_place_runs(default_engine, monkeypatch)
    gate = threading.Event()
    data = a._data
    seen = []
    default_engine.push_sync(lambda rc: (gate.wait(5), seen.append(data.copy())), mx.cpu(), [a._chunk.var], [])
    a += 1  # a reader is pending: the write must wait for it
    assert runs == [False]
    default_engine.push_sync(lambda rc: data.fill(10.0), mx.cpu(), [], [a._chunk.var], name="fill")
    a += 1  # a writer is queued: this write comes after it
    assert runs == [False, False]
    gate.set()
    assert a.asnumpy().tolist() == [11.0] * 4
    assert seen[0].tolist() == [1.0] * 4  # the reader saw the value from before both writes


def test_in_place_waits_for_its_grant_while_another_thread_holds_the_array(default_engine):
    a = mx.nd.zeros((8,))
    a += 1
    mx.nd.waitall()
    gate = threading.Event()
    data = a._data
    default_engine.push_sync(lambda rc: (gate.wait(5), data.fill(100.0)), mx.cpu(), [], [a._chunk.var], name="slow")
    done = []

    def add_from_another_thread():
        b = a  # the same array
        b += 1
        done.append(True)

    thread = threading.Thread(target=add_from_another_thread)
    thread.start()
    thread.join(5)
    assert done  # the push returned at once: the write was queued, not waited for
    gate.set()
    assert a.asnumpy().tolist() == [101.0] * 8


def test_an_error_in_place_poisons_the_array_and_what_reads_it(default_engine, monkeypatch):
    op = registry.get("_test_fail_on_negative")
    attrs = imperative.parse_attrs(op, {})
    warm = mx.nd.ones((3,))
    imperative.invoke_in_place(op, attrs, warm)  # learn the patterns
    warm += 1
    warm.wait_to_read()
    runs = _count_in_place_runs(default_engine, monkeypatch)
    bad = mx.nd.array([1.0, -1.0, 2.0])
    bad.wait_to_read()
    imperative.invoke_in_place(op, attrs, bad)  # returns: the error is the array's now
    assert runs == [True]
    bad += 1  # the variable carries the error: not granted directly, skipped on the general path
    assert runs == [True, False]
    with pytest.raises(ValueError, match="negative input"):
        bad.wait_to_read()
    bad += 1  # the error was reported once and cleared: the next write runs directly again
    assert runs == [True, False, True]
    mx.nd.waitall()


def test_in_place_under_autograd_recording_takes_the_taped_path(default_engine, monkeypatch):
    x = mx.nd.array([1.0, 2.0])
    x += 1
    x.attach_grad()
    runs = _count_in_place_runs(default_engine, monkeypatch)
    with mx.autograd.record():
        y = x * 2.0
        y += 3.0
    assert runs == []  # recording: invoke handles it (and the tape), never the direct path
    y.backward()
    assert x.grad.asnumpy().tolist() == [2.0, 2.0]
    assert y.asnumpy().tolist() == [7.0, 9.0]


def test_in_place_with_a_listener_publishes_one_inline_operation(default_engine):
    a = mx.nd.ones((4,))
    a += 1
    mx.nd.waitall()
    with events.record(["engine.push", "engine.start"]) as rec:
        a += 1
        mx.nd.waitall()
    pushed = [e for e in rec.events if e["kind"] == "engine.push" and e["name"] == "_plus_scalar"]
    started = [e["worker"] for e in rec.events if e["kind"] == "engine.start" and e["op"] == pushed[0]["op"]]
    assert len(pushed) == 1 and started == ["inline"]
    assert pushed[0]["writes"] == [a._chunk.var.id] and pushed[0]["reads"] == []
    assert a.asnumpy().tolist() == [3.0] * 4


def test_in_place_inside_bulk_is_bulked(default_engine, monkeypatch):
    a = mx.nd.zeros((4,))
    a += 1
    mx.nd.waitall()
    runs = _count_in_place_runs(default_engine, monkeypatch)
    with mx.engine.bulk(8):
        for _ in range(5):
            a += 1
        assert runs == [False] * 5  # declined: the pushes go into the open segment
        assert default_engine._bulk.any_open()
    assert a.asnumpy().tolist() == [6.0] * 4


def test_in_place_inside_bulk_computes_in_order(default_engine):
    a = mx.nd.zeros((4,))
    a += 1
    with mx.engine.bulk(4):
        for _ in range(10):
            a += 1
            a *= 2.0
    assert a.asnumpy().tolist() == [3070.0] * 4  # ((1+1)*2+1)*2 ... ten times: 3 * 2**10 - 2


def test_in_place_bad_arrays_are_named_as_on_the_general_path(default_engine, make_engine):
    op = registry.get("_plus_scalar")
    attrs = imperative.parse_attrs(op, {"scalar": 1.0})
    with pytest.raises(MXLabError, match="_plus_scalar: input 'data' must be an NDArray, got list"):
        imperative.invoke_in_place(op, attrs, [1.0, 2.0])
    other = make_engine("ThreadedEngine", 1)
    Engine.set(other)
    try:
        elsewhere = mx.nd.ones((4,))  # made by another engine than the one that will compute
        elsewhere += 1
    finally:
        Engine.set(default_engine)
    with pytest.raises(EngineError, match="another engine"):
        elsewhere += 1


def test_in_place_on_a_view_writes_only_the_view(default_engine):
    a = mx.nd.zeros((6,))
    view = a[1:3]
    for _ in range(3):
        view += 1
    assert a.asnumpy().tolist() == [0.0, 3.0, 3.0, 0.0, 0.0, 0.0]


def test_in_place_on_the_naive_engine(make_engine, monkeypatch):
    monkeypatch.setattr(imperative, "_call_cache", {})
    previous = Engine.set(make_engine("NaiveEngine"))
    try:
        a = mx.nd.ones((3,))
        for _ in range(3):
            a += 1  # the base engine declines the direct path: the ordinary push runs it
        assert a.asnumpy().tolist() == [4.0] * 3
    finally:
        Engine.set(previous)


def test_scalar_attrs_are_parse_attrs_of_the_scalar_keyword():
    """The scalar operators' front end finds the attributes parse_attrs stored, for every kind of float."""
    op = registry.get("_mul_scalar")
    for value in (1.0, 2.5, -3.0, 0.0, -0.0, float("nan"), float("inf")):
        attrs = imperative.scalar_attrs(op, value)
        assert attrs is imperative.parse_attrs(op, {"scalar": value})
        assert attrs is imperative.scalar_attrs(op, value)
    zero, negative_zero = imperative.scalar_attrs(op, 0.0), imperative.scalar_attrs(op, -0.0)
    assert zero is not negative_zero  # signed zeros stay apart: x * -0.0 keeps its sign
    x = mx.nd.array([1.0, -2.0])
    assert np.signbit((x * -0.0).asnumpy()).tolist() == [True, False]
    assert np.isnan((x * float("nan")).asnumpy()).all()


def test_storage_stats_still_count_the_direct_path(default_engine):
    """alloc and free keep fewer counters; stats() derives allocs and bytes_pooled from the others."""
    ctx = mx.cpu(5)
    a = mx.nd.ones((16,), ctx=ctx)
    b = a + 1
    mx.nd.waitall()
    storage.reset_stats(ctx)
    for _ in range(10):
        b = a + 1
    stats = storage.stats(ctx)
    assert stats["allocs"] == stats["hits"] + stats["misses"] == 10
    assert stats["frees"] == 10  # each earlier result died when the next replaced it
    assert stats["bytes_in_use"] == 2 * 64  # a and b, 16 float32 each
    pooled = stats["bytes_pooled"]
    del b
    after = storage.stats(ctx)
    assert after["bytes_pooled"] == pooled + 64 and after["bytes_in_use"] == 64 and after["frees"] == 11


# ---------------------------------------------------------------------- the per-thread flags the direct paths read
def test_the_flag_counts_follow_every_thread_setting_its_autograd_flags(default_engine):
    counts = imperative.FLAGS_ON
    assert counts == {"recording": 0, "training": 0}
    with mx.autograd.record():
        assert counts == {"recording": 1, "training": 1}
        with mx.autograd.record():  # nested: the flag does not change, nor does the count
            assert counts["recording"] == 1
        with mx.autograd.pause():
            assert counts == {"recording": 0, "training": 0}
        assert counts == {"recording": 1, "training": 1}
    assert counts == {"recording": 0, "training": 0}
    with mx.autograd.train_mode():
        assert counts == {"recording": 0, "training": 1}
    assert counts["training"] == 0


def test_one_thread_recording_leaves_another_threads_calls_on_the_direct_paths(default_engine, monkeypatch):
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    _ = x * 2.0
    x *= 1.0
    mx.nd.waitall()
    single = _count_direct_runs(default_engine, monkeypatch)
    in_place = _count_in_place_runs(default_engine, monkeypatch)
    recording, other_done = threading.Event(), threading.Event()
    seen = {}

    def other_thread():
        recording.wait(5)  # the main thread records now: the count is 1, this thread's flag is off
        seen["count"] = imperative.FLAGS_ON["recording"]
        z = mx.nd.array([3.0, 4.0])
        z.wait_to_read()
        seen["z"] = (z * 2.0).asnumpy().tolist()
        z *= 1.0
        other_done.set()

    thread = threading.Thread(target=other_thread)
    thread.start()
    with mx.autograd.record():
        recording.set()
        assert other_done.wait(5)
        y = x * 2.0  # this thread records: the taped path
    thread.join(5)
    assert seen == {"count": 1, "z": [6.0, 8.0]}
    assert single == [True] and in_place == [True]  # the other thread's two calls, not the recorded one
    y.backward()
    assert x.grad.asnumpy().tolist() == [2.0, 2.0]


def test_the_bulking_count_lets_other_threads_run_directly(default_engine, monkeypatch):
    a = mx.nd.zeros((4,))
    a += 1
    _ = a + 1
    mx.nd.waitall()
    assert default_engine.threads_bulking == 0
    runs = _count_direct_runs(default_engine, monkeypatch)
    inside, other_done = threading.Event(), threading.Event()
    seen = []

    def other_thread():
        inside.wait(5)
        seen.append(default_engine.threads_bulking)
        seen.append((a + 1).asnumpy().tolist())  # not bulking itself: runs directly
        other_done.set()

    thread = threading.Thread(target=other_thread)
    thread.start()
    with mx.engine.bulk(8):
        assert default_engine.threads_bulking == 1
        b = a + 1  # this thread bulks: declined, collected in its segment
        inside.set()
        assert other_done.wait(5)
    thread.join(5)
    assert default_engine.threads_bulking == 0
    assert seen[0] == 1 and runs[0] is False and runs[1] is True
    assert b.asnumpy().tolist() == [2.0] * 4 and seen[1] == [2.0] * 4
