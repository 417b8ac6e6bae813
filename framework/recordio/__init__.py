"""RecordIO: MXNet's binary format for a sequence of byte strings (``mx.recordio``).

Read in this order: format.py (a record on disk: magic, length word with its continuation
flag, payload, padding; encoding, and the header walk every reader shares), files.py
(:class:`MXRecordIO`, sequential reading and writing), indexed.py
(:class:`MXIndexedRecordIO`, the ``.idx`` file for random access), image_records.py (the
24-byte image header and the encoded image inside a payload, :func:`pack_img` /
:func:`unpack_img`) and errors.py, under all of them. Every damaged file gets an error that
names the file and the byte offset where reading went wrong: a truncated record, a wrong
magic, a continuation flag out of sequence, a missing or malformed index file.

This package re-exports every name the modules define for their users (``mx.recordio.pack``,
the format's constants and readers for the io iterators).
"""

from __future__ import annotations

from .errors import RecordIOError, RecordIOFileNotFoundError
from .files import MXRecordIO
from .format import (  # noqa: F401 - the format's names, for the io iterators and the tests
    FIRST,
    LAST,
    LENGTH_BITS,
    MAGIC,
    MAGIC_BYTES,
    MAX_RECORD_BYTES,
    MIDDLE,
    WHOLE,
    _file_size,
    _open,
    encode_record,
    read_record,
    read_record_at,
    scan_buffer_offsets,
    scan_record_offsets,
)
from .image_records import (  # noqa: F401 - the image helpers, for mx.image and the io iterators
    MAX_DECODED_PIXELS,
    ImageTooLargeError,
    IRHeader,
    decode_image,
    encode_image,
    open_image,
    pack,
    pack_img,
    unpack,
    unpack_img,
)
from .indexed import MXIndexedRecordIO

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
