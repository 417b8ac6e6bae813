"""gluon.data: datasets, samplers, the DataLoader (in-thread, threads, worker processes) and vision."""

from __future__ import annotations

import gzip
import os
import random
import struct

import numpy as np
import pytest
from PIL import Image

import framework as mx
from framework import recordio
from framework.gluon import data as gdata
from framework.gluon.block import BlockError
from framework.gluon.data.vision import transforms as T


def _dataset(n: int = 10) -> gdata.ArrayDataset:
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int32)
    return gdata.ArrayDataset(mx.nd.array(x), y)


# ------------------------------------------------------------------------------ datasets
def test_array_dataset_zips_and_checks_lengths():
    ds = _dataset(4)
    x, y = ds[2]
    assert x.asnumpy().tolist() == [6.0, 7.0, 8.0] and y == 2
    assert len(ds) == 4
    single = gdata.ArrayDataset(np.arange(3))
    assert single[1] == 1
    with pytest.raises(gdata.DataError, match="array 1 has 3"):
        gdata.ArrayDataset(np.zeros(4), np.zeros(3))


def test_transform_is_lazy_and_transform_first_keeps_the_label():
    calls = []

    def double(x):
        calls.append(1)
        return x * 2

    ds = gdata.SimpleDataset([(1, "a"), (2, "b")]).transform_first(double)
    assert not calls
    assert ds[1] == (4, "b") and len(calls) == 1
    eager = gdata.SimpleDataset([1, 2, 3]).transform(lambda v: v + 1, lazy=False)
    assert [eager[i] for i in range(3)] == [2, 3, 4]
    with pytest.raises(gdata.DataError, match="callable"):
        gdata.SimpleDataset([1]).transform(3)


def test_filter_shard_take():
    ds = gdata.SimpleDataset(list(range(10)))
    assert [x for x in ds.filter(lambda v: v % 3 == 0)] == [0, 3, 6, 9]
    shards = [list(ds.shard(3, i)) for i in range(3)]
    assert shards == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert list(ds.take(2)) == [0, 1]
    with pytest.raises(gdata.DataError, match="index"):
        ds.shard(3, 3)


def test_record_file_and_image_record_dataset(tmp_path):
    rec, idx = str(tmp_path / "d.rec"), str(tmp_path / "d.idx")
    writer = recordio.MXIndexedRecordIO(idx, rec, "w")
    rng = np.random.RandomState(0)
    images = [rng.randint(0, 255, size=(6, 5, 3)).astype(np.uint8) for _ in range(3)]
    for i, img in enumerate(images):
        header = recordio.IRHeader(0, float(i), i, 0)
        writer.write_idx(i, recordio.pack_img(header, img, img_fmt=".png"))
    writer.close()
    raw = gdata.RecordFileDataset(rec)
    assert len(raw) == 3 and isinstance(raw[0], bytes)
    ds = gdata.ImageRecordDataset(rec)
    image, label = ds[1]
    assert label == 1.0
    # records hold BGR (OpenCV's order); the dataset gives RGB
    np.testing.assert_array_equal(image.asnumpy(), images[1][:, :, ::-1])
    gray, _ = gdata.ImageRecordDataset(rec, flag=0)[0]
    assert gray.shape == (6, 5, 1)
    with pytest.raises(recordio.RecordIOError, match="index file not found"):
        gdata.RecordFileDataset(str(tmp_path / "missing.rec"))


def test_image_folder_dataset(tmp_path):
    for cls, color in (("cat", (255, 0, 0)), ("dog", (0, 0, 255))):
        (tmp_path / cls).mkdir()
        Image.new("RGB", (4, 3), color).save(tmp_path / cls / "a.png")
    (tmp_path / "dog" / "notes.txt").write_text("not an image")
    ds = gdata.vision.ImageFolderDataset(str(tmp_path))
    assert ds.synsets == ["cat", "dog"] and len(ds) == 2
    image, label = ds[1]
    assert label == 1 and image.shape == (3, 4, 3)
    assert image.asnumpy()[0, 0].tolist() == [0, 0, 255]
    with pytest.raises(gdata.DataError, match="not a folder"):
        gdata.vision.ImageFolderDataset(str(tmp_path / "nope"))


# ------------------------------------------------------------------------------ samplers
def test_batch_sampler_last_batch_modes():
    seq = gdata.SequentialSampler(7)
    keep = gdata.BatchSampler(seq, 3, "keep")
    assert list(keep) == [[0, 1, 2], [3, 4, 5], [6]] and len(keep) == 3
    discard = gdata.BatchSampler(seq, 3, "discard")
    assert list(discard) == [[0, 1, 2], [3, 4, 5]] and len(discard) == 2
    roll = gdata.BatchSampler(seq, 3, "rollover")
    assert list(roll) == [[0, 1, 2], [3, 4, 5]]
    assert len(roll) == 2  # 1 left over + 7 = 8 -> 2 full batches next epoch
    assert list(roll) == [[6, 0, 1], [2, 3, 4]]
    with pytest.raises(gdata.DataError, match="last_batch"):
        gdata.BatchSampler(seq, 3, "drop")
    with pytest.raises(gdata.DataError, match="batch_size"):
        gdata.BatchSampler(seq, 0)


def test_random_and_filter_samplers():
    np.random.seed(3)
    order = list(gdata.RandomSampler(20))
    assert sorted(order) == list(range(20)) and order != list(range(20))
    assert list(gdata.FilterSampler(lambda v: v > 2, [1, 5, 2, 9])) == [1, 3]
    with pytest.raises(gdata.DataError, match="length"):
        gdata.RandomSampler(-1)


# ------------------------------------------------------------------------------ DataLoader
def _check_batches(batches, n, batch_size):
    seen = []
    for x, y in batches:
        assert isinstance(x, mx.nd.NDArray) and isinstance(y, mx.nd.NDArray)
        assert y.dtype == np.int32
        np.testing.assert_array_equal(x.asnumpy()[:, 0], y.asnumpy() * 3)
        seen.extend(y.asnumpy().tolist())
    assert seen == list(range(n))
    return seen


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"num_workers": 2}, {"num_workers": 2, "thread_pool": True}, {"num_workers": 3, "prefetch": 1}],
    ids=["in-thread", "processes", "threads", "processes-prefetch1"],
)
def test_loader_keeps_order_and_stacks(kwargs):
    loader = gdata.DataLoader(_dataset(11), batch_size=4, **kwargs)
    assert len(loader) == 3
    sizes = [x.shape[0] for x, _ in loader]
    assert sizes == [4, 4, 3]
    _check_batches(loader, 11, 4)
    _check_batches(loader, 11, 4)  # a second epoch reuses the pool
    loader.close()


def test_loader_last_batch_and_shuffle():
    loader = gdata.DataLoader(_dataset(10), batch_size=4, last_batch="discard", shuffle=True)
    labels = [y.asnumpy().tolist() for _, y in loader]
    assert [len(b) for b in labels] == [4, 4]
    flat = [label for batch in labels for label in batch]
    assert len(set(flat)) == 8
    roll = gdata.DataLoader(gdata.SimpleDataset(list(range(5))), batch_size=2, last_batch="rollover")
    assert [b.asnumpy().tolist() for b in roll] == [[0, 1], [2, 3]]
    assert [b.asnumpy().tolist() for b in roll] == [[4, 0], [1, 2], [3, 4]]  # 1 left over + 5


def test_loader_custom_batchify_in_workers_returns_numpy():
    def batchify(samples):
        return np.array([s[1] for s in samples]), "tag"

    loader = gdata.DataLoader(_dataset(6), batch_size=3, batchify_fn=batchify, num_workers=2)
    out = list(loader)
    assert isinstance(out[0][0], np.ndarray) and out[0][1] == "tag"
    assert out[1][0].tolist() == [3, 4, 5]
    loader.close()


class _Failing(gdata.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, idx):
        if idx == 5:
            raise ValueError(f"sample {idx} is broken")
        return np.float32(idx)


@pytest.mark.parametrize("thread_pool", [False, True], ids=["processes", "threads"])
def test_worker_error_reaches_the_caller_with_its_traceback(thread_pool):
    loader = gdata.DataLoader(_Failing(), batch_size=2, num_workers=2, thread_pool=thread_pool, timeout=60)
    it = iter(loader)
    assert next(it).asnumpy().tolist() == [0, 1]
    assert next(it).asnumpy().tolist() == [2, 3]
    with pytest.raises(gdata.DataLoaderWorkerError, match="batch 2") as info:
        next(it)
    text = str(info.value)
    assert "Traceback" in text and "sample 5 is broken" in text and "__getitem__" in text
    loader.close()


def test_worker_transform_runs_operators_in_the_worker():
    # a transform that calls operators: in a forked worker they run on the worker's NaiveEngine
    ds = _dataset(6).transform_first(lambda x: (x * 2 + 1).sum())
    loader = gdata.DataLoader(ds, batch_size=3, num_workers=2)
    xs = np.concatenate([x.asnumpy() for x, _ in loader])
    expected = (np.arange(18, dtype=np.float32).reshape(6, 3) * 2 + 1).sum(axis=1)
    np.testing.assert_allclose(xs.reshape(-1), expected)
    loader.close()


def test_each_worker_draws_its_own_mx_random_stream():
    # the random image transforms are operators drawing from mx.random: forked workers must not share a stream
    ds = _dataset(8).transform_first(lambda x: mx.nd.random.uniform(shape=(1,)))
    loader = gdata.DataLoader(ds, batch_size=1, num_workers=2)
    draws = [float(x.asnumpy()[0, 0]) for x, _ in loader]
    loader.close()
    assert len(draws) == 8 and len(set(draws)) == 8


def test_loader_argument_errors():
    ds = _dataset(4)
    with pytest.raises(gdata.DataError, match="batch_size must be specified"):
        gdata.DataLoader(ds)
    with pytest.raises(gdata.DataError, match="must not be specified if batch_sampler"):
        gdata.DataLoader(ds, batch_size=2, batch_sampler=gdata.BatchSampler(gdata.SequentialSampler(4), 2))
    with pytest.raises(gdata.DataError, match="shuffle"):
        gdata.DataLoader(ds, batch_size=2, shuffle=True, sampler=gdata.SequentialSampler(4))
    with pytest.raises(gdata.DataError, match="num_workers"):
        gdata.DataLoader(ds, batch_size=2, num_workers=-1)
    custom = gdata.DataLoader(ds, batch_sampler=gdata.BatchSampler(gdata.SequentialSampler(4), 3), pin_memory=True)
    assert [y.asnumpy().tolist() for _, y in custom] == [[0, 1, 2], [3]]


# ------------------------------------------------------------------------------ vision datasets
def _write_idx(path, magic, array):
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(f">{1 + array.ndim}i", magic, *array.shape))
        f.write(array.astype(np.uint8).tobytes())


def test_mnist_reads_local_files_and_names_missing_ones(tmp_path):
    images = np.random.RandomState(1).randint(0, 255, size=(5, 28, 28))
    labels = np.array([3, 1, 4, 1, 5])
    _write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", 2051, images)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", 2049, labels)
    ds = gdata.vision.MNIST(root=str(tmp_path), train=False)
    assert len(ds) == 5
    image, label = ds[2]
    assert image.shape == (28, 28, 1) and image.dtype == np.uint8 and label == 4
    np.testing.assert_array_equal(image.asnumpy()[:, :, 0], images[2])
    with pytest.raises(gdata.DataError, match="train-images-idx3-ubyte.gz.*does not download"):
        gdata.vision.FashionMNIST(root=str(tmp_path), train=True)


def test_cifar10_and_cifar100(tmp_path):
    rng = np.random.RandomState(2)
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    pixels = rng.randint(0, 255, size=(2, 3, 32, 32)).astype(np.uint8)
    rows = np.concatenate([np.array([[7], [2]], dtype=np.uint8), pixels.reshape(2, -1)], axis=1)
    rows.tofile(folder / "test_batch.bin")
    ds = gdata.vision.CIFAR10(root=str(tmp_path), train=False)
    image, label = ds[0]
    assert label == 7 and image.shape == (32, 32, 3)
    np.testing.assert_array_equal(image.asnumpy(), pixels[0].transpose(1, 2, 0))
    with pytest.raises(gdata.DataError, match="data_batch_1.bin"):
        gdata.vision.CIFAR10(root=str(tmp_path), train=True)
    folder100 = tmp_path / "cifar-100-binary"
    folder100.mkdir()
    rows = np.concatenate([np.array([[1, 42]], dtype=np.uint8), pixels[:1].reshape(1, -1)], axis=1)
    rows.tofile(folder100 / "train.bin")
    assert gdata.vision.CIFAR100(root=str(tmp_path))[0][1] == 1
    assert gdata.vision.CIFAR100(root=str(tmp_path), fine_label=True)[0][1] == 42
    assert os.path.isfile(folder100 / "train.bin")


# ------------------------------------------------------------------------------ transforms
def test_to_tensor_normalize_cast():
    img = mx.nd.array(np.arange(2 * 3 * 3).reshape(2, 3, 3), dtype="uint8")
    tensor = T.ToTensor()(img)
    assert tensor.shape == (3, 2, 3) and tensor.dtype == np.float32
    np.testing.assert_allclose(tensor.asnumpy(), img.asnumpy().transpose(2, 0, 1) / 255.0, rtol=1e-6)
    norm = T.Normalize(mean=(0.1, 0.2, 0.3), std=(0.5, 0.5, 2.0))(tensor)
    ref = (tensor.asnumpy() - np.array([0.1, 0.2, 0.3]).reshape(3, 1, 1)) / np.array([0.5, 0.5, 2.0]).reshape(3, 1, 1)
    np.testing.assert_allclose(norm.asnumpy(), ref, rtol=1e-5)
    assert T.Cast("float16")(img).dtype == np.float16
    with pytest.raises(
        BlockError, match="mean must have 1 or 3 values for an input with 3 channels, got \\(0.1, 0.2\\)$"
    ):
        T.Normalize(mean=(0.1, 0.2))(tensor)
    with pytest.raises(BlockError, match="std must not contain 0"):
        T.Normalize(std=(1.0, 0.0, 1.0))
    batch = T.ToTensor()(mx.nd.stack(img, img))
    assert batch.shape == (2, 3, 2, 3)


@pytest.mark.parametrize(
    "make, image",
    [
        (T.ToTensor, "uint8"),
        (lambda: T.Resize((5, 3)), "uint8"),
        (lambda: T.Resize(4, keep_ratio=True, interpolation=2), "float32"),
        (lambda: T.CropResize(1, 2, 4, 3), "uint8"),
        (lambda: T.CropResize(1, 2, 4, 3, size=(6, 5), interpolation=0), "float32"),
        (lambda: T.Cast("float16"), "uint8"),
    ],
)
def test_operator_transforms_hybridize_and_agree_with_imperative(make, image):
    img = mx.nd.array(np.random.RandomState(3).randint(0, 255, size=(6, 8, 3)), dtype=image)
    imperative = make()
    expected = imperative(img).asnumpy()
    net = mx.gluon.nn.HybridSequential()
    net.add(make())
    net.hybridize()
    got = net(img)
    assert net._cached_graph  # traced: the transforms are graph operators now
    np.testing.assert_allclose(got.asnumpy(), expected, rtol=1e-5, atol=1e-5)


def test_crop_resize_and_rotations():
    img = mx.nd.array(np.random.RandomState(4).randint(0, 255, size=(6, 8, 3)), dtype="uint8")
    np.testing.assert_array_equal(T.CropResize(1, 2, 4, 3)(img).asnumpy(), img.asnumpy()[2:5, 1:5])
    assert T.CropResize(1, 2, 4, 3, size=5)(img).shape == (5, 5, 3)
    tensor = T.ToTensor()(img)
    np.testing.assert_allclose(T.Rotate(0)(tensor).asnumpy(), tensor.asnumpy(), atol=1e-6)
    np.testing.assert_allclose(T.Rotate(180)(tensor).asnumpy(), tensor.asnumpy()[:, ::-1, ::-1], atol=1e-5)
    square = T.ToTensor()(img[:, :6])
    quarter = T.Rotate(90)(square).asnumpy()
    turns = [np.rot90(square.asnumpy(), k, axes=(1, 2)) for k in (1, -1)]
    assert any(np.allclose(quarter, turn, atol=1e-5) for turn in turns)
    assert T.RandomRotation((-10, 10), rotate_with_proba=0.0)(img) is img  # not rotated: not even checked
    random.seed(5)
    np.testing.assert_allclose(T.RandomRotation((90, 90.0001))(square).asnumpy(), quarter, atol=1e-3)
    with pytest.raises(BlockError, match="only supports float32.*apply it after ToTensor"):
        T.Rotate(30)(img)
    with pytest.raises(BlockError, match="angle_limits must be an ordered"):
        T.RandomRotation((10, -10))
    with pytest.raises(BlockError, match="zoom_in and zoom_out"):
        T.Rotate(10, zoom_in=True, zoom_out=True)


def test_random_apply_uses_its_probability():
    img = mx.nd.ones((2, 2, 3), dtype="uint8")
    double = mx.gluon.nn.Lambda(lambda x: x * 2)
    random.seed(0)
    always, never = T.RandomApply(double, p=1.0), T.RandomApply(double, p=0.0)
    assert (always(img).asnumpy() == 2).all() and never(img) is img
    applied = sum(int(T.RandomApply(double, p=0.3)(img).asnumpy()[0, 0, 0] == 2) for _ in range(400))
    assert 60 < applied < 180
    assert list(always._children) == ["transforms"]
    with pytest.raises(BlockError, match="p must be a probability"):
        T.RandomApply(double, p=1.5)


def test_python_drawn_crops_refuse_to_be_traced():
    with pytest.raises(BlockError, match="is a Block .*cannot be traced"):
        T.CenterCrop(2)(mx.sym.var("data"))


def test_resize_and_crops():
    img = mx.nd.array(np.random.RandomState(0).randint(0, 255, size=(8, 12, 3)), dtype="uint8")
    assert T.Resize((6, 4))(img).shape == (4, 6, 3)
    assert T.Resize(4, keep_ratio=True)(img).shape == (4, 6, 3)
    centre = T.CenterCrop(4)(img)
    np.testing.assert_array_equal(centre.asnumpy(), img.asnumpy()[2:6, 4:8])
    np.random.seed(0)
    assert T.RandomResizedCrop((5, 7))(img).shape == (7, 5, 3)
    with pytest.raises(BlockError, match="size"):
        T.Resize("big")


def test_flips_and_colour():
    img = mx.nd.array(np.arange(2 * 2 * 3).reshape(2, 2, 3), dtype="uint8")
    outcomes = set()
    np.random.seed(1)
    for _ in range(20):
        outcomes.add(T.RandomFlipLeftRight()(img).asnumpy().tobytes())
    assert outcomes == {img.asnumpy().tobytes(), img.asnumpy()[:, ::-1].tobytes()}
    grey = mx.nd.full((3, 3, 3), 100, dtype="uint8")
    # contrast and saturation blend with the grey level: a grey image does not change
    assert (T.RandomContrast(0.5)(grey).asnumpy() == 100).all()
    assert (T.RandomSaturation(0.5)(grey).asnumpy() == 100).all()
    assert abs(int(T.RandomHue(0.5)(grey).asnumpy()[0, 0, 0]) - 100) <= 1
    bright = T.RandomBrightness(0.5)(grey).asnumpy()
    assert 50 <= bright[0, 0, 0] <= 150 and (bright == bright[0, 0, 0]).all()
    jitter = T.RandomColorJitter(brightness=0.1, contrast=0.1, saturation=0.1, hue=0.1)
    assert isinstance(jitter, mx.gluon.HybridBlock) and jitter(grey).shape == (3, 3, 3)
    assert T.RandomLighting(0.1)(grey).dtype == np.uint8
    with pytest.raises(BlockError, match="expected 3 \\(RGB\\) channels"):
        T.RandomBrightness(0.1)(mx.nd.zeros((2, 2, 1), dtype="uint8"))


def test_compose_hybridizes_runs_of_hybrid_transforms():
    img = mx.nd.array(np.random.RandomState(6).randint(0, 255, size=(6, 8, 3)), dtype="uint8")
    compose = T.Compose(
        [T.CenterCrop(4), T.ToTensor(), T.Normalize(0.5, 0.25), T.Cast("float16"), T.RandomApply(T.Rotate(0), p=0.0)]
    )
    kinds = [type(child).__name__ for child in compose._children.values()]
    assert kinds == ["CenterCrop", "HybridSequential", "RandomApply"]
    run = compose._children["1"]
    assert run._active and len(run._children) == 3  # ToTensor, Normalize, Cast: one cached graph
    got = compose(img)
    expected = ((img.asnumpy()[1:5, 2:6].transpose(2, 0, 1) / 255.0 - 0.5) / 0.25).astype(np.float16)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.asnumpy(), expected, rtol=1e-3, atol=1e-3)
    single = T.Compose([T.ToTensor()])
    assert [type(child).__name__ for child in single._children.values()] == ["ToTensor"]


def test_compose_in_a_worker_pipeline():
    images = np.random.RandomState(0).randint(0, 255, size=(6, 8, 8, 3)).astype(np.uint8)
    ds = gdata.ArrayDataset(mx.nd.array(images, dtype="uint8"), np.arange(6)).transform_first(
        T.Compose([T.CenterCrop(4), T.ToTensor(), T.Normalize(0.5, 0.25)])
    )
    loader = gdata.DataLoader(ds, batch_size=4, num_workers=2)
    batches = list(loader)
    assert batches[0][0].shape == (4, 3, 4, 4) and batches[1][0].shape == (2, 3, 4, 4)
    expected = (images[:, 2:6, 2:6].transpose(0, 3, 1, 2) / 255.0 - 0.5) / 0.25
    got = np.concatenate([b[0].asnumpy() for b in batches])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    loader.close()


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="POSIX shared memory is listed in /dev/shm on Linux")
def test_an_abandoned_epoch_frees_the_shared_memory_of_batches_in_flight():
    def blocks():
        return {name for name in os.listdir("/dev/shm") if name.startswith("psm_")}

    before = blocks()
    loader = gdata.DataLoader(_dataset(40), batch_size=2, num_workers=2, prefetch=6)
    it = iter(loader)
    next(it)
    it.close()  # what garbage collection of the iterator does too
    loader.close()
    assert blocks() - before == set()


def test_auto_reload_starts_the_next_epoch_ahead_and_clean_drops_it():
    ds = _dataset(6)
    loader = gdata.DataLoader(ds, batch_size=2, num_workers=2, prefetch=2, auto_reload=True)
    ahead = loader._iter
    assert ahead is not None and len(ahead._pending) == 2  # the workers make the first batches already
    first = [y.asnumpy().tolist() for _, y in loader]
    assert first == [[0, 1], [2, 3], [4, 5]]
    assert loader._iter is not None and loader._iter is not ahead  # the next epoch started when this one ended
    assert [y.asnumpy().tolist() for _, y in loader] == first
    loader.clean()
    assert loader._iter is None
    assert [y.asnumpy().tolist() for _, y in loader] == first  # clean: the next iter starts afresh
    loader.close()
    plain = gdata.DataLoader(ds, batch_size=4)
    assert plain._iter is None and not plain.auto_reload
    plain.refresh()
    started = plain._iter
    assert [y.asnumpy().tolist() for _, y in plain] == [[0, 1, 2, 3], [4, 5]]
    assert plain._iter is None and started is not None  # without auto_reload nothing starts ahead
