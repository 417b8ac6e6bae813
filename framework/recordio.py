"""RecordIO: MXNet's binary format for a sequence of byte strings (``mx.recordio``).

A ``.rec`` file is a list of records. Each record on disk is::

    uint32 magic 0xCED7230A | uint32 length word | payload | zero padding to 4 bytes

The length word packs two things: the low 29 bits are the payload length, the top 3 bits
a *continuation flag*. Readers that start in the middle of a file (a partition of a
distributed job, say) find the next record by scanning 4-byte words for the magic, so the
magic must never appear, 4-byte aligned, inside a payload. The writer therefore cuts a
payload at every aligned occurrence of the magic and drops those 4 bytes: the pieces are
written as records with flag 1 (first), 2 (middle) and 3 (last); a record without magic
inside has flag 0. The reader glues the pieces back together with the magic between them.

A ``.idx`` file makes the records addressable: one text line per record,
``key<TAB>byte offset``. :class:`MXIndexedRecordIO` reads and writes both.

:func:`read_record` reads a record from a file; :func:`read_record_at` reads one from a whole
file's bytes in memory (a memory mapping, say) as a view of them, without copying; both make
the same checks with the same messages, which live in one place (:func:`_parse_header`).

Images travel inside records with a 24-byte header (:data:`IRHeader`, struct ``IfQQ``:
flag, label, id, id2). A scalar label is stored in the header (flag 0); an array label sets
flag to its length and follows the header as float32 values. :func:`pack_img` and
:func:`unpack_img` encode and decode the image itself. MXNet uses OpenCV for that, so images
are arrays in OpenCV's **BGR** channel order; MXLab keeps that convention and uses Pillow.

Every damaged file gets an error that names the file and the byte offset where reading
went wrong: a truncated record, a wrong magic, a continuation flag out of sequence, a
missing or malformed index file.
"""

from __future__ import annotations

import functools
import io
import numbers
import os
import struct
from collections import namedtuple
from collections.abc import Callable
from typing import IO, Any

import numpy as np
from PIL import Image

from .atomic_file import write_text_atomic
from .base import MXLabError

MAGIC = 0xCED7230A
MAGIC_BYTES = struct.pack("<I", MAGIC)
LENGTH_BITS = 29
MAX_RECORD_BYTES = (1 << LENGTH_BITS) - 1
# continuation flags in the top 3 bits of the length word
WHOLE, FIRST, MIDDLE, LAST = 0, 1, 2, 3


class RecordIOError(MXLabError, ValueError):
    """A RecordIO file is damaged or used wrongly; the message names the file and offset."""


class RecordIOFileNotFoundError(RecordIOError, FileNotFoundError):
    """A ``.rec`` or ``.idx`` file that should exist does not."""


class ImageTooLargeError(RecordIOError):
    """An encoded image declares more pixels than the decoder's limit (a decompression bomb)."""


#: Default limit on width x height of a decoded image: 64 megapixels (an RGB image of that
#: size takes 192 MB once decoded). A few hundred KiB of PNG can declare 13000 x 13000.
MAX_DECODED_PIXELS = 64_000_000


# --------------------------------------------------------------------------- the format
def _aligned(n: int) -> int:
    return (n + 3) & ~3


def encode_record(payload: bytes) -> bytes:
    """The bytes one record occupies on disk, with the magic escaped as MXNet's writer does."""
    n = len(payload)
    if n > MAX_RECORD_BYTES:
        raise RecordIOError(f"a record holds at most {MAX_RECORD_BYTES} bytes (2^29 - 1), got {n}")
    # the cut points: every 4-byte aligned occurrence of the magic inside the payload
    cuts = []
    pos = payload.find(MAGIC_BYTES)
    while pos != -1:
        if pos % 4 == 0:
            cuts.append(pos)
            pos = payload.find(MAGIC_BYTES, pos + 4)
        else:
            pos = payload.find(MAGIC_BYTES, pos + 1)
    out = bytearray()
    start = 0
    for k, cut in enumerate(cuts):
        flag = FIRST if k == 0 else MIDDLE
        out += struct.pack("<II", MAGIC, (flag << LENGTH_BITS) | (cut - start))
        out += payload[start:cut]  # aligned: cut - start is a multiple of 4
        start = cut + 4
    flag = LAST if cuts else WHOLE
    out += struct.pack("<II", MAGIC, (flag << LENGTH_BITS) | (n - start))
    out += payload[start:]
    out += b"\0" * (_aligned(n) - n)
    return bytes(out)


def _bytes_left(f: IO[bytes]) -> int | None:
    """Bytes between the position and the end of ``f`` (None if ``f`` cannot tell)."""
    try:
        return os.fstat(f.fileno()).st_size - f.tell()
    except (OSError, AttributeError, io.UnsupportedOperation):
        return None


# The parsing of a record header, shared by read_record (a file, read in order) and by the
# header walk of read_record_at (a buffer) and scan_record_offsets (positioned reads): the
# checks and their messages live here only.
_HEAD = struct.Struct("<II")  # magic, length word


def _whole_record_length(buf: memoryview, offset: int, size: int) -> int:
    """The payload length of a whole, intact record at ``offset`` of ``buf``; -1 for anything else.

    The readers of a mapped file take this one header read for the usual record and leave
    every other case (parts of a long record, a bad magic, a short file) to the checking walk
    of :func:`_record_parts`, which gives the precise errors.
    """
    if offset + 8 > size:
        return -1
    magic, word = _HEAD.unpack_from(buf, offset)
    length = word & MAX_RECORD_BYTES
    if magic != MAGIC or word >> LENGTH_BITS != WHOLE or offset + 8 + _aligned(length) > size:
        return -1
    return length


def _short_header(path: str, offset: int, left: int, record_start: int | None) -> RecordIOError:
    """The error for a file that ends less than 8 bytes after ``offset``, where a header should start.

    ``record_start`` is the offset of the record whose continuation part was expected there
    (None when a new record should start there).
    """
    if record_start is not None:
        return RecordIOError(
            f"{path}: record at byte offset {record_start} is truncated: its continuation part at "
            f"byte offset {offset} is missing (the file ends there)"
        )
    return RecordIOError(f"{path}: truncated record header at byte offset {offset}: 8 bytes needed, {left} left")


def _parse_header(magic: int, word: int, offset: int, path: str, continuing: bool) -> tuple[int, int]:
    """The (continuation flag, payload length) of the header at ``offset``, checked.

    ``continuing`` says whether the part of a record in pieces is expected (flag 2 or 3) rather
    than a new record (flag 0 or 1).
    """
    if magic != MAGIC:
        raise RecordIOError(
            f"{path}: bad magic 0x{magic:08X} at byte offset {offset} (expected 0x{MAGIC:08X}): "
            "not a RecordIO file, a corrupt record, or an offset that is not a record start"
        )
    flag, length = word >> LENGTH_BITS, word & MAX_RECORD_BYTES
    if flag > LAST:
        raise RecordIOError(f"{path}: invalid continuation flag {flag} at byte offset {offset}")
    if (flag in (MIDDLE, LAST)) != continuing:
        expected = "2 (middle) or 3 (last)" if continuing else "0 (whole) or 1 (first)"
        raise RecordIOError(
            f"{path}: continuation flag {flag} at byte offset {offset} is out of sequence (expected {expected})"
        )
    return flag, length


def _truncated_payload(path: str, offset: int, length: int, left: int) -> RecordIOError:
    """The error for a header at ``offset`` promising more payload than the ``left`` bytes after it."""
    return RecordIOError(
        f"{path}: record at byte offset {offset} is truncated: its header promises {length} payload "
        f"bytes ({_aligned(length)} with padding) but the file ends after {max(left, 0)}"
    )


def read_record(f: IO[bytes], path: str) -> bytes | None:
    """Read the record at the file's position; None at a clean end of file."""
    parts: list[bytes] = []
    record_start = f.tell()
    while True:
        offset = f.tell()
        head = f.read(8)
        if not head and not parts:
            return None
        if len(head) < 8:
            raise _short_header(path, offset, len(head), record_start if parts else None)
        flag, length = _parse_header(*_HEAD.unpack(head), offset, path, bool(parts))
        padded = _aligned(length)
        left = _bytes_left(f)
        # read() allocates the size asked for: a corrupt length must not cost 512 MB
        data = f.read(padded) if left is None or left >= padded else f.read(max(left, 0))
        if len(data) < padded:
            raise _truncated_payload(path, offset, length, len(data))
        parts.append(data[:length])
        if flag in (WHOLE, LAST):
            return parts[0] if len(parts) == 1 else MAGIC_BYTES.join(parts)


def _record_parts(
    head_at: Callable[[int], Any], size: int, offset: int, path: str
) -> tuple[list[tuple[int, int]], int]:
    """Walk the headers of the record at ``offset`` of a file of ``size`` bytes: the (start, length)
    of each payload part, and the offset of the next record. ``head_at(pos)`` gives the (up to) 8
    bytes at ``pos``: a slice of a buffer, or a positioned read of a file."""
    parts: list[tuple[int, int]] = []
    pos = offset
    while True:
        head = head_at(pos)
        if len(head) < 8:
            raise _short_header(path, pos, len(head), offset if parts else None)
        flag, length = _parse_header(*_HEAD.unpack(head), pos, path, bool(parts))
        start = pos + 8
        pos = start + _aligned(length)
        if pos > size:
            raise _truncated_payload(path, start - 8, length, size - start)
        parts.append((start, length))
        if flag in (WHOLE, LAST):
            return parts, pos


def read_record_at(buf: memoryview, offset: int, path: str) -> memoryview | None:
    """The record at byte ``offset`` of ``buf`` (a whole file's bytes); None at or past the end.

    A record in one part comes back as a slice of ``buf``: no copy, so reading from a memory
    mapping costs no system call and no allocation beyond the view. A record in parts is glued
    together (with the magic between them, as :func:`read_record` does) into new memory. The
    checks and error messages are :func:`read_record`'s.
    """
    if offset < 0:
        raise RecordIOError(f"{path}: byte offset {offset} is negative")
    size = len(buf)
    if offset >= size:
        return None
    length = _whole_record_length(buf, offset, size)
    if length >= 0:  # the usual record: one header read, no closure, no list
        return buf[offset + 8 : offset + 8 + length]
    parts, _ = _record_parts(lambda pos: buf[pos : pos + 8], size, offset, path)  # the checks, the errors, parts
    if len(parts) == 1:
        start, length = parts[0]
        return buf[start : start + length]
    return memoryview(MAGIC_BYTES.join(buf[start : start + length] for start, length in parts))


def scan_record_offsets(path: str) -> list[int]:
    """Byte offsets of every record in a ``.rec`` file, walking the headers (payloads skipped).

    Each header is one positioned read of 8 bytes (``os.pread``): a buffered file would fill
    its 8 KiB buffer at every seek, and a memory mapping fault a page in for every header.
    """
    offsets: list[int] = []
    size = _file_size(path)
    with _open(path, "rb") as f:
        head_at = functools.partial(os.pread, f.fileno(), 8)  # head_at(pos) = os.pread(fd, 8, pos)
        pos = 0
        while pos < size:
            offsets.append(pos)
            pos = _record_parts(head_at, size, pos, path)[1]
    return offsets


def scan_buffer_offsets(buf: memoryview, path: str) -> list[int]:
    """:func:`scan_record_offsets` over a file's bytes in memory (``path`` names it in errors).

    For a reader that maps the file and reads every record from the mapping anyway
    (``ImageRecordIter``): no system call per header, and the pages a header walk touches are
    pages the records need. A whole, intact record is one ``unpack_from``; any other takes the
    checking walk, so the offsets and the errors are :func:`scan_record_offsets`'s.
    """
    offsets: list[int] = []
    size, pos = len(buf), 0
    while pos < size:
        offsets.append(pos)
        length = _whole_record_length(buf, pos, size)
        if length >= 0:
            pos += 8 + _aligned(length)
            continue
        pos = _record_parts(lambda at: buf[at : at + 8], size, pos, path)[1]
    return offsets


def _file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        raise RecordIOFileNotFoundError(f"RecordIO file not found: {path!r}") from None


def _open(path: str, mode: str) -> IO[Any]:
    try:
        return open(path, mode)
    except FileNotFoundError:
        what = "index file" if path.endswith(".idx") else "RecordIO file"
        raise RecordIOFileNotFoundError(f"{what} not found: {path!r}") from None


# --------------------------------------------------------------------------- files
class MXRecordIO:
    """Sequential reading (``flag='r'``) or writing (``flag='w'``) of a ``.rec`` file.

    Writing streams record by record into the target file, so it is *not* atomic as a whole: a
    process killed mid-way leaves the records written so far (and possibly a truncated last one,
    which readers report by offset). Write to a new name and rename it when done if the previous
    file must survive a crash.
    """

    def __init__(self, uri: str | os.PathLike, flag: str) -> None:
        self.uri = os.fspath(uri)
        if flag not in ("r", "w"):
            raise RecordIOError(f"MXRecordIO({self.uri!r}): flag must be 'r' or 'w', got {flag!r}")
        self.flag = flag
        self.writable = flag == "w"
        self.is_open = False
        self._file: IO[bytes] | None = None
        self.open()

    def open(self) -> None:
        """Open the file: reading starts at the first record, writing truncates it."""
        self._file = _open(self.uri, "wb" if self.writable else "rb")
        self.is_open = True

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self.is_open and self._file is not None:
            self._file.close()
        self._file = None
        self.is_open = False

    def reset(self) -> None:
        """Back to the first record (for a writer: truncate and start again)."""
        self.close()
        self.open()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self) -> MXRecordIO:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        """Pickle by path (a worker process reopens the file at its start), as MXNet does."""
        state = dict(self.__dict__)
        state["_file"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self.is_open:
            self.open()

    def _handle(self, api: str, writing: bool) -> IO[bytes]:
        if not self.is_open or self._file is None:
            raise RecordIOError(f"{api}: {self.uri!r} is closed")
        if writing != self.writable:
            raise RecordIOError(f"{api}: {self.uri!r} was opened with flag {self.flag!r}")
        return self._file

    def write(self, buf: bytes | bytearray | memoryview) -> None:
        """Append one record."""
        f = self._handle("MXRecordIO.write", writing=True)
        if isinstance(buf, str) or not isinstance(buf, bytes | bytearray | memoryview):
            raise RecordIOError(f"MXRecordIO.write: a record is bytes, got {type(buf).__name__}")
        f.write(encode_record(bytes(buf)))

    def read(self) -> bytes | None:
        """The next record, or None after the last one."""
        return read_record(self._handle("MXRecordIO.read", writing=False), self.uri)

    def tell(self) -> int:
        """Byte offset of the next record to be written (or read)."""
        if not self.is_open or self._file is None:
            raise RecordIOError(f"MXRecordIO.tell: {self.uri!r} is closed")
        return self._file.tell()


class MXIndexedRecordIO(MXRecordIO):
    """A ``.rec`` file plus its ``.idx`` file (``key<TAB>offset`` lines) for random access.

    A writer keeps the index lines in memory and writes the ``.idx`` file atomically at
    :meth:`close`; the ``.rec`` file streams as in :class:`MXRecordIO` (not atomic).
    """

    def __init__(self, idx_path: str | os.PathLike, uri: str | os.PathLike, flag: str, key_type: type = int) -> None:
        self.idx_path = os.fspath(idx_path)
        self.idx: dict[Any, int] = {}
        self.keys: list[Any] = []
        self.key_type = key_type
        self._index_lines: list[str] = []
        super().__init__(uri, flag)

    def open(self) -> None:
        if not self.writable and not os.path.exists(self.idx_path):
            raise RecordIOFileNotFoundError(
                f"index file not found: {self.idx_path!r} (for {self.uri!r}); write it with "
                "MXIndexedRecordIO(..., 'w') or im2rec, or read the records sequentially with MXRecordIO"
            )
        super().open()
        self.idx, self.keys = {}, []
        self._index_lines = []
        if self.writable:
            return
        size = os.path.getsize(self.uri)
        with _open(self.idx_path, "rb") as fidx:
            raw_lines = fidx.read().splitlines(keepends=True)
        line_start = 0
        for lineno, raw in enumerate(raw_lines, start=1):
            at, line_start = line_start, line_start + len(raw)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                self.close()
                raise RecordIOError(
                    f"{self.idx_path}: line {lineno} (byte offset {at + err.start}) is not UTF-8 text: {raw[:40]!r}"
                ) from None
            if not line.strip():
                continue
            fields = line.strip().split("\t")
            try:
                if len(fields) != 2:
                    raise ValueError(f"expected 2 tab-separated fields, got {len(fields)}")
                key, offset = self.key_type(fields[0]), int(fields[1])
            except (ValueError, TypeError) as err:
                self.close()
                raise RecordIOError(
                    f"{self.idx_path}: line {lineno} is not 'key<TAB>offset' (byte offset {at}): {line!r} ({err})"
                ) from None
            if offset < 0 or offset >= size or offset % 4:
                self.close()
                raise RecordIOError(
                    f"{self.idx_path}: line {lineno}: offset {offset} of key {key!r} is not a record start "
                    f"in {self.uri!r} ({size} bytes; records start at multiples of 4)"
                )
            self.idx[key] = offset
            self.keys.append(key)

    def close(self) -> None:
        """Close the files; a writer writes its ``.idx`` now, atomically (idempotent)."""
        writing = self.writable and self.is_open
        super().close()
        if writing:
            write_text_atomic(self.idx_path, "".join(self._index_lines))
            self._index_lines = []

    def seek(self, idx: Any) -> None:
        """Move the read position to the record with key ``idx``."""
        f = self._handle("MXIndexedRecordIO.seek", writing=False)
        try:
            offset = self.idx[idx]
        except KeyError:
            raise RecordIOError(f"MXIndexedRecordIO.seek: key {idx!r} is not in {self.idx_path!r}") from None
        f.seek(offset)

    def read_idx(self, idx: Any) -> bytes:
        """The record with key ``idx``."""
        self.seek(idx)
        record = self.read()
        if record is None:  # pragma: no cover - offsets are checked against the size on open
            raise RecordIOError(f"{self.uri}: no record at byte offset {self.idx[idx]} (key {idx!r})")
        return record

    def write_idx(self, idx: Any, buf: bytes) -> None:
        """Append a record and its index line ``key<TAB>offset``."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self._index_lines.append(f"{key}\t{pos}\n")
        self.idx[key] = pos
        self.keys.append(key)


# --------------------------------------------------------------------------- image records
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


__all__ = [
    "IRHeader",
    "MXIndexedRecordIO",
    "MXRecordIO",
    "RecordIOError",
    "RecordIOFileNotFoundError",
    "pack",
    "pack_img",
    "unpack",
    "unpack_img",
]
