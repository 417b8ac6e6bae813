"""Sequential reading and writing of a ``.rec`` file: :class:`MXRecordIO` (``mx.recordio.MXRecordIO``).

A thin object around one open file and the record format (format.py): ``write`` appends one
encoded record, ``read`` returns the next one, ``tell`` gives the offset the next record
starts at (which is what an index stores). State: ``uri``, ``flag`` ('r' or 'w'),
``is_open`` and the file itself, which pickling leaves out: a worker process that receives a
reader reopens the file at its start, as MXNet's does.
"""

from __future__ import annotations

import os
from typing import IO, Any

from .errors import RecordIOError
from .format import _open, encode_record, read_record


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
