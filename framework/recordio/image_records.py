"""Image records: a 24-byte header and an encoded image inside a record's payload.

Images travel inside records with a 24-byte header (:data:`IRHeader`, struct ``IfQQ``:
flag, label, id, id2). A scalar label is stored in the header (flag 0); an array label sets
flag to its length and follows the header as float32 values. :func:`pack_img` and
:func:`unpack_img` encode and decode the image itself. MXNet uses OpenCV for that, so images
are arrays in OpenCV's **BGR** channel order; MXLab keeps that convention and uses Pillow.
Decoding refuses an image that declares more than ``max_pixels`` pixels before it allocates
anything (:class:`ImageTooLargeError`).

Separate from the record format: these functions build and read payloads, whatever file
the records then go to.
"""

from __future__ import annotations

import io
import numbers
import struct
from collections import namedtuple
from typing import Any

import numpy as np
from PIL import Image

from .errors import RecordIOError


class ImageTooLargeError(RecordIOError):
    """An encoded image declares more pixels than the decoder's limit (a decompression bomb)."""


#: Default limit on width x height of a decoded image: 64 megapixels (an RGB image of that
#: size takes 192 MB once decoded). A few hundred KiB of PNG can declare 13000 x 13000.
MAX_DECODED_PIXELS = 64_000_000


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """Image record header: flag (number of float32 labels after the header, 0 for a scalar
label), label (scalar, or the array after unpack), id and id2 (a 128-bit record id)."""
_IR_FORMAT = "<IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)  # 24


def pack(header: Any, s: bytes) -> bytes:
    """Prefix ``s`` with an image record header (an array label follows the header)."""
    header = IRHeader(*header)
    if isinstance(s, str) or not isinstance(s, bytes | bytearray | memoryview):
        raise RecordIOError(f"pack: the payload is bytes, got {type(s).__name__}")
    prefix = b""
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        prefix = label.tobytes()
    try:
        head = struct.pack(_IR_FORMAT, *header)
    except struct.error as err:
        raise RecordIOError(
            f"pack: header {tuple(header)} does not fit (flag uint32, label float32, ids uint64): {err}"
        ) from None
    return head + prefix + bytes(s)


def unpack(s: bytes) -> tuple[Any, bytes]:
    """Split an image record into its header (array label when flag > 0) and payload."""
    if len(s) < _IR_SIZE:
        raise RecordIOError(f"unpack: record is {len(s)} bytes, shorter than the {_IR_SIZE}-byte image record header")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        need = header.flag * 4
        if len(s) < need:
            raise RecordIOError(
                f"unpack: header flag {header.flag} promises {header.flag} float32 labels ({need} bytes) "
                f"but only {len(s)} bytes follow the header"
            )
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag).copy())
        s = s[need:]
    return header, s


def encode_image(img: np.ndarray, quality: int = 95, img_fmt: str = ".jpg") -> bytes:
    """Encode an OpenCV-style (BGR / BGRA / grayscale) uint8 array as JPEG or PNG bytes."""
    img = np.asarray(img)
    if img.dtype != np.uint8:
        raise RecordIOError(f"pack_img: images are uint8 arrays, got dtype {img.dtype}")
    if img.ndim == 3 and img.shape[2] == 1:
        img = img[:, :, 0]
    if img.ndim == 2:
        pil = Image.fromarray(img, "L")
    elif img.ndim == 3 and img.shape[2] in (3, 4):
        rgb = img[:, :, [2, 1, 0, 3][: img.shape[2]]]  # BGR(A) -> RGB(A)
        pil = Image.fromarray(np.ascontiguousarray(rgb), "RGB" if img.shape[2] == 3 else "RGBA")
    else:
        raise RecordIOError(f"pack_img: image shape must be (H, W), (H, W, 1), (H, W, 3) or (H, W, 4), got {img.shape}")
    fmt = img_fmt.lower()
    out = io.BytesIO()
    if fmt in (".jpg", ".jpeg"):
        if pil.mode == "RGBA":
            pil = pil.convert("RGB")
        pil.save(out, format="JPEG", quality=int(quality))
    elif fmt == ".png":
        pil.save(out, format="PNG", compress_level=min(max(int(quality), 0), 9))
    else:
        raise RecordIOError(f"pack_img: img_fmt must be '.jpg', '.jpeg' or '.png', got {img_fmt!r}")
    return out.getvalue()


def open_image(buf: bytes, max_pixels: int = MAX_DECODED_PIXELS) -> Any:
    """Open (not yet decode) an encoded image, refusing one that declares more than ``max_pixels``.

    Pillow reads only the header here, so the size is known before any pixel is decoded:
    the check costs nothing and stops a decompression bomb before it allocates.
    """
    pil = Image.open(io.BytesIO(buf))
    width, height = pil.size
    if width * height > max_pixels:
        raise ImageTooLargeError(
            f"the image declares {width}x{height} = {width * height} pixels, more than the limit of "
            f"{max_pixels} (max_decoded_pixels)"
        )
    return pil


def decode_image(buf: bytes, iscolor: int = -1, max_pixels: int = MAX_DECODED_PIXELS) -> np.ndarray:
    """Decode JPEG/PNG bytes like ``cv2.imdecode``: -1 as stored, 0 grayscale, 1 BGR colour.

    An image declaring more than ``max_pixels`` pixels raises :class:`ImageTooLargeError`
    before it is decoded.
    """
    if iscolor not in (-1, 0, 1):
        raise RecordIOError(f"unpack_img: iscolor must be -1, 0 or 1, got {iscolor!r}")
    try:
        pil = open_image(buf, max_pixels)
        pil.load()
    except ImageTooLargeError as err:
        raise ImageTooLargeError(f"unpack_img: {err}") from None
    except Exception as err:
        raise RecordIOError(f"unpack_img: cannot decode the image ({len(buf)} bytes): {err}") from None
    if iscolor == 0:
        return np.asarray(pil.convert("L"))
    if iscolor == -1:
        if pil.mode == "L":
            return np.asarray(pil)
        if pil.mode in ("RGBA", "LA", "PA") or (pil.mode == "P" and "transparency" in pil.info):
            return np.ascontiguousarray(np.asarray(pil.convert("RGBA"))[:, :, [2, 1, 0, 3]])
    return np.ascontiguousarray(np.asarray(pil.convert("RGB"))[:, :, ::-1])


def pack_img(header: Any, img: np.ndarray, quality: int = 95, img_fmt: str = ".jpg") -> bytes:
    """Encode an image (BGR order, as ``cv2.imread`` returns) and pack it with ``header``."""
    return pack(header, encode_image(img, quality, img_fmt))


def unpack_img(s: bytes, iscolor: int = -1, max_pixels: int = MAX_DECODED_PIXELS) -> tuple[Any, np.ndarray]:
    """Unpack an image record into its header and the decoded image (BGR order, as OpenCV)."""
    header, payload = unpack(s)
    return header, decode_image(payload, iscolor, max_pixels)
