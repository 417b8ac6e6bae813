"""``mx.gluon.contrib.data``: :class:`IntervalSampler` (:mod:`.sampler`).

MXNet's ``contrib.data.text`` (``WikiText2``, ``WikiText103``) is absent: those data sets build a
``mx.contrib.text`` vocabulary, which MXLab does not have (docs/differences.md).
"""

from __future__ import annotations

from . import sampler
from .sampler import IntervalSampler

__all__ = ["IntervalSampler", "sampler"]
