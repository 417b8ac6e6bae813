"""Samplers: the order in which a DataLoader reads a dataset (``mx.gluon.data.*Sampler``).

A sampler is an iterable of indices (or, for :class:`BatchSampler`, of lists of indices)
with a ``len``. The DataLoader turns ``shuffle``/``batch_size``/``last_batch`` into a
:class:`BatchSampler` over a :class:`SequentialSampler` or :class:`RandomSampler`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .dataset import DataError

LAST_BATCH_MODES = ("keep", "discard", "rollover")


class Sampler:
    """Abstract sampler: subclasses implement ``__iter__`` and ``__len__``."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement __len__")


def _check_length(length: Any, what: str) -> int:
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 0:
        raise DataError(f"{what}: length must be an int >= 0, got {length!r}")
    return int(length)


class SequentialSampler(Sampler):
    """``start, start + 1, ..., start + length - 1``."""

    def __init__(self, length: int, start: int = 0) -> None:
        self._length = _check_length(length, "SequentialSampler")
        self._start = start

    def __iter__(self) -> Iterator[int]:
        return iter(range(self._start, self._start + self._length))

    def __len__(self) -> int:
        return self._length


class RandomSampler(Sampler):
    """A fresh random permutation of ``0 .. length-1`` each epoch (NumPy's global generator)."""

    def __init__(self, length: int) -> None:
        self._length = _check_length(length, "RandomSampler")

    def __iter__(self) -> Iterator[int]:
        return iter(int(i) for i in np.random.permutation(self._length))

    def __len__(self) -> int:
        return self._length


class FilterSampler(Sampler):
    """The indices ``i`` of ``dataset`` for which ``fn(dataset[i])`` is true (evaluated once, now)."""

    def __init__(self, fn: Callable[[Any], bool], dataset: Any) -> None:
        if not callable(fn):
            raise DataError(f"FilterSampler: fn must be callable, got {type(fn).__name__}")
        self._indices = [i for i in range(len(dataset)) if fn(dataset[i])]

    def __iter__(self) -> Iterator[int]:
        return iter(self._indices)

    def __len__(self) -> int:
        return len(self._indices)


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of ``batch_size``.

    ``last_batch`` says what happens to a final, incomplete batch: ``keep`` yields it short,
    ``discard`` drops it, ``rollover`` carries its indices into the first batch of the next
    epoch (so no sample is skipped and every batch is full).
    """

    def __init__(self, sampler: Sampler, batch_size: int, last_batch: str = "keep") -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise DataError(f"BatchSampler: batch_size must be an int >= 1, got {batch_size!r}")
        if last_batch not in LAST_BATCH_MODES:
            raise DataError(
                f"BatchSampler: last_batch must be one of {', '.join(LAST_BATCH_MODES)}, got {last_batch!r}"
            )
        self._sampler = sampler
        self._batch_size = batch_size
        self._last_batch = last_batch
        self._prev: list[Any] = []  # rollover: the previous epoch's leftover indices

    def __iter__(self) -> Iterator[list[Any]]:
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self) -> int:
        n = len(self._sampler)
        if self._last_batch == "keep":
            return (n + self._batch_size - 1) // self._batch_size
        if self._last_batch == "discard":
            return n // self._batch_size
        return (len(self._prev) + n) // self._batch_size
