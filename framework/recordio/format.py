"""The RecordIO record format: encoding a payload, and walking and checking record headers.

A ``.rec`` file is a list of records. Each record on disk is::

    uint32 magic 0xCED7230A | uint32 length word | payload | zero padding to 4 bytes

The length word packs two things: the low 29 bits are the payload length, the top 3 bits
a *continuation flag*. Readers that start in the middle of a file (a partition of a
distributed job, say) find the next record by scanning 4-byte words for the magic, so the
magic must never appear, 4-byte aligned, inside a payload. The writer therefore cuts a
payload at every aligned occurrence of the magic and drops those 4 bytes: the pieces are
written as records with flag 1 (first), 2 (middle) and 3 (last); a record without magic
inside has flag 0. The reader glues the pieces back together with the magic between them.

:func:`read_record` reads a record from a file; :func:`read_record_at` reads one from a whole
file's bytes in memory (a memory mapping, say) as a view of them, without copying; both make
the same checks with the same messages, which live in one place (:func:`_parse_header`).
:func:`scan_record_offsets` and :func:`scan_buffer_offsets` walk the headers only, for the
readers that index a file themselves. This module knows bytes and offsets, not files'
lifetimes (files.py) or what a payload means (image_records.py).
"""

from __future__ import annotations

import functools
import io
import os
import struct
from collections.abc import Callable
from typing import IO, Any

from .errors import RecordIOError, RecordIOFileNotFoundError

MAGIC = 0xCED7230A
MAGIC_BYTES = struct.pack("<I", MAGIC)
LENGTH_BITS = 29
MAX_RECORD_BYTES = (1 << LENGTH_BITS) - 1
# continuation flags in the top 3 bits of the length word
WHOLE, FIRST, MIDDLE, LAST = 0, 1, 2, 3


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
