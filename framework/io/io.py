"""``mx.io.io``: MXNet 1.9.1's module name for its iterators, gathering MXLab's.

MXNet defines the iterators in ``mxnet/io/io.py`` and re-exports them from ``mx.io``; MXLab
gives each its own module (see :mod:`framework.io`), and this module collects them again so
code that imports ``mxnet.io.io`` finds them.
"""

from __future__ import annotations

from .base import DataBatch, DataDesc, DataIter, MXDataIter
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
]
