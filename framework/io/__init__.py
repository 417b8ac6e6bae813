"""``mx.io``: data iterators, the way data gets into a network.

- :mod:`.base`: the protocol every iterator speaks (``DataIter``, ``DataBatch``, ``DataDesc``);
- :mod:`.ndarray_iter`: ``NDArrayIter`` over arrays in memory (shuffle, last-batch handling);
- :mod:`.csv_iter`, :mod:`.mnist_iter`: file formats read whole into memory;
- :mod:`.image_record_iter`: ``ImageRecordIter``, images from RecordIO files decoded and
  augmented on worker threads (the file format itself is :mod:`framework.recordio`; the
  optional augmentations are :mod:`.image_aug`, the per-record work :mod:`.record_augmenter`,
  the OpenCV-exact resizing :mod:`.pixels`, decoding straight into NumPy memory :mod:`.decode`);
- :mod:`.det_record_iter`: ``ImageDetRecordIter``, images with object boxes from a detection
  ``.rec`` (the label layout is :mod:`.det_label`, the per-record work :mod:`.det_record_augmenter`);
- :mod:`.record_iter_variants`: ``ImageRecordUInt8Iter``, ``ImageRecordInt8Iter`` and the ``_v1`` names;
- :mod:`.prefetch`, :mod:`.resize`: iterators that wrap other iterators;
- :mod:`.io`: MXNet's ``mx.io.io`` module name, gathering the iterators. ``MXDataIter``
  (:mod:`.base`) is the base class of the iterators that prepare whole batches.
"""

from __future__ import annotations

from . import io
from .base import DataIterError
from .io import *  # noqa: F403  (the iterators, listed once in io.__all__)

# ``mx.io`` holds what ``mx.io.io`` gathers, plus the error type and the submodule itself.
__all__ = ["DataIterError", "io"]
__all__ += io.__all__
