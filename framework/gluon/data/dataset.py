"""Datasets: indexable collections of samples (``mx.gluon.data.Dataset`` and friends).

A dataset only answers ``len(ds)`` and ``ds[i]``; batching, shuffling and workers belong
to the :class:`~.dataloader.DataLoader`. ``transform`` wraps a dataset in another one that
applies a function when a sample is read (lazily), so augmentations run in the loader's
workers, not up front.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import ndarray as nd
from ... import recordio
from ...base import MXLabError
from ...ndarray.ndarray import NDArray


class DataError(MXLabError, ValueError):
    """A dataset, sampler or loader was given bad input; the message names which."""


class Dataset:
    """Abstract dataset: subclasses implement ``__getitem__`` and ``__len__``."""

    def __getitem__(self, idx: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement __len__")

    def filter(self, fn: Callable[[Any], bool]) -> SimpleDataset:
        """The samples for which ``fn(sample)`` is true (evaluated now, as MXNet does)."""
        return SimpleDataset([i for i in range(len(self)) if fn(self[i])])._over(self)

    def shard(self, num_shards: int, index: int) -> Dataset:
        """Shard ``index`` of ``num_shards`` contiguous parts (earlier shards get the remainder)."""
        if not isinstance(num_shards, int) or num_shards < 1:
            raise DataError(f"shard: num_shards must be an int >= 1, got {num_shards!r}")
        if not isinstance(index, int) or not 0 <= index < num_shards:
            raise DataError(f"shard: index must be in [0, {num_shards}), got {index!r}")
        length = len(self)
        per, extra = divmod(length, num_shards)
        start = index * per + min(index, extra)
        end = start + per + (1 if index < extra else 0)
        return SimpleDataset(list(range(start, end)))._over(self)

    def take(self, count: int | None) -> Dataset:
        """The first ``count`` samples (all of them when ``count`` is None or too large)."""
        if count is None or count > len(self):
            count = len(self)
        if count < 0:
            raise DataError(f"take: count must be >= 0 or None, got {count!r}")
        return SimpleDataset(list(range(count)))._over(self)

    def sample(self, sampler: Any) -> Dataset:
        """The samples at the indices ``sampler`` yields, in its order."""
        return SimpleDataset(list(iter(sampler)))._over(self)

    def transform(self, fn: Callable[..., Any], lazy: bool = True) -> Dataset:
        """A dataset whose samples are ``fn(*sample)`` (tuple samples are unpacked).

        ``lazy=True`` applies ``fn`` at each read; ``lazy=False`` applies it to every sample now.
        """
        if not callable(fn):
            raise DataError(f"transform: fn must be callable, got {type(fn).__name__}")
        trans = _LazyTransformDataset(self, fn)
        if lazy:
            return trans
        return SimpleDataset([trans[i] for i in range(len(trans))])

    def transform_first(self, fn: Callable[[Any], Any], lazy: bool = True) -> Dataset:
        """Like :meth:`transform` but applied to the first element of each sample only (the data, not the label)."""
        if not callable(fn):
            raise DataError(f"transform_first: fn must be callable, got {type(fn).__name__}")
        return self.transform(_TransformFirst(fn), lazy)


class SimpleDataset(Dataset):
    """A dataset over any sequence (a list, a NumPy array, an NDArray)."""

    def __init__(self, data: Sequence[Any]) -> None:
        if not hasattr(data, "__getitem__") or not hasattr(data, "__len__"):
            raise DataError(f"SimpleDataset: data must support len() and indexing, got {type(data).__name__}")
        self._data = data

    def _over(self, base: Dataset) -> SimpleDataset:
        """Reinterpret this list of indices as a view of ``base`` (for filter/shard/take/sample)."""
        return _IndexedDataset(base, list(self._data))

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, idx: int) -> Any:
        return self._data[idx]


class _IndexedDataset(SimpleDataset):
    """The samples of ``base`` at a list of indices."""

    def __init__(self, base: Dataset, indices: list[int]) -> None:
        super().__init__(indices)
        self._base = base

    def __getitem__(self, idx: int) -> Any:
        return self._base[self._data[idx]]


class _LazyTransformDataset(Dataset):
    """``base`` with ``fn`` applied at each read."""

    def __init__(self, data: Dataset, fn: Callable[..., Any]) -> None:
        self._data = data
        self._fn = fn

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, idx: int) -> Any:
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class _TransformFirst:
    """``fn`` on the first element of a sample, the rest passed through (a picklable closure)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self._fn = fn

    def __call__(self, x: Any, *args: Any) -> Any:
        if args:
            return (self._fn(x), *args)
        return self._fn(x)


class ArrayDataset(Dataset):
    """Several equally long arrays zipped: sample ``i`` is ``(a[i], b[i], ...)`` (or ``a[i]`` for one array).

    A 1-D NDArray is kept as NumPy, as MXNet does, so that reading a label is not an engine operation.
    """

    def __init__(self, *args: Any) -> None:
        if not args:
            raise DataError("ArrayDataset: needs at least 1 array")
        self._length = len(args[0])
        self._data: list[Any] = []
        for i, array in enumerate(args):
            if len(array) != self._length:
                raise DataError(
                    f"ArrayDataset: all arrays must have the same length; array 0 has {self._length} "
                    f"but array {i} has {len(array)}"
                )
            self._data.append(array.asnumpy() if isinstance(array, NDArray) and len(array.shape) == 1 else array)

    def __getitem__(self, idx: int) -> Any:
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)

    def __len__(self) -> int:
        return self._length


class RecordFileDataset(Dataset):
    """The raw records (bytes) of a RecordIO ``.rec`` file, through its ``.idx`` file next to it."""

    def __init__(self, filename: str) -> None:
        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        self.filename = filename
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")

    def __getitem__(self, idx: int) -> bytes:
        return self._record.read_idx(self._record.keys[idx])

    def __len__(self) -> int:
        return len(self._record.keys)

    def __getstate__(self) -> dict[str, Any]:
        # an open file handle does not survive pickling (spawned workers): reopen on the other side
        return {"filename": self.filename}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["filename"])  # type: ignore[misc]


def decode_to_ndarray(buf: bytes, flag: int, what: str) -> NDArray:
    """Decode an encoded image to an (H, W, C) uint8 NDArray, RGB (``flag=1``) or gray (``flag=0``).

    ``recordio.decode_image`` keeps OpenCV's BGR order; Gluon's datasets give RGB, as
    ``mx.image.imdecode`` does.
    """
    if flag not in (0, 1):
        raise DataError(f"{what}: flag must be 0 (grayscale) or 1 (color), got {flag!r}")
    pixels = recordio.decode_image(buf, iscolor=flag)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    elif flag == 1:
        pixels = pixels[:, :, ::-1]  # BGR -> RGB
    return nd.array(np.ascontiguousarray(pixels), dtype="uint8")


class ImageRecordDataset(RecordFileDataset):
    """``(image, label)`` samples from a RecordIO file of packed images (``im2rec``'s output).

    Images come as (H, W, C) uint8 NDArrays in RGB order; ``transform(image, label)``, if
    given, is applied to each sample.
    """

    def __init__(self, filename: str, flag: int = 1, transform: Callable[..., Any] | None = None) -> None:
        super().__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx: int) -> Any:
        header, img = recordio.unpack(super().__getitem__(idx))
        image = decode_to_ndarray(img, self._flag, f"ImageRecordDataset({self.filename!r})")
        label = header.label
        if self._transform is not None:
            return self._transform(image, label)
        return image, label

    def __getstate__(self) -> dict[str, Any]:
        return {"filename": self.filename, "flag": self._flag, "transform": self._transform}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["filename"], state["flag"], state["transform"])  # type: ignore[misc]
