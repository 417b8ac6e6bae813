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
"""

from __future__ import annotations

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


def decode_record_image(payload: bytes, mode: str, max_pixels: int, where: str, offset: int) -> np.ndarray:
    """Decode a record's image into HWC (or HW for ``mode='L'``) uint8 pixels, naming the record on failure.

    The size the header declares is checked against ``max_pixels`` before decoding; gray images
    are decoded as RGB and converted with OpenCV's weights, as MXNet does. The array may be a
    view with a pixel step of 4 bytes (see :func:`decode_pixels`).
    """
    try:
        img = recordio.open_image(payload, max_pixels)
        pixels = decode_pixels(img, "RGB" if mode == "L" else mode)
    except recordio.ImageTooLargeError as err:
        raise DataIterError(f"{where}, record at byte offset {offset}: {err}") from None
    except Exception as err:
        raise DataIterError(f"{where}, record at byte offset {offset}: cannot decode the image: {err}") from None
    return rgb_to_gray(pixels) if mode == "L" else pixels
