"""The errors MXLab raises on purpose: the bottom of the layer order, imported by every layer.

Every error MXLab raises on purpose derives from :class:`MXLabError`, so a user can
catch the framework's complaints without catching their own bugs. Subclasses say
which layer complained; the message says what was expected and what was given.
"""

from __future__ import annotations


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
