"""Errors, the dtype table and small helpers shared by every layer.

Every error MXLab raises on purpose derives from :class:`MXLabError`, so a user can
catch the framework's complaints without catching their own bugs. Subclasses say
which layer complained; the message says what was expected and what was given.
"""

from __future__ import annotations

import os

import numpy as np


class MXLabError(Exception):
    """Base class of every error MXLab raises deliberately (MXNet's ``MXNetError``)."""


class ContextError(MXLabError, ValueError):
    """A device context is malformed or names a device that does not exist."""


class EngineError(MXLabError):
    """The dependency engine was used wrongly (bad push, deleted variable, stopped engine)."""


class EngineTimeoutError(EngineError, TimeoutError):
    """A wait did not finish in time; the message lists the operations still pending."""


class StorageError(MXLabError):
    """The storage allocator was used wrongly (double free, foreign handle, bad size)."""


# MXNet's type flags, as written in .params files and symbol JSON (``__dtype__``).
DTYPE_TO_FLAG: dict[np.dtype, int] = {
    np.dtype("float32"): 0,
    np.dtype("float64"): 1,
    np.dtype("float16"): 2,
    np.dtype("uint8"): 3,
    np.dtype("int32"): 4,
    np.dtype("int8"): 5,
    np.dtype("int64"): 6,
    np.dtype("bool"): 7,
}
FLAG_TO_DTYPE: dict[int, np.dtype] = {flag: dtype for dtype, flag in DTYPE_TO_FLAG.items()}


def env_int(name: str, default: int, minimum: int | None = None) -> int:
    """Read an integer setting from the environment, refusing malformed values by name."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise MXLabError(f"environment variable {name} must be an integer, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise MXLabError(f"environment variable {name} must be >= {minimum}, got {value}")
    return value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """Read a setting that must be one of ``choices`` (case-sensitive, as MXNet's)."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    if raw not in choices:
        raise MXLabError(f"environment variable {name} must be one of {', '.join(choices)}; got {raw!r}")
    return raw


# ---------------------------------------------------------------------- MXNet's mx.base helpers
# Type tuples for isinstance checks, as MXNet 1.x defines them (integer_types also takes any
# NumPy integer, not only int32/int64).
string_types = (str,)
numeric_types = (float, int, np.generic)
integer_types = (int, np.integer)


def py_str(x: bytes | str) -> str:
    """Text from a C string (UTF-8 bytes); text passes through."""
    return x.decode("utf-8") if isinstance(x, bytes | bytearray) else x


def _as_list(obj: object) -> list | tuple:
    """``obj`` itself if it is a list or tuple, else ``[obj]``."""
    return obj if isinstance(obj, list | tuple) else [obj]


def data_dir_default() -> str:
    """``~/.mxnet`` (``%APPDATA%\\mxnet`` on Windows): where MXNet keeps downloaded models and data."""
    if os.name == "nt" and os.environ.get("APPDATA"):
        return os.path.join(os.environ["APPDATA"], "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir() -> str:
    """The data directory: ``MXLAB_HOME``, else ``MXNET_HOME``, else :func:`data_dir_default` (nothing is created)."""
    return os.environ.get("MXLAB_HOME") or os.environ.get("MXNET_HOME") or data_dir_default()
