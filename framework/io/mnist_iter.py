"""``MNISTIter``: batches from MNIST's ``idx-ubyte`` files.

The idx format is a big-endian header followed by raw uint8 values: images start with
magic 2051, the image count, rows and columns; labels with magic 2049 and the count.
Pixels are scaled by 1/256 (MXNet's choice: 255 becomes 0.99609375, not 1.0). ``flat=True``
gives data batches ``(batch_size, rows*cols)``, otherwise ``(batch_size, 1, rows, cols)``;
labels are ``(batch_size,)`` float32.

As in MXNet: only full batches are served (the remainder is dropped); ``shuffle`` (on by
default) permutes the examples once, with ``seed``, and keeps that order every epoch;
``num_parts`` / ``part_index`` give each worker of a distributed job a contiguous slice of
``count // num_parts`` examples (the last part takes the remainder). The shuffled order
comes from NumPy's generator, so it differs from MXNet's C++ one.
"""

from __future__ import annotations

import logging
import math
import os
import struct
from typing import Any

import numpy as np

from ..context import Context
from .base import (
    DataBatch,
    DataDesc,
    DataIterError,
    PreparedBatchIter,
    check_batch_size,
    check_part,
    ignore_unknown,
    to_ndarray,
)

IMAGE_MAGIC = 2051
LABEL_MAGIC = 2049


def _read_idx(path: str, magic: int, what: str) -> tuple[tuple[int, ...], np.ndarray]:
    """(dimensions, uint8 values) of an idx-ubyte file, checked against its header."""
    if not os.path.isfile(path):
        raise DataIterError(f"MNISTIter: {what} file not found: {path!r}")
    with open(path, "rb") as f:
        raw = f.read()
    ndim = 3 if magic == IMAGE_MAGIC else 1
    head = 4 * (1 + ndim)
    if len(raw) < head:
        raise DataIterError(f"MNISTIter: {path}: {len(raw)} bytes, shorter than the {head}-byte idx header")
    found, *dims = struct.unpack(f">{1 + ndim}i", raw[:head])
    if found != magic:
        raise DataIterError(
            f"MNISTIter: {path}: bad magic {found} at byte offset 0 (expected {magic} for an idx {what} file)"
        )
    if any(d < 0 for d in dims):
        raise DataIterError(f"MNISTIter: {path}: byte offset 4: negative dimension in the header {tuple(dims)}")
    need = head + math.prod(dims)  # Python ints: a corrupt header cannot overflow
    if len(raw) < need:
        raise DataIterError(
            f"MNISTIter: {path} is truncated: its header promises {dims[0]} {what}s ({need} bytes) "
            f"but the file has {len(raw)} bytes (the data stops at byte offset {len(raw)})"
        )
    return tuple(dims), np.frombuffer(raw, dtype=np.uint8, count=need - head, offset=head)


class MNISTIter(PreparedBatchIter):
    """Iterate over MNIST images and labels (``mx.io.MNISTIter``)."""

    def __init__(
        self,
        image: str = "./train-images-idx3-ubyte",
        label: str = "./train-labels-idx1-ubyte",
        batch_size: int = 128,
        shuffle: bool = True,
        flat: bool = False,
        seed: int = 0,
        silent: bool = False,
        num_parts: int = 1,
        part_index: int = 0,
        data_name: str = "data",
        label_name: str = "softmax_label",
        ctx: Context | None = None,
        **kwargs: Any,
    ) -> None:
        batch_size = check_batch_size("MNISTIter", batch_size)
        super().__init__(batch_size)
        ignore_unknown("MNISTIter", kwargs, ("prefetch_buffer", "dtype"))
        check_part("MNISTIter", num_parts, part_index)
        (count, rows, cols), pixels = _read_idx(os.fspath(image), IMAGE_MAGIC, "image")
        (label_count,), labels = _read_idx(os.fspath(label), LABEL_MAGIC, "label")
        if label_count != count:
            raise DataIterError(f"MNISTIter: {image!r} holds {count} images but {label!r} holds {label_count} labels")
        step = count // num_parts
        begin = step * part_index
        end = count if part_index == num_parts - 1 else begin + step
        images = pixels.reshape(count, rows, cols)[begin:end].astype(np.float32) * np.float32(1.0 / 256.0)
        self._images = images.reshape(len(images), rows * cols) if flat else images.reshape(len(images), 1, rows, cols)
        self._labels = labels[begin:end].astype(np.float32)
        self._ids = np.arange(begin, end, dtype=np.uint64)
        if shuffle:
            perm = np.random.RandomState(seed).permutation(len(self._labels))
            self._images, self._labels, self._ids = self._images[perm], self._labels[perm], self._ids[perm]
        self.ctx = ctx
        self.provide_data = [DataDesc(data_name, (batch_size, *self._images.shape[1:]), np.float32)]
        self.provide_label = [DataDesc(label_name, (batch_size,), np.float32)]
        self._loc = 0
        if not silent:
            shape = (batch_size, *self._images.shape[1:])
            logging.getLogger(__name__).info(
                "MNISTIter: load %d images, shuffle=%d, shape=%s", len(self._labels), bool(shuffle), shape
            )

    def reset(self) -> None:
        self._loc = 0

    def iter_next(self) -> bool:
        if self._loc + self.batch_size > len(self._labels):
            return False
        s = slice(self._loc, self._loc + self.batch_size)
        self._loc += self.batch_size
        self._current = DataBatch(
            data=[to_ndarray(self._images[s], self.ctx)],
            label=[to_ndarray(self._labels[s], self.ctx)],
            pad=0,
            index=self._ids[s].copy(),
        )
        return True
