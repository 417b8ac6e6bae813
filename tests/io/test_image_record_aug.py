"""``ImageRecordIter``'s MXNet 1.9.1 augmentation parameters, and the keywords iterators accept and ignore."""

from __future__ import annotations

import io as pyio
import struct

import numpy as np
import pytest
from PIL import Image

from framework import io
from framework.io import DataIterError, ImageRecordIter
from framework.io.image_aug import IMAGENET_EIGVAL, IMAGENET_EIGVEC
from framework.recordio import IRHeader, MXIndexedRecordIO, pack

SHAPE = (3, 12, 12)


@pytest.fixture(scope="module")
def rec_file(tmp_path_factory):
    """Four 16x20 PNGs: a smooth pattern, so every augmentation changes something visible."""
    folder = tmp_path_factory.mktemp("aug")
    y, x = np.mgrid[0:16, 0:20]
    with MXIndexedRecordIO(str(folder / "a.idx"), str(folder / "a.rec"), "w") as out:
        for k in range(4):
            rgb = np.stack([x * 12 + k, y * 15, (x + y) * 6 + 10 * k], axis=2).astype(np.uint8)
            buf = pyio.BytesIO()
            Image.fromarray(rgb).save(buf, format="PNG")
            out.write_idx(k, pack(IRHeader(0, float(k), k, 0), buf.getvalue()))
    return str(folder / "a.rec")


def batches(path, **kwargs):
    args = dict(path_imgrec=path, data_shape=SHAPE, batch_size=4, preprocess_threads=1, verbose=False)
    args.update(kwargs)
    it = ImageRecordIter(**args)
    try:
        return next(it).data[0].asnumpy()
    finally:
        it.close()


def test_defaults_take_the_plain_path(rec_file):
    plain = batches(rec_file)
    assert plain.shape == (4, *SHAPE)
    # every augmentation at its default is the same as none
    np.testing.assert_array_equal(batches(rec_file, pad=0, brightness=0.0, max_random_scale=1.0, fill_value=255), plain)


def test_pad_adds_a_border_of_fill_value(rec_file):
    # pad 4 around 16x20 -> 24x28; the centre 12x12 crop then sits inside the image, a corner crop on the border
    padded = batches(rec_file, pad=4, fill_value=7, rand_crop=False, max_crop_size=24, min_crop_size=24)
    assert padded.shape == (4, *SHAPE)
    assert np.all(padded[:, :, 0, 0] == 7)  # the resized window's corner is border


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(rotate=30),
        dict(max_rotate_angle=20),
        dict(max_shear_ratio=0.3),
        dict(min_random_scale=0.8, max_random_scale=1.2),
        dict(max_aspect_ratio=0.3),
        dict(min_aspect_ratio=0.7, max_aspect_ratio=1.4),
        dict(random_resized_crop=True, min_random_area=0.3, max_random_area=0.8, min_aspect_ratio=0.75,
             max_aspect_ratio=1.33),
        dict(min_crop_size=10, max_crop_size=14, rand_crop=True),
        dict(brightness=0.4),
        dict(contrast=0.4),
        dict(saturation=0.4),
        dict(pca_noise=0.5),
        dict(random_h=20, random_s=30, random_l=30),
        dict(max_random_contrast=0.3, max_random_illumination=10),
    ],
)  # fmt: skip
def test_each_augmentation_changes_the_batch_reproducibly(rec_file, kwargs):
    plain = batches(rec_file)
    out = batches(rec_file, seed_aug=3, **kwargs)
    assert out.shape == plain.shape and np.isfinite(out).all()
    assert not np.array_equal(out, plain)
    np.testing.assert_array_equal(batches(rec_file, seed_aug=3, **kwargs), out)


def test_a_fixed_rotation_of_180_degrees_turns_the_image():
    rgb = np.arange(12 * 12 * 3, dtype=np.uint8).reshape(12, 12, 3)
    buf = pyio.BytesIO()
    Image.fromarray(rgb).save(buf, format="PNG")
    record = pack(IRHeader(0, 0.0, 0, 0), buf.getvalue())
    aug = io.record_augmenter.RecordAugmenter(
        "x.rec", SHAPE, 1, dict(
            resize=-1, rand_crop=False, rand_mirror=False, mirror=False, inter_method=0, dtype="uint8",
            mean_r=0, mean_g=0, mean_b=0, mean_a=0, std_r=1, std_g=1, std_b=1, std_a=1, scale=1,
            max_decoded_pixels=10**6,
            extra=io.image_aug.ExtraAugmentation.from_kwargs({"rotate": 180}, Image.Resampling.NEAREST, None),
        ),
    )  # fmt: skip
    out = np.zeros(SHAPE, dtype=np.uint8)
    aug(record, 0, np.array([0.0, 0.0, 0.9, 1.0]), out)
    # MXNet turns about (w/2, h/2), not the centre pixel (w-1)/2: pixel x lands on w - x, so the first
    # row and column come from outside the image (fill_value, 255) and the rest is the turned image
    turned = out.transpose(1, 2, 0)
    np.testing.assert_array_equal(turned[1:, 1:], rgb[::-1, ::-1][:-1, :-1])
    assert np.all(turned[0] == 255) and np.all(turned[:, 0] == 255)


def test_colour_arithmetic_matches_the_formulas():
    extra = io.image_aug.ExtraAugmentation.from_kwargs({"brightness": 0.5}, None, None)
    pixels = np.full((2, 2, 3), 100, dtype=np.uint8)
    rng = np.random.RandomState(0)
    factor = 1 + np.random.RandomState(0).uniform(-0.5, 0.5)
    np.testing.assert_array_equal(extra.colour(pixels, rng), np.floor(100 * np.float32(factor) + 0.5))
    lighting = io.image_aug.ExtraAugmentation.from_kwargs({"pca_noise": 0.1}, None, None)
    alpha = np.random.RandomState(1).normal(0, 0.1, 3).astype(np.float32)
    expected = np.clip(np.floor(100 + IMAGENET_EIGVEC @ (alpha * IMAGENET_EIGVAL) + 0.5), 0, 255)
    np.testing.assert_array_equal(lighting.colour(pixels, np.random.RandomState(1))[0, 0], expected)
    gray = np.full((2, 2, 3), 90, dtype=np.uint8)  # no hue or saturation to change: HLS jitter keeps gray
    hls = io.image_aug.ExtraAugmentation.from_kwargs({"random_h": 50, "random_s": 0}, None, None)
    np.testing.assert_array_equal(hls.colour(gray, np.random.RandomState(2)), gray)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(max_rotate_angle=-1), "max_rotate_angle must be >= 0"),
        (dict(brightness=-0.1), "brightness must be >= 0"),
        (dict(min_random_scale=1.2, max_random_scale=1.0), "min_random_scale <= max_random_scale"),
        (dict(min_random_area=0.0), "min_random_area"),
        (dict(min_aspect_ratio=-1.0, max_aspect_ratio=1.3), "0 < min_aspect_ratio <= max_aspect_ratio"),
        (dict(max_aspect_ratio=1.5), "max_aspect_ratio must be < 1"),
        (dict(max_crop_size=10), "min_crop_size <= max_crop_size"),
        (dict(fill_value=300), "fill_value must be in"),
        (dict(aug_seq="aug_torch"), "aug_seq='aug_torch': the augmenters MXNet 1.9.1 registers"),
    ],
)
def test_bad_augmentation_parameters_are_named(rec_file, kwargs, message):
    with pytest.raises(DataIterError, match=message):
        batches(rec_file, **kwargs)


def test_unknown_keywords_are_ignored_with_a_warning(rec_file, tmp_path):
    with pytest.warns(UserWarning, match="ImageRecordIter: ignoring keyword\\(s\\) colour, label_name2"):
        batches(rec_file, colour=1, label_name2="x")
    image, label = tmp_path / "img", tmp_path / "lbl"
    image.write_bytes(struct.pack(">IIII", 2051, 2, 2, 2) + bytes(8))
    label.write_bytes(struct.pack(">II", 2049, 2) + bytes(2))
    with pytest.warns(UserWarning, match="MNISTIter: ignoring keyword\\(s\\) data_shape"):
        it = io.MNISTIter(image=str(image), label=str(label), batch_size=1, data_shape=(784,))
    assert next(iter(it)).data[0].shape == (1, 1, 2, 2)
    csv = tmp_path / "d.csv"
    csv.write_text("1,2\n3,4\n")
    with pytest.warns(UserWarning, match="CSVIter: ignoring keyword\\(s\\) flat"):
        io.CSVIter(data_csv=str(csv), data_shape=(2,), batch_size=1, flat=True)


def test_random_resized_crop_ignores_the_scale_jitter():
    extra = io.image_aug.ExtraAugmentation.from_kwargs(
        {"random_resized_crop": True, "max_random_scale": 1.5, "min_aspect_ratio": 0.5, "max_aspect_ratio": 2.0},
        None,
        None,
    )
    assert not extra.warps and extra.crops and extra.aspect_range() == (0.5, 2.0)
    assert io.image_aug.ExtraAugmentation.from_kwargs({"max_aspect_ratio": 0.25}, None, None).aspect_range() == (
        0.75,
        1.25,
    )


def test_inter_method_auto_and_random(rec_file):
    # the 16x20 images shrink to a 12-pixel short side: auto (9) picks area (3)
    np.testing.assert_array_equal(
        batches(rec_file, resize=12, inter_method=9), batches(rec_file, resize=12, inter_method=3)
    )
    np.testing.assert_array_equal(
        batches(rec_file, resize=24, inter_method=9), batches(rec_file, resize=24, inter_method=2)
    )
    random_once = batches(rec_file, resize=14, inter_method=10, seed_aug=5)
    np.testing.assert_array_equal(batches(rec_file, resize=14, inter_method=10, seed_aug=5), random_once)
    with pytest.raises(DataIterError, match="inter_method must be one of"):
        batches(rec_file, inter_method=7)
