"""The errors MXLab raises on purpose: the bottom of the layer order, imported by every layer.

Every error MXLab raises on purpose derives from :class:`MXNetError` (MXNet's name; the
older name ``MXLabError`` is the same class), so a user can catch the framework's
complaints without catching their own bugs. As in MXNet, ``MXNetError`` is a
``RuntimeError``; each layer's subclass also mixes in the built-in kind that says what
went wrong (a malformed parameter is a ``ValueError``, a missing feature a
``NotImplementedError``), the way MXNet's ``mxnet.error`` registers ``ValueError``,
``TypeError``, ``IndexError``... So both ``except mx.base.MXNetError`` and
``except ValueError`` catch it. The message says what was expected and what was given.
"""

from __future__ import annotations

import os


class MXNetError(RuntimeError):
    """Base class of every error MXLab raises deliberately (MXNet's ``mx.base.MXNetError``)."""


# The name MXLab used before it took MXNet's: the same class, so old ``except`` clauses still work.
MXLabError = MXNetError


class InternalError(MXNetError):
    """A framework invariant broke: a bug in MXLab, not in the caller's code (MXNet's ``InternalError``)."""


class ContextError(MXNetError, ValueError):
    """A device context is malformed or names a device that does not exist."""


class EngineError(MXNetError):
    """The dependency engine was used wrongly (bad push, deleted variable, stopped engine)."""


class EngineTimeoutError(EngineError, TimeoutError):
    """A wait did not finish in time; the message lists the operations still pending."""


class StorageError(MXNetError, ValueError):
    """The storage allocator was used wrongly (double free, foreign handle, bad size)."""


class NotImplementedForSymbol(MXNetError, NotImplementedError):
    """An NDArray-only operation (``bool(sym)``, ``sym += 1``) was used on a Symbol."""

    def __init__(self, function: str, alias: str, *args: object) -> None:
        super().__init__(
            f"Function {function} (namely operator {alias!r}) is not implemented for Symbol "
            "and only available in NDArray.",
            *args,
        )


class MissingFileError(MXNetError, FileNotFoundError):
    """A file given to a loader (``mx.nd.load``, ``mx.sym.load``, ...) does not exist: MXNet raises
    MXNetError there, and code written for plain Python catches FileNotFoundError: this is both."""


def read_existing(fname: str | os.PathLike, api: str) -> bytes:
    """The bytes of ``fname``; :class:`MissingFileError` naming ``api`` when there is no such file."""
    try:
        with open(fname, "rb") as stream:
            return stream.read()
    except FileNotFoundError:
        raise MissingFileError(f"{api}: cannot open {os.fspath(fname)!r}: no such file") from None


class SparseStorageError(MXNetError, NotImplementedError):
    """A sparse storage type (``row_sparse``, ``csr``) was asked for: MXLab has dense storage only."""


# The storage type names MXNet 1.x knows; only "default" (dense) exists in MXLab.
DENSE_STYPE = "default"
SPARSE_STYPES = ("row_sparse", "csr")


def check_stype(stype: str | None, api: str) -> None:
    """Accept ``None`` or ``"default"``; any other storage type raises :class:`SparseStorageError`.

    One check for every MXNet API with an ``stype`` argument, so the message is the same everywhere.
    """
    if stype is None or stype == DENSE_STYPE:
        return
    if stype in SPARSE_STYPES:
        raise SparseStorageError(
            f"{api}: stype={stype!r} is sparse storage, which MXLab does not have; only stype='default' (dense)"
        )
    raise SparseStorageError(
        f"{api}: unknown storage type {stype!r}; MXLab has only stype='default' (MXNet's sparse "
        f"{' and '.join(SPARSE_STYPES)} storage is absent)"
    )
