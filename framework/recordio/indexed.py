"""Random access to a ``.rec`` file through its ``.idx`` file: :class:`MXIndexedRecordIO`.

A ``.idx`` file makes the records addressable: one text line per record,
``key<TAB>byte offset``. Reading checks every line when the file is opened (UTF-8, two
fields, an offset that is a record start inside the ``.rec`` file), so a bad index fails
at once with the line and byte offset, not later at the record it misplaces. Writing keeps
the lines in memory and writes the ``.idx`` file atomically at ``close``.

Separate from files.py because the index is a second file with its own format and errors;
the records themselves are read and written by the sequential class this one extends.
"""

from __future__ import annotations

import os
from typing import Any

from ..atomic_file import write_text_atomic
from .errors import RecordIOError, RecordIOFileNotFoundError
from .files import MXRecordIO
from .format import _open


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
