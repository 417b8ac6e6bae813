"""``mx.nd.utils``: the creation and file functions MXNet routes by storage type.

In MXNet this module picks the dense or the sparse implementation of ``zeros``, ``empty``,
``array``, ``load`` and ``save`` from ``stype``. MXLab stores every array densely (a
``stype`` other than ``"default"`` raises ``SparseStorageError``), so these are the dense
functions themselves, reachable under MXNet's module path.
"""

from __future__ import annotations

from .creation import zeros
from .io import load, load_frombuffer, save
from .ndarray import array, empty

__all__ = ["array", "empty", "load", "load_frombuffer", "save", "zeros"]
