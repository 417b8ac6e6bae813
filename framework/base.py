"""``mx.base``: the errors, the dtype table and MXNet's small helpers, shared by every layer.

The error classes are defined in :mod:`framework.errors` (below the configuration table, which
raises them) and re-exported here, where MXNet keeps them.
"""

from __future__ import annotations

import os

import numpy as np

from . import config
from .errors import (
    ContextError,
    EngineError,
    EngineTimeoutError,
    InternalError,
    MXLabError,
    MXNetError,
    SparseStorageError,
    StorageError,
)

__all__ = [
    "DTYPE_TO_FLAG",
    "FLAG_TO_DTYPE",
    "ContextError",
    "EngineError",
    "EngineTimeoutError",
    "InternalError",
    "MXLabError",
    "MXNetError",
    "SparseStorageError",
    "StorageError",
    "data_dir",
    "data_dir_default",
    "integer_types",
    "numeric_types",
    "py_str",
    "string_types",
]


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
    """The data directory: ``MXLAB_DATA_DIR`` (MXNet's ``MXNET_HOME``), else :func:`data_dir_default`.

    Nothing is created and nothing is downloaded: loaders that look here name the files they expected.
    """
    return config.get("MXLAB_DATA_DIR") or data_dir_default()
