"""Decode a record's image straight into NumPy memory, so that worker threads overlap.

``np.asarray(pil_image)`` copies the pixels out of Pillow twice (Pillow's raw encoder packs
its 4-byte pixels into a ``bytes`` object in 64 KiB pieces, then joins them), and both copies
hold the GIL: about 70 us of a 400x300 JPEG, a tenth of the time the decoder itself needs
(which releases the GIL). On several decoding threads that copy is serial work.

Pillow keeps an RGB image as 4 bytes per pixel (RGB plus a pad byte), the layout of its
``RGBX`` mode, and an ``RGBA`` image the same way. Pillow's own loader decodes into an image
it was given beforehand (that is how it memory-maps raw files): :func:`decode_pixels` hands
it one mapped over a fresh NumPy buffer of ``(height, width, 4)`` bytes, so the decoder writes
the pixels where NumPy reads them and no copy follows. The result for RGB is the
``[..., :3]`` view of that buffer: the same values as ``np.asarray(img)``, with a pixel step
of 4 bytes (:func:`framework.io.pixels.resize_bilinear` reads such views without a copy).

When the loader did not decode into the given image (another Pillow version, a format whose
loader makes its own), or the image's mode is not the one wanted, the pixels come the usual
way, through ``np.asarray`` after a conversion.

Baseline colour JPEGs, most of a typical ``.rec`` file, take a shorter road still:
``Image.open`` parses the whole JPEG header in Python (every marker, the quantisation tables
entry by entry) only to learn the size and the number of components, then ``load`` feeds the
decoder in 64 KiB pieces, each one copied. In a pipeline those Python steps run with caches
cold from the pixel work and cost several times what they cost in a loop: about 100 us of
GIL-held time per 400x300 image. :func:`decode_jpeg_rgb` reads the size from the frame header
(a few ``int.from_bytes`` between segment lengths) and gives the whole payload to Pillow's
JPEG decoder (libjpeg) in one call that releases the GIL; the pixels are the same, because
the decoder and its settings are the ones ``Image.open`` would use. Anything else (grayscale or
CMYK JPEGs, 12-bit or lossless ones, a truncated file, an image over the pixel limits) goes the
ordinary way, which also reports the errors. Given a :class:`DecodeBuffers`, as the record
augmenters give one, that road writes into the calling thread's reused buffer: no fresh pages
to fault in for every image.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from PIL import Image

from .. import recordio
from .base import DataIterError
from .pixels import rgb_to_gray

# the modes kept as 4 bytes per pixel, and the mapped mode with the same layout
_FOUR_BYTE_MODES = {"RGB": "RGBX", "RGBA": "RGBA"}
# Pillow's constructor of an image over a caller's buffer (what ImageFile.load uses for mmap)
_map_buffer = getattr(Image.core, "map_buffer", None)


def decode_pixels(img: Image.Image, mode: str) -> np.ndarray:
    """The pixels of an opened, not yet loaded image, in ``mode`` ('RGB', 'RGBA' or 'L'): HWC (HW for 'L')."""
    if img.mode == mode and mode in _FOUR_BYTE_MODES and _map_buffer is not None:
        width, height = img.size
        buffer = np.empty((height, width, 4), dtype=np.uint8)
        mapped = _map_buffer(buffer, (width, height), "raw", 0, (_FOUR_BYTE_MODES[mode], 0, 1))
        img.im = mapped
        img.load()
        if img.im is mapped:  # the decoder wrote into the buffer
            return buffer if mode == "RGBA" else buffer[:, :, :3]
    else:
        img.load()
    if img.mode != mode:
        img = img.convert(mode)
    return np.asarray(img)


# JPEG markers: start of image, frames the decoder takes (baseline, extended, progressive), the
# other frame types, start of scan, end of image, and the markers without a length field
_SOI = b"\xff\xd8"
_SOF_DECODED = {0xC0, 0xC1, 0xC2}
_SOF_OTHER = {0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
_SOS, _EOI = 0xDA, 0xD9
_STANDALONE = {0x01, *range(0xD0, 0xD8)}
_jpeg_decoder = getattr(Image.core, "jpeg_decoder", None)


def jpeg_rgb_size(payload: bytes) -> tuple[int, int] | None:
    """(width, height) of an 8-bit, 3-component JPEG the decoder takes as it is; None for anything else."""
    if payload[:2] != _SOI:  # (a slice, not startswith: payload may be a memoryview)
        return None
    pos, end = 2, len(payload) - 4
    while pos < end:
        if payload[pos] != 0xFF:
            return None  # not at a marker: let Pillow's parser judge
        marker = payload[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
        elif marker in _STANDALONE:
            pos += 2
        elif marker in _SOF_DECODED:
            # segment: length (2), sample precision (1), height (2), width (2), components (1)
            frame = payload[pos + 4 : pos + 10]
            if len(frame) < 6 or frame[0] != 8 or frame[5] != 3:
                return None
            return int.from_bytes(frame[3:5], "big"), int.from_bytes(frame[1:3], "big")
        elif marker in _SOF_OTHER or marker in (_SOS, _EOI):
            return None  # a frame type Pillow refuses, or no frame before the scan
        else:
            pos += 2 + int.from_bytes(payload[pos + 2 : pos + 4], "big")
    return None


class DecodeBuffers(threading.local):
    """One buffer per thread for the decoder to write into, reused image after image.

    A fresh buffer per image makes the allocator hand out (and, with several threads, give
    back) fresh pages: page faults and system calls, some with the GIL held. Reuse is safe
    only for a caller that is done with an image's pixels before it decodes the next one on
    the same thread, as the record augmenters are. Buffers above ``keep_bytes`` are not kept.
    """

    def __init__(self, keep_bytes: int = 64 << 20) -> None:
        self.keep_bytes = keep_bytes
        self.array = np.empty(0, dtype=np.uint8)
        self.last: tuple[tuple[int, int], np.ndarray, Any] | None = None  # (size, buffer, Pillow image over it)

    def get(self, height: int, width: int) -> np.ndarray:
        """An uninitialised (height, width, 4) uint8 array, this thread's buffer when it fits."""
        size = height * width * 4
        if size > self.keep_bytes:
            return np.empty((height, width, 4), dtype=np.uint8)
        if self.array.size < size:
            self.array = np.empty(size, dtype=np.uint8)
            self.last = None  # its image views the old array
        return self.array[:size].reshape(height, width, 4)

    def mapped(self, height: int, width: int) -> tuple[np.ndarray, Any]:
        """A buffer as :meth:`get` gives and a Pillow ``RGBX`` image over its memory, for the decoder.

        The pair of the previous call is handed out again when the size is the same (images of
        one size are the rule in a ``.rec`` file): building the Pillow image costs a few
        microseconds of Python-held time per image, and the buffer it views is still this
        thread's buffer, since the buffer is only replaced by a call for a larger size.
        """
        last = self.last
        if last is not None and last[0] == (height, width):
            return last[1], last[2]
        buffer = self.get(height, width)
        image = _map_buffer(buffer, (width, height), "raw", 0, ("RGBX", 0, 1))
        self.last = ((height, width), buffer, image) if buffer.base is self.array else None
        return buffer, image


def decode_jpeg_rgbx(payload: bytes, max_pixels: int, buffers: DecodeBuffers | None = None) -> np.ndarray | None:
    """A colour JPEG decoded in one GIL-free call into an ``(h, w, 4)`` buffer: RGB and a pad byte per pixel.

    None when the payload is not such a JPEG, is larger than ``max_pixels`` or Pillow's own
    limit, or does not decode completely: the caller then takes Pillow's ordinary path.
    ``payload`` may be any bytes-like object (a ``memoryview`` of a record: no copy).
    """
    size = jpeg_rgb_size(payload) if _jpeg_decoder is not None and _map_buffer is not None else None
    if size is None:
        return None
    width, height = size
    pillow_limit = Image.MAX_IMAGE_PIXELS
    if width * height > max_pixels or (pillow_limit and width * height > pillow_limit) or not width or not height:
        return None
    if buffers is not None:
        buffer, image = buffers.mapped(height, width)
    else:
        buffer = np.empty((height, width, 4), dtype=np.uint8)
        image = _map_buffer(buffer, size, "raw", 0, ("RGBX", 0, 1))
    decoder = _jpeg_decoder("RGB", "RGB", "")  # what Image.open + load would build for this image
    try:
        decoder.setimage(image, (0, 0, width, height))
        consumed, error = decoder.decode(payload)  # the GIL is released while libjpeg works
    finally:
        decoder.cleanup()
    if consumed >= 0 or error < 0:  # wanted more data (truncated), or failed
        return None
    return buffer


def decode_jpeg_rgb(payload: bytes, max_pixels: int, buffers: DecodeBuffers | None = None) -> np.ndarray | None:
    """A colour JPEG's RGB pixels: the ``[..., :3]`` view of :func:`decode_jpeg_rgbx`'s buffer (None as there)."""
    pixels = decode_jpeg_rgbx(payload, max_pixels, buffers)
    return None if pixels is None else pixels[:, :, :3]


CHANNELS = {"L": 1, "RGB": 3, "RGBA": 4}


def decode_record_pixels(
    payload: bytes, mode: str, max_pixels: int, where: str, offset: int, buffers: DecodeBuffers | None = None
) -> tuple[np.ndarray, int]:
    """:func:`decode_record_image`'s pixels as decoded, and how many of their channels are the image's.

    An RGB JPEG comes as its ``(h, w, 4)`` RGBX buffer with 3 channels to read: a reader that
    takes the first channels of each pixel (:class:`framework.io.pixels.BilinearResizer`) then
    works on a contiguous array, without building a strided view.
    """
    try:
        pixels = decode_jpeg_rgbx(payload, max_pixels, buffers) if mode in ("RGB", "L") else None
        if pixels is None:
            pixels = decode_pixels(recordio.open_image(payload, max_pixels), "RGB" if mode == "L" else mode)
    except recordio.ImageTooLargeError as err:
        raise DataIterError(f"{where}, record at byte offset {offset}: {err}") from None
    except Exception as err:
        raise DataIterError(f"{where}, record at byte offset {offset}: cannot decode the image: {err}") from None
    if mode == "L":
        return rgb_to_gray(pixels[:, :, :3]), 1
    return pixels, CHANNELS[mode]


def decode_record_image(
    payload: bytes, mode: str, max_pixels: int, where: str, offset: int, buffers: DecodeBuffers | None = None
) -> np.ndarray:
    """Decode a record's image into HWC (or HW for ``mode='L'``) uint8 pixels, naming the record on failure.

    The size the header declares is checked against ``max_pixels`` before decoding; gray images
    are decoded as RGB and converted with OpenCV's weights, as MXNet does. The array may be a
    view with a pixel step of 4 bytes (see :func:`decode_pixels`), in one of ``buffers`` when given.
    """
    pixels, channels = decode_record_pixels(payload, mode, max_pixels, where, offset, buffers)
    return pixels[:, :, :channels] if pixels.ndim == 3 and pixels.shape[2] != channels else pixels
