"""ImageRecordIter against MXNet 1.9.1's output and a straightforward reference pipeline; im2rec."""

from __future__ import annotations

import gc
import io as pyio
import json
import mmap
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from framework import recordio
from framework.io import DataIterError, ImageRecordIter
from framework.io.image_aug import ExtraAugmentation
from framework.io.image_record_iter import _mapped, piece_bounds
from framework.io.pixels import resize_bilinear
from framework.io.record_augmenter import RecordAugmenter
from framework.recordio import IRHeader, MXIndexedRecordIO, RecordIOError, RecordIOFileNotFoundError
from framework.tools import im2rec

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "mxnet_1_9_1" / "recordio"
EXPECTED = json.loads((DATA / "expected.json").read_text())
ARRAYS = np.load(DATA / "expected.npz")
NORM = dict(mean_r=10, mean_g=20, mean_b=30, std_r=2, std_g=3, std_b=4, scale=0.5)


def rec(name: str = "images.rec") -> str:
    return str(DATA / name)


# ------------------------------------------------------------------ against MXNet 1.9.1
def test_center_crop_normalisation_and_round_batch_match_mxnet():
    it = ImageRecordIter(path_imgrec=rec(), data_shape=(3, 8, 8), batch_size=3, preprocess_threads=2, **NORM)
    assert [str(it.provide_data), str(it.provide_label)] == EXPECTED["norm_provide"]
    for epoch, expected in enumerate(EXPECTED["norm_epochs"]):
        batches = list(it)
        assert [{"label": b.label[0].asnumpy().tolist(), "pad": b.pad} for b in batches] == expected
        for k, batch in enumerate(batches):
            np.testing.assert_array_equal(batch.data[0].asnumpy(), ARRAYS[f"norm_e{epoch}_b{k}"])
        it.reset()
    it.close()


@pytest.mark.parametrize("name", ["mirror", "uint8", "resize16", "resize9"])
def test_mirror_uint8_and_resize_match_mxnet(name):
    kwargs = {
        "mirror": {"mirror": True},
        "uint8": {"dtype": "uint8"},
        "resize16": {"resize": 16},
        "resize9": {"resize": 9},
    }
    kwargs = kwargs[name]
    shape = (3, 16, 16) if name == "resize16" else (3, 8, 8)
    batch = next(ImageRecordIter(path_imgrec=rec(), data_shape=shape, batch_size=7, **kwargs))
    assert batch.label[0].asnumpy().tolist() == EXPECTED[name + "_label"]
    got, want = batch.data[0].asnumpy(), ARRAYS[name]
    assert got.dtype == want.dtype
    # OpenCV's fixed-point bilinear: exact when shrinking, within one level at the borders when enlarging
    assert np.abs(got.astype(int) - want).max() <= (1 if name == "resize16" else 0)


def test_multi_dimensional_labels_match_mxnet():
    it = ImageRecordIter(path_imgrec=rec("images_multilabel.rec"), data_shape=(3, 8, 8), batch_size=3, label_width=2)
    assert it.provide_label[0].shape == (3, 2)
    assert [{"label": b.label[0].asnumpy().tolist(), "pad": b.pad} for b in it] == EXPECTED["multilabel"]


@pytest.mark.parametrize("part", ["2/0", "2/1", "3/0", "3/1", "3/2"])
def test_partitions_match_mxnet_with_and_without_index(part):
    num_parts, part_index = map(int, part.split("/"))
    common = dict(data_shape=(3, 8, 8), batch_size=1, num_parts=num_parts, part_index=part_index)
    by_bytes = ImageRecordIter(path_imgrec=rec(), **common)
    by_index = ImageRecordIter(path_imgrec=rec(), path_imgidx=str(DATA / "images.idx"), **common)
    assert [int(b.label[0].asnumpy()[0]) for b in by_bytes] == EXPECTED["parts"][part]["bytes"]
    assert [int(b.label[0].asnumpy()[0]) for b in by_index] == EXPECTED["parts"][part]["index"]


# ------------------------------------------------------------------ against a reference pipeline
def bilinear_reference(img: np.ndarray, width: int, height: int) -> np.ndarray:
    """OpenCV's fixed-point bilinear resize (11-bit weights), pixel by pixel."""

    def tap(i: int, n_in: int, n_out: int) -> tuple[int, int, int]:
        src = np.float32((i + 0.5) * (n_in / n_out) - 0.5)
        lo = int(np.floor(src))
        frac = src - np.float32(lo)
        if lo < 0:
            lo, frac = 0, 0.0
        if lo >= n_in - 1:
            lo, frac = n_in - 1, 0.0
        return lo, min(lo + 1, n_in - 1), int(np.rint((1 - np.float32(frac)) * 2048))

    h, w, channels = img.shape
    out = np.zeros((height, width, channels), np.uint8)
    for i in range(height):
        y0, y1, b0 = tap(i, h, height)
        for j in range(width):
            x0, x1, a0 = tap(j, w, width)
            for c in range(channels):
                top = (int(img[y0, x0, c]) * a0 + int(img[y0, x1, c]) * (2048 - a0)) >> 4
                bottom = (int(img[y1, x0, c]) * a0 + int(img[y1, x1, c]) * (2048 - a0)) >> 4
                out[i, j, c] = ((top * b0 >> 16) + (bottom * (2048 - b0) >> 16) + 2) >> 2
    return out


def reference(payload: bytes, shape, resize, crop=None, flip=False) -> np.ndarray:
    """Decode with Pillow, resize the shorter edge, crop, flip, normalise: one image, plainly."""
    img = np.asarray(Image.open(pyio.BytesIO(payload)).convert("RGB"))
    if resize > 0:
        h, w = img.shape[:2]
        new_w, new_h = (resize, resize * h // w) if h > w else (resize * w // h, resize)
        img = bilinear_reference(img, new_w, new_h)
    h, w = img.shape[:2]
    y, x = crop if crop is not None else ((h - shape[1]) // 2, (w - shape[2]) // 2)
    img = img[y : y + shape[1], x : x + shape[2]]
    if flip:
        img = img[:, ::-1]
    mean = np.array([NORM["mean_r"], NORM["mean_g"], NORM["mean_b"]], np.float32)
    std = np.array([NORM["std_r"], NORM["std_g"], NORM["std_b"]], np.float32)
    return ((img.astype(np.float32) - mean) * (np.float32(NORM["scale"]) / std)).transpose(2, 0, 1)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """13 images of assorted sizes, PNG and JPEG, with labels 0..12 and ids 100+i."""
    folder = tmp_path_factory.mktemp("generated")
    rng = np.random.RandomState(11)
    payloads = []
    with MXIndexedRecordIO(folder / "g.idx", folder / "g.rec", "w") as out:
        for i in range(13):
            h, w = rng.randint(18, 40, size=2)
            yy, xx = np.mgrid[0:h, 0:w]
            rgb = np.stack([(yy * 7 + i * 13) % 256, (xx * 5) % 256, (yy * xx) % 256], axis=2)
            rgb = np.clip(rgb + rng.randint(0, 30, size=rgb.shape), 0, 255).astype(np.uint8)
            fmt = ".png" if i % 2 else ".jpg"
            record = recordio.pack_img(IRHeader(0, float(i), 100 + i, 0), rgb[:, :, ::-1], img_fmt=fmt)
            out.write_idx(i, record)
            payloads.append(recordio.unpack(record)[1])
    return str(folder / "g.rec"), str(folder / "g.idx"), payloads


def test_output_equals_the_reference_pipeline(generated):
    path, _, payloads = generated
    it = ImageRecordIter(
        path_imgrec=path, data_shape=(3, 16, 16), batch_size=5, resize=18, preprocess_threads=3, **NORM
    )
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 2]
    for batch in batches:
        labels, ids = batch.label[0].asnumpy().astype(int), batch.index
        assert ids.tolist() == [100 + k for k in labels]
        for k, label in enumerate(labels):
            want = reference(payloads[label], (3, 16, 16), 18)
            np.testing.assert_array_equal(batch.data[0].asnumpy()[k], want)


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int8"])
def test_a_piece_of_records_equals_its_records_one_by_one(generated, dtype):
    """A piece shares one vertical pass and normalisation among its bilinear images; the others
    (inter_method 10 draws NEAREST, BICUBIC, ... per image) are finished alone, in the same array."""
    path, _, _ = generated
    params = dict(
        resize=22, rand_crop=True, rand_mirror=True, mirror=False, inter_method=10, dtype=dtype,
        mean_r=10, mean_g=20, mean_b=30, mean_a=0, std_r=2, std_g=3, std_b=4, std_a=1, scale=0.5,
        max_decoded_pixels=10**6, extra=ExtraAugmentation.from_kwargs({}, None, None),
    )  # fmt: skip
    augment = RecordAugmenter(path, (3, 16, 20), 1, params)
    offsets = recordio.scan_record_offsets(path)
    with open(path, "rb") as f:
        records = [recordio.read_record(f, path) for _ in offsets]
    rng = np.random.RandomState(5)
    randoms = np.column_stack([rng.random_sample((len(records), 3)), np.arange(len(records))])  # draws 0..4
    together = np.zeros((len(records), 3, 16, 20), dtype=dtype)
    results = augment.process(records, offsets, randoms, together)
    for k, record in enumerate(records):
        alone = np.zeros((3, 16, 20), dtype=dtype)
        assert augment(record, offsets[k], randoms[k], alone) == results[k] == (float(k), 100 + k)
        np.testing.assert_array_equal(together[k], alone)
        if dtype == "uint8":  # the drawn filter: OpenCV's bilinear for 1, Pillow's for the others
            pixels = np.asarray(Image.open(pyio.BytesIO(recordio.unpack(record)[1])).convert("RGB"))
            h, w = pixels.shape[:2]
            size = (22, 22 * h // w) if h > w else (22 * w // h, 22)
            y, x = int(randoms[k, 0] * (size[1] - 16 + 1)), int(randoms[k, 1] * (size[0] - 20 + 1))
            if k % 5 == 1:
                crop = resize_bilinear(pixels, *size, (y, x, 16, 20))
            else:
                pillow = {0: "NEAREST", 2: "BICUBIC", 3: "BOX", 4: "LANCZOS"}[k % 5]
                resized = np.asarray(Image.fromarray(pixels).resize(size, getattr(Image.Resampling, pillow)))
                crop = resized[y : y + 16, x : x + 20]
            crop = crop[:, ::-1] if randoms[k, 2] < 0.5 else crop
            np.testing.assert_array_equal(alone, crop.transpose(2, 0, 1))


@pytest.mark.parametrize(
    ("count", "piece", "threads", "last", "sizes"),
    [
        (32, 8, 2, False, [8, 8, 8, 8]),
        (32, 8, 1, True, [8, 8, 8, 8]),  # one worker: nobody waits at the end
        (32, 8, 2, True, [8, 6, 5, 4, 3, 2, 2, 2]),  # guided: a quarter of what remains, at least 2
        (32, 4, 4, True, [4, 4, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 1]),  # the remainder may be smaller
        (5, 2, 3, True, [2, 2, 1]),
        (1, 8, 2, True, [1]),
    ],
)
def test_the_last_batch_of_an_epoch_is_cut_in_shrinking_pieces(count, piece, threads, last, sizes):
    bounds = piece_bounds(count, piece, threads, last)
    assert [hi - lo for lo, hi in bounds] == sizes
    assert [lo for lo, _ in bounds] == [0, *(hi for _, hi in bounds[:-1])] and bounds[-1][1] == count


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"dtype": "uint8"},
        {"dtype": "int8", "data_shape": (1, 14, 14)},
        {"inter_method": 10},  # Pillow's filters drawn per image, finished one by one in the piece
        {"max_rotate_angle": 20, "brightness": 0.3},  # the general path, a generator per image
    ],
    ids=["float32", "uint8", "int8 gray", "random filter", "extra augmentations"],
)
def test_every_batch_is_the_same_whatever_the_number_of_threads(generated, options):
    """Random crops and mirrors are drawn per batch by the loader, so how the batches are cut
    into pieces (by thread count, shrinking in the last batch) never shows in the output."""
    path, _, _ = generated
    settings = dict(path_imgrec=path, data_shape=(3, 14, 14), batch_size=9, resize=20, rand_crop=True, rand_mirror=True)
    settings.update(options)
    epochs = {}
    for threads in (1, 2, 3):
        it = ImageRecordIter(preprocess_threads=threads, **settings)
        epochs[threads] = [(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it]
        it.close()
    assert len(epochs[1]) == 2
    for threads in (2, 3):
        for (data, label, pad), (want, want_label, want_pad) in zip(epochs[threads], epochs[1], strict=True):
            np.testing.assert_array_equal(data, want)
            np.testing.assert_array_equal(label, want_label)
            assert pad == want_pad


def test_a_label_array_of_one_value_is_a_scalar_label(tmp_path):
    """A record packed with a label array (flag 1) gives its value with label_width=1, as a scalar label does."""
    pixels = np.full((12, 12, 3), 90, np.uint8)
    with recordio.MXRecordIO(str(tmp_path / "one.rec"), "w") as out:
        out.write(recordio.pack_img(IRHeader(0, np.array([3.5], np.float32), 7, 0), pixels, img_fmt=".png"))
        out.write(recordio.pack_img(IRHeader(0, 4.0, 8, 0), pixels, img_fmt=".png"))
    batch = next(ImageRecordIter(path_imgrec=str(tmp_path / "one.rec"), data_shape=(3, 12, 12), batch_size=2))
    assert batch.label[0].asnumpy().tolist() == [3.5, 4.0]
    assert batch.index.tolist() == [7, 8]


@pytest.mark.slow  # searches every crop position of every image
def test_random_crop_and_mirror_are_valid_crops_and_reproducible(generated):
    path, _, payloads = generated
    settings = dict(path_imgrec=path, data_shape=(3, 12, 12), batch_size=13, rand_crop=True, rand_mirror=True, **NORM)
    seen_crops, seen_flips = set(), set()
    data = next(ImageRecordIter(preprocess_threads=1, **settings)).data[0].asnumpy()
    for k, payload in enumerate(payloads):
        h, w = Image.open(pyio.BytesIO(payload)).size[::-1]
        matches = [
            (y, x, flip)
            for y in range(h - 11)
            for x in range(w - 11)
            for flip in (False, True)
            if np.array_equal(data[k], reference(payload, (3, 12, 12), -1, (y, x), flip))
        ]
        assert matches, f"image {k} is not a crop of its source"
        seen_crops.add(matches[0][:2])
        seen_flips.add(matches[0][2])
    assert len(seen_crops) > 5 and seen_flips == {False, True}
    # the random numbers do not depend on how the work is split between threads
    again = next(ImageRecordIter(preprocess_threads=3, **settings)).data[0].asnumpy()
    np.testing.assert_array_equal(again, data)
    other = next(ImageRecordIter(preprocess_threads=3, seed_aug=5, **settings)).data[0].asnumpy()
    assert not np.array_equal(other, data)


def test_grayscale_uses_opencvs_weights(generated):
    path, _, payloads = generated
    batch = next(ImageRecordIter(path_imgrec=path, data_shape=(1, 16, 16), batch_size=2))
    rgb = np.asarray(Image.open(pyio.BytesIO(payloads[0])).convert("RGB")).astype(np.float64)
    gray = np.floor(rgb @ [0.299, 0.587, 0.114] + 0.5)
    h, w = gray.shape
    y, x = (h - 16) // 2, (w - 16) // 2
    assert batch.data[0].shape == (2, 1, 16, 16)
    assert np.abs(batch.data[0].asnumpy()[0, 0] - gray[y : y + 16, x : x + 16]).max() <= 1


def test_decoding_runs_on_preprocess_threads(generated, monkeypatch):
    path, _, _ = generated
    original = RecordAugmenter.process  # the workers' unit of work: a piece of a batch
    lock, running, peak, threads = threading.Lock(), {}, {}, {}  # per augmenter (other iterators may be alive)
    first_two = {}  # per augmenter: its first two pieces meet here, so two threads decode at once on any machine

    def spy(self, *args):
        key = id(self)
        with lock:
            running[key] = running.get(key, 0) + 1
            peak[key] = max(peak.get(key, 0), running[key])
            threads.setdefault(key, set()).add(threading.current_thread().name)
            meet = first_two.setdefault(key, [threading.Barrier(2, timeout=10), 2])
            waits = meet[1] > 0
            meet[1] -= 1
        if waits:
            meet[0].wait()  # BrokenBarrierError unless the second piece is decoded alongside the first
        try:
            return original(self, *args)
        finally:
            with lock:
                running[key] -= 1

    monkeypatch.setattr(RecordAugmenter, "process", spy)
    it = ImageRecordIter(path_imgrec=path, data_shape=(3, 16, 16), batch_size=6, preprocess_threads=2)
    list(it)
    it.close()
    with pytest.raises(DataIterError, match=r"used after close"):
        it.reset()
    key = id(it._augment)
    assert peak[key] == 2
    assert len(threads[key]) == 2 and all(name.startswith("ImageRecordIter") for name in threads[key])
    assert not any(t.name in threads[key] and t.is_alive() for t in threading.enumerate())


def test_shuffle_permutes_each_epoch_reproducibly(generated):
    path, idx, _ = generated

    def labels(it):
        return [int(v) for b in it for v in b.label[0].asnumpy()]

    settings = dict(path_imgrec=path, path_imgidx=idx, data_shape=(3, 16, 16), batch_size=13, shuffle=True, seed=4)
    it = ImageRecordIter(**settings)
    first = labels(it)
    it.reset()
    second = labels(it)
    assert sorted(first) == sorted(second) == list(range(13))
    assert first != list(range(13)) and second != first
    assert labels(ImageRecordIter(**settings)) == first


def test_without_round_batch_the_last_batch_is_zero_padded(generated):
    path, _, _ = generated
    it = ImageRecordIter(path_imgrec=path, data_shape=(3, 16, 16), batch_size=5, round_batch=False)
    last = list(it)[-1]
    assert last.pad == 2 and last.index.tolist() == [110, 111, 112]
    assert not last.data[0].asnumpy()[3:].any() and last.label[0].asnumpy()[3:].tolist() == [0, 0]


# ------------------------------------------------------------------ bad data and bad arguments
def test_label_width_mismatches_name_file_and_offset(generated):
    path, _, _ = generated
    it = ImageRecordIter(path_imgrec=path, data_shape=(3, 16, 16), batch_size=2, label_width=2)
    with pytest.raises(
        DataIterError, match=r"g\.rec, record at byte offset 0: a scalar label \(width 1\) but label_width is 2"
    ):
        next(it)
    it = ImageRecordIter(path_imgrec=rec("images_multilabel.rec"), data_shape=(3, 8, 8), batch_size=2)
    with pytest.raises(
        DataIterError, match=r"images_multilabel\.rec, record at byte offset 0: label of width 2 but label_width is 1"
    ):
        next(it)


def test_damaged_and_missing_files(tmp_path, generated):
    path, _, _ = generated
    raw = Path(path).read_bytes()
    (tmp_path / "cut.rec").write_bytes(raw[: len(raw) - 10])
    with pytest.raises(RecordIOError, match=r"cut\.rec: record at byte offset \d+ is truncated"):
        ImageRecordIter(path_imgrec=str(tmp_path / "cut.rec"), data_shape=(3, 16, 16), batch_size=2)
    with pytest.raises(RecordIOFileNotFoundError, match=r"index file not found: '.*nope\.idx'"):
        ImageRecordIter(path_imgrec=path, path_imgidx=str(tmp_path / "nope.idx"), data_shape=(3, 16, 16), batch_size=2)
    with pytest.raises(RecordIOFileNotFoundError, match=r"RecordIO file not found"):
        ImageRecordIter(path_imgrec=str(tmp_path / "nope.rec"), data_shape=(3, 16, 16), batch_size=2)
    with MXIndexedRecordIO(tmp_path / "junk.idx", tmp_path / "junk.rec", "w") as out:
        out.write_idx(0, recordio.pack(IRHeader(0, 1.0, 0, 0), b"not an image"))
    it = ImageRecordIter(path_imgrec=str(tmp_path / "junk.rec"), data_shape=(3, 16, 16), batch_size=1)
    with pytest.raises(DataIterError, match=r"junk\.rec, record at byte offset 0: cannot decode the image"):
        next(it)
    it = ImageRecordIter(path_imgrec=path, data_shape=(3, 64, 64), batch_size=1)
    with pytest.raises(
        DataIterError, match=r"record at byte offset 0: image is \d+x\d+ \(HxW\), smaller than data_shape 64x64"
    ):
        next(it)


def test_records_cut_off_after_the_index_was_written_are_named(tmp_path, generated):
    """The loader reads the file through a memory mapping: a record cut short, or an offset past
    the end (an index from another version of the file), is reported as a file read would be."""
    path, idx, _ = generated
    raw = Path(path).read_bytes()
    offsets = [int(line.split()[1]) for line in Path(idx).read_text().splitlines()]
    (tmp_path / "cut.rec").write_bytes(raw[: offsets[2] + 20])  # records 0 and 1 whole, record 2 cut
    (tmp_path / "cut.idx").write_text(Path(idx).read_text())
    it = ImageRecordIter(
        path_imgrec=str(tmp_path / "cut.rec"), path_imgidx=str(tmp_path / "cut.idx"), data_shape=(3, 16, 16),
        batch_size=2, preprocess_threads=1,
    )  # fmt: skip
    assert next(it).label[0].asnumpy().tolist() == [0.0, 1.0]
    with pytest.raises(RecordIOError, match=rf"cut\.rec: record at byte offset {offsets[2]} is truncated"):
        next(it)
    (tmp_path / "far.idx").write_text(f"0\t0\n1\t{len(raw) + 64}\n")
    it = ImageRecordIter(path_imgrec=path, path_imgidx=str(tmp_path / "far.idx"), data_shape=(3, 16, 16), batch_size=2)
    with pytest.raises(DataIterError, match=rf"no record at byte offset {len(raw) + 64}"):
        next(it)


def test_the_loader_maps_the_file_unless_it_is_empty(tmp_path):
    (tmp_path / "empty.rec").write_bytes(b"")
    (tmp_path / "some.rec").write_bytes(b"0123456789")
    empty = _mapped(str(tmp_path / "empty.rec"))  # a mapping cannot be empty: the file's no bytes
    assert len(empty) == 0 and recordio.read_record_at(empty, 0, "empty.rec") is None
    some = _mapped(str(tmp_path / "some.rec"))
    assert isinstance(some.obj, mmap.mmap) and bytes(some[4:7]) == b"456"


def test_records_are_slices_of_the_mapping_that_outlive_the_loader(tmp_path):
    """The workers get views of the mapping, not copies; the loader never closes the mapping, so a
    record read after the loader finished (or a record glued from parts) is still intact."""
    magic_as_float = np.frombuffer(recordio.MAGIC_BYTES, np.float32)[0]
    image = np.full((12, 12, 3), 90, np.uint8)
    path = str(tmp_path / "parts.rec")
    with recordio.MXRecordIO(path, "w") as out:
        for k in range(3):  # the label's first value is the magic, 4-byte aligned: record 1 is in parts
            label = [magic_as_float if k == 1 else 7.0, float(k)]
            out.write(recordio.pack_img(IRHeader(0, label, k, 0), image, img_fmt=".png"))
    offsets = recordio.scan_record_offsets(path)
    view = _mapped(path)
    records = [recordio.read_record_at(view, offset, path) for offset in offsets]
    del view
    with open(path, "rb") as f:
        assert [bytes(r) for r in records] == [recordio.read_record(f, path) for _ in offsets]
    assert records[0].obj is records[2].obj and records[1].obj is not records[0].obj  # 1 glued from parts
    it = ImageRecordIter(
        path_imgrec=path, data_shape=(3, 8, 8), batch_size=3, label_width=2, preprocess_threads=2, resize=10
    )
    mapping = weakref.ref(it._file_view.obj)
    for _ in range(2):  # the file is mapped once, for every epoch
        batch = next(it)
        np.testing.assert_array_equal(batch.label[0].asnumpy(), [[7.0, 0.0], [magic_as_float, 1.0], [7.0, 2.0]])
        np.testing.assert_array_equal(batch.data[0].asnumpy(), np.full((3, 3, 8, 8), 90, np.float32))
        assert it._loader.view.obj is mapping()
        it.reset()
    it.close()
    del it, batch
    gc.collect()
    assert mapping() is None  # unmapped with the last record viewing it: nothing holds it after close


def test_bad_arguments_are_named():
    common = dict(path_imgrec=rec(), batch_size=2)
    with pytest.raises(DataIterError, match=r"data_shape must be \(channels, height, width\) with 1, 3 or 4 channels"):
        ImageRecordIter(data_shape=(2, 8, 8), **common)
    with pytest.warns(UserWarning, match=r"ImageRecordIter: ignoring keyword\(s\) colour"):
        ImageRecordIter(data_shape=(3, 8, 8), colour=1, **common).close()
    with pytest.raises(DataIterError, match=r"path_imglist: file not found: 'no.lst'"):
        ImageRecordIter(data_shape=(3, 8, 8), path_imglist="no.lst", **common)
    with pytest.raises(DataIterError, match=r"max_rotate_angle must be >= 0, got -10"):
        ImageRecordIter(data_shape=(3, 8, 8), max_rotate_angle=-10, **common)
    with pytest.raises(DataIterError, match=r"part_index must be in \[0, 2\), got 5"):
        ImageRecordIter(data_shape=(3, 8, 8), num_parts=2, part_index=5, **common)
    with pytest.raises(DataIterError, match=r"part 7 of 8 .* holds no records \(7 records in the file\)"):
        ImageRecordIter(data_shape=(3, 8, 8), num_parts=8, part_index=7, path_imgidx=str(DATA / "images.idx"), **common)


# ------------------------------------------------------------------ im2rec
def make_folder(root: Path) -> None:
    rng = np.random.RandomState(1)
    for label in ("cat", "dog"):
        (root / label).mkdir(parents=True)
        for i in range(4):
            Image.fromarray(rng.randint(0, 255, (20 + i, 24, 3)).astype(np.uint8)).save(root / label / f"{i}.png")
    Image.fromarray(rng.randint(0, 255, (20, 24, 3)).astype(np.uint8)).save(root / "top.jpg")


def test_im2rec_lists_like_mxnet_and_packs_records(tmp_path):
    make_folder(tmp_path / "images")
    prefix = str(tmp_path / "data")
    done = subprocess.run(
        [sys.executable, "-m", "framework.tools.im2rec", "--list", "--recursive", prefix, str(tmp_path / "images")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = (tmp_path / "data.lst").read_text().splitlines()
    # MXNet 1.9.1's im2rec.py wrote this order for the same folder (random.seed(100) shuffle)
    assert [line.split("\t")[0] for line in lines] == ["4", "0", "5", "8", "6", "1", "3", "7", "2"]
    assert lines[0] == "4\t1.000000\tcat/3.png" and lines[1] == "0\t0.000000\ttop.jpg"
    assert im2rec.main(["--resize", "16", "--num-thread", "2", prefix, str(tmp_path / "images")]) == 0
    it = ImageRecordIter(path_imgrec=prefix + ".rec", path_imgidx=prefix + ".idx", data_shape=(3, 16, 16), batch_size=9)
    batch = next(it)
    assert batch.label[0].asnumpy().tolist() == [1, 0, 2, 2, 2, 1, 1, 2, 1]
    assert batch.index.tolist() == [4, 0, 5, 8, 6, 1, 3, 7, 2]


def test_im2rec_pass_through_and_errors(tmp_path, capsys):
    make_folder(tmp_path / "images")
    prefix = str(tmp_path / "p")
    assert im2rec.main(["--list", "--no-shuffle", prefix, str(tmp_path / "images")]) == 0
    assert (tmp_path / "p.lst").read_text() == "0\t0.000000\ttop.jpg\n"
    assert im2rec.main(["--pass-through", prefix, str(tmp_path / "images")]) == 0
    with recordio.MXIndexedRecordIO(tmp_path / "p.idx", tmp_path / "p.rec", "r") as out:
        assert recordio.unpack(out.read_idx(0))[1] == (tmp_path / "images" / "top.jpg").read_bytes()
    assert im2rec.main([str(tmp_path / "none"), str(tmp_path / "images")]) == 1
    assert "no .lst file with prefix" in capsys.readouterr().err


def test_garbage_collection_never_waits_for_the_loader(generated):
    """__del__ may run on any thread (even one holding a lock the loader needs): it only signals."""
    path, _, _ = generated
    it = ImageRecordIter(path_imgrec=path, data_shape=(3, 16, 16), batch_size=2, prefetch_buffer=1)
    loader = it._loader
    time.sleep(0.05)  # the loader is now (most likely) blocked on its full queue
    start = time.perf_counter()
    it.__del__()
    # it only sets a flag: a join would wait for the blocked loader (seconds); 1 s is a margin for any machine
    assert time.perf_counter() - start < 1.0
    loader.thread.join(timeout=2)
    assert not loader.thread.is_alive()


@pytest.mark.slow  # runs the IO benchmark
def test_benchmark_script_runs_and_prints_json_lines():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "io.py"), "--images", "16", "--rounds", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    records = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert [r["case"] for r in records] == ["threads1", "threads2", "pillow_loop", "speedup_2v1"]
    for record in records:
        assert {"workload", "engine", "case", "unit", "median", "min", "max", "samples", "ratios"} <= record.keys()


@pytest.mark.parametrize(
    ("shape", "kwargs"),
    [((4, 16, 16), {}), ((1, 12, 12), {"resize": 20}), ((3, 16, 16), {"resize": 20, "inter_method": 2})],
)
def test_other_colour_modes_and_filters(generated, shape, kwargs):
    path, _, _ = generated
    batch = next(ImageRecordIter(path_imgrec=path, data_shape=shape, batch_size=4, **kwargs))
    data = batch.data[0].asnumpy()
    assert data.shape == (4, *shape) and np.isfinite(data).all() and data.max() > 0
    if shape[0] == 4:  # PNG/JPEG without alpha: an opaque alpha channel
        assert (data[:, 3] == 255).all()
