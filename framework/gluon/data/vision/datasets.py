"""Image datasets read from local files (``mx.gluon.data.vision``).

MXNet downloads MNIST, Fashion-MNIST and CIFAR on first use; MXLab never downloads: put the
standard files under ``root`` (the error lists the paths it looked for). Samples are
``(image, label)``: the image an (H, W, C) uint8 NDArray, the label an int32 scalar, and
``transform(image, label)`` is applied to each when given.
"""

from __future__ import annotations

import gzip
import math
import os
import struct
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from .... import ndarray as nd
from ..dataset import DataError, Dataset, ImageRecordDataset, decode_to_ndarray

__all__ = ["CIFAR10", "CIFAR100", "MNIST", "FashionMNIST", "ImageFolderDataset", "ImageRecordDataset"]


class _LocalDataset(Dataset):
    """Arrays loaded once from files under ``root``; ``self._data`` NDArray, ``self._label`` NumPy."""

    def __init__(self, root: str, transform: Callable[..., Any] | None) -> None:
        self._root = os.path.expanduser(root)
        self._transform = transform
        self._data, self._label = self._get_data()

    def _get_data(self) -> tuple[Any, np.ndarray]:
        """Read the files: each data set (MNIST, CIFAR...) says which ones and how."""
        raise NotImplementedError(f"{type(self).__name__} must implement _get_data (which files, read how)")

    def _require(self, names: list[str]) -> list[str]:
        """The paths of ``names`` under root, or an error naming every expected file."""
        paths = [os.path.join(self._root, name) for name in names]
        missing = [p for p in paths if not os.path.isfile(p)]
        if missing:
            raise DataError(
                f"{type(self).__name__}: missing {', '.join(missing)} (expected files: {', '.join(paths)}); "
                "MXLab does not download data sets: fetch the standard files and pass their folder as root="
            )
        return paths

    def __getitem__(self, idx: int) -> Any:
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self) -> int:
        return len(self._label)


def _read_idx_file(path: str, ndim: int) -> np.ndarray:
    """The uint8 array of an idx-ubyte file (gzipped or not), checked against its header."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    head = 4 * (1 + ndim)
    if len(raw) < head:
        raise DataError(f"{path}: {len(raw)} bytes, shorter than the {head}-byte idx header")
    magic, *dims = struct.unpack(f">{1 + ndim}i", raw[:head])
    expected = 2051 if ndim == 3 else 2049
    if magic != expected:
        raise DataError(f"{path}: bad idx magic {magic} (expected {expected})")
    need = head + math.prod(dims)
    if len(raw) < need:
        raise DataError(f"{path} is truncated: its header promises {need} bytes, the file has {len(raw)}")
    return np.frombuffer(raw, dtype=np.uint8, count=need - head, offset=head).reshape(dims)


class MNIST(_LocalDataset):
    """MNIST from ``root``: ``train-images-idx3-ubyte.gz`` and friends (or the same names unzipped)."""

    _files: ClassVar[dict[bool, tuple[str, str]]] = {
        True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
        False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
    }

    def __init__(
        self,
        root: str = os.path.join("~", ".mxnet", "datasets", "mnist"),
        train: bool = True,
        transform: Callable[..., Any] | None = None,
    ) -> None:
        self._train = train
        super().__init__(root, transform)

    def _get_data(self) -> tuple[Any, np.ndarray]:
        names = []
        for base in self._files[bool(self._train)]:
            plain = os.path.join(self._root, base)
            names.append(base if os.path.isfile(plain) else base + ".gz")
        image_path, label_path = self._require(names)
        images = _read_idx_file(image_path, 3)
        labels = _read_idx_file(label_path, 1).astype(np.int32)
        if len(images) != len(labels):
            raise DataError(f"{type(self).__name__}: {len(images)} images but {len(labels)} labels under {self._root}")
        return nd.array(images[:, :, :, None], dtype="uint8"), labels


class FashionMNIST(MNIST):
    """Fashion-MNIST: MNIST's file names and layout, another root."""

    def __init__(
        self,
        root: str = os.path.join("~", ".mxnet", "datasets", "fashion-mnist"),
        train: bool = True,
        transform: Callable[..., Any] | None = None,
    ) -> None:
        super().__init__(root, train, transform)


class CIFAR10(_LocalDataset):
    """CIFAR-10's binary version: ``root/cifar-10-batches-bin/data_batch_{1..5}.bin`` and ``test_batch.bin``.

    Each record is 1 label byte and 3072 pixel bytes (3 x 32 x 32, channel-major).
    """

    _folder = "cifar-10-batches-bin"
    _label_bytes = 1

    def __init__(
        self,
        root: str = os.path.join("~", ".mxnet", "datasets", "cifar10"),
        train: bool = True,
        transform: Callable[..., Any] | None = None,
    ) -> None:
        self._train = train
        super().__init__(root, transform)

    def _file_names(self) -> list[str]:
        if self._train:
            return [f"data_batch_{i}.bin" for i in range(1, 6)]
        return ["test_batch.bin"]

    def _label_column(self) -> int:
        return 0

    def _get_data(self) -> tuple[Any, np.ndarray]:
        paths = self._require([os.path.join(self._folder, name) for name in self._file_names()])
        record = self._label_bytes + 3072
        images, labels = [], []
        for path in paths:
            raw = np.fromfile(path, dtype=np.uint8)
            if raw.size % record:
                raise DataError(f"{path}: {raw.size} bytes is not a whole number of {record}-byte records")
            rows = raw.reshape(-1, record)
            labels.append(rows[:, self._label_column()].astype(np.int32))
            images.append(rows[:, self._label_bytes :].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
        return nd.array(np.concatenate(images), dtype="uint8"), np.concatenate(labels)


class CIFAR100(CIFAR10):
    """CIFAR-100's binary version: ``root/cifar-100-binary/train.bin`` and ``test.bin``.

    Each record has two label bytes (coarse, fine); ``fine_label=True`` picks the 100 fine classes.
    """

    _folder = "cifar-100-binary"
    _label_bytes = 2

    def __init__(
        self,
        root: str = os.path.join("~", ".mxnet", "datasets", "cifar100"),
        fine_label: bool = False,
        train: bool = True,
        transform: Callable[..., Any] | None = None,
    ) -> None:
        self._fine_label = fine_label
        super().__init__(root, train, transform)

    def _file_names(self) -> list[str]:
        return ["train.bin" if self._train else "test.bin"]

    def _label_column(self) -> int:
        return 1 if self._fine_label else 0


IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")


class ImageFolderDataset(Dataset):
    """Images in class folders: ``root/<class>/<image>``; the label is the class's index in sorted order.

    ``synsets`` lists the class names; ``items`` the ``(path, label)`` pairs. Images come as
    (H, W, C) uint8 NDArrays, RGB (``flag=1``) or gray (``flag=0``).
    """

    def __init__(self, root: str, flag: int = 1, transform: Callable[..., Any] | None = None) -> None:
        self._root = os.path.expanduser(root)
        if not os.path.isdir(self._root):
            raise DataError(f"ImageFolderDataset: root {self._root!r} is not a folder")
        self._flag = flag
        self._transform = transform
        self._exts = IMAGE_EXTENSIONS
        self.synsets: list[str] = []
        self.items: list[tuple[str, int]] = []
        for folder in sorted(os.listdir(self._root)):
            path = os.path.join(self._root, folder)
            if not os.path.isdir(path):
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for filename in sorted(os.listdir(path)):
                if os.path.splitext(filename)[1].lower() in self._exts:
                    self.items.append((os.path.join(path, filename), label))

    def __getitem__(self, idx: int) -> Any:
        path, label = self.items[idx]
        with open(path, "rb") as f:
            image = decode_to_ndarray(f.read(), self._flag, f"ImageFolderDataset({path!r})")
        if self._transform is not None:
            return self._transform(image, label)
        return image, label

    def __len__(self) -> int:
        return len(self.items)
