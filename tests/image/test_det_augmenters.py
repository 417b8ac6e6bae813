"""Detection augmenters and ``ImageDetIter``: box arithmetic, random-augmenter statistics, label shapes, errors."""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import numpy as np
import pytest

import framework as mx
from framework import recordio
from framework.image import DetLabelError, ImageError
from framework.image.det_iter import parse_det_label

DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "image_det"
IMAGES = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "image"
REC, IDX, LST = str(DATA / "det.rec"), str(DATA / "det.idx"), str(DATA / "det.lst")


def image(h=40, w=60):
    values = np.arange(h * w * 3, dtype=np.float32).reshape(h, w, 3) % 251
    return mx.nd.array(values)


def label(*boxes):
    return np.array([[k, *box] for k, box in enumerate(boxes)], dtype=np.float32)


def plain_augs(size=16):
    return [
        mx.image.DetBorrowAug(mx.image.ForceResizeAug((size, size), interp=0)),
        mx.image.DetBorrowAug(mx.image.CastAug()),
    ]


# ---------------------------------------------------------------------- the names
def test_mxnet_submodule_names_are_module_aliases():
    assert mx.image.det is mx.image.detection
    assert mx.image.detection.ImageDetIter is mx.image.ImageDetIter
    assert mx.image.image.ImageIter is mx.image.ImageIter and mx.image.image.CreateAugmenter is mx.image.CreateAugmenter
    assert mx.img.det.CreateDetAugmenter is mx.image.CreateDetAugmenter


# ---------------------------------------------------------------------- deterministic augmenters
def test_flip_mirrors_the_pixels_and_the_boxes():
    src, lab = image(), label([0.1, 0.2, 0.4, 0.9], [0.5, 0.0, 1.0, 0.5])
    out, new = mx.image.DetHorizontalFlipAug(1.0)(src, lab)
    np.testing.assert_array_equal(out.asnumpy(), src.asnumpy()[:, ::-1])
    np.testing.assert_allclose(new[:, 1:5], [[0.6, 0.2, 0.9, 0.9], [0.0, 0.0, 0.5, 0.5]], atol=1e-6)
    np.testing.assert_array_equal(lab[0, 1:5], np.float32([0.1, 0.2, 0.4, 0.9]))  # the input is left alone
    same, kept = mx.image.DetHorizontalFlipAug(0.0)(src, lab)
    assert same is src and kept is lab


def test_borrow_applies_a_classification_augmenter_and_keeps_the_label():
    lab = label([0.1, 0.1, 0.5, 0.5])
    out, new = mx.image.DetBorrowAug(mx.image.ForceResizeAug((30, 20), interp=0))(image(), lab)
    assert out.shape == (20, 30, 3) and new is lab
    with pytest.raises(TypeError, match="Augmenter"):
        mx.image.DetBorrowAug(mx.image.DetHorizontalFlipAug(0.5))


def test_dumps_describe_the_pipeline():
    aug = mx.image.DetBorrowAug(mx.image.CastAug())
    assert aug.dumps() == ["detborrowaug", mx.image.CastAug().dumps()]
    name, kwargs = json.loads(mx.image.DetRandomCropAug(min_object_covered=0.5).dumps())
    assert name == "detrandomcropaug" and kwargs["min_object_covered"] == 0.5
    select = mx.image.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.3, 0.5])
    assert select.dumps()[0] == "detrandomselectaug" and len(select.dumps()[1]) == 3


def test_create_det_augmenter_order_and_options():
    options = dict(resize=40, rand_crop=0.5, rand_pad=0.5, rand_mirror=True, mean=True, std=True)
    augs = mx.image.CreateDetAugmenter((3, 30, 30), brightness=0.1, hue=0.1, pca_noise=0.1, rand_gray=0.2, **options)
    kinds = [type(a).__name__ if not isinstance(a, mx.image.DetBorrowAug) else type(a.augmenter).__name__ for a in augs]
    assert kinds == [
        "ResizeAug",
        "DetRandomSelectAug",
        "DetHorizontalFlipAug",
        "DetRandomSelectAug",
        "ForceResizeAug",
        "CastAug",
        "ColorJitterAug",
        "HueJitterAug",
        "LightingAug",
        "RandomGrayAug",
        "ColorNormalizeAug",
    ]
    assert augs[1].skip_prob == 0.5 and augs[3].aug_list[0].area_range == (1.0, 3.0)
    minimal = mx.image.CreateDetAugmenter((3, 30, 30))
    assert [type(a.augmenter).__name__ for a in minimal] == ["ForceResizeAug", "CastAug"]
    with pytest.raises(ImageError, match="mean"):
        mx.image.CreateDetAugmenter((3, 30, 30), mean=[1, 2])
    with pytest.raises(ImageError, match="same length"):
        mx.image.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.2], max_attempts=[1, 2, 3])


def test_copy_make_border_rejects_bad_arguments():
    with pytest.raises(ImageError, match="border code"):
        mx.image.copyMakeBorder(image(), 1, 1, 1, 1, type=7)
    with pytest.raises(ImageError, match=">= 0"):
        mx.image.copyMakeBorder(image(), -1, 0, 0, 0)
    with pytest.raises(ImageError, match="one per channel"):
        mx.image.copyMakeBorder(image(), 1, 1, 1, 1, values=(1, 2))


# ---------------------------------------------------------------------- random augmenters: statistics
def test_random_crop_keeps_enough_of_every_object_it_touches():
    random.seed(3)
    lab = label([0.1, 0.1, 0.4, 0.5], [0.5, 0.4, 0.9, 0.9], [0.2, 0.6, 0.45, 0.95])
    aug = mx.image.DetRandomCropAug(min_object_covered=0.5, area_range=(0.2, 1.0), min_eject_coverage=0.3)
    cropped = 0
    for _ in range(200):
        out, new = aug(image(), lab)
        assert np.all((new[:, 1:5] >= 0) & (new[:, 1:5] <= 1))
        assert np.all(new[:, 3] > new[:, 1]) and np.all(new[:, 4] > new[:, 2])
        if out.shape != (40, 60, 3):
            cropped += 1
            area = out.shape[0] * out.shape[1] / (40 * 60)
            assert 0.2 - 0.05 <= area <= 1.0  # one row of rounding either way
            assert 0.75 - 0.1 <= out.shape[1] / out.shape[0] <= 1.33 + 0.1
    assert cropped > 150  # a generous window range: nearly every call finds one


def test_random_crop_with_impossible_constraints_changes_nothing():
    src, lab = image(), label([0.0, 0.0, 1.0, 1.0])
    aug = mx.image.DetRandomCropAug(min_object_covered=0.99, area_range=(0.1, 0.3), max_attempts=20)
    out, new = aug(src, lab)
    assert out is src and new is lab


def test_invalid_ranges_disable_the_random_augmenters_with_a_warning():
    with pytest.warns(UserWarning, match="disabled"):
        crop = mx.image.DetRandomCropAug(area_range=(0.8, 0.2))
    with pytest.warns(UserWarning, match="DetRandomPadAug is disabled: invalid area_range") as record:
        pad = mx.image.DetRandomPadAug(area_range=(1.0, 0.9))
    assert record[0].filename == __file__  # the warning points at the caller's line
    with pytest.warns(UserWarning, match="DetRandomCropAug is disabled: invalid aspect_ratio_range"):
        skewed = mx.image.DetRandomCropAug(aspect_ratio_range=(0.0, 1.0))
    src, lab = image(), label([0.1, 0.1, 0.5, 0.5])
    assert crop(src, lab)[0] is src and pad(src, lab)[0] is src and skewed(src, lab)[0] is src


def test_random_pad_keeps_the_boxes_on_the_same_pixels():
    random.seed(5)
    src = image(20, 30)
    lab = label([0.2, 0.25, 0.6, 0.75])
    aug = mx.image.DetRandomPadAug(area_range=(1.5, 3.0), pad_val=(1, 2, 3))
    for _ in range(50):
        out, new = aug(src, lab)
        h, w = out.shape[:2]
        assert h * w >= 20 * 30 * 1.4
        x0, y0 = round(new[0, 1] * w - 0.2 * 30), round(new[0, 2] * h - 0.25 * 20)
        np.testing.assert_array_equal(out.asnumpy()[y0 : y0 + 20, x0 : x0 + 30], src.asnumpy())  # the image is intact
        assert out.asnumpy()[0, 0].tolist() == [1, 2, 3] or (x0 == 0 and y0 == 0)
        np.testing.assert_allclose((new[0, 3] - new[0, 1]) * w, 0.4 * 30, atol=1e-3)


def test_random_select_and_flip_frequencies():
    random.seed(11)
    lab = label([0.1, 0.1, 0.3, 0.3])
    flip = mx.image.DetHorizontalFlipAug(0.5)
    flipped = sum(flip(image(4, 4), lab)[1][0, 1] > 0.5 for _ in range(2000))
    assert 850 < flipped < 1150
    select = mx.image.DetRandomSelectAug([mx.image.DetHorizontalFlipAug(1.0)], skip_prob=0.8)
    applied = sum(select(image(4, 4), lab)[1][0, 1] > 0.5 for _ in range(2000))
    assert 300 < applied < 500
    with pytest.raises(ImageError, match="DetAugmenters"):
        mx.image.DetRandomSelectAug([mx.image.CastAug()])
    assert mx.image.DetRandomSelectAug([]).skip_prob == 1


# ---------------------------------------------------------------------- labels
def test_parse_det_label_reads_header_and_objects():
    raw = [4, 6, 99, 98, 1, 0.1, 0.1, 0.5, 0.5, 7, 2, 0.5, 0.5, 0.4, 0.9, 7]  # the second box is inverted
    objects = parse_det_label(raw)
    np.testing.assert_allclose(objects, [[1, 0.1, 0.1, 0.5, 0.5, 7]])


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([2, 5, 1, 0.1], "at least 7"),
        ([2, 5, 1, 0.1, 0.1, 0.5, 0.5, 3], "whole number of objects"),
        ([2, 3, 1, 0.1, 0.1, 0.5, 0.5], "at least 5"),
        ([2, 5, 1, 0.5, 0.1, 0.4, 0.5], "no valid box"),
    ],
)
def test_malformed_labels_are_errors(raw, message):
    with pytest.raises(DetLabelError, match=message) as err:
        parse_det_label(raw)
    assert isinstance(err.value, RuntimeError) and isinstance(err.value, ValueError)


def test_image_det_iter_label_shape_reshape_and_sync():
    it = mx.image.ImageDetIter(4, (3, 16, 16), path_imgrec=REC, path_imgidx=IDX, aug_list=plain_augs())
    assert it.label_shape == (3, 5) and it.provide_label[0].shape == (4, 3, 5) and it.provide_label[0].name == "label"
    small = mx.image.ImageDetIter(2, (3, 16, 16), imglist=[[[2, 5, 0, 0.1, 0.1, 0.5, 0.5], "img_0.png"]],
                                  path_root=str(IMAGES / "images"), aug_list=plain_augs())  # fmt: skip
    assert small.label_shape == (1, 5)
    assert it.sync_label_shape(small) is small and small.label_shape == (3, 5)
    batch = small.next()
    assert batch.label[0].shape == (2, 3, 5)
    np.testing.assert_array_equal(batch.label[0].asnumpy()[0, 1:], -1)  # padding rows
    it.reshape(data_shape=(3, 20, 20), label_shape=(6, 5))
    assert it.provide_data[0].shape == (4, 3, 20, 20) and it.provide_label[0].shape == (4, 6, 5)
    with pytest.raises(ImageError, match="reduce"):
        it.reshape(label_shape=(2, 5))
    with pytest.raises(ImageError, match="object width"):
        it.reshape(label_shape=(6, 6))
    with pytest.raises(ImageError, match="ImageDetIter"):
        it.sync_label_shape(mx.image.ImageIter(1, (3, 8, 8), path_imgrec=str(IMAGES / "images.rec")))


def test_samples_without_a_valid_box_after_augmentation_are_skipped():
    # a crop that always cuts every object away leaves no valid label: the sample is skipped
    class EjectAll(mx.image.DetAugmenter):
        def __call__(self, src, label):
            return src, label[:0]

    it = mx.image.ImageDetIter(2, (3, 16, 16), path_imgrec=REC, aug_list=[EjectAll(), *plain_augs()])
    with pytest.raises(StopIteration):
        it.next()


def test_bad_sources_are_clear_errors(tmp_path):
    bad = str(tmp_path / "bad.rec")
    writer = recordio.MXRecordIO(bad, "w")
    png = (IMAGES / "images" / "img_0.png").read_bytes()
    writer.write(recordio.pack(recordio.IRHeader(0, np.float32([2, 5, 0, 0.1, 0.1, 0.5, 0.5]), 0, 0), png))
    writer.write(recordio.pack(recordio.IRHeader(0, np.float32([2, 5, 0, 0.1, 0.1]), 1, 0), png))
    writer.close()
    with pytest.raises(DetLabelError, match=r"sample #1: detection label of 5 values"):
        mx.image.ImageDetIter(1, (3, 16, 16), path_imgrec=bad)
    mixed = str(tmp_path / "mixed.rec")
    writer = recordio.MXRecordIO(mixed, "w")
    writer.write(recordio.pack(recordio.IRHeader(0, np.float32([2, 5, 0, 0.1, 0.1, 0.5, 0.5]), 0, 0), png))
    writer.write(recordio.pack(recordio.IRHeader(0, np.float32([2, 6, 0, 0.1, 0.1, 0.5, 0.5, 9]), 1, 0), png))
    writer.close()
    with pytest.raises(DetLabelError, match="width 6"):
        mx.image.ImageDetIter(1, (3, 16, 16), path_imgrec=mixed)
    with pytest.raises(recordio.RecordIOError):
        mx.image.ImageDetIter(1, (3, 16, 16), path_imgrec=str(tmp_path / "missing.rec"))
    with pytest.raises(ImageError, match="not found"):
        mx.image.ImageDetIter(1, (3, 16, 16), imglist=[[[2, 5, 0, 0.1, 0.1, 0.5, 0.5], "nope.png"]],
                              path_root=str(tmp_path)).next()  # fmt: skip


def test_draw_next_yields_bgr_images_with_boxes():
    it = mx.image.ImageDetIter(1, (3, 32, 32), path_imgrec=REC, aug_list=plain_augs(32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        images = list(it.draw_next(color=(255, 0, 0), thickness=1, id2labels={0: "zero"}))
    assert len(images) == 8 and images[0].shape == (32, 32, 3) and images[0].dtype == np.uint8
    # image 0's only box spans x in [0, 0.375], y in [0, 0.5]: its right edge is drawn red (BGR: blue last)
    assert images[0][5, 12].tolist() == [0, 0, 255]
    with pytest.warns(UserWarning, match="window"):
        next(it.draw_next(waitKey=1))
