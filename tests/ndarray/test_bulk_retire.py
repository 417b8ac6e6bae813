"""A dying array's block and bulk segments: never freed while a segment that uses it is on its way to the engine.

A bulked operation is in a segment, not on its variables' queues, so those variables look
idle until the segment is queued. These tests stop time inside that window (the segment
taken out of the collector, not yet queued) with a hook on ``fuse_segment``, and check that
neither way of freeing a dead array's block (its finalizer, the next safe point) hands the
block back meanwhile.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import framework as mx
from framework.engine import Engine, bulk_control
from framework.ndarray.chunk import bury_the_dead


def _address(data):
    return data.__array_interface__["data"][0]


@pytest.fixture
def ctx():
    mx.nd.waitall()
    return mx.cpu(7)


def test_an_array_dying_while_its_segment_is_pushed_keeps_its_block_until_the_segment_ran(ctx, monkeypatch):
    engine = Engine.get()
    x = mx.nd.ones((64,), ctx=ctx)
    x.wait_to_read()
    gate = threading.Event()
    held = []
    real_fuse = bulk_control.fuse_segment

    def fuse_after_the_last_reference_died(segment, record_exception):
        held.clear()  # in the window: the segment left the collector and is not queued yet
        return real_fuse(segment, record_exception)

    with engine.bulk(8):
        # First in the segment: keeps the whole segment waiting on a worker until the gate opens.
        engine.push_sync(lambda rc: gate.wait(5), ctx, [], [x._chunk.var], name="gate")
        held.append(x + 1)  # bulked: its block is written only when the segment runs
        handle, y_data = held[0]._chunk.handle, held[0]._data
        monkeypatch.setattr(bulk_control, "fuse_segment", fuse_after_the_last_reference_died)
    # Leaving the block pushed the segment, and the array died inside that push.
    assert not held
    assert not handle.freed  # the finalizer left it to a safe point
    z = mx.nd.empty((64,), ctx=ctx)  # same size class: must not be handed the block the segment writes
    assert _address(z._data) != _address(y_data)
    gate.set()
    mx.nd.waitall()
    assert np.all(y_data == 2.0)  # the segment wrote the dead array's block, which nobody else had
    assert handle.freed  # and the block went back once the segment had run


def test_the_safe_point_leaves_a_dead_block_alone_while_another_threads_segment_is_in_transit(ctx, monkeypatch):
    engine = Engine.get()
    x = mx.nd.ones((64,), ctx=ctx)
    x.wait_to_read()
    in_transit, buried = threading.Event(), threading.Event()
    held = []
    real_fuse = bulk_control.fuse_segment

    def fuse_slowly_in_the_pusher(segment, record_exception):
        if threading.current_thread() is pusher:
            in_transit.set()
            assert buried.wait(5)
        return real_fuse(segment, record_exception)

    def push_a_bulked_operation():
        with engine.bulk(8):
            held.append(x + 1)

    monkeypatch.setattr(bulk_control, "fuse_segment", fuse_slowly_in_the_pusher)
    pusher = threading.Thread(target=push_a_bulked_operation)
    pusher.start()
    try:
        assert in_transit.wait(5)
        handle = held[0]._chunk.handle
        held.clear()  # dies while the other thread's segment, which writes it, is in transit
        assert not handle.freed  # the finalizer: the collector is not quiet
        bury_the_dead()  # the safe point runs meanwhile: nothing of this thread to flush
        assert not handle.freed
    finally:
        buried.set()
        pusher.join(5)
    mx.nd.waitall()
    assert handle.freed


def test_the_collector_is_quiet_only_when_no_segment_is_open_or_in_transit(ctx):
    engine = Engine.get()
    x = mx.nd.ones((4,), ctx=ctx)
    x.wait_to_read()
    assert engine._bulk.quiet and engine._bulk.in_transit() == 0
    with engine.bulk(8):
        x += 1
        assert not engine._bulk.quiet  # a segment is open
    assert engine._bulk.quiet and engine._bulk.in_transit() == 0  # pushed and landed
    assert x.asnumpy().tolist() == [2.0] * 4
