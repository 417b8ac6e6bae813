"""Decoding into NumPy memory (framework.io.decode) and resizing the strided views it returns."""

from __future__ import annotations

import io
import threading

import numpy as np
import pytest
from PIL import Image

from framework import recordio
from framework.io import DataIterError, decode
from framework.io.pixels import BilinearResizer, resize_bilinear


def encoded(pixels: np.ndarray, mode: str, fmt: str, **options: object) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(pixels, mode).save(buf, fmt, **options)
    return buf.getvalue()


def smooth_noise(h: int, w: int, channels: int, seed: int = 0) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([yy * 3 + xx * c for c in range(1, channels + 1)], axis=2)
    noise = np.random.RandomState(seed).randint(0, 30, size=base.shape)
    return ((base + noise) % 256).astype(np.uint8)


def reference(payload: bytes, mode: str) -> np.ndarray:
    """What Pillow gives the plain way: load, convert, copy out."""
    img = Image.open(io.BytesIO(payload))
    img.load()
    return np.asarray(img.convert(mode))


CASES = [
    ("jpeg rgb", encoded(smooth_noise(37, 53, 3), "RGB", "JPEG", quality=90), "RGB"),
    ("png rgb", encoded(smooth_noise(20, 31, 3), "RGB", "PNG"), "RGB"),
    ("png rgba", encoded(smooth_noise(20, 31, 4), "RGBA", "PNG"), "RGBA"),
    ("png rgba as rgb", encoded(smooth_noise(20, 31, 4), "RGBA", "PNG"), "RGB"),
    ("jpeg gray as rgb", encoded(smooth_noise(24, 17, 1)[:, :, 0], "L", "JPEG"), "RGB"),
    ("png palette as rgb", encoded(smooth_noise(9, 12, 1)[:, :, 0], "L", "PNG"), "RGB"),
]


@pytest.mark.parametrize("name,payload,mode", CASES, ids=[c[0] for c in CASES])
def test_decode_pixels_equals_the_plain_pillow_path(name, payload, mode):
    pixels = decode.decode_pixels(recordio.open_image(payload), mode)
    expected = reference(payload, mode)
    assert pixels.shape == expected.shape and pixels.dtype == np.uint8
    np.testing.assert_array_equal(pixels, expected)


def test_rgb_jpeg_is_decoded_in_place_into_a_four_byte_per_pixel_buffer():
    payload = CASES[0][1]
    pixels = decode.decode_pixels(recordio.open_image(payload), "RGB")
    # the RGB view of an (h, w, 4) buffer: no copy was made after the decoder
    assert pixels.strides == (53 * 4, 4, 1)
    assert pixels.base is not None and pixels.base.shape == (37, 53, 4)


def test_without_map_buffer_the_pixels_come_the_plain_way(monkeypatch):
    monkeypatch.setattr(decode, "_map_buffer", None)
    payload = CASES[0][1]
    pixels = decode.decode_pixels(recordio.open_image(payload), "RGB")
    assert pixels.flags.c_contiguous
    np.testing.assert_array_equal(pixels, reference(payload, "RGB"))


def test_a_loader_that_ignores_the_given_image_falls_back(monkeypatch):
    """If Pillow's loader replaces the mapped image (older Pillow did), the buffer is not trusted."""
    payload = CASES[0][1]
    img = recordio.open_image(payload)
    original_prepare = type(img).load_prepare

    def fresh_image(self):
        self.im = Image.core.new(self.mode, self.size)
        original_prepare(self)

    monkeypatch.setattr(type(img), "load_prepare", fresh_image)
    pixels = decode.decode_pixels(img, "RGB")
    np.testing.assert_array_equal(pixels, reference(payload, "RGB"))


def test_decode_record_image_names_the_record_of_a_broken_image():
    payload = CASES[0][1][:200]  # a truncated JPEG
    with pytest.raises(DataIterError, match=r"x\.rec, record at byte offset 96: cannot decode the image"):
        decode.decode_record_image(payload, "RGB", 10**6, "x.rec", 96)
    with pytest.raises(DataIterError, match=r"record at byte offset 8: .*more than the limit of 100"):
        decode.decode_record_image(CASES[0][1], "RGB", 100, "x.rec", 8)


def test_gray_records_use_opencv_weights_on_the_decoded_rgb():
    payload = CASES[0][1]
    rgb = reference(payload, "RGB").astype(np.uint32)
    expected = ((rgb[..., 0] * 4899 + rgb[..., 1] * 9617 + rgb[..., 2] * 1868 + 8192) >> 14).astype(np.uint8)
    np.testing.assert_array_equal(decode.decode_record_image(payload, "L", 10**6, "x.rec", 0), expected)


@pytest.mark.parametrize("region", [None, (3, 5, 20, 30)])
@pytest.mark.parametrize("size", [(41, 29), (120, 90), (17, 80)])
def test_resize_bilinear_reads_strided_views_as_their_copies(size, region):
    padded = smooth_noise(60, 70, 4, seed=3)
    view = padded[:, :, :3]
    assert not view.flags.c_contiguous
    if region is not None and (region[0] + region[2] > size[1] or region[1] + region[3] > size[0]):
        region = (0, 0, min(size[1], 20), min(size[0], 30))
    got = resize_bilinear(view, *size, region)
    np.testing.assert_array_equal(got, resize_bilinear(np.ascontiguousarray(view), *size, region))


def test_resize_bilinear_copies_views_it_cannot_read_in_place():
    image = smooth_noise(30, 40, 3, seed=5)
    for view in (image[:, ::-1], image[:, ::2], image[::2]):  # mirrored, every other pixel, every other row
        np.testing.assert_array_equal(
            resize_bilinear(view, 25, 13, (1, 2, 10, 20)),
            resize_bilinear(np.ascontiguousarray(view), 25, 13, (1, 2, 10, 20)),
        )


# ------------------------------------------------------------------ the direct JPEG road
def jpeg(pixels: np.ndarray, mode: str = "RGB", **options: object) -> bytes:
    return encoded(pixels, mode, "JPEG", **options)


EXIF = Image.Exif()
EXIF[0x010E] = "a description"  # ImageDescription
JPEG_VARIANTS = {
    "baseline": jpeg(smooth_noise(37, 53, 3), quality=90),
    "progressive": jpeg(smooth_noise(41, 29, 3), quality=80, progressive=True),
    "restart markers": jpeg(smooth_noise(64, 48, 3), restart_marker_blocks=2),
    "no chroma subsampling": jpeg(smooth_noise(16, 24, 3), subsampling=0),
    "with exif and comment": jpeg(smooth_noise(20, 20, 3), exif=EXIF.tobytes(), comment=b"hi"),
}


@pytest.mark.parametrize("name", list(JPEG_VARIANTS))
def test_colour_jpegs_decode_directly_to_what_pillow_gives(name):
    payload = JPEG_VARIANTS[name]
    assert decode.jpeg_rgb_size(payload) == Image.open(io.BytesIO(payload)).size
    pixels = decode.decode_jpeg_rgb(payload, 10**6)
    assert pixels is not None and pixels.strides[1:] == (4, 1)
    np.testing.assert_array_equal(pixels, reference(payload, "RGB"))


def test_jpegs_the_direct_road_leaves_to_pillow():
    gray = jpeg(smooth_noise(8, 8, 1)[:, :, 0], "L")
    cmyk = jpeg(smooth_noise(8, 8, 4), "CMYK")
    png = encoded(smooth_noise(8, 8, 3), "RGB", "PNG")
    for payload in (gray, cmyk, png, b"", b"\xff\xd8", b"\xff\xd8junk" + bytes(20)):
        assert decode.jpeg_rgb_size(payload) is None
        assert decode.decode_jpeg_rgb(payload, 10**6) is None
    # gray and CMYK still decode, the ordinary way
    np.testing.assert_array_equal(decode.decode_record_image(gray, "RGB", 10**6, "x", 0), reference(gray, "RGB"))
    np.testing.assert_array_equal(decode.decode_record_image(cmyk, "RGB", 10**6, "x", 0), reference(cmyk, "RGB"))


def test_truncated_or_oversized_jpegs_take_the_checked_road(monkeypatch):
    payload = JPEG_VARIANTS["baseline"]
    assert decode.decode_jpeg_rgb(payload[: len(payload) // 2], 10**6) is None
    assert decode.decode_jpeg_rgb(payload, 37 * 53 - 1) is None  # over max_pixels
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # over Pillow's own limit: it warns, as before
    assert decode.decode_jpeg_rgb(payload, 10**6) is None
    with pytest.warns(Image.DecompressionBombWarning):
        decode.decode_record_image(payload, "RGB", 10**6, "x", 0)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 900)  # over twice Pillow's limit: refused, as before
    with pytest.raises(DataIterError, match="record at byte offset 0: cannot decode the image: .*decompression bomb"):
        decode.decode_record_image(payload, "RGB", 10**6, "x", 0)


# ------------------------------------------------------------------ per-thread decode buffers
def test_decode_buffers_are_reused_per_thread_and_large_ones_are_not_kept():
    buffers = decode.DecodeBuffers(keep_bytes=4 * 40 * 60)
    first = buffers.get(30, 50)
    assert first.shape == (30, 50, 4) and np.shares_memory(first, buffers.get(20, 60))  # fits: reused
    larger = buffers.get(40, 60)
    assert larger.shape == (40, 60, 4) and not np.shares_memory(larger, first)  # grown once
    assert np.shares_memory(buffers.get(40, 60), larger)
    huge = buffers.get(41, 60)  # above keep_bytes: a fresh array, the kept one stays
    assert not np.shares_memory(huge, larger) and np.shares_memory(buffers.get(40, 60), larger)
    other_thread = []
    thread = threading.Thread(target=lambda: other_thread.append(buffers.get(30, 50)))
    thread.start()
    thread.join()
    assert not np.shares_memory(other_thread[0], first)  # each thread has its own


def test_images_decoded_one_after_another_into_one_buffer_are_each_right():
    buffers = decode.DecodeBuffers()
    for name in ("baseline", "progressive", "restart markers", "baseline"):
        payload = JPEG_VARIANTS[name]
        pixels = decode.decode_record_image(payload, "RGB", 10**6, "x", 0, buffers)
        np.testing.assert_array_equal(pixels, reference(payload, "RGB"))


def test_the_decoders_image_over_the_buffer_is_kept_for_images_of_one_size():
    """The Pillow image viewing the buffer is built once per size; a grown buffer or an image above
    keep_bytes gets a new one (a kept image over a dropped array would be decoded into unseen)."""
    buffers = decode.DecodeBuffers(keep_bytes=4 * 40 * 60)
    buffer, image = buffers.mapped(30, 50)
    assert buffer.shape == (30, 50, 4) and image.size == (50, 30)
    again, same = buffers.mapped(30, 50)
    assert same is image and again is buffer
    other, other_image = buffers.mapped(20, 60)  # another size, same memory, another image
    assert other_image is not image and np.shares_memory(other, buffer)
    buffers.get(40, 60)  # grows the array: the kept image views the old one
    grown, grown_image = buffers.mapped(20, 60)
    assert grown_image is not other_image and not np.shares_memory(grown, other)
    huge, huge_image = buffers.mapped(41, 60)  # above keep_bytes: a fresh pair, not kept
    assert buffers.mapped(41, 60)[1] is not huge_image and huge.shape == (41, 60, 4)
    # decoding sizes in turn (a cached image, then another size, then the first again) stays exact
    payloads = [JPEG_VARIANTS[name] for name in ("baseline", "progressive", "baseline", "restart markers")]
    for payload in payloads + payloads:
        pixels = decode.decode_record_image(payload, "RGB", 10**6, "x", 0, buffers)
        np.testing.assert_array_equal(pixels, reference(payload, "RGB"))


# ------------------------------------------------------------------ several images, one vertical pass
def test_a_resizer_round_equals_each_image_resized_alone():
    """Different sizes, strong shrinking (rows gathered), an RGBX buffer read as RGB, and mirrored windows."""
    padded = smooth_noise(60, 70, 4, seed=7)
    images = [  # (pixels, channels read, resized width, height, y, x, mirror)
        (smooth_noise(37, 53, 3, seed=1), 3, 30, 21, 2, 5, False),
        (padded, 3, 41, 35, 4, 0, True),  # the pad byte is never read
        (smooth_noise(300, 40, 3, seed=2), 3, 25, 187, 150, 3, True),  # about 1/8: only the rows in use
        (smooth_noise(16, 20, 3, seed=3), 3, 20, 16, 0, 1, False),  # same size: the arithmetic is exact
    ]
    resizer = BilinearResizer()
    for _ in range(2):  # the second round reuses the arrays of the first
        resizer.begin(14, 18, 3)
        for pixels, channels, width, height, y, x, mirror in images:
            resizer.add(pixels, width, height, y, x, mirror, channels)
        out = resizer.finish()
        assert out.shape == (len(images), 14, 3, 18) and out.dtype == np.uint8
        for got, (pixels, channels, width, height, y, x, mirror) in zip(out, images, strict=True):
            alone = resize_bilinear(np.ascontiguousarray(pixels[:, :, :channels]), width, height, (y, x, 14, 18))
            if (pixels.shape[0], pixels.shape[1]) == (height, width):
                alone = pixels[y : y + 14, x : x + 18, :channels]
            np.testing.assert_array_equal(got.transpose(0, 2, 1), alone[:, ::-1] if mirror else alone)


def test_a_resizer_round_takes_gray_images_and_refuses_a_mixed_channel_count():
    gray = smooth_noise(30, 40, 1, seed=4)[:, :, 0]
    resizer = BilinearResizer()
    resizer.begin(10, 12, 1)
    resizer.add(gray, 25, 19, 3, 4)
    np.testing.assert_array_equal(resizer.finish()[0, :, 0], resize_bilinear(gray, 25, 19, (3, 4, 10, 12)))
    resizer.begin(10, 12, 1)
    with pytest.raises(ValueError, match=r"3 channels in a round of 1"):
        resizer.add(smooth_noise(30, 40, 3), 25, 19, 3, 4)
    with pytest.raises(ValueError, match=r"no image was added since begin\(\)"):
        resizer.finish()
