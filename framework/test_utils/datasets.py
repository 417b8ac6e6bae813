"""Test data sets (MNIST, CIFAR-10) from local files, and ``DummyIter`` for speed tests.

MXNet's helpers download the data sets on first use. MXLab never downloads: it reads the
files you put in place, and when they are missing the error names every path it tried and
where to put them. :func:`download` exists so that scripts calling it get that explanation
instead of an AttributeError.
"""

from __future__ import annotations

import bz2
import gzip
import os
import shutil
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ..base import MXLabError
from ..io import MNISTIter
from ..io.base import DataBatch, DataIter

MNIST_FILES = {
    "train_data": "train-images-idx3-ubyte",
    "train_label": "train-labels-idx1-ubyte",
    "test_data": "t10k-images-idx3-ubyte",
    "test_label": "t10k-labels-idx1-ubyte",
}
CIFAR10_FILES = ("cifar/train.rec", "cifar/test.rec", "cifar/train.lst", "cifar/test.lst")


class DatasetMissingError(MXLabError, FileNotFoundError):
    """A data set file is not on disk (MXLab does not download)."""


def download(
    url: str, fname: str | None = None, dirname: str | None = None, overwrite: bool = False, retries: int = 5
) -> str:
    """MXLab does not download: put the file at the path yourself. Raises DatasetMissingError
    naming the URL and the path, unless that file already exists (then returns its path)."""
    target = Path(dirname or ".") / (fname or url.rsplit("/", maxsplit=1)[-1].split("?", maxsplit=1)[0])
    if target.is_file() and not overwrite:
        return str(target)
    raise DatasetMissingError(f"download: MXLab does not download files; fetch {url} yourself and save it as {target}")


def get_zip_data(data_dir: str, url: str, data_origin_name: str) -> None:
    """Extract ``data_dir/data_origin_name`` (a zip) into ``data_dir`` unless already extracted;
    the zip must be there already (MXLab does not download ``url``)."""
    archive = Path(data_dir) / data_origin_name
    if not archive.is_file():
        raise DatasetMissingError(f"get_zip_data: {archive} is missing (MXLab does not download); fetch {url} there")
    with zipfile.ZipFile(archive) as zipped:
        zipped.extractall(path=data_dir)


def get_bz2_data(data_dir: str, data_name: str, url: str, data_origin_name: str) -> None:
    """Decompress ``data_dir/data_origin_name`` (bz2) into ``data_dir/data_name`` unless that exists;
    the archive must be there already (MXLab does not download ``url``)."""
    target = Path(data_dir) / data_name
    if target.exists():
        return
    archive = Path(data_dir) / data_origin_name
    if not archive.is_file():
        raise DatasetMissingError(f"get_bz2_data: {archive} is missing (MXLab does not download); fetch {url} there")
    with bz2.open(archive, "rb") as source, open(target, "wb") as sink:
        shutil.copyfileobj(source, sink)
    archive.unlink()


def download_model(model_name: str, dst_dir: str = "./", meta_info: dict | None = None) -> tuple[str, str]:
    """The paths of ``<model_name>-symbol.json`` and ``<model_name>-0000.params`` in ``dst_dir``,
    which must exist already (MXLab does not download models)."""
    symbol = Path(dst_dir) / f"{model_name}-symbol.json"
    params = Path(dst_dir) / f"{model_name}-0000.params"
    missing = [str(p) for p in (symbol, params) if not p.is_file()]
    if missing:
        raise DatasetMissingError(f"download_model: {', '.join(missing)} missing (MXLab does not download models)")
    return str(symbol), str(params)


def _find(name: str, directories: tuple[str, ...]) -> Path:
    """``name`` or ``name.gz`` in the first of ``directories`` that has it."""
    tried = []
    for directory in directories:
        for candidate in (Path(directory) / name, Path(directory) / f"{name}.gz"):
            if candidate.is_file():
                return candidate
            tried.append(str(candidate))
    raise DatasetMissingError(
        f"MNIST file {name} not found (MXLab does not download); tried: {', '.join(tried)}. "
        "Get it from http://yann.lecun.com/exdb/mnist/ and put it in ./data/"
    )


def _read(path: Path) -> bytes:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        return handle.read()


def get_mnist() -> dict[str, np.ndarray]:
    """MNIST as NumPy arrays: images float32 in [0, 1] of shape (n, 1, 28, 28), labels int8.

    Reads the four IDX files (optionally gzipped) from ``.`` or ``./data``.
    """
    result: dict[str, np.ndarray] = {}
    for key, name in MNIST_FILES.items():
        raw = _read(_find(name, (".", "data")))
        if key.endswith("label"):
            result[key] = np.frombuffer(raw, dtype=np.int8, offset=8)
        else:
            _, count, rows, cols = struct.unpack(">IIII", raw[:16])
            pixels = np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(count, 1, rows, cols)
            result[key] = pixels.astype(np.float32) / 255
    return result


def get_mnist_ubyte() -> None:
    """Check that the four uncompressed MNIST IDX files are in ``./data`` (MXNet extracts them there)."""
    missing = [f"data/{name}" for name in MNIST_FILES.values() if not os.path.exists(f"data/{name}")]
    if missing:
        raise DatasetMissingError(
            f"MNIST files missing (MXLab does not download): {', '.join(missing)}. "
            "Get them from http://yann.lecun.com/exdb/mnist/, gunzip them and put them in ./data/"
        )


def get_mnist_pkl() -> None:
    """Check that ``data/mnist.pkl.gz`` is in place."""
    if not os.path.exists("data/mnist.pkl.gz"):
        raise DatasetMissingError("data/mnist.pkl.gz is missing (MXLab does not download); put it in ./data/")


def get_cifar10() -> None:
    """Check that CIFAR-10's RecordIO files are in ``./data/cifar`` (MXNet extracts them there)."""
    missing = [f"data/{name}" for name in CIFAR10_FILES if not os.path.exists(f"data/{name}")]
    if missing:
        raise DatasetMissingError(
            f"CIFAR-10 files missing (MXLab does not download): {', '.join(missing)}. "
            "Make them with tools/im2rec.py from the CIFAR-10 images, or copy MXNet's cifar10.zip contents "
            "into ./data/"
        )


def get_mnist_iterator(
    batch_size: int, input_shape: tuple[int, ...], num_parts: int = 1, part_index: int = 0
) -> tuple[MNISTIter, MNISTIter]:
    """Training and validation MNISTIters over ``./data``; ``input_shape`` of 3 dims gives images,
    otherwise flat vectors."""
    get_mnist_ubyte()
    flat = len(input_shape) != 3
    common = {"batch_size": batch_size, "flat": flat, "num_parts": num_parts, "part_index": part_index}
    train = MNISTIter(
        image="data/train-images-idx3-ubyte", label="data/train-labels-idx1-ubyte", shuffle=True, **common
    )
    val = MNISTIter(image="data/t10k-images-idx3-ubyte", label="data/t10k-labels-idx1-ubyte", shuffle=False, **common)
    return train, val


class DummyIter(DataIter):
    """An endless iterator that repeats the first batch of ``real_iter`` (to time training
    without the cost of reading data)."""

    def __init__(self, real_iter: DataIter) -> None:
        super().__init__(real_iter.batch_size)
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.the_batch: DataBatch = next(real_iter)

    def __iter__(self) -> DummyIter:
        return self

    def next(self) -> DataBatch:
        """The same first batch, forever: StopIteration never comes."""
        return self.the_batch

    def iter_next(self) -> bool:
        return True

    def getdata(self) -> list[Any]:
        return self.the_batch.data

    def getlabel(self) -> list[Any]:
        return self.the_batch.label

    def getpad(self) -> int:
        return self.the_batch.pad or 0


__all__ = [
    "DatasetMissingError",
    "DummyIter",
    "download",
    "download_model",
    "get_bz2_data",
    "get_cifar10",
    "get_mnist",
    "get_mnist_iterator",
    "get_mnist_pkl",
    "get_mnist_ubyte",
    "get_zip_data",
]
