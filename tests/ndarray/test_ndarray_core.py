"""NDArray semantics: asynchrony, views, in-place writes, copies across contexts, creation."""

from __future__ import annotations

import gc
import pickle
import threading

import numpy as np
import pytest

import framework as mx
from framework.engine import Engine
from framework.operator.infer import InferenceError
from framework.operator.tensor.shape import reshape_shape


def test_operations_return_before_they_run_and_reads_wait():
    engine = Engine.get()
    gate = threading.Event()
    x = mx.nd.zeros((4,))
    engine.push_sync(lambda rc: gate.wait(5), mx.cpu(), mutable_vars=[x._chunk.var], name="gate")
    y = mx.nd.reshape(x, shape=(2, 2))  # queued behind the gate
    assert y.shape == (2, 2)  # shape is known at once, values are not
    gate.set()
    assert y.asnumpy().tolist() == [[0, 0], [0, 0]]


def test_creation_functions_and_dtypes():
    assert mx.nd.ones((2, 3), dtype="int32").asnumpy().dtype == np.int32
    assert mx.nd.full((2,), 7.5).asnumpy().tolist() == [7.5, 7.5]
    assert mx.nd.arange(1, 7, 2).asnumpy().tolist() == [1, 3, 5]
    assert mx.nd.arange(3, repeat=2).asnumpy().tolist() == [0, 0, 1, 1, 2, 2]
    assert mx.nd.array([1, 2]).dtype == np.float32  # lists default to float32, like MXNet
    # MXNet 1.x: every source but an NDArray becomes float32 unless dtype= says otherwise.
    assert mx.nd.array(np.arange(3, dtype=np.int64)).dtype == np.float32
    assert mx.nd.array(np.arange(3, dtype=np.int64), dtype="int64").dtype == np.int64
    assert mx.nd.array(mx.nd.zeros((2,), dtype="int32")).dtype == np.int32  # an NDArray keeps its own
    assert mx.nd.array(np.float64(2.5)).dtype == np.float32 and mx.nd.array(7).dtype == np.float32
    assert mx.nd.empty((0, 3)).shape == (0, 3)
    for dtype in ("float16", "float32", "float64", "int8", "int32", "int64", "uint8", "bool"):
        assert mx.nd.zeros((2,), dtype=dtype).dtype == np.dtype(dtype)
    with pytest.raises(mx.MXLabError, match="dtype complex64 is not supported"):
        mx.nd.zeros((2,), dtype="complex64")
    with pytest.raises(mx.MXLabError, match="shape dimensions must be >= 0"):
        mx.nd.zeros((2, -1))
    with pytest.raises(mx.MXLabError, match="cannot convert str"):
        mx.nd.array("abc", dtype="float32")


def test_basic_slices_are_views_that_share_writes():
    x = mx.nd.zeros((3, 4))
    row = x[1]
    block = x[:, 1:3]
    row[:] = 5
    block[:] = 1
    expected = np.zeros((3, 4), dtype=np.float32)
    expected[1] = 5
    expected[:, 1:3] = 1
    assert np.array_equal(x.asnumpy(), expected)
    assert row._chunk is x._chunk  # one storage block, one engine variable


def test_setitem_forms_and_advanced_indexing_copies():
    x = mx.nd.zeros((2, 3))
    x[0] = mx.nd.array([1, 2, 3])
    x[1, 2] = 9
    x[1, 0:2] = np.array([4, 5])
    assert x.asnumpy().tolist() == [[1, 2, 3], [4, 5, 9]]
    picked = x[mx.nd.array([1, 0], dtype="int64")]
    assert picked.asnumpy().tolist() == [[4, 5, 9], [1, 2, 3]]
    picked[0] = 0
    assert x.asnumpy()[1].tolist() == [4, 5, 9]  # advanced indexing copied
    with pytest.raises(mx.MXLabError, match="cannot assign an array of shape \\(2,\\) to a slice of shape \\(3,\\)"):
        x[0] = mx.nd.array([1, 2])
        x.wait_to_read()


def test_assignment_through_index_arrays_and_lists():
    """MXNet 1.x writes through advanced keys too; float index arrays (mx.nd.array's default) count as integers."""
    x = mx.nd.arange(12).reshape((3, 4))
    x[[0, 2]] = 0
    assert x.asnumpy()[:, 0].tolist() == [0, 4, 0]
    y = mx.nd.arange(5)
    y[[1, 3]] = mx.nd.array([7, 8])
    assert y.asnumpy().tolist() == [0, 7, 2, 8, 4]
    x[mx.nd.array([0, 2])] = mx.nd.array([1, 2, 3, 4])  # float32 indices, a row broadcast to both rows
    assert x.asnumpy()[[0, 2]].tolist() == [[1, 2, 3, 4], [1, 2, 3, 4]]
    x[([0, 1], [1, 2])] = 100
    assert x.asnumpy()[0, 1] == 100 and x.asnumpy()[1, 2] == 100
    cube = mx.nd.arange(24).reshape((2, 3, 4))
    assert cube[mx.nd.array([1, 0])].shape == (2, 3, 4) and cube[mx.nd.array([[1, 0]])].shape == (1, 2, 3, 4)
    assert cube[mx.nd.array([1.7, 0.2])][:, 0, 0].asnumpy().tolist() == [12, 0]  # truncated, as MXNet casts
    with pytest.raises(ValueError, match="cannot assign an array of shape \\(3,\\) to \\(2,\\) selected"):
        y[[1, 2]] = mx.nd.array([1, 2, 3])
    with pytest.raises(mx.MXNetError, match="index 7 is out of bounds"):
        y[[7]] = 1


def test_assignment_into_a_recorded_array_is_refused():
    """The gradient would use the value from before the write: MXNet refuses, and so does MXLab."""
    a = mx.nd.array([1.0, 2.0])
    a.attach_grad()
    with mx.autograd.record():
        y = a * 1
        with pytest.raises(mx.MXNetError, match="already in a computational graph"):
            y[:] = 3
        with pytest.raises(mx.MXNetError, match="already in a computational graph"):
            a[[0]] = 3
        fresh = mx.nd.zeros(2)
        fresh[:] = 1  # not on the tape: a plain write
    y[:] = 5  # outside record() the array is an ordinary one again
    assert y.asnumpy().tolist() == [5, 5]


def test_reshape_view_and_special_codes():
    x = mx.nd.array(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert x.reshape((4, -1)).shape == (4, 6)
    assert x.reshape(0, -1).shape == (2, 12)
    cases = {  # the examples of MXNet's Reshape documentation
        ((2, 3, 4), (4, 0, 2)): (4, 3, 2),
        ((2, 3, 4), (2, 0, 0)): (2, 3, 4),
        ((2, 3, 4), (6, 1, -1)): (6, 1, 4),
        ((2, 3, 4), (3, -1, 8)): (3, 1, 8),
        ((2, 3, 4), (-1,)): (24,),
        ((2, 3, 4), (-2,)): (2, 3, 4),
        ((2, 3, 4), (2, -2)): (2, 3, 4),
        ((2, 3, 4), (-2, 1, 1)): (2, 3, 4, 1, 1),
        ((2, 3, 4), (-3, 4)): (6, 4),
        ((2, 3, 4, 5), (-3, -3)): (6, 20),
        ((2, 3, 4), (0, -3)): (2, 12),
        ((2, 3, 4), (-3, -2)): (6, 4),
        ((2, 3, 4), (-4, 1, 2, -2)): (1, 2, 3, 4),
        ((2, 3, 4), (2, -4, -1, 3, -2)): (2, 1, 3, 4),
        ((10, 5, 4), (-1, 0)): (40, 5),
    }
    for (src, spec), expected in cases.items():
        assert reshape_shape(src, spec) == expected, (src, spec)
    assert reshape_shape((10, 5, 4), (-1, 0), reverse=True) == (50, 4)
    with pytest.raises(InferenceError, match="size differs"):
        reshape_shape((2, 3), (4, 2))
    with pytest.raises(InferenceError, match="only one dimension can be -1"):
        reshape_shape((2, 3), (-1, -1))
    view = x.reshape((6, 4))
    view[0] = -1
    assert x.asnumpy()[0, 0].tolist() == [-1, -1, -1, -1]


def test_copies_across_cpu_devices_use_copy_workers():
    x = mx.nd.array([1.0, 2.0], ctx=mx.cpu(0))
    with mx.events.record(["engine.push"]) as rec:
        y = x.as_in_context(mx.cpu(1))
        y.wait_to_read()
    assert y.context == mx.cpu(1) and y.asnumpy().tolist() == [1.0, 2.0]
    assert x.as_in_context(mx.cpu(0)) is x
    assert any(e["name"] == "copyto" and e["prop"] == "copy_to_gpu" for e in rec.events)
    z = mx.nd.zeros((2,), ctx=mx.cpu(2))
    x.copyto(z)
    assert z.asnumpy().tolist() == [1.0, 2.0]
    with pytest.raises(mx.MXLabError, match="copyto: shape mismatch"):
        x.copyto(mx.nd.zeros((3,)))
    with pytest.raises(mx.MXLabError, match="Reshape: out= array is on cpu\\(1\\), inputs are on cpu\\(0\\)"):
        mx.nd.reshape(x, shape=(2,), out=mx.nd.zeros((2,), ctx=mx.cpu(1)))


def test_scalars_printing_and_truthiness():
    x = mx.nd.array([3.5])
    assert x.asscalar() == 3.5 and float(x) == 3.5 and bool(x)
    assert "<NDArray 1 @cpu(0)>" in repr(x)
    with pytest.raises(mx.MXLabError, match="exactly one element"):
        mx.nd.zeros((2,)).asscalar()
    with pytest.raises(ValueError, match="not a scalar.*shape is \\(1, 2\\)"):
        mx.nd.zeros((1, 2)).asscalar()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64", "uint8", "int8"])
@pytest.mark.parametrize("shape", [(1,), (1, 1), (1, 1, 1)])
def test_asscalar_is_a_numpy_scalar_of_the_array_dtype(dtype, shape):
    # MXNet 1.9.1: type(mx.nd.ones((1,), dtype='int32').asscalar()) is numpy.int32
    value = mx.nd.full(shape, 7, dtype=dtype).asscalar()
    assert type(value) is np.dtype(dtype).type and value == 7
    item = mx.nd.full(shape, 7, dtype=dtype).item()
    assert type(item) is (float if dtype.startswith("float") else int) and item == 7


def test_asscalar_keeps_float32_precision():
    third = mx.nd.array([1.0 / 3]).asscalar()
    assert third == np.float32(1.0 / 3) and float(third) != 1.0 / 3
    with pytest.raises(ValueError, match="ambiguous"):
        bool(mx.nd.zeros((2,)))
    assert len(mx.nd.zeros((5, 2))) == 5
    assert [a.shape for a in mx.nd.zeros((3, 2))] == [(2,)] * 3


def test_errors_inside_operations_surface_on_read():
    x = mx.nd.array([1.0, 2.0])
    y = mx.nd.zeros((2,))
    engine = Engine.get()

    def broken(rc):
        raise FloatingPointError("kernel failed")

    engine.push_sync(broken, mx.cpu(), mutable_vars=[y._chunk.var], name="broken_kernel")
    z = mx.nd.reshape(y, shape=(2,))  # depends on y: skipped, inherits the error
    with pytest.raises(FloatingPointError, match="kernel failed"):
        z.asnumpy()
    assert x.asnumpy().tolist() == [1.0, 2.0]  # independent arrays are fine
    mx.nd.waitall()


def test_memory_returns_to_the_pool_when_arrays_die():
    ctx = mx.cpu(3)
    mx.nd.waitall()
    before = mx.storage.stats(ctx)["bytes_in_use"]
    x = mx.nd.zeros((1000,), ctx=ctx)
    x.wait_to_read()
    assert mx.storage.stats(ctx)["bytes_in_use"] >= before + 4000
    del x
    gc.collect()
    mx.nd.waitall()
    assert mx.storage.stats(ctx)["bytes_in_use"] == before


def test_chunk_finalizer_takes_no_lock():
    """Finalizers may run inside the garbage collector while this thread holds engine locks."""
    x = mx.nd.zeros((8,))
    x.wait_to_read()
    chunk = x._chunk
    with chunk.var._lock:  # as if a collection struck inside Var.complete_write
        chunk.__del__()  # must return at once (a lock here would deadlock)
    mx.nd.waitall()  # the next safe point retires the variable
    assert chunk.var.deleted and chunk.handle.freed


def test_arrays_in_autograd_cycles_return_their_memory():
    ctx = mx.cpu(4)
    mx.nd.waitall()
    before = mx.storage.stats(ctx)["bytes_in_use"]
    x = mx.nd.ones((256,), ctx=ctx)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.reshape(x, shape=(16, 16))
    del y  # the tape keeps y's node, and the node keeps y: a cycle
    del x
    gc.collect()
    mx.nd.waitall()
    assert mx.storage.stats(ctx)["bytes_in_use"] == before


def test_arrays_pickle_by_value_and_context():
    x = mx.nd.array(np.arange(6).reshape(2, 3), ctx=mx.cpu(1), dtype="int32")
    y = pickle.loads(pickle.dumps(x))
    assert y.context == mx.cpu(1) and y.dtype == np.int32
    assert y.asnumpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    assert y._chunk is not x._chunk


def _address(array):
    return array._data.__array_interface__["data"][0]


def test_a_dying_array_returns_its_block_at_once_when_nothing_uses_it():
    ctx = mx.cpu(6)
    x = mx.nd.zeros((300,), ctx=ctx)
    x.wait_to_read()
    var, handle = x._chunk.var, x._chunk.handle  # not the chunk itself: that would keep it alive
    before = mx.storage.stats(ctx)["bytes_in_use"]
    del x  # no wait, no later allocation: the finalizer itself retires it
    assert var.deleted and handle.freed
    assert mx.storage.stats(ctx)["bytes_in_use"] == before - handle.rounded


def test_a_block_still_read_by_an_operation_is_not_reused_before_it_ends():
    ctx = mx.cpu(6)
    x = mx.nd.ones((300,), ctx=ctx)
    x.wait_to_read()
    address, var, handle = _address(x), x._chunk.var, x._chunk.handle
    gate = threading.Event()
    seen = []
    data = x._data  # the function reads the block through its view (which does not keep the chunk alive)
    Engine.get().push_sync(lambda rc, data=data: (gate.wait(5), seen.append(float(data.sum()))), ctx, [var], [])
    del x, data  # dies while the read is pending: deferred, not freed
    assert not handle.freed
    y = mx.nd.zeros((300,), ctx=ctx)  # same size class: must not get the block being read
    y.wait_to_read()
    assert _address(y) != address
    assert not handle.freed
    gate.set()
    mx.nd.waitall()
    assert seen == [300.0]  # the reader saw the old values, never y's zeros
    assert handle.freed and var.deleted


def test_a_finalizer_that_finds_the_pool_locked_defers_to_the_next_safe_point():
    ctx = mx.cpu(6)
    x = mx.nd.zeros((8,), ctx=ctx)
    x.wait_to_read()
    chunk = x._chunk
    with mx.storage.manager(ctx)._lock:  # as if a collection struck inside alloc_checked
        chunk.__del__()  # must return at once
    assert not chunk.handle.freed
    mx.nd.waitall()
    assert chunk.var.deleted and chunk.handle.freed


def test_with_a_listener_the_free_of_a_dying_array_is_published_at_the_safe_point():
    ctx = mx.cpu(6)
    x = mx.nd.zeros((8,), ctx=ctx)
    x.wait_to_read()
    handle = x._chunk.handle
    with mx.events.record(["storage.free"]) as rec:
        del x
        assert not handle.freed  # events on: the graveyard path, no emitting from a finalizer
        mx.nd.waitall()
    assert handle.freed
    assert [e["handle"] for e in rec.events] == [handle.id]


def test_out_of_place_scalar_loops_keep_values_and_pool_use_flat():
    ctx = mx.cpu(6)
    a = mx.nd.array(np.arange(16), ctx=ctx)
    mx.nd.waitall()
    before = mx.storage.stats(ctx)
    for _ in range(200):
        b = a + 1
    mx.nd.waitall()
    np.testing.assert_array_equal(b.asnumpy(), np.arange(16) + 1)
    after = mx.storage.stats(ctx)
    assert after["bytes_in_use"] == before["bytes_in_use"] + b._chunk.handle.rounded
    # The new b is allocated while the previous one lives: two blocks at most, reused from then on.
    assert after["misses"] - before["misses"] <= 2


def test_a_reused_block_gets_a_view_of_the_new_shape_and_dtype():
    ctx = mx.cpu(6)
    x = mx.nd.ones((4, 4), ctx=ctx)
    x.wait_to_read()
    view = x._data
    del x
    same = mx.nd.zeros((4, 4), ctx=ctx)
    assert same._data is view  # same shape and dtype: the block's view is reused
    del same
    other = mx.nd.zeros((16,), ctx=ctx, dtype="int32")  # same 64 bytes, another shape and dtype
    assert other._data is not view and other.shape == (16,) and other.dtype == np.int32
    np.testing.assert_array_equal(other.asnumpy(), np.zeros(16, np.int32))


def test_dtype_is_the_numpy_scalar_type_as_in_mxnet():
    x = mx.nd.ones(2, dtype="float16")
    assert x.dtype is np.float16 and x.dtype.__name__ == "float16"
    assert {np.float16: "half"}[x.dtype] == "half"  # dict lookups by type, as MXNet scripts do
    assert x.dtype == np.float16 and np.dtype(x.dtype) == np.dtype("float16")
    assert mx.nd.zeros(3, dtype=x.dtype).dtype is np.float16  # and it goes back in wherever a dtype does
    assert mx.nd.array([1, 2]).astype(np.int32).dtype is np.int32
