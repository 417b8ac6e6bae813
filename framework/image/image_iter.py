"""``ImageIter``: batches of augmented images from a RecordIO file or from image files on disk.

Where the images come from:

- ``path_imgrec``: a ``.rec`` file; with ``path_imgidx`` (its ``.idx``) records are read by
  key, which ``shuffle`` and ``num_parts`` need; without it, in file order;
- ``path_imglist`` (a ``.lst`` file: ``index<TAB>label...<TAB>path``) or ``imglist`` (a Python
  list of ``[label, path]``), files under ``path_root``; with ``path_imgrec`` too, the list
  supplies the labels of the records with those keys.

Each image is decoded (:func:`framework.image.decode.imdecode`, RGB), passed through the
augmenters (``aug_list``, or :func:`framework.image.augmenters.CreateAugmenter` built from
the remaining keywords), transposed to (channels, height, width) and written into the batch.
The last, incomplete batch follows ``last_batch_handle``: ``'pad'`` fills it from the start of
the data (``pad`` says how many), ``'discard'`` drops it, ``'roll_over'`` keeps it and completes
it with the first images of the next epoch. ``shuffle`` uses Python's ``random.shuffle``, as
MXNet does, so ``random.seed`` makes the order repeat.
"""

from __future__ import annotations

import logging
import os
import random
from typing import Any

import numpy as np

from .. import recordio
from ..io.base import DataBatch, DataDesc, DataIter
from ..io.label_list import read_list_file
from ..ndarray import NDArray, array
from .augmenters import Augmenter, CreateAugmenter
from .base import ImageError
from .decode import imdecode

DTYPES = ("int32", "float32", "int64", "float64")
LAST_BATCH_HANDLES = ("pad", "discard", "roll_over")


def _label_array(values: Any, dtype: str) -> NDArray:
    values = np.asarray(values, dtype=dtype)
    return array(values.reshape(-1) if values.ndim else values.reshape(1), dtype=dtype)


def read_image_list(path: str, dtype: str) -> tuple[dict[int, tuple[NDArray, str]], list[int]]:
    """A ``.lst`` file as ``{index: (label array, relative path)}`` and the indices in file order."""
    entries: dict[int, tuple[NDArray, str]] = {}
    keys: list[int] = []
    for entry in read_list_file(path, "ImageIter", ImageError):
        entries[entry.index] = (_label_array(entry.labels, dtype), entry.path)
        keys.append(entry.index)
    return entries, keys


class ImageIter(DataIter):
    """Iterate over images with augmentation, in NCHW batches (``mx.image.ImageIter``)."""

    def __init__(
        self,
        batch_size: int,
        data_shape: tuple[int, int, int],
        label_width: int = 1,
        path_imgrec: str | None = None,
        path_imglist: str | None = None,
        path_root: str | None = None,
        path_imgidx: str | None = None,
        shuffle: bool = False,
        part_index: int = 0,
        num_parts: int = 1,
        aug_list: list[Augmenter] | None = None,
        imglist: list[Any] | None = None,
        data_name: str = "data",
        label_name: str = "softmax_label",
        dtype: str = "float32",
        last_batch_handle: str = "pad",
        **kwargs: Any,
    ) -> None:
        super().__init__(batch_size)
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise ImageError("ImageIter: give path_imgrec, path_imglist or imglist (a list) as the source of images")
        if dtype not in DTYPES:
            raise ImageError(f"ImageIter: dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        if last_batch_handle not in LAST_BATCH_HANDLES:
            raise ImageError(
                f"ImageIter: last_batch_handle must be one of {LAST_BATCH_HANDLES}, got {last_batch_handle!r}"
            )
        self.check_data_shape(data_shape)
        if not 0 <= part_index < num_parts:
            raise ImageError(f"ImageIter: part_index must be in [0, num_parts={num_parts}), got {part_index}")
        if aug_list is not None and kwargs:
            raise ImageError(f"ImageIter: augmenter keywords {sorted(kwargs)} are used only without aug_list")
        self.dtype = dtype
        self.data_shape = tuple(data_shape)
        self.label_width = label_width
        self.path_root = path_root or ""
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.path_imgrec = path_imgrec
        self.imgrec: recordio.MXRecordIO | None = None
        self.imgidx: list[Any] | None = None
        if path_imgrec:
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
        self.imglist: dict[Any, tuple[NDArray, str]] | None = None
        keys: list[Any] = []
        if path_imglist:
            self.imglist, keys = read_image_list(path_imglist, dtype)
        elif isinstance(imglist, list):
            self.imglist = {}
            for index, (label, path) in enumerate(imglist, start=1):
                key = str(index)
                self.imglist[key] = (_label_array(label, dtype), path)
                keys.append(key)
        if self.imgrec is None:
            self.seq: list[Any] | None = keys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise ImageError("ImageIter: shuffle and num_parts > 1 read records by key: give path_imgidx")
            self.seq = self.imgidx
        else:
            self.seq = None
        if num_parts > 1 and self.seq is not None:
            per_part = len(self.seq) // num_parts
            self.seq = self.seq[part_index * per_part : (part_index + 1) * per_part]
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self.provide_data = [DataDesc(data_name, (batch_size, *self.data_shape), np.dtype(dtype).type)]
        self.provide_label = [DataDesc(label_name, label_shape, np.float32)]
        self.auglist = CreateAugmenter(self.data_shape, **kwargs) if aug_list is None else aug_list
        self.cur = 0
        self._allow_read = True
        self._held: tuple[np.ndarray, np.ndarray, int] | None = None  # roll_over: the incomplete last batch
        self.reset()

    # ------------------------------------------------------------------ reading
    def reset(self) -> None:
        """Start again from the first image (reshuffled); a held roll-over batch waits for the next batch."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != "roll_over" or self._held is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self) -> None:
        """Start again from the first image, dropping a held roll-over batch."""
        self._held = None
        self.reset()

    def check_data_shape(self, data_shape: tuple[int, ...]) -> None:
        """``data_shape`` must be (3, height, width): ImageIter decodes RGB images."""
        if len(data_shape) != 3 or data_shape[0] != 3:
            raise ImageError(f"ImageIter: data_shape must be (3, height, width) (RGB images), got {data_shape}")

    def read_image(self, fname: str) -> bytes:
        """The encoded bytes of ``fname`` under ``path_root``."""
        path = os.path.join(self.path_root, fname)
        if not os.path.isfile(path):
            raise ImageError(f"ImageIter: image file not found: {path!r}")
        with open(path, "rb") as f:
            return f.read()

    def next_sample(self) -> tuple[Any, bytes]:
        """The next (label, encoded image); StopIteration at the end (rewinding unless 'discard')."""
        if not self._allow_read:
            raise StopIteration
        if self.seq is not None:
            if self.cur >= len(self.seq):
                if self.last_batch_handle != "discard":
                    self.cur = 0
                raise StopIteration
            idx = self.seq[self.cur]
            self.cur += 1
            if self.imgrec is not None:
                header, img = recordio.unpack(self.imgrec.read_idx(idx))
                return (header.label if self.imglist is None else self.imglist[idx][0]), img
            assert self.imglist is not None
            label, fname = self.imglist[idx]
            return label, self.read_image(fname)
        assert self.imgrec is not None
        record = self.imgrec.read()
        if record is None:
            if self.last_batch_handle != "discard":
                self.imgrec.reset()
            raise StopIteration
        self.cur += 1
        header, img = recordio.unpack(record)
        return header.label, img

    def imdecode(self, s: bytes) -> NDArray:
        """Decode one image, naming the record or file when that fails."""
        try:
            return imdecode(s)
        except ImageError as err:
            if self.seq is None:
                where = f"record #{self.cur - 1} of {self.path_imgrec}"
            else:
                where = f"image with key {self.seq[self.cur - 1]!r}"
            raise ImageError(f"ImageIter: {where}: {err}") from None

    def check_valid_image(self, data: NDArray) -> None:
        """An image must have pixels; an invalid one is skipped."""
        if min(data.shape) == 0:
            raise ImageError(f"ImageIter: an image of shape {tuple(data.shape)} has no pixels")

    def augmentation_transform(self, data: NDArray) -> NDArray:
        """Apply every augmenter in turn."""
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum: NDArray) -> np.ndarray:
        """HWC -> CHW."""
        return datum.asnumpy().transpose(2, 0, 1)

    def _fill(self, data: np.ndarray, label: np.ndarray, start: int = 0) -> int:
        """Fill the batch from position ``start``; returns how many positions are filled."""
        i = start
        try:
            while i < self.batch_size:
                target, encoded = self.next_sample()
                image = self.imdecode(encoded)
                try:
                    self.check_valid_image(image)
                except ImageError as err:
                    logging.getLogger(__name__).debug("Invalid image, skipping: %s", err)
                    continue
                image = self.augmentation_transform(image)
                chw = self.postprocess_data(image)
                if chw.shape != self.data_shape:
                    raise ImageError(
                        f"ImageIter: the augmenters made an image of shape {chw.shape} (CHW), "
                        f"not data_shape {self.data_shape}"
                    )
                data[i] = chw
                values = np.asarray(target.asnumpy() if isinstance(target, NDArray) else target, dtype=np.float32)
                if values.size != max(1, self.label_width if self.label_width > 1 else 1):
                    raise ImageError(
                        f"ImageIter: a label of {values.size} values, but label_width is {self.label_width}"
                    )
                label[i] = values.reshape(label[i].shape)
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def new_label_batch(self) -> np.ndarray:
        """The label array a batch starts from (zeros; a detection iterator pads with -1)."""
        return np.zeros(self.provide_label[0].shape, dtype=np.float32)

    def next(self) -> DataBatch:
        if self._held is not None:
            data, label, filled = self._held
        else:
            data = np.zeros((self.batch_size, *self.data_shape), dtype=self.dtype)
            label = self.new_label_batch()
            filled = self._fill(data, label)
        pad = self.batch_size - filled
        if pad:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._held is None:
                self._held = (data, label, filled)
                raise StopIteration
            self._fill(data, label, filled)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._held = None
        return DataBatch([array(data)], [array(label)], pad=pad)

    def iter_next(self) -> bool:
        try:
            self._current = self.next()
        except StopIteration:
            return False
        return True

    def getdata(self) -> list[NDArray]:
        return self._current.data

    def getlabel(self) -> list[NDArray]:
        return self._current.label

    def getpad(self) -> int:
        return self._current.pad


__all__ = ["ImageIter", "read_image_list"]
