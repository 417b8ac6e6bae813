"""``IntervalSampler``: indices at a fixed stride, then (with rollover) the skipped ones, stride by stride.

For a long sequence cut into ``interval`` parallel streams (as truncated-BPTT language models
batch text), sample ``k`` of pass ``i`` is ``i + k * interval``: with ``rollover`` every index in
``[0, length)`` comes exactly once, pass after pass; without it only the first pass is given.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...data.dataset import DataError
from ...data.sampler import Sampler, _check_length

__all__ = ["IntervalSampler"]


class IntervalSampler(Sampler):
    """``0, interval, 2*interval, ...`` then ``1, 1+interval, ...`` (with ``rollover``) until all are visited."""

    def __init__(self, length: int, interval: int, rollover: bool = True) -> None:
        length = _check_length(length, "IntervalSampler")
        if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
            raise DataError(f"IntervalSampler: interval must be a positive int, got {interval!r}")
        if interval > length:
            raise DataError(f"IntervalSampler: interval {interval} must be smaller than or equal to length {length}")
        self._length = length
        self._interval = interval
        self._rollover = rollover

    def __iter__(self) -> Iterator[int]:
        for start in range(self._interval if self._rollover else 1):
            yield from range(start, self._length, self._interval)

    def __len__(self) -> int:
        # as in MXNet: the length of the sequence, also when rollover=False yields fewer indices
        return self._length
