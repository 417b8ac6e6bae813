"""``mx.gluon.data``: datasets, samplers and the DataLoader (see docs/gluon.md, "Data").

Bottom up: :mod:`.dataset` (what a sample is), :mod:`.sampler` (the order of indices),
:mod:`.dataloader` (batches, worker processes and shared memory), :mod:`.vision`.
"""

from __future__ import annotations

from . import vision
from .dataloader import (
    DataLoader,
    DataLoaderTimeoutError,
    DataLoaderWorkerError,
    default_batchify_fn,
)
from .dataset import ArrayDataset, DataError, Dataset, RecordFileDataset, SimpleDataset
from .sampler import BatchSampler, FilterSampler, RandomSampler, Sampler, SequentialSampler
from .vision import ImageFolderDataset, ImageRecordDataset

__all__ = [
    "ArrayDataset",
    "BatchSampler",
    "DataError",
    "DataLoader",
    "DataLoaderTimeoutError",
    "DataLoaderWorkerError",
    "Dataset",
    "FilterSampler",
    "ImageFolderDataset",
    "ImageRecordDataset",
    "RandomSampler",
    "RecordFileDataset",
    "Sampler",
    "SequentialSampler",
    "SimpleDataset",
    "default_batchify_fn",
    "vision",
]
