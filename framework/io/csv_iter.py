"""``CSVIter``: batches from comma-separated text files.

Each line of ``data_csv`` is one example, reshaped to ``data_shape``; ``label_csv``
(optional; labels are 0 without it) holds one label line per example, reshaped to
``label_shape``. A label shape of ``(1,)`` gives label batches of shape ``(batch_size,)``,
as in MXNet. ``data_csv`` may also be a directory: its files are read in name order.

The last batch follows MXNet's C++ ``BatchLoader`` (:func:`framework.io.base.plan_epoch`):
with ``round_batch=True`` (the default) it is completed from the start of the file and the
next epoch starts after the examples used as filler; with ``round_batch=False`` it reports
``pad`` and its missing rows keep the values of the previous batch (MXNet reuses one batch
buffer; those rows are to be ignored).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..context import Context
from .base import (
    DataBatch,
    DataDesc,
    DataIterError,
    PreparedBatchIter,
    check_batch_size,
    ignore_unknown,
    plan_epoch,
    to_ndarray,
)

DTYPES = ("float32", "float64", "float16", "int32", "int64", "int8", "uint8")


def _files(path: str, what: str) -> list[str]:
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path) if os.path.isfile(os.path.join(path, n)))
        if not names:
            raise DataIterError(f"CSVIter: {what} directory {path!r} holds no files")
        return [os.path.join(path, n) for n in names]
    if not os.path.isfile(path):
        raise DataIterError(f"CSVIter: {what} file not found: {path!r}")
    return [path]


def read_csv(path: str, width: int, dtype: np.dtype, what: str) -> np.ndarray:
    """All rows of a CSV file (or directory of files) as an array ``(rows, width)``."""
    blocks = []
    for name in _files(path, what):
        with open(name) as f:
            lines = [(i, line) for i, line in enumerate(f, start=1) if line.strip()]
        rows = np.empty((len(lines), width), dtype=np.float64)
        for r, (lineno, line) in enumerate(lines):
            fields = line.strip().rstrip(",").split(",")
            if len(fields) != width:
                raise DataIterError(
                    f"CSVIter: {name}, line {lineno}: {len(fields)} values, but the {what} shape needs {width}"
                )
            try:
                rows[r] = [float(x) for x in fields]
            except ValueError as err:
                raise DataIterError(f"CSVIter: {name}, line {lineno}: not a number ({err})") from None
        blocks.append(rows)
    return np.concatenate(blocks).astype(dtype)


class CSVIter(PreparedBatchIter):
    """Iterate over the rows of CSV files in batches (``mx.io.CSVIter``)."""

    def __init__(
        self,
        data_csv: str,
        data_shape: tuple[int, ...],
        batch_size: int,
        label_csv: str | None = None,
        label_shape: tuple[int, ...] = (1,),
        round_batch: bool = True,
        dtype: str | None = None,
        data_name: str = "data",
        label_name: str = "softmax_label",
        ctx: Context | None = None,
        **kwargs: Any,
    ) -> None:
        batch_size = check_batch_size("CSVIter", batch_size)
        super().__init__(batch_size)
        ignore_unknown("CSVIter", kwargs, ("prefetch_buffer",))
        dtype = dtype or "float32"
        if dtype not in DTYPES:
            raise DataIterError(f"CSVIter: dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        self.data_shape = tuple(int(d) for d in data_shape)
        self.label_shape = tuple(int(d) for d in label_shape)
        data = read_csv(os.fspath(data_csv), int(np.prod(self.data_shape)), np.dtype(dtype), "data")
        if label_csv is None or label_csv == "NULL":
            label = np.zeros((len(data), int(np.prod(self.label_shape))), dtype=np.float32)
        else:
            label = read_csv(os.fspath(label_csv), int(np.prod(self.label_shape)), np.dtype("float32"), "label")
            if len(label) != len(data):
                raise DataIterError(
                    f"CSVIter: {data_csv!r} has {len(data)} rows but {label_csv!r} has {len(label)}: "
                    "one label line per example"
                )
        label_item = () if self.label_shape == (1,) else self.label_shape
        self._data = data.reshape((len(data), *self.data_shape))
        self._label = label.reshape((len(label), *label_item))
        self.round_batch = bool(round_batch)
        self.ctx = ctx
        self.provide_data = [DataDesc(data_name, (batch_size, *self.data_shape), np.dtype(dtype).type)]
        self.provide_label = [DataDesc(label_name, (batch_size, *label_item), np.float32)]
        # one batch buffer, reused as MXNet's BatchLoader does (the rows of a short batch's pad)
        self._data_buf = np.zeros((batch_size, *self.data_shape), dtype=dtype)
        self._label_buf = np.zeros((batch_size, *label_item), dtype=np.float32)
        self._start = 0
        self._plan = plan_epoch(len(data), batch_size, self.round_batch, 0, "CSVIter")
        self._next = 0

    def reset(self) -> None:
        """Next epoch; after a wrapped last batch it starts after the examples used as filler."""
        wrapped = self.round_batch and self._next == len(self._plan) and self._plan and self._plan[-1][1]
        self._start = int(self._plan[-1][1]) if wrapped else 0
        self._plan = plan_epoch(len(self._data), self.batch_size, self.round_batch, self._start, "CSVIter")
        self._next = 0

    def iter_next(self) -> bool:
        if self._next >= len(self._plan):
            return False
        positions, pad = self._plan[self._next]
        self._next += 1
        n = len(positions)
        self._data_buf[:n] = self._data[positions]
        self._label_buf[:n] = self._label[positions]
        self._current = DataBatch(
            data=[to_ndarray(self._data_buf, self.ctx)],
            label=[to_ndarray(self._label_buf, self.ctx)],
            pad=int(pad),
            index=positions.astype(np.uint64),
        )
        return True
