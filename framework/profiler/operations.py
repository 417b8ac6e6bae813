"""From events to operations: the record every profiler view is drawn from.

The engine reports each operation in three events: ``engine.push`` when it receives the
operation, ``engine.start`` and ``engine.end`` when a worker runs it. They arrive
interleaved with the events of every other operation, from several threads.
:func:`collect_operations` pairs them up by op id into one :class:`OpRecord` per
operation, which the trace (:mod:`.trace`), the table (:mod:`.table`) and the timeline
(:mod:`.timeline`) all start from. Like those views it is a pure function of a list of
event dicts, so it works on any recording, the profiler's or one made with
``framework.events.record()``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..events import Event


@dataclass
class OpRecord:
    """One engine operation that started, assembled from its push, start and end events.

    Times are ``perf_counter_ns`` values; ``end_ns`` is None when the recording ended
    before the operation did. When the push event was missed (the recording began after
    it), ``name`` is ``op#<id>`` and ``ctx`` comes from the worker's name.
    """

    op: int
    name: str
    ctx: str
    worker: str
    start_ns: int
    end_ns: int | None = None
    reads: list[Any] = field(default_factory=list)
    writes: list[Any] = field(default_factory=list)
    priority: int | None = None
    prop: str | None = None
    error: str | None = None
    # Positions of the start/end events in the input list: ties in time keep that order.
    start_seq: int = 0
    end_seq: int = 0

    @property
    def duration_ms(self) -> float | None:
        """Run time from start to end in milliseconds; None unless the end was recorded."""
        if self.end_ns is None:
            return None
        return (self.end_ns - self.start_ns) / 1e6


_DEVICE = re.compile(r"^(cpu|gpu)\((\d+)\)")


def device_sort_key(device: str) -> tuple[int, int, str]:
    """cpu(0) < cpu(1) < gpu(0) < anything else."""
    match = _DEVICE.match(device)
    if match is None:
        return (2, 0, device)
    return (0 if match.group(1) == "cpu" else 1, int(match.group(2)), device)


def collect_operations(events: Iterable[Event]) -> list[OpRecord]:
    """Pair up ``engine.push``/``start``/``end`` events by op id, in order of start.

    Operations that never started (pushed, still waiting) are left out. When the push
    event is missing (recording began after the push), the name becomes ``op#<id>`` and
    the device is read from the worker's name (``cpu(0)/normal/1`` runs on ``cpu(0)``).
    """
    pushes: dict[int, Event] = {}
    starts: dict[int, tuple[int, Event]] = {}  # op id -> (position in the input, event)
    ends: dict[int, tuple[int, Event]] = {}
    for seq, event in enumerate(events):
        kind = event["kind"]
        if kind == "engine.push":
            pushes[event["op"]] = event
        elif kind == "engine.start":
            starts[event["op"]] = (seq, event)
        elif kind == "engine.end":
            ends[event["op"]] = (seq, event)
    started = []
    for op_id, (start_seq, start) in starts.items():
        push = pushes.get(op_id, {})
        end_seq, end = ends.get(op_id, (0, {}))
        worker = start.get("worker") or end.get("worker") or "unknown"
        ctx = str(push.get("ctx") or "unknown")
        if ctx == "unknown":
            match = _DEVICE.match(worker)
            if match is not None:
                ctx = match.group(0)
        record = OpRecord(
            op=op_id,
            name=push.get("name") or f"op#{op_id}",
            ctx=ctx,
            worker=worker,
            start_ns=start["t_ns"],
            end_ns=end.get("t_ns"),
            reads=list(push.get("reads") or []),
            writes=list(push.get("writes") or []),
            priority=push.get("priority"),
            prop=push.get("prop"),
            error=end.get("error"),
            start_seq=start_seq,
            end_seq=end_seq,
        )
        started.append(record)
    started.sort(key=lambda r: (r.start_ns, r.start_seq))
    return started
