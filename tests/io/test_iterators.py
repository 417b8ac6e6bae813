"""Data iterators: NDArrayIter, CSVIter, MNISTIter, PrefetchingIter, ResizeIter.

Expected batches marked "MXNet 1.9.1" were observed with the real MXNet on the same inputs.
"""

from __future__ import annotations

import struct
import threading

import numpy as np
import pytest

import framework as mx
from framework import io
from framework.io import DataBatch, DataDesc, DataIter, DataIterError, NDArrayIter
from framework.io.base import plan_epoch


def epochs(it: DataIter, count: int, hard_reset_after: int | None = None) -> list[list[tuple[list[int], int]]]:
    """``count`` epochs of (first data column as ints, pad); checks labels are data * 10."""
    out = []
    for e in range(count):
        batches = []
        for batch in it:
            data = batch.data[0].asnumpy().reshape(len(batch.data[0]), -1)[:, 0].astype(int).tolist()
            if batch.label:
                np.testing.assert_array_equal(batch.label[0].asnumpy(), np.array(data) * 10)
            batches.append((data, batch.pad))
        out.append(batches)
        if e == hard_reset_after:
            it.hard_reset()
        else:
            it.reset()
    return out


def counting(n: int, batch_size: int, **kwargs) -> NDArrayIter:
    return NDArrayIter(np.arange(n).reshape(n, 1) * 1.0, np.arange(n) * 10.0, batch_size=batch_size, **kwargs)


# ------------------------------------------------------------------ NDArrayIter
def test_ndarrayiter_pad_is_the_default_and_wraps_to_the_start():
    assert epochs(counting(10, 3), 2) == 2 * [[([0, 1, 2], 0), ([3, 4, 5], 0), ([6, 7, 8], 0), ([9, 0, 1], 2)]]


def test_ndarrayiter_pad_larger_than_the_data_tiles_it():  # MXNet 1.9.1
    assert epochs(counting(4, 6), 1) == [[([0, 1, 2, 3, 0, 1], 2)]]
    assert epochs(NDArrayIter(np.arange(3).reshape(3, 1), batch_size=8), 1) == [[([0, 1, 2, 0, 1, 2, 0, 1], 5)]]


def test_ndarrayiter_discard_drops_the_short_batch():
    assert epochs(counting(10, 3, last_batch_handle="discard"), 2) == 2 * [
        [([0, 1, 2], 0), ([3, 4, 5], 0), ([6, 7, 8], 0)]
    ]
    assert epochs(counting(4, 6, last_batch_handle="discard"), 1) == [[]]
    it = counting(10, 3, last_batch_handle="discard")  # the low-level protocol agrees with next()
    seen = []
    while it.iter_next():
        seen.append(it.getdata()[0].asnumpy().ravel().tolist())
    assert seen == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]


def test_ndarrayiter_roll_over_carries_leftovers_into_the_next_epoch():  # MXNet 1.9.1
    assert epochs(counting(10, 3, last_batch_handle="roll_over"), 4) == [
        [([0, 1, 2], 0), ([3, 4, 5], 0), ([6, 7, 8], 0)],
        [([9, 0, 1], 1), ([2, 3, 4], 0), ([5, 6, 7], 0)],
        [([8, 9, 0], 2), ([1, 2, 3], 0), ([4, 5, 6], 0), ([7, 8, 9], 0)],
        [([0, 1, 2], 0), ([3, 4, 5], 0), ([6, 7, 8], 0)],
    ]
    assert epochs(counting(5, 2, last_batch_handle="roll_over"), 4, hard_reset_after=2) == [
        [([0, 1], 0), ([2, 3], 0)],
        [([4, 0], 1), ([1, 2], 0), ([3, 4], 0)],
        [([0, 1], 0), ([2, 3], 0)],
        [([0, 1], 0), ([2, 3], 0)],  # hard_reset forgot the carried [4]
    ]


def test_ndarrayiter_shuffle_reproduces_mxnet_with_the_same_numpy_seed():  # MXNet 1.9.1
    np.random.seed(7)
    assert epochs(counting(10, 3, shuffle=True), 4) == [
        [([8, 5, 0], 0), ([2, 1, 9], 0), ([7, 3, 6], 0), ([4, 8, 5], 2)],
        [([9, 0, 8], 0), ([4, 1, 6], 0), ([5, 3, 2], 0), ([7, 9, 0], 2)],
        [([9, 1, 8], 0), ([5, 0, 4], 0), ([3, 6, 2], 0), ([7, 9, 1], 2)],
        [([7, 5, 9], 0), ([3, 4, 1], 0), ([6, 0, 2], 0), ([8, 7, 5], 2)],
    ]
    np.random.seed(7)
    assert epochs(counting(10, 3, shuffle=True, last_batch_handle="roll_over"), 4, hard_reset_after=2) == [
        [([8, 5, 0], 0), ([2, 1, 9], 0), ([7, 3, 6], 0)],
        [([4, 9, 0], 1), ([8, 4, 1], 0), ([6, 5, 3], 0)],
        [([2, 7, 9], 2), ([1, 8, 5], 0), ([0, 4, 3], 0), ([6, 2, 7], 0)],
        [([7, 5, 9], 0), ([3, 4, 1], 0), ([6, 0, 2], 0)],
    ]


def test_ndarrayiter_names_shapes_and_dtypes():
    it = NDArrayIter({"b": np.zeros((4, 2)), "a": np.ones((4, 3))}, [np.zeros(4), np.ones(4)], batch_size=2)
    assert [(d.name, d.shape) for d in it.provide_data] == [("a", (2, 3)), ("b", (2, 2))]  # sorted by name
    assert [(d.name, d.shape) for d in it.provide_label] == [("_0_softmax_label", (2,)), ("_1_softmax_label", (2,))]
    assert it.provide_data[0].dtype == np.float32 and it.provide_data[0].layout == "NCHW"
    batch = next(it)
    assert [d.shape for d in batch.data] == [(2, 3), (2, 2)] and batch.index is None
    it = NDArrayIter([np.zeros((4, 2)), np.ones((4, 3))], batch_size=2, data_name="x")
    assert [d.name for d in it.provide_data] == ["_0_x", "_1_x"] and it.provide_label == []
    assert next(it).label == []
    # NumPy inputs become float32 (int too); NDArray inputs keep their dtype and context
    assert next(NDArrayIter(np.arange(6, dtype=np.int64).reshape(6, 1), batch_size=2)).data[0].dtype == np.float32
    source = mx.nd.array(np.arange(6).reshape(6, 1), dtype="int32")
    batch = next(NDArrayIter(source, batch_size=4))
    assert batch.data[0].dtype == np.int32 and batch.data[0].context == source.context


def test_ndarrayiter_batch_axis_from_layout():
    it = NDArrayIter(np.arange(12).reshape(2, 6), batch_size=4, layout="TN")
    assert it.provide_data[0].shape == (2, 4)
    batches = [(b.data[0].asnumpy().tolist(), b.pad) for b in it]
    assert batches == [([[0, 1, 2, 3], [6, 7, 8, 9]], 0), ([[4, 5, 0, 1], [10, 11, 6, 7]], 2)]


def test_ndarrayiter_refuses_bad_arguments():
    with pytest.raises(DataIterError, match=r"last_batch_handle must be one of pad, discard, roll_over, got 'foo'"):
        counting(10, 3, last_batch_handle="foo")
    with pytest.raises(DataIterError, match=r"batch_size must be a positive integer, got 0"):
        counting(10, 0)
    with pytest.raises(DataIterError, match=r"'data' has 10, 'softmax_label' has 9"):
        NDArrayIter(np.zeros((10, 1)), np.zeros(9), batch_size=3)
    with pytest.raises(DataIterError, match=r"roll_over needs batch_size \(6\) <= number of examples \(4\)"):
        counting(4, 6, last_batch_handle="roll_over")
    with pytest.raises(DataIterError, match=r"data must be an NDArray, a numpy.ndarray"):
        NDArrayIter(42, batch_size=1)
    with pytest.raises(DataIterError, match=r"layout 'TC' has no batch axis"):
        NDArrayIter(np.zeros((4, 2)), batch_size=2, layout="TC")


def test_databatch_and_datadesc_follow_mxnet():
    batch = DataBatch([mx.nd.ones((2, 2))])
    assert str(batch) == "DataBatch: data shapes: [(2, 2)] label shapes: None"
    assert (batch.pad, batch.index, batch.bucket_key, batch.provide_data) == (None, None, None, None)
    with pytest.raises(DataIterError, match=r"data must be a list of NDArrays"):
        DataBatch(mx.nd.ones((2, 2)))
    desc = DataDesc("x", (2, 3))
    assert desc == ("x", (2, 3)) and repr(desc) == "DataDesc[x,(2, 3),<class 'numpy.float32'>,NCHW]"
    assert DataDesc.get_batch_axis("TNC") == 1 and DataDesc.get_batch_axis(None) == 0
    (typed,) = DataDesc.get_list([("a", (1, 2))], [("a", np.int32)])
    assert typed.dtype == np.int32


def test_plan_epoch_is_mxnets_batch_loader():
    plan = plan_epoch(10, 3, round_batch=True)
    assert [(p.tolist(), pad) for p, pad in plan][-1] == ([9, 0, 1], 2)
    assert [p.tolist() for p, _ in plan_epoch(10, 3, True, start=2)] == [[2, 3, 4], [5, 6, 7], [8, 9, 0]]
    assert [(p.tolist(), pad) for p, pad in plan_epoch(4, 3, False)] == [([0, 1, 2], 0), ([3], 2)]
    with pytest.raises(DataIterError, match=r"round_batch needs at least .* 5 examples .* only 2"):
        plan_epoch(2, 7, True)


# ------------------------------------------------------------------ CSVIter
@pytest.fixture
def csv_files(tmp_path):
    np.savetxt(tmp_path / "d.csv", np.arange(20).reshape(10, 2), delimiter=",", fmt="%g")
    np.savetxt(tmp_path / "l.csv", np.arange(10).reshape(10, 1) * 10, delimiter=",", fmt="%g")
    return tmp_path / "d.csv", tmp_path / "l.csv"


def test_csviter_round_batch_continues_after_the_filler(csv_files):  # MXNet 1.9.1
    data, label = csv_files
    it = io.CSVIter(data_csv=str(data), data_shape=(2,), label_csv=str(label), batch_size=3)
    seen = []
    for _ in range(3):
        seen.append([(b.label[0].asnumpy().astype(int).tolist(), b.pad) for b in it])
        it.reset()
    assert seen == [
        [([0, 10, 20], 0), ([30, 40, 50], 0), ([60, 70, 80], 0), ([90, 0, 10], 2)],
        [([20, 30, 40], 0), ([50, 60, 70], 0), ([80, 90, 0], 1)],
        [([10, 20, 30], 0), ([40, 50, 60], 0), ([70, 80, 90], 0)],
    ]
    assert next(io.CSVIter(data_csv=str(data), data_shape=(2,), batch_size=3)).data[0].asnumpy()[1].tolist() == [2, 3]


def test_csviter_without_round_batch_pads_with_the_previous_rows(csv_files):  # MXNet 1.9.1
    data, label = csv_files
    it = io.CSVIter(data_csv=str(data), data_shape=(2,), label_csv=str(label), batch_size=3, round_batch=False)
    for epoch in range(2):
        batches = [(b.data[0].asnumpy()[:, 0].tolist(), b.label[0].asnumpy().tolist(), b.pad) for b in it]
        assert batches[-1] == ([18, 14, 16], [90, 70, 80], 2), epoch
        assert len(batches) == 4
        it.reset()


def test_csviter_shapes_dtype_and_missing_labels(csv_files):
    data, _ = csv_files
    it = io.CSVIter(data_csv=str(data), data_shape=(1, 2), batch_size=4)
    assert [d.shape for d in it.provide_data] == [(4, 1, 2)] and it.provide_label[0].shape == (4,)
    batch = next(it)
    assert batch.data[0].shape == (4, 1, 2) and batch.label[0].asnumpy().tolist() == [0, 0, 0, 0]
    it = io.CSVIter(data_csv=str(data), data_shape=(2,), label_csv=str(data), label_shape=(2,), batch_size=4)
    assert next(it).label[0].shape == (4, 2)
    batch = next(io.CSVIter(data_csv=str(data), data_shape=(2,), batch_size=4, dtype="int32"))
    assert batch.data[0].dtype == np.int32 and batch.data[0].asnumpy()[1].tolist() == [2, 3]


def test_csviter_errors_name_the_file_and_line(csv_files, tmp_path):
    data, _ = csv_files
    with pytest.raises(DataIterError, match=r"d\.csv, line 1: 2 values, but the data shape needs 3"):
        io.CSVIter(data_csv=str(data), data_shape=(3,), batch_size=2)
    (tmp_path / "bad.csv").write_text("1,2\n3,x\n")
    with pytest.raises(DataIterError, match=r"bad\.csv, line 2: not a number"):
        io.CSVIter(data_csv=str(tmp_path / "bad.csv"), data_shape=(2,), batch_size=2)
    (tmp_path / "short.csv").write_text("1\n2\n")
    with pytest.raises(DataIterError, match=r"has 10 rows but .*short\.csv' has 2"):
        io.CSVIter(data_csv=str(data), data_shape=(2,), label_csv=str(tmp_path / "short.csv"), batch_size=2)
    with pytest.raises(DataIterError, match=r"data file not found: .*nope\.csv"):
        io.CSVIter(data_csv=str(tmp_path / "nope.csv"), data_shape=(2,), batch_size=2)


# ------------------------------------------------------------------ MNISTIter
@pytest.fixture
def mnist_files(tmp_path):
    n = 10
    images = (np.arange(n * 28 * 28) % 256).astype(np.uint8).reshape(n, 28, 28)
    (tmp_path / "img").write_bytes(struct.pack(">iiii", 2051, n, 28, 28) + images.tobytes())
    (tmp_path / "lbl").write_bytes(struct.pack(">ii", 2049, n) + np.arange(n, dtype=np.uint8).tobytes())
    return str(tmp_path / "img"), str(tmp_path / "lbl"), images


def test_mnistiter_scales_by_1_over_256_and_serves_full_batches(mnist_files):  # MXNet 1.9.1
    image, label, images = mnist_files
    it = io.MNISTIter(image=image, label=label, batch_size=4, shuffle=False)
    assert it.provide_data[0].shape == (4, 1, 28, 28) and it.provide_label[0].shape == (4,)
    batches = list(it)
    assert [b.label[0].asnumpy().tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    first = batches[0].data[0].asnumpy()
    np.testing.assert_array_equal(first[:, 0], images[:4] / np.float32(256))
    assert batches[1].data[0].asnumpy().max() == np.float32(255 / 256)
    it.reset()
    assert len(list(it)) == 2
    flat = io.MNISTIter(image=image, label=label, batch_size=4, shuffle=False, flat=True)
    assert next(flat).data[0].shape == (4, 784)


def test_mnistiter_parts_and_shuffle(mnist_files):  # parts as MXNet 1.9.1
    image, label, _ = mnist_files
    parts = [
        [
            b.label[0].asnumpy()[0]
            for b in io.MNISTIter(image=image, label=label, batch_size=1, shuffle=False, num_parts=3, part_index=k)
        ]
        for k in range(3)
    ]
    assert parts == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    it = io.MNISTIter(image=image, label=label, batch_size=2, seed=3)
    first = [b.label[0].asnumpy().tolist() for b in it]
    it.reset()
    assert [b.label[0].asnumpy().tolist() for b in it] == first  # shuffled once, same every epoch
    flat = [label for batch in first for label in batch]
    assert sorted(flat) == list(range(10)) and flat != list(range(10))


def test_mnistiter_errors_name_the_file(mnist_files, tmp_path):
    image, label, _ = mnist_files
    with pytest.raises(DataIterError, match=r"lbl: bad magic 2049 at byte offset 0 \(expected 2051"):
        io.MNISTIter(image=label, label=label)
    raw = open(image, "rb").read()
    (tmp_path / "cut").write_bytes(raw[:5000])
    with pytest.raises(DataIterError, match=r"cut is truncated: its header promises 10 images .* has 5000 bytes"):
        io.MNISTIter(image=str(tmp_path / "cut"), label=label)
    (tmp_path / "few").write_bytes(struct.pack(">ii", 2049, 3) + bytes(3))
    with pytest.raises(DataIterError, match=r"holds 10 images but .*few' holds 3 labels"):
        io.MNISTIter(image=image, label=str(tmp_path / "few"))
    with pytest.raises(DataIterError, match=r"part_index must be in \[0, 2\), got 2"):
        io.MNISTIter(image=image, label=label, num_parts=2, part_index=2)
    (tmp_path / "neg").write_bytes(struct.pack(">iiii", 2051, -10, 28, 28))
    with pytest.raises(DataIterError, match=r"neg: byte offset 4: negative dimension in the header \(-10, 28, 28\)"):
        io.MNISTIter(image=str(tmp_path / "neg"), label=label)
    (tmp_path / "huge").write_bytes(struct.pack(">iiii", 2051, 2**31 - 1, 2**31 - 1, 2**31 - 1))
    with pytest.raises(DataIterError, match=r"huge is truncated: its header promises 2147483647 images"):
        io.MNISTIter(image=str(tmp_path / "huge"), label=label)


# ------------------------------------------------------------------ PrefetchingIter and ResizeIter
class Recording(DataIter):
    """Yields ``count`` batches of one value each, recording the thread that produced them."""

    def __init__(self, count: int, fail_at: int | None = None) -> None:
        super().__init__(2)
        self.count, self.fail_at, self.i, self.threads = count, fail_at, 0, set()
        self.provide_data = [DataDesc("data", (2,))]
        self.provide_label = [DataDesc("softmax_label", (2,))]

    def reset(self) -> None:
        self.i = 0

    def next(self) -> DataBatch:
        self.threads.add(threading.current_thread().name)
        if self.i == self.fail_at:
            self.i += 1
            raise ValueError("broken record")
        if self.i >= self.count:
            raise StopIteration
        self.i += 1
        value = mx.nd.array([self.i, self.i])
        return DataBatch([value], [value * 10], pad=0)


def test_prefetching_iter_fetches_on_a_background_thread():
    inner = counting(10, 3)
    reference = epochs(counting(10, 3), 2)
    it = io.PrefetchingIter(inner)
    assert epochs(it, 2) == reference
    assert it.provide_data == inner.provide_data and it.batch_size == 3
    recording = Recording(3)
    it = io.PrefetchingIter(recording)
    assert [b.data[0].asnumpy()[0] for b in it] == [1, 2, 3]
    assert recording.threads == {f"PrefetchingIter-{id(it):x}-0"}
    threads = list(it._threads)
    it.close()
    assert not any(t.is_alive() for t in threads)


def test_prefetching_iter_joins_and_renames_several_iterators():
    a, b = counting(6, 3), NDArrayIter(np.arange(6).reshape(6, 1) + 100.0, batch_size=3)
    it = io.PrefetchingIter([a, b], rename_data=[{"data": "x"}, {"data": "y"}])
    assert [d.name for d in it.provide_data] == ["x", "y"]
    assert [d.name for d in it.provide_label] == ["softmax_label"]
    batch = next(it)
    assert [d.asnumpy().ravel().tolist() for d in batch.data] == [[0, 1, 2], [100, 101, 102]]
    assert [d.name for d in batch.provide_data] == ["x", "y"]
    with pytest.raises(DataIterError, match=r"rename_data needs one dict per iterator: 2 iterators, 1 dicts"):
        io.PrefetchingIter([a, b], rename_data=[{"data": "x"}])
    uneven = io.PrefetchingIter([Recording(1), Recording(2)])
    next(uneven)
    with pytest.raises(DataIterError, match=r"iterator\(s\) \[0\] ended before the others"):
        next(uneven)
    uneven.close()


def test_prefetching_iter_reraises_errors_of_the_background_thread():
    it = io.PrefetchingIter(Recording(3, fail_at=1))
    assert next(it).data[0].asnumpy()[0] == 1
    with pytest.raises(ValueError, match="broken record"):
        next(it)
    assert next(it).data[0].asnumpy()[0] == 3  # the iterator goes on after the failed record
    it.reset()
    assert next(it).data[0].asnumpy()[0] == 1
    it.close()
    with pytest.raises(DataIterError, match=r"used after close"):
        next(it)


def test_prefetching_overlaps_reading_with_the_consumer():
    """While the consumer holds batch k, the background thread already reads batch k + 1 (no timing involved)."""

    class Announcing(Recording):
        def __init__(self, count: int) -> None:
            super().__init__(count)
            self.reading = [threading.Event() for _ in range(count + 1)]  # the last read ends the epoch

        def next(self) -> DataBatch:
            self.reading[self.i].set()
            return super().next()

    inner = Announcing(6)
    it = io.PrefetchingIter(inner)
    for k, _ in enumerate(it):
        # a synchronous iterator would only start read k + 1 when asked for the next batch: this would time out
        assert inner.reading[k + 1].wait(10), f"batch {k + 1} was not being read while batch {k} was consumed"
    it.close()


def test_resize_iter_wraps_or_cuts_epochs():
    it = io.ResizeIter(counting(10, 3, last_batch_handle="discard"), 5)
    assert [d for d, _ in epochs(it, 1)[0]] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 1, 2], [3, 4, 5]]
    assert epochs(it, 1)[0][0][0] == [0, 1, 2]  # reset_internal: each epoch starts over
    short = io.ResizeIter(counting(10, 3), 2, reset_internal=False)
    assert [d for d, _ in epochs(short, 2)[1]] == [[6, 7, 8], [9, 0, 1]]
    assert short.provide_data[0].shape == (3, 1) and short.batch_size == 3
    with pytest.raises(DataIterError, match=r"yields no batch even after reset"):
        next(io.ResizeIter(Recording(0), 3))
