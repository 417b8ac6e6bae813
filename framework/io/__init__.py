"""``mx.io``: data iterators, the way data gets into a network.

- :mod:`.base`: the protocol every iterator speaks (``DataIter``, ``DataBatch``, ``DataDesc``);
- :mod:`.ndarray_iter`: ``NDArrayIter`` over arrays in memory (shuffle, last-batch handling);
- :mod:`.csv_iter`, :mod:`.mnist_iter`: file formats read whole into memory;
- :mod:`.image_record_iter`: ``ImageRecordIter``, images from RecordIO files decoded and
  augmented on worker threads (the file format itself is :mod:`framework.recordio`; the
  optional augmentations are :mod:`.image_aug`, the per-record work :mod:`.record_augmenter`,
  the OpenCV-exact resizing :mod:`.pixels`);
- :mod:`.prefetch`, :mod:`.resize`: iterators that wrap other iterators.
"""

from __future__ import annotations

from .base import DataBatch, DataDesc, DataIter, DataIterError
from .csv_iter import CSVIter
from .det_record_iter import ImageDetRecordIter
from .image_record_iter import ImageRecordIter
from .mnist_iter import MNISTIter
from .ndarray_iter import NDArrayIter
from .prefetch import PrefetchingIter
from .resize import ResizeIter

__all__ = [
    "CSVIter",
    "DataBatch",
    "DataDesc",
    "DataIter",
    "DataIterError",
    "ImageDetRecordIter",
    "ImageRecordIter",
    "MNISTIter",
    "NDArrayIter",
    "PrefetchingIter",
    "ResizeIter",
]
