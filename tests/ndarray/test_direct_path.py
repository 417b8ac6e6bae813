"""``b = a + 1``'s direct path (``imperative.invoke_single`` and ``Engine.run_now_into_new``).

It must behave exactly as the general path: same values, same order behind pending work,
same errors, autograd and events; only cheaper when nothing stands in its way.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import framework as mx
from framework import events
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
