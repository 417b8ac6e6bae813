"""Decompression bombs: an image is refused by its declared size, before any pixel is decoded."""

from __future__ import annotations

import struct
import tracemalloc
import zlib

import numpy as np
import pytest

from framework import recordio
from framework.io import DataIterError, ImageRecordIter
from framework.recordio import ImageTooLargeError, IRHeader, MXRecordIO

# Pillow warns about large images on open; the refusal that follows is what is tested
pytestmark = pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_bomb(side: int) -> bytes:
    """A valid grayscale PNG of side x side black pixels: ~side^2 / 1000 bytes, side^2 once decoded."""
    squeeze = zlib.compressobj(9)
    row = bytes(side + 1)  # filter byte + pixels
    body = b"".join(squeeze.compress(row) for _ in range(side)) + squeeze.flush()
    header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", body) + _chunk(b"IEND", b"")


@pytest.fixture(scope="module")
def bomb_rec(tmp_path_factory):
    """A .rec with a small image and then a 13000 x 13000 PNG (169 MP) that fits in ~170 KiB."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.rec"
    small = recordio.pack_img(IRHeader(0, 1.0, 0, 0), np.zeros((8, 8, 3), np.uint8), img_fmt=".png")
    bomb = recordio.pack(IRHeader(0, 2.0, 1, 0), png_bomb(13000))
    assert len(bomb) < 300 * 1024
    with MXRecordIO(path, "w") as writer:
        writer.write(small)
        writer.write(bomb)
    return path, recordio.encode_record(small)


def test_the_iterator_refuses_the_bomb_naming_the_record_and_the_limit_without_decoding_it(bomb_rec):
    path, first = bomb_rec
    tracemalloc.start()
    try:
        it = ImageRecordIter(path_imgrec=str(path), data_shape=(3, 8, 8), batch_size=2, preprocess_threads=1)
        with pytest.raises(
            DataIterError,
            match=rf"bomb\.rec, record at byte offset {len(first)}: .*13000x13000 "
            r"= 169000000 pixels, more than the limit of 64000000 \(max_decoded_pixels\)",
        ):
            it.next()
        it.close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20  # decoding would have taken 169 MB for this image alone


def test_the_limit_is_a_parameter(bomb_rec):
    path, _ = bomb_rec
    it = ImageRecordIter(path_imgrec=str(path), data_shape=(3, 8, 8), batch_size=1, max_decoded_pixels=63)
    with pytest.raises(DataIterError, match=r"record at byte offset 0: .*8x8 = 64 pixels, more than the limit of 63"):
        it.next()
    it.close()
    for bad in (0, -5, 2.5, True, "64"):
        with pytest.raises(DataIterError, match=r"max_decoded_pixels must be an int >= 1"):
            ImageRecordIter(path_imgrec=str(path), data_shape=(3, 8, 8), batch_size=1, max_decoded_pixels=bad)


def test_unpack_img_refuses_the_bomb_too():
    record = recordio.pack(IRHeader(0, 0.0, 0, 0), png_bomb(9000))  # 81 MP
    with pytest.raises(ImageTooLargeError, match=r"unpack_img: the image declares 9000x9000"):
        recordio.unpack_img(record)
    small = recordio.pack_img(IRHeader(0, 0.0, 0, 0), np.zeros((4, 5, 3), np.uint8), img_fmt=".png")
    assert recordio.unpack_img(small)[1].shape == (4, 5, 3)
    with pytest.raises(ImageTooLargeError, match="limit of 19"):
        recordio.unpack_img(small, max_pixels=19)
