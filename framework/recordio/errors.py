"""The errors of RecordIO: every damaged file gets one that names the file and the byte offset.

One module under the rest so that the record format, the file classes and the image
records raise the same classes: ``except RecordIOError`` catches any of them, and a missing
file is also a ``FileNotFoundError``.
"""

from __future__ import annotations

from ..base import MXLabError


class RecordIOError(MXLabError, ValueError):
    """A RecordIO file is damaged or used wrongly; the message names the file and offset."""


class RecordIOFileNotFoundError(RecordIOError, FileNotFoundError):
    """A ``.rec`` or ``.idx`` file that should exist does not."""
