"""``mx.log``: a logger that writes MXNet's one-line format, for training scripts.

``mx.log.get_logger(name, filename, filemode, level)`` returns the standard ``logging`` logger
``name``, given one handler (on first configuration) that writes each record as the C++ core
of MXNet does: the level's initial, month and day, the time, the process id, the source file
and line, then the message::

    I1125 17:20:18 4123 train.py:42] Epoch[0] Train-accuracy=0.91

Without ``filename`` it writes to stderr, else to that file (``filemode`` ``'a'`` by default).
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

CRITICAL = logging.CRITICAL
ERROR = logging.ERROR
WARNING = logging.WARNING
INFO = logging.INFO
DEBUG = logging.DEBUG
NOTSET = logging.NOTSET

#: The attribute that marks a logger this module has configured, so a second call adds no handler.
_CONFIGURED = "_mxlab_log_configured"


class LineFormatter(logging.Formatter):
    """``<L><mmdd> <HH:MM:SS> <pid> <file>:<line>] <message>`` (L is the level's initial)."""

    def __init__(self) -> None:
        super().__init__(
            "%(levelinitial)s%(asctime)s %(process)d %(filename)s:%(lineno)d] %(message)s", "%m%d %H:%M:%S"
        )

    def format(self, record: logging.LogRecord) -> str:
        record.levelinitial = record.levelname[:1]
        return super().format(record)


def get_logger(
    name: str | None = None, filename: str | None = None, filemode: str | None = None, level: int = WARNING
) -> logging.Logger:
    """The logger ``name``, writing MXNet's line format to stderr or ``filename``, at ``level``."""
    logger = logging.getLogger(name)
    if name is not None and not getattr(logger, _CONFIGURED, False):
        setattr(logger, _CONFIGURED, True)
        if filename:
            handler: logging.Handler = logging.FileHandler(os.fspath(filename), filemode or "a")
        else:
            handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(LineFormatter())
        logger.addHandler(handler)
        logger.setLevel(level)
    return logger


def getLogger(
    name: str | None = None, filename: str | None = None, filemode: str | None = None, level: int = WARNING
) -> logging.Logger:
    """Deprecated spelling of :func:`get_logger` (it warns, as in MXNet)."""
    warnings.warn("getLogger is deprecated, use get_logger instead", DeprecationWarning, stacklevel=2)
    return get_logger(name, filename, filemode, level)


__all__ = ["CRITICAL", "DEBUG", "ERROR", "INFO", "NOTSET", "WARNING", "LineFormatter", "get_logger", "getLogger"]
