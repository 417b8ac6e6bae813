"""The augmenters and ``CreateAugmenter``: each one's arithmetic, its random draws and ``dumps()``."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

import framework as mx
from framework.image import ImageError
from framework.image.augmenters import GRAY_MIX, LUMA, RGB_TO_YIQ, YIQ_TO_RGB


def image(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0, 255, (6, 5, 3)).astype(np.float32)


def test_dumps_names_the_class_and_its_arguments():
    assert json.loads(mx.image.ResizeAug(10, 1).dumps()) == ["resizeaug", {"size": 10, "interp": 1}]
    assert json.loads(mx.image.CastAug().dumps()) == ["castaug", {"type": "float32"}]
    seq = mx.image.SequentialAug([mx.image.CastAug(), mx.image.HorizontalFlipAug(0.5)])
    assert seq.dumps() == ["sequentialaug", [seq.ts[0].dumps(), seq.ts[1].dumps()]]
    jitter = mx.image.ColorJitterAug(0.1, 0.0, 0.2)
    assert jitter.dumps()[0] == "colorjitteraug"
    assert [json.loads(d)[0] for d in jitter.dumps()[1]] == ["brightnessjitteraug", "saturationjitteraug"]
    lighting = mx.image.LightingAug(0.1, np.ones(3), np.eye(3))
    assert json.loads(lighting.dumps())[1]["eigvec"] == np.eye(3).tolist()


def test_the_base_class_has_no_transform():
    with pytest.raises(NotImplementedError, match="Augmenter"):
        mx.image.Augmenter()(mx.nd.zeros((2, 2, 3)))


def test_geometric_augmenters_give_their_sizes():
    src = mx.nd.array(np.zeros((12, 9, 3), dtype=np.uint8))
    assert mx.image.ResizeAug(6)(src).shape == (8, 6, 3)
    assert mx.image.ForceResizeAug((4, 7))(src).shape == (7, 4, 3)
    assert mx.image.RandomCropAug((5, 5))(src).shape == (5, 5, 3)
    assert mx.image.CenterCropAug((5, 4))(src).shape == (4, 5, 3)
    assert mx.image.RandomSizedCropAug((5, 5), 0.3, (0.75, 1.33))(src).shape == (5, 5, 3)


def test_brightness_multiplies_in_place_by_the_drawn_factor():
    values = image()
    src = mx.nd.array(values)
    random.seed(3)
    out = mx.image.BrightnessJitterAug(0.4)(src)
    random.seed(3)
    alpha = 1.0 + random.uniform(-0.4, 0.4)
    assert out is src
    np.testing.assert_allclose(out.asnumpy(), values * alpha, rtol=1e-5)


def test_contrast_blends_towards_the_mean_gray():
    values = image()
    random.seed(4)
    out = mx.image.ContrastJitterAug(0.5)(mx.nd.array(values)).asnumpy()
    random.seed(4)
    alpha = 1.0 + random.uniform(-0.5, 0.5)
    mean_gray = (values * np.array(LUMA)).sum(axis=2).mean()
    np.testing.assert_allclose(out, alpha * values + (1 - alpha) * mean_gray, rtol=1e-4, atol=1e-3)


def test_saturation_blends_each_pixel_with_its_gray():
    values = image()
    random.seed(5)
    out = mx.image.SaturationJitterAug(0.5)(mx.nd.array(values)).asnumpy()
    random.seed(5)
    alpha = 1.0 + random.uniform(-0.5, 0.5)
    gray = (values * np.array(LUMA)).sum(axis=2, keepdims=True)
    np.testing.assert_allclose(out, alpha * values + (1 - alpha) * gray, rtol=1e-4, atol=1e-3)


def test_hue_rotates_the_chroma_and_keeps_gray_pixels():
    values = image()
    random.seed(6)
    out = mx.image.HueJitterAug(0.3)(mx.nd.array(values)).asnumpy()
    random.seed(6)
    angle = random.uniform(-0.3, 0.3) * math.pi
    rotate = np.array([[1, 0, 0], [0, math.cos(angle), -math.sin(angle)], [0, math.sin(angle), math.cos(angle)]])
    np.testing.assert_allclose(out, values @ (YIQ_TO_RGB @ rotate @ RGB_TO_YIQ).T, rtol=1e-4, atol=1e-2)
    gray = mx.nd.full((2, 2, 3), 80.0)
    # the rounded YIQ matrices are inverses only to about 0.2%, as in MXNet
    np.testing.assert_allclose(mx.image.HueJitterAug(0.5)(gray).asnumpy(), 80.0, atol=0.5)


def test_lighting_adds_the_pca_noise_from_numpy():
    values = image()
    eigval, eigvec = np.array([55.46, 4.794, 1.148]), np.eye(3)
    np.random.seed(7)
    out = mx.image.LightingAug(0.1, eigval, eigvec)(mx.nd.array(values)).asnumpy()
    np.random.seed(7)
    alpha = np.random.normal(0, 0.1, size=(3,))
    np.testing.assert_allclose(out, values + eigvec @ (alpha * eigval), rtol=1e-5)


def test_color_normalize_subtracts_and_divides_in_place():
    values = image()
    src = mx.nd.array(values)
    out = mx.image.ColorNormalizeAug([1.0, 2.0, 3.0], [2.0, 4.0, 8.0])(src)
    assert out is src
    np.testing.assert_allclose(out.asnumpy(), (values - [1, 2, 3]) / [2, 4, 8], rtol=1e-5)
    only_mean = mx.image.color_normalize(mx.nd.array(values), mx.nd.array([1.0, 1.0, 1.0]))
    np.testing.assert_allclose(only_mean.asnumpy(), values - 1, rtol=1e-5)


def test_random_gray_and_flip_follow_their_probability():
    values = image()
    np.testing.assert_array_equal(mx.image.RandomGrayAug(0.0)(mx.nd.array(values)).asnumpy(), values)
    gray = mx.image.RandomGrayAug(1.0)(mx.nd.array(values)).asnumpy()
    np.testing.assert_allclose(gray, values @ GRAY_MIX, rtol=1e-5)
    assert np.allclose(gray[..., 0], gray[..., 2])
    np.testing.assert_array_equal(mx.image.HorizontalFlipAug(1.0)(mx.nd.array(values)).asnumpy(), values[:, ::-1])
    np.testing.assert_array_equal(mx.image.HorizontalFlipAug(0.0)(mx.nd.array(values)).asnumpy(), values)


def test_cast_and_random_order():
    assert mx.image.CastAug("float64")(mx.nd.zeros((2, 2, 3), dtype="uint8")).dtype == np.float64
    random.seed(0)
    order = mx.image.RandomOrderAug([mx.image.ResizeAug(4), mx.image.CastAug()])
    seen = set()
    for _ in range(20):
        order(mx.nd.zeros((8, 8, 3), dtype="uint8"))
        seen.add(tuple(type(t).__name__ for t in order.ts))
    assert len(seen) == 2


def test_create_augmenter_builds_mxnets_list_in_order():
    augs = mx.image.CreateAugmenter(
        (3, 16, 16), resize=20, rand_crop=True, rand_resize=True, rand_mirror=True, mean=True, std=True,
        brightness=0.1, contrast=0.1, hue=0.1, pca_noise=0.1, rand_gray=0.2,
    )  # fmt: skip
    names = [type(a).__name__ for a in augs]
    assert names == [
        "ResizeAug", "RandomSizedCropAug", "HorizontalFlipAug", "CastAug", "ColorJitterAug", "HueJitterAug",
        "LightingAug", "RandomGrayAug", "ColorNormalizeAug",
    ]  # fmt: skip
    assert augs[1].size == (16, 16) and augs[1].area == 0.08
    np.testing.assert_allclose(augs[-1].mean.asnumpy(), [123.68, 116.28, 103.53], rtol=1e-6)
    plain = [type(a).__name__ for a in mx.image.CreateAugmenter((3, 8, 6))]
    assert plain == ["CenterCropAug", "CastAug"]
    assert mx.image.CreateAugmenter((3, 8, 6))[0].size == (6, 8)


def test_create_augmenter_runs_end_to_end():
    random.seed(1)
    np.random.seed(1)
    src = mx.nd.array(np.random.default_rng(1).integers(0, 256, (30, 40, 3)).astype(np.uint8))
    for aug in mx.image.CreateAugmenter((3, 16, 16), resize=20, rand_crop=True, rand_mirror=True, mean=True,
                                        std=True, brightness=0.2, contrast=0.2, saturation=0.2, hue=0.1,
                                        pca_noise=0.1, rand_gray=0.5):  # fmt: skip
        src = aug(src)
    assert src.shape == (16, 16, 3) and src.dtype == np.float32
    assert np.isfinite(src.asnumpy()).all() and np.abs(src.asnumpy()).max() < 10


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(data_shape=(16, 16)), "data_shape"),
        (dict(data_shape=(3, 16, 16), rand_resize=True), "rand_crop"),
        (dict(data_shape=(3, 16, 16), mean=[1, 2, 3]), "mean"),
        (dict(data_shape=(3, 16, 16), std=np.ones(2)), "std"),
    ],
)
def test_create_augmenter_refuses_bad_arguments(kwargs, message):
    with pytest.raises(ImageError, match=message):
        mx.image.CreateAugmenter(**kwargs)
