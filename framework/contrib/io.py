"""``mx.contrib.io.DataLoaderIter``: any iterable of ``(data, label)`` batches as a DataIter.

MXNet wrote it to feed a Gluon DataLoader to a Module. MXLab has no Gluon, but the adapter
works on anything that yields pairs of NDArrays (or NumPy arrays) when iterated, e.g. a list
or a generator function's result wrapped in a re-iterable object. A last batch shorter than
the first is padded up to the batch size, and ``getpad`` says by how much.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .. import ndarray as nd
from ..io.base import DataDesc, DataIter, DataIterError
from ..ndarray.ndarray import NDArray


class DataLoaderIter(DataIter):
    """Batches of ``loader`` (iterated anew at each ``reset``) with MXNet's DataIter interface."""

    def __init__(
        self, loader: Iterable[Any], data_name: str = "data", label_name: str = "softmax_label", dtype: Any = "float32"
    ) -> None:
        super().__init__()
        self._loader = loader
        try:
            first = next(iter(loader))
        except StopIteration:
            raise DataIterError("DataLoaderIter: the loader yielded no batch") from None
        data, label = self._split(first)
        self.batch_size = data.shape[0]
        self.dtype = dtype
        self.provide_data = [DataDesc(data_name, data.shape, dtype)]
        self.provide_label = [DataDesc(label_name, label.shape, dtype)]
        self._current_batch: tuple[NDArray, NDArray] | None = None
        self.reset()

    @staticmethod
    def _split(batch: Any) -> tuple[NDArray, NDArray]:
        if not isinstance(batch, list | tuple) or len(batch) != 2:
            raise DataIterError(f"DataLoaderIter: each batch must be a (data, label) pair, got {type(batch).__name__}")
        return tuple(b if isinstance(b, NDArray) else nd.array(np.asarray(b)) for b in batch)  # type: ignore[return-value]

    def reset(self) -> None:
        self._iter = iter(self._loader)

    def iter_next(self) -> bool:
        try:
            self._current_batch = self._split(next(self._iter))
        except StopIteration:
            self._current_batch = None
        return self._current_batch is not None

    def _padded(self, array: NDArray) -> NDArray:
        array = array.astype(self.dtype)
        if array.shape[0] == self.batch_size:
            return array
        full = nd.zeros((self.batch_size, *array.shape[1:]), dtype=self.dtype)
        full[: array.shape[0]] = array
        return full

    def _batch(self) -> tuple[NDArray, NDArray]:
        if self._current_batch is None:
            raise DataIterError("DataLoaderIter: no current batch; call iter_next() (or iterate) first")
        return self._current_batch

    def getdata(self) -> list[NDArray]:
        return [self._padded(self._batch()[0])]

    def getlabel(self) -> list[NDArray]:
        return [self._padded(self._batch()[1])]

    def getpad(self) -> int:
        return self.batch_size - self._batch()[0].shape[0]

    def getindex(self) -> None:
        return None


__all__ = ["DataLoaderIter"]
