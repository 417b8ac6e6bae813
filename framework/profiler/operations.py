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
    """One engine operation, assembled from its push, start and end events.

    Times are ``perf_counter_ns`` values; ``start_ns``/``end_ns`` are None when the
    recording missed that event (the operation had not started, or was still running).
    """

    op: int
    name: str = ""
    ctx: str = "unknown"
    worker: str | None = None
    start_ns: int | None = None
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
        """Run time from start to end in milliseconds; None unless both were recorded."""
        if self.start_ns is None or self.end_ns is None:
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
    ops: dict[int, OpRecord] = {}
    for seq, event in enumerate(events):
        kind = event["kind"]
        if kind not in ("engine.push", "engine.start", "engine.end"):
            continue
        record = ops.get(event["op"])
        if record is None:
            record = ops[event["op"]] = OpRecord(op=event["op"])
        if kind == "engine.push":
            record.name = event.get("name") or ""
            record.ctx = str(event.get("ctx") or "unknown")
            record.reads = list(event.get("reads") or [])
            record.writes = list(event.get("writes") or [])
            record.priority = event.get("priority")
            record.prop = event.get("prop")
        elif kind == "engine.start":
            record.start_ns, record.start_seq = event["t_ns"], seq
            record.worker = event.get("worker")
        else:
            record.end_ns, record.end_seq = event["t_ns"], seq
            record.worker = record.worker or event.get("worker")
            record.error = event.get("error")
    started = []
    for record in ops.values():
        if record.start_ns is None:
            continue
        record.name = record.name or f"op#{record.op}"
        record.worker = record.worker or "unknown"
        if record.ctx == "unknown":
            match = _DEVICE.match(record.worker)
            if match is not None:
                record.ctx = match.group(0)
        started.append(record)
    started.sort(key=lambda r: (r.start_ns, r.start_seq))
    return started
