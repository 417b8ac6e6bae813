"""``mx.io``: data iterators, the way data gets into a network.

- :mod:`.base`: the protocol every iterator speaks (``DataIter``, ``DataBatch``, ``DataDesc``);
- :mod:`.ndarray_iter`: ``NDArrayIter`` over arrays in memory (shuffle, last-batch handling);
- :mod:`.csv_iter`, :mod:`.mnist_iter`: file formats read whole into memory;
- :mod:`.image_record_iter`: ``ImageRecordIter``, images from RecordIO files decoded and
  augmented on worker threads (the file format itself is :mod:`framework.recordio`; the
  optional augmentations are :mod:`.image_aug`, the per-record work :mod:`.record_augmenter`,
  the OpenCV-exact resizing :mod:`.pixels`);
- :mod:`.det_record_iter`: ``ImageDetRecordIter``, images with object boxes from a detection
  ``.rec`` (the label layout is :mod:`.det_label`, the per-record work :mod:`.det_record_augmenter`);
- :mod:`.record_iter_variants`: ``ImageRecordUInt8Iter``, ``ImageRecordInt8Iter`` and the ``_v1`` names;
- :mod:`.prefetch`, :mod:`.resize`: iterators that wrap other iterators;
- :mod:`.io`: MXNet's ``mx.io.io`` module name, gathering the iterators. ``MXDataIter``
  (:mod:`.base`) is the base class of the iterators that prepare whole batches.
"""

from __future__ import annotations

from . import io
from .base import DataBatch, DataDesc, DataIter, DataIterError, MXDataIter
from .csv_iter import CSVIter
from .det_record_iter import ImageDetRecordIter
from .image_record_iter import ImageRecordIter
from .mnist_iter import MNISTIter
from .ndarray_iter import NDArrayIter
from .prefetch import PrefetchingIter
from .record_iter_variants import ImageRecordInt8Iter, ImageRecordIter_v1, ImageRecordUInt8Iter, ImageRecordUInt8Iter_v1
from .resize import ResizeIter

__all__ = [
    "CSVIter",
    "DataBatch",
    "DataDesc",
    "DataIter",
    "DataIterError",
    "ImageDetRecordIter",
    "ImageRecordInt8Iter",
    "ImageRecordIter",
    "ImageRecordIter_v1",
    "ImageRecordUInt8Iter",
    "ImageRecordUInt8Iter_v1",
    "MNISTIter",
    "MXDataIter",
    "NDArrayIter",
    "PrefetchingIter",
    "ResizeIter",
    "io",
]
