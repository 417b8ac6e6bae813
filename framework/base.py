"""Errors, the dtype table and small helpers shared by every layer.

Every error MXLab raises on purpose derives from :class:`MXLabError`, so a user can
catch the framework's complaints without catching their own bugs. Subclasses say
which layer complained; the message says what was expected and what was given.
"""

from __future__ import annotations

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
