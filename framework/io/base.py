"""The data iterator protocol: ``DataDesc``, ``DataBatch`` and ``DataIter``.

Training code never touches files. It asks a *data iterator* for the next batch::

    for batch in it:               # DataIter.__next__ -> DataBatch
        batch.data, batch.label    # lists of NDArrays, batch_size examples each
        batch.pad                  # how many examples at the end are filler
    it.reset()                     # next epoch

and reads ``it.provide_data`` / ``it.provide_label`` (lists of :class:`DataDesc`: name,
shape, dtype, layout) before the first batch to bind a network of the right shapes. Every
iterator in ``mx.io`` speaks this protocol, so they compose: :class:`PrefetchingIter` runs
any of them on a background thread, :class:`ResizeIter` changes the epoch length of any of
them.

A subclass either overrides ``next()``, or implements the lower-level protocol
``iter_next()`` (advance; False at the end) + ``getdata()``, ``getlabel()``, ``getpad()``,
``getindex()`` (read the current batch), from which the default ``next()`` builds a batch.

The *last batch* problem: when the number of examples is not a multiple of the batch size,
the final batch is short. MXNet's native iterators (CSV, images) solve it like its C++
``BatchLoader``, reproduced here by :func:`plan_epoch`: with ``round_batch`` the short batch
is completed with examples from the start of the data, ``pad`` counts them, and the next
epoch (after ``reset()``) starts *after* the examples already used as filler.
"""

from __future__ import annotations

import logging
import warnings
from collections import namedtuple
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..base import MXLabError
from ..context import Context, current_context
from ..ndarray import array


class DataIterError(MXLabError, ValueError):
    """A data iterator was configured wrongly or met bad data (the message names the file)."""


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """Name and shape of one input (a ``(name, shape)`` tuple), plus ``dtype`` and ``layout``.

    ``layout`` says what each axis means (``NCHW``: batch, channel, height, width); the
    batch axis is where ``N`` is.
    """

    dtype: Any
    layout: str

    def __new__(cls, name: str, shape: Sequence[int], dtype: Any = np.float32, layout: str = "NCHW") -> DataDesc:
        desc = super().__new__(cls, name, shape)
        desc.dtype = dtype
        desc.layout = layout
        return desc

    def __repr__(self) -> str:
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"

    def __getnewargs__(self) -> tuple[Any, ...]:
        return (self.name, self.shape, self.dtype, self.layout)

    @staticmethod
    def get_batch_axis(layout: str | None) -> int:
        """The axis holding the batch (``N``); 0 when the layout is unknown, -1 if it has none."""
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(shapes: Sequence[tuple[str, Any]], types: Sequence[tuple[str, Any]] | None) -> list[DataDesc]:
        """DataDescs from ``[(name, shape)]`` and optionally ``[(name, dtype)]``."""
        if types is None:
            return [DataDesc(name, shape) for name, shape in shapes]
        type_of = dict(types)
        return [DataDesc(name, shape, type_of[name]) for name, shape in shapes]


class DataBatch:
    """One batch: lists of NDArrays ``data`` and ``label``, and how many trailing examples are ``pad``."""

    def __init__(
        self,
        data: Sequence[Any] | None,
        label: Sequence[Any] | None = None,
        pad: int | None = None,
        index: Any = None,
        bucket_key: Any = None,
        provide_data: list[DataDesc] | None = None,
        provide_label: list[DataDesc] | None = None,
    ) -> None:
        if data is not None and not isinstance(data, list | tuple):
            raise DataIterError(f"DataBatch: data must be a list of NDArrays, got {type(data).__name__}")
        if label is not None and not isinstance(label, list | tuple):
            raise DataIterError(f"DataBatch: label must be a list of NDArrays, got {type(label).__name__}")
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self) -> str:
        data_shapes = [d.shape for d in self.data] if self.data is not None else None
        label_shapes = [x.shape for x in self.label] if self.label else None
        return f"{type(self).__name__}: data shapes: {data_shapes} label shapes: {label_shapes}"


class DataIter:
    """Base class of every data iterator: a Python iterator of :class:`DataBatch`."""

    def __init__(self, batch_size: int = 0) -> None:
        self.batch_size = batch_size

    def __iter__(self) -> Iterator[DataBatch]:
        return self

    def reset(self) -> None:
        """Go back to the beginning of the data (the next epoch)."""

    def next(self) -> DataBatch:
        """The next batch; raises StopIteration at the end of the epoch."""
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(), index=self.getindex())
        raise StopIteration

    def __next__(self) -> DataBatch:
        return self.next()

    def iter_next(self) -> bool:
        """Advance to the next batch; False when there is none."""
        raise NotImplementedError(f"{type(self).__name__} implements neither next() nor iter_next()")

    def getdata(self) -> list[Any]:
        """The data arrays of the current batch."""
        raise NotImplementedError

    def getlabel(self) -> list[Any]:
        """The label arrays of the current batch."""
        raise NotImplementedError

    def getindex(self) -> np.ndarray | None:
        """Indices of the examples in the current batch, if the iterator knows them."""
        return None

    def getpad(self) -> int:
        """How many examples at the end of the current batch are filler."""
        return 0


class PreparedBatchIter(DataIter):
    """An iterator whose ``iter_next()`` prepares the whole current batch in ``self._current``.

    CSV, MNIST and image-record iterators assemble a batch in one go; this base class answers
    the rest of the protocol from that one batch.
    """

    def __init__(self, batch_size: int = 0) -> None:
        super().__init__(batch_size)
        self._current: DataBatch | None = None
        self._debug_skip_load = False

    def debug_skip_load(self) -> None:
        """From now on hand out the current (or next) batch forever, loading nothing more.

        For timing a network without the cost of loading: MXNet's debugging switch.
        """
        self._debug_skip_load = True
        logging.getLogger(__name__).info("%s: debug_skip_load: repeating one batch", type(self).__name__)

    def next(self) -> DataBatch:
        if self._debug_skip_load and self._current is not None:
            return self._current
        if not self.iter_next():
            raise StopIteration
        assert self._current is not None
        return self._current

    def getdata(self) -> list[Any]:
        return self._current.data if self._current else []

    def getlabel(self) -> list[Any]:
        return self._current.label if self._current else []

    def getpad(self) -> int:
        return self._current.pad if self._current else 0

    def getindex(self) -> np.ndarray | None:
        return self._current.index if self._current else None


# MXNet 1.9.1's name for the base class of its C++ (backend) iterators, which are exactly the
# iterators that prepare a whole batch at a time: CSVIter, MNISTIter, ImageRecordIter, ImageDetRecordIter
MXDataIter = PreparedBatchIter


def check_batch_size(api: str, batch_size: Any) -> int:
    """A positive int batch size, or an error naming the iterator."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int | np.integer) or batch_size <= 0:
        raise DataIterError(f"{api}: batch_size must be a positive integer, got {batch_size!r}")
    return int(batch_size)


def ignore_unknown(api: str, kwargs: dict[str, Any], known: Sequence[str] = ()) -> None:
    """Warn about (and so ignore) keywords an iterator does not know.

    MXNet's C++ iterators parse their keywords leniently: an unknown one is accepted and
    ignored, so scripts pass e.g. ``MNISTIter(data_shape=...)``. MXLab accepts them too, but
    says which it ignored, so a misspelt keyword does not go unnoticed.
    """
    unknown = sorted(set(kwargs) - set(known))
    if unknown:
        warnings.warn(
            f"{api}: ignoring keyword(s) {', '.join(unknown)} (not parameters of this iterator; "
            "MXNet 1.9.1 accepts and ignores them too)",
            UserWarning,
            stacklevel=3,
        )


def check_part(api: str, num_parts: int, part_index: int) -> None:
    """``num_parts >= 1`` and ``0 <= part_index < num_parts`` (distributed reading)."""
    if num_parts < 1:
        raise DataIterError(f"{api}: num_parts must be >= 1, got {num_parts}")
    if not 0 <= part_index < num_parts:
        raise DataIterError(f"{api}: part_index must be in [0, {num_parts}), got {part_index}")


def to_ndarray(values: np.ndarray, ctx: Context | None = None, dtype: Any = None) -> Any:
    """Ship a NumPy batch into a new NDArray of the same dtype (copied: the iterator may reuse its buffer)."""
    return array(values, ctx=ctx or current_context(), dtype=values.dtype if dtype is None else dtype)


def plan_epoch(
    num: int, batch_size: int, round_batch: bool, start: int = 0, api: str = "DataIter"
) -> list[tuple[np.ndarray, int]]:
    """Cut positions ``start .. num-1`` into batches like MXNet's C++ ``BatchLoader``.

    Returns ``[(positions, pad)]``. With ``round_batch`` a short last batch is completed with
    positions ``0, 1, ...`` (``pad`` of them), and the next epoch should start at ``pad``
    (pass it as ``start``). Without it the short batch keeps its positions and ``pad`` says
    how many slots are missing.
    """
    batches: list[tuple[np.ndarray, int]] = []
    for begin in range(start, num, batch_size):
        positions = np.arange(begin, min(begin + batch_size, num))
        missing = batch_size - len(positions)
        if missing and round_batch:
            if missing > num:
                raise DataIterError(
                    f"{api}: round_batch needs at least batch_size - (examples left) = {missing} examples "
                    f"to complete the last batch, but there are only {num}"
                )
            positions = np.concatenate([positions, np.arange(missing)])
        batches.append((positions, missing))
    return batches
