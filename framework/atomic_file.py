"""Crash-safe file writes: the target is always the complete old file or the complete new one.

Opening a file with ``open(path, "wb")`` truncates it at once; a process killed (or a disk
filling up) before the write finishes leaves a short or empty file where the previous
checkpoint used to be. :func:`atomic_write` writes to a temporary file in the same directory
instead, flushes and fsyncs it, and only then renames it over the target. A rename within one
file system is atomic on POSIX and Windows (``os.replace``), so a reader (or the next run after a
crash) sees either the old bytes or the new ones. The directory is fsynced afterwards so that the
rename itself survives a power cut.

Every writer in ``framework/`` that produces a whole file at once (``mx.nd.save``, ``Symbol.save``,
checkpoints, optimizer states, RecordIO indexes, ``.lst`` files, profiler dumps) goes through here.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import IO, Any

#: Prefix of the temporary files, so a leftover one (after a power cut) is recognisable.
TEMP_PREFIX = ".mxlab-tmp-"


def _read_umask() -> int:
    """The process umask (reading it means setting it; done once, at import, before any thread writes)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


_UMASK = _read_umask()


def _fsync_directory(directory: str) -> None:
    """Make a rename in ``directory`` durable (not possible on Windows, where it is skipped)."""
    if os.name == "nt":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb", encoding: str | None = None) -> Iterator[IO[Any]]:
    """Open a temporary file for writing; on success it replaces ``path`` atomically.

    ``mode`` is ``"wb"`` or ``"w"`` (text; ``encoding`` defaults to UTF-8). If the ``with`` block
    raises, the temporary file is removed and ``path`` keeps its old content (or stays absent).
    The new file gets the permissions a plain ``open`` would give it (0o666 minus the umask), or
    the old file's permissions when it replaces one. A symlink is followed: the file it points
    to is replaced, the link stays.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write: mode must be 'w' or 'wb', got {mode!r}")
    target = os.path.realpath(os.fspath(path))  # through a symlink, as open() would write
    directory = os.path.dirname(target)
    fd, temp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".part", dir=directory)
    try:
        _copy_permissions(fd, target)
        if mode == "w":
            stream: IO[Any] = os.fdopen(fd, "w", encoding=encoding or "utf-8")
        else:
            stream = os.fdopen(fd, "wb")
        with stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_directory(directory)


def _copy_permissions(fd: int, target: str) -> None:
    """Give the temporary file (mkstemp makes it 0o600) the mode the target has or would get."""
    try:
        mode = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_UMASK
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)


def write_bytes_atomic(path: str | os.PathLike, payload: bytes) -> None:
    """Replace ``path`` with ``payload`` atomically (see :func:`atomic_write`)."""
    with atomic_write(path, "wb") as stream:
        stream.write(payload)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Replace ``path`` with the UTF-8 ``text`` atomically (see :func:`atomic_write`)."""
    with atomic_write(path, "w") as stream:
        stream.write(text)


__all__ = ["TEMP_PREFIX", "atomic_write", "write_bytes_atomic", "write_text_atomic"]
