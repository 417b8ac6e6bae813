"""``ImageDetRecordIter`` (random pad and mirror statistics, label padding, errors), the ImageRecordIter
variants (``ImageRecordUInt8Iter``, ``ImageRecordInt8Iter``, ``_v1``) and ``MXDataIter``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import framework as mx
from framework import recordio
from framework.io import DataIterError
from framework.io.det_crop_sampler import CropSampler
from framework.io.det_label import DetLabelError

DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1"
DET_REC = str(DATA / "image_det" / "det.rec")
IMAGES_REC = str(DATA / "image" / "images.rec")
PNG = (DATA / "image" / "images" / "img_0.png").read_bytes()


def det_iter(**kwargs):
    args = dict(path_imgrec=DET_REC, data_shape=(3, 16, 16), batch_size=4, preprocess_threads=1, verbose=False)
    return mx.io.ImageDetRecordIter(**{**args, **kwargs})


def write_rec(path, labels):
    writer = recordio.MXRecordIO(str(path), "w")
    for k, label in enumerate(labels):
        writer.write(recordio.pack(recordio.IRHeader(0, label, k, 0), PNG))
    writer.close()
    return str(path)


def test_labels_are_padded_to_the_longest_and_the_names_exist():
    it = det_iter()
    assert isinstance(it, mx.io.MXDataIter) and mx.io.io.ImageDetRecordIter is mx.io.ImageDetRecordIter
    assert it.provide_label[0].name == "label" and it.provide_label[0].shape == (4, 4 + 17)
    label = it.next().label[0].asnumpy()
    np.testing.assert_array_equal(label[0, :6], [3, 16, 16, 7, 2, 5])
    np.testing.assert_array_equal(label[0, 4 + 7 :], -1)
    wider = det_iter(label_pad_width=30, label_pad_value=-5)
    assert wider.next().label[0].shape == (4, 34) and wider.getlabel()[0].asnumpy()[0, -1] == -5


def test_random_mirror_flips_about_half_the_images_with_their_boxes():
    plain = np.concatenate([b.label[0].asnumpy() for b in det_iter()])
    flips = 0
    it = det_iter(rand_mirror_prob=0.5, seed=3)
    for _ in range(25):
        it.reset()
        for i, batch in enumerate(it):
            label = batch.label[0].asnumpy()
            for row, original in zip(label, plain[4 * i : 4 * i + 4], strict=True):
                if not np.array_equal(row, original):
                    flips += 1
                    np.testing.assert_allclose(row[7], 1 - original[9], atol=1e-6)  # xmin = 1 - old xmax
    assert 60 < flips < 140  # 200 images, p = 1/2


def test_random_pad_shrinks_the_boxes_and_fills_the_border():
    it = det_iter(rand_pad_prob=1.0, max_pad_scale=3.0, fill_value=200, resize_mode="force", seed=1)
    plain = np.concatenate([b.label[0].asnumpy() for b in det_iter()])
    batches = list(it)
    padded = np.concatenate([b.label[0].asnumpy() for b in batches])
    data = np.concatenate([b.data[0].asnumpy() for b in batches])
    assert (data == 200).all(axis=1).mean() > 0.1  # the canvas around the images is fill_value
    widths = (padded[:, 9] - padded[:, 7]) / (plain[:, 9] - plain[:, 7])
    assert np.all(widths <= 1 + 1e-6) and widths.mean() < 0.9  # boxes shrink on a larger canvas
    assert np.all((padded[:, 7:11] >= -1e-6) & (padded[:, 7:11] <= 1 + 1e-6))


def test_bad_parameters_and_records_are_clear_errors(tmp_path):
    with pytest.raises(DataIterError, match="path_imglist: file not found"):
        det_iter(path_imglist=str(tmp_path / "none.lst"))
    partial = tmp_path / "partial.lst"
    partial.write_text("0\t2\t5\t1\t0.1\t0.1\t0.5\t0.5\tx.png\n")
    with pytest.raises(DataIterError, match="image index 1 is not in path_imglist"):
        det_iter(path_imglist=str(partial))
    with pytest.raises(DataIterError, match="crop_emit_mode"):
        det_iter(rand_crop_prob=0.5, crop_emit_mode="edge")
    with pytest.raises(DataIterError, match="min_crop_scales has 3 values"):
        det_iter(rand_crop_prob=0.5, num_crop_sampler=2, min_crop_scales=(0.1, 0.2, 0.3))
    with pytest.raises(DataIterError, match="must not exceed"):
        det_iter(rand_crop_prob=0.5, min_crop_overlaps=0.9, max_crop_overlaps=0.1)
    with pytest.raises(DataIterError, match="random_hue_prob must be a probability"):
        det_iter(random_hue_prob=2.0, max_random_hue=10)
    with pytest.raises(DataIterError, match="resize_mode"):
        det_iter(resize_mode="stretch")
    with pytest.raises(DataIterError, match="smaller than the longest label"):
        det_iter(label_pad_width=10)
    with pytest.raises(DataIterError, match="label_width is 17"):
        det_iter(label_width=17)
    with pytest.raises(DataIterError, match=r"\(3, height, width\)"):
        det_iter(data_shape=(1, 16, 16))
    scalar = write_rec(tmp_path / "scalar.rec", [1.0])
    with pytest.raises(DataIterError, match="scalar label"):
        det_iter(path_imgrec=scalar)
    ragged = write_rec(tmp_path / "ragged.rec", [np.float32([2, 5, 0, 0.1, 0.1, 0.5, 0.5, 9])])
    with pytest.raises(DetLabelError, match="whole number of objects"):
        det_iter(path_imgrec=ragged)
    with pytest.raises(recordio.RecordIOError):
        det_iter(path_imgrec=str(tmp_path / "missing.rec"))


def test_record_iter_variants_fix_the_dtype():
    kwargs = dict(path_imgrec=IMAGES_REC, data_shape=(3, 16, 16), batch_size=2, resize=16, verbose=False)
    assert mx.io.ImageRecordUInt8Iter(**kwargs).next().data[0].dtype == np.uint8
    int8 = mx.io.ImageRecordInt8Iter(mean_r=100, **kwargs).next().data[0].asnumpy()
    assert int8.dtype == np.int8 and int8.min() >= -128 and int8[:, 0].min() < 0
    assert mx.io.ImageRecordIter_v1(**kwargs).next().data[0].dtype == np.float32
    with pytest.raises(DataIterError, match="output dtype is uint8"):
        mx.io.ImageRecordUInt8Iter(dtype="float32", **kwargs)
    with pytest.raises(TypeError, match="keyword arguments"):
        mx.io.ImageRecordIter_v1(IMAGES_REC)


def test_debug_skip_load_repeats_one_batch():
    it = mx.io.ImageRecordIter(path_imgrec=IMAGES_REC, data_shape=(3, 16, 16), batch_size=2, resize=16, verbose=False)
    first = it.next()
    it.debug_skip_load()
    assert all(it.next() is first for _ in range(20))  # 10 images would have run out after 4 more


def test_random_crop_windows_meet_the_sampler_constraints():
    sampler = CropSampler(
        dict(num_crop_sampler=2, min_crop_scales=(0.3, 0.5), max_crop_scales=(0.6, 0.9), min_crop_overlaps=(0.3, 0.5),
             min_crop_aspect_ratios=0.5, max_crop_aspect_ratios=2.0, max_crop_trials=50, crop_emit_mode="center")
    )  # fmt: skip
    objects = np.float32([[0, 0.1, 0.1, 0.5, 0.6], [1, 0.55, 0.3, 0.95, 0.9]])
    rng = np.random.RandomState(0)
    cropped = 0
    for _ in range(300):
        result = sampler.crop(objects, rng)
        if result is None:
            continue
        cropped += 1
        (x0, y0, x1, y1), moved = result
        side = np.sqrt((x1 - x0) * (y1 - y0))
        assert 0.3 - 1e-9 <= side <= 0.9 + 1e-9 and 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1
        inter = [max(0, min(b[3], x1) - max(b[1], x0)) * max(0, min(b[4], y1) - max(b[2], y0)) for b in objects]
        area = (objects[:, 3] - objects[:, 1]) * (objects[:, 4] - objects[:, 2])
        iou = np.array(inter) / (area + (x1 - x0) * (y1 - y0) - np.array(inter))
        assert iou.max() >= 0.3 - 1e-6  # some box overlaps the window enough for a sampler
        assert np.all((moved[:, 1:5] >= 0) & (moved[:, 1:5] <= 1)) and len(moved) >= 1
    assert cropped > 200


def test_random_crop_and_colour_run_in_the_iterator():
    crop = dict(rand_crop_prob=1.0, min_crop_scales=0.5, max_crop_scales=0.8, max_crop_trials=50)
    colour = dict(random_hue_prob=1.0, max_random_hue=30, random_contrast_prob=0.5, max_random_contrast=0.3)
    it = det_iter(seed=2, **crop, **colour)
    plain = np.concatenate([b.label[0].asnumpy() for b in det_iter()])
    labels = np.concatenate([b.label[0].asnumpy() for b in it])
    assert not np.array_equal(labels, plain)  # windows moved the boxes
    counts = labels[:, 3]
    assert np.all(counts <= plain[:, 3]) and np.all((counts - 2) % 5 == 0)  # objects only dropped, whole
    it.reset()
    data = np.concatenate([b.data[0].asnumpy() for b in it])
    assert data.shape == (8, 3, 16, 16) and np.isfinite(data).all()
