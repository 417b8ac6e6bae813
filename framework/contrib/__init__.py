"""``mx.contrib``: MXNet 1.x's namespaces for contributed and older APIs.

* ``mx.contrib.ndarray`` / ``nd`` and ``mx.contrib.symbol`` / ``sym`` are the ``_contrib_``
  operators, the same namespaces as ``mx.nd.contrib`` and ``mx.sym.contrib``;
* ``mx.contrib.autograd`` is the autograd API before ``mx.autograd`` (``train_section``,
  ``compute_gradient``...), written on top of :mod:`framework.autograd`;
* ``mx.contrib.io`` has ``DataLoaderIter``, which MXNet made for Gluon's DataLoader: MXLab has
  no Gluon, so it adapts any iterable of ``(data, label)`` batches.

MXNet's ``onnx``, ``quantization``, ``tensorboard`` and ``text`` are absent
(docs/differences.md says why).
"""

from __future__ import annotations

from ..ndarray import contrib as ndarray
from ..symbol import contrib as symbol
from . import autograd, io

nd = ndarray
sym = symbol

__all__ = ["autograd", "io", "nd", "ndarray", "sym", "symbol"]
