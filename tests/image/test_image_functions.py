"""``mx.image``'s functions: decoding, resizing and cropping, with their failure paths."""

from __future__ import annotations

import random

import numpy as np
import pytest

import framework as mx
from framework import recordio
from framework.image import ImageError
from framework.image.resize import interp_method


def pattern(height: int = 12, width: int = 9) -> np.ndarray:
    y, x = np.mgrid[0:height, 0:width]
    return np.stack([x * 20 % 256, y * 15 % 256, (x + y) * 7 % 256], axis=2).astype(np.uint8)


def png_bytes(rgb: np.ndarray) -> bytes:
    return recordio.encode_image(np.ascontiguousarray(rgb[:, :, ::-1]), img_fmt=".png")  # encode_image takes BGR


def test_mx_img_is_mx_image():
    assert mx.img is mx.image
    assert mx.image.ImageIter is mx.img.ImageIter


def test_imdecode_gives_rgb_hwc_uint8_and_bgr_on_request():
    rgb = pattern()
    decoded = mx.image.imdecode(png_bytes(rgb))
    assert decoded.shape == (12, 9, 3) and decoded.dtype == np.uint8
    np.testing.assert_array_equal(decoded.asnumpy(), rgb)
    np.testing.assert_array_equal(mx.image.imdecode(png_bytes(rgb), to_rgb=0).asnumpy(), rgb[:, :, ::-1])
    gray = mx.image.imdecode(png_bytes(rgb), flag=0)
    assert gray.shape == (12, 9, 1)


def test_imdecode_accepts_uint8_arrays_and_writes_into_out():
    rgb = pattern()
    buf = np.frombuffer(png_bytes(rgb), dtype=np.uint8)
    np.testing.assert_array_equal(mx.image.imdecode(mx.nd.array(buf, dtype="uint8")).asnumpy(), rgb)
    out = mx.nd.zeros((12, 9, 3), dtype="uint8")
    assert mx.image.imdecode(buf, out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), rgb)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(buf=b""), "empty"),
        (dict(buf=b"not an image"), "cannot decode"),
        (dict(buf=np.zeros(4, dtype=np.float32)), "uint8"),
        (dict(buf=b"x", flag=2), "flag"),
        (dict(buf=12), "bytes"),
    ],
)
def test_imdecode_errors_name_the_problem(kwargs, message):
    with pytest.raises(ImageError, match=message):
        mx.image.imdecode(**kwargs)


def test_imdecode_out_of_the_wrong_shape_is_refused():
    with pytest.raises(ImageError, match="out has shape"):
        mx.image.imdecode(png_bytes(pattern()), out=mx.nd.zeros((2, 2, 3), dtype="uint8"))


def test_imread_reads_a_file_and_names_a_missing_one(tmp_path):
    path = tmp_path / "a.png"
    path.write_bytes(png_bytes(pattern()))
    np.testing.assert_array_equal(mx.image.imread(str(path)).asnumpy(), pattern())
    with pytest.raises(ImageError, match="missing.png"):
        mx.image.imread(str(tmp_path / "missing.png"))


def test_interp_method_codes():
    assert interp_method(9, (10, 10, 20, 20)) == 2
    assert interp_method(9, (10, 10, 5, 5)) == 3
    assert interp_method(9, (10, 10, 5, 20)) == 1
    assert interp_method(9) == 2
    random.seed(1)
    drawn = {interp_method(10) for _ in range(50)}
    assert drawn == {0, 1, 2, 3, 4}
    with pytest.raises(ImageError, match="interpolation method 7"):
        interp_method(7)


def test_nearest_resize_picks_source_pixels():
    src = mx.nd.array(pattern(4, 4))
    out = mx.image.imresize(src, 2, 2, interp=0).asnumpy()
    np.testing.assert_array_equal(out, pattern(4, 4)[::2, ::2])


@pytest.mark.parametrize("interp", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_every_method_keeps_a_constant_image_constant(interp, dtype):
    src = mx.nd.full((7, 5, 3), 100, dtype=dtype)
    for w, h in [(3, 4), (11, 13)]:
        out = mx.image.imresize(src, w, h, interp=interp)
        assert out.shape == (h, w, 3) and out.dtype == np.dtype(dtype)
        np.testing.assert_allclose(out.asnumpy(), 100, atol=1e-3)


def test_area_resize_by_an_integer_factor_averages_blocks():
    src = np.random.default_rng(0).random((8, 6, 3)).astype(np.float32)
    out = mx.image.imresize(mx.nd.array(src), 3, 4, interp=3).asnumpy()
    np.testing.assert_allclose(out, src.reshape(4, 2, 3, 2, 3).mean(axis=(1, 3)), rtol=1e-5)


def test_imresize_refuses_bad_sizes_and_shapes():
    with pytest.raises(ImageError, match="positive"):
        mx.image.imresize(mx.nd.zeros((4, 4, 3)), 0, 3)
    with pytest.raises(ImageError, match="height, width, channels"):
        mx.image.imresize(mx.nd.zeros((4, 4)), 2, 2)


def test_scale_down():
    assert mx.image.scale_down((640, 480), (720, 120)) == (640, 106)
    assert mx.image.scale_down((360, 1000), (480, 500)) == (360, 375)
    assert mx.image.scale_down((100, 100), (50, 60)) == (50, 60)


def test_resize_short_keeps_the_aspect_ratio():
    src = mx.nd.array(pattern(12, 9))
    assert mx.image.resize_short(src, 6).shape == (8, 6, 3)
    assert mx.image.resize_short(mx.nd.array(pattern(9, 12)), 6).shape == (6, 8, 3)
    with pytest.raises(ImageError, match="size must be positive"):
        mx.image.resize_short(src, 0)


def test_fixed_crop_and_its_resize():
    src = mx.nd.array(pattern())
    np.testing.assert_array_equal(mx.image.fixed_crop(src, 2, 3, 4, 5).asnumpy(), pattern()[3:8, 2:6])
    assert mx.image.fixed_crop(src, 2, 3, 4, 5, size=(8, 10), interp=1).shape == (10, 8, 3)
    with pytest.raises(ImageError, match="does not fit"):
        mx.image.fixed_crop(src, 7, 0, 4, 5)


def test_center_crop_returns_the_window():
    src = mx.nd.array(pattern())
    out, (x0, y0, w, h) = mx.image.center_crop(src, (5, 6))
    assert (x0, y0, w, h) == (2, 3, 5, 6)
    np.testing.assert_array_equal(out.asnumpy(), pattern()[3:9, 2:7])


def test_random_crop_draws_with_python_random():
    src = mx.nd.array(pattern())
    random.seed(5)
    out, (x0, y0, w, h) = mx.image.random_crop(src, (5, 6))
    assert (w, h) == (5, 6)
    random.seed(5)
    assert (x0, y0) == (random.randint(0, 4), random.randint(0, 6))
    np.testing.assert_array_equal(out.asnumpy(), pattern()[y0 : y0 + 6, x0 : x0 + 5])


def test_random_size_crop_covers_the_asked_area():
    src = mx.nd.array(np.zeros((40, 40, 3), dtype=np.uint8))
    random.seed(0)
    for _ in range(20):
        out, (x0, y0, w, h) = mx.image.random_size_crop(src, (10, 10), (0.25, 0.5), (0.75, 4 / 3))
        assert out.shape == (10, 10, 3)
        assert 0.2 * 1600 <= w * h <= 0.55 * 1600 and 0.7 <= w / h <= 1.4
        assert x0 + w <= 40 and y0 + h <= 40


def test_random_size_crop_falls_back_to_the_centre_and_checks_arguments():
    src = mx.nd.array(np.zeros((10, 40, 3), dtype=np.uint8))
    # a 0.9 area at aspect 1 cannot fit a 10x40 image: after ten tries, the centre crop
    out, box = mx.image.random_size_crop(src, (5, 5), (0.9, 1.0), (1.0, 1.0))
    assert box == (17, 2, 5, 5) and out.shape == (5, 5, 3)  # the centre crop of size (5, 5)
    with pytest.raises(ImageError, match="area"):
        mx.image.random_size_crop(src, (5, 5), (0.5, 0.1), (1.0, 1.0))
    with pytest.raises(ImageError, match="ratio"):
        mx.image.random_size_crop(src, (5, 5), 0.5, (0.0, 1.0))
    with pytest.raises(ImageError, match="unknown arguments"):
        mx.image.random_size_crop(src, (5, 5), 0.5, (1.0, 1.0), bogus=1)


def test_imrotate_turns_counter_clockwise_and_checks_its_arguments():
    src = mx.nd.array(np.arange(25, dtype=np.float32).reshape(1, 5, 5))
    np.testing.assert_allclose(mx.image.imrotate(src, 90).asnumpy()[0], np.rot90(src.asnumpy()[0]), atol=1e-4)
    np.testing.assert_allclose(mx.image.imrotate(src, 0).asnumpy(), src.asnumpy(), atol=1e-5)
    with pytest.raises(ImageError, match="float32"):
        mx.image.imrotate(mx.nd.zeros((1, 4, 4), dtype="uint8"), 10)
    with pytest.raises(ImageError, match="cannot both be True"):
        mx.image.imrotate(src, 10, zoom_in=True, zoom_out=True)
    with pytest.raises(ImageError, match="one angle or one per image"):
        mx.image.imrotate(mx.nd.zeros((3, 1, 4, 4)), [1.0, 2.0])


def test_random_rotate_draws_with_python_random():
    src = mx.nd.array(np.random.default_rng(0).random((2, 1, 6, 6)).astype(np.float32))
    random.seed(4)
    out = mx.image.random_rotate(src, (-30, 30))
    random.seed(4)
    angles = [random.uniform(-30, 30) for _ in range(2)]
    np.testing.assert_allclose(out.asnumpy(), mx.image.imrotate(src, angles).asnumpy())
