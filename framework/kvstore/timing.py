"""Where a distributed training step's time goes: computing, communicating, or waiting for the others.

A worker of a ``dist_sync`` job spends each step's wall time in three ways:

* **waiting**: a server holds one of its pushes until the other workers have pushed the same
  key (the server measures that hold and reports it in the push's answer);
* **communication**: at least one message to a server is in flight, and it is not being held
  (serialising the arrays, the trip through Ray, the servers' sums and updates, the answer);
* **compute**: no message is in flight: the forward and backward passes, and Python overhead.

A moment counts once, in the first of these that applies, so the three add up to the step's
wall time. Every time is read from this worker's ``time.perf_counter``: the server reports a
*duration*, placed at the end of the call it delayed, so no two machines' clocks are compared.
A gradient that travels while backward still computes earlier layers counts as communication:
the split shows how much of the step the network is busy, not what overlapping saved.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

Interval = tuple[float, float]


@dataclass(frozen=True)
class CallRecord:
    """One push or pull message to one server, timed on the worker's clock (seconds)."""

    verb: str  # 'push' or 'pull'
    server: int
    sent: float
    answered: float
    waited: float  # how long the server held it for the other workers (0 for pulls)
    nbytes: int


@dataclass(frozen=True)
class StepSplit:
    """One step of one worker: its wall time cut into compute, communication and waiting (seconds)."""

    step: int
    wall_s: float
    compute_s: float
    comm_s: float
    wait_s: float
    ray_calls: int
    nbytes: int


def _union(intervals: list[Interval]) -> list[Interval]:
    """Sorted, non-overlapping intervals covering the same moments."""
    merged: list[Interval] = []
    for start, stop in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], stop))
        else:
            merged.append((start, stop))
    return merged


def _length(intervals: list[Interval], start: float, stop: float) -> float:
    """Total length of the (disjoint) intervals inside ``[start, stop]``."""
    return sum(max(0.0, min(b, stop) - max(a, start)) for a, b in intervals)


def split_step(step: int, start: float, stop: float, calls: list[CallRecord]) -> StepSplit:
    """Cut ``[start, stop]`` by the messages in flight and the servers' holds (module docstring)."""
    if stop < start:
        raise ValueError(f"split_step: the step ends ({stop}) before it starts ({start})")
    flight = _union([(c.sent, c.answered) for c in calls])
    # a hold ends when the round completes, just before the answer leaves: place it at the call's end
    held = _union([(max(c.sent, c.answered - c.waited), c.answered) for c in calls if c.waited > 0])
    busy = _length(flight, start, stop)
    wait = min(_length(held, start, stop), busy)
    wall = stop - start
    return StepSplit(
        step=step,
        wall_s=wall,
        compute_s=max(0.0, wall - busy),
        comm_s=busy - wait,
        wait_s=wait,
        ray_calls=len(calls),
        nbytes=sum(c.nbytes for c in calls),
    )


class CallLog:
    """The messages a worker has exchanged with the servers (appended from the answer threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[CallRecord] = []
        self._sent = 0

    def sent(self) -> None:
        """Count a message when it leaves (the counter a test or the benchmark reads per step)."""
        with self._lock:
            self._sent += 1

    def answered(self, record: CallRecord) -> None:
        with self._lock:
            self._calls.append(record)

    @property
    def count(self) -> int:
        """How many push and pull messages have been sent so far."""
        return self._sent

    def since(self, start: float) -> list[CallRecord]:
        """The answered calls sent at or after ``start``, and forget older ones (a step reads each once)."""
        with self._lock:
            self._calls = [c for c in self._calls if c.sent >= start]
            return list(self._calls)


__all__ = ["CallLog", "CallRecord", "StepSplit", "split_step"]
