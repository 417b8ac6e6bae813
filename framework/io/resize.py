"""``ResizeIter``: give any iterator an epoch of exactly ``size`` batches.

Useful when an epoch of the underlying data is too long to wait for between evaluations,
or too short for a schedule. When the wrapped iterator runs out before ``size`` batches, it
is reset and reading goes on; after ``size`` batches this iterator stops. ``reset()``
resets the wrapped iterator too, unless ``reset_internal=False`` (then the next epoch
continues where the last one stopped).
"""

from __future__ import annotations

from typing import Any

from .base import DataBatch, DataIter, DataIterError


class ResizeIter(DataIter):
    """Resize an iterator's epoch to ``size`` batches (``mx.io.ResizeIter``)."""

    def __init__(self, data_iter: DataIter, size: int, reset_internal: bool = True) -> None:
        super().__init__()
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise DataIterError(f"ResizeIter: size must be a non-negative int, got {size!r}")
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch: DataBatch | None = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self) -> None:
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self) -> bool:
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            try:
                self.current_batch = self.data_iter.next()
            except StopIteration:
                raise DataIterError(
                    f"ResizeIter: the wrapped {type(self.data_iter).__name__} yields no batch even after reset()"
                ) from None
        self.cur += 1
        return True

    def next(self) -> DataBatch:
        if not self.iter_next():
            raise StopIteration
        assert self.current_batch is not None
        return self.current_batch

    def getdata(self) -> list[Any]:
        return self.current_batch.data if self.current_batch else []

    def getlabel(self) -> list[Any]:
        return self.current_batch.label if self.current_batch else []

    def getindex(self) -> Any:
        return self.current_batch.index if self.current_batch else None

    def getpad(self) -> int:
        return self.current_batch.pad if self.current_batch else 0
