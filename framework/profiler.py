"""The profiler (``mx.profiler``): one more subscriber to the event stream.

MXNet's profiler is wired into its C++ engine. MXLab's needs no hooks at all, because every
mechanism already reports what it does on the event bus (:mod:`framework.events`): the
engine publishes ``engine.push`` when it receives an operation, ``engine.start`` and
``engine.end`` when a worker runs it, ``engine.wait_begin``/``wait_end`` around waits; the
storage manager publishes ``storage.alloc``/``storage.free``. The profiler is just a
subscriber that turns those events into pictures:

1. **Recording** (the MXNet API at the bottom of this file): while the state is ``"run"``,
   every event is appended to a list. Events arrive from engine worker threads, so the
   list is guarded by a lock.
2. **Views** (pure functions of a list of event dicts, usable on any recording, e.g. one
   made with ``framework.events.record()``):

   * :func:`chrome_trace` -- Chrome trace JSON that https://ui.perfetto.dev and
     ``chrome://tracing`` open: one process per device, one thread per engine worker;
   * :func:`aggregate` and :func:`format_table` -- MXNet's "Profile Statistics" table;
   * :func:`text_timeline` -- an ASCII picture of which worker ran what, and when.

Usage, as in MXNet::

    from framework import profiler
    profiler.set_config(filename="trace.json", profile_all=True)
    profiler.set_state("run")
    ...                        # push work
    profiler.set_state("stop")
    profiler.dump()            # then open trace.json in Perfetto
    print(profiler.dumps())    # the aggregate table
"""

from __future__ import annotations

import json
import math
import os
import re
import string
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from . import events as _events_bus
from .events import Event

__all__ = [
    "OpRecord",
    "aggregate",
    "chrome_trace",
    "clear",
    "collect_operations",
    "dump",
    "dumps",
    "format_table",
    "get_config",
    "get_state",
    "pause",
    "recorded_events",
    "resume",
    "set_config",
    "set_state",
    "state",
    "text_timeline",
]


# =====================================================================================
# From events to operations
# =====================================================================================


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


def _device_sort_key(device: str) -> tuple[int, int, str]:
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


# =====================================================================================
# View 1: Chrome trace
# =====================================================================================


def chrome_trace(events: Iterable[Event]) -> dict[str, Any]:
    """Chrome trace JSON (a dict; ``json.dump`` it) for Perfetto and ``chrome://tracing``.

    Layout:

    * one process per device (``pid`` 1, 2, ... in the order cpu(0), cpu(1), gpu(0)),
      named by a ``process_name`` metadata event (``"ph": "M"``);
    * one thread per engine worker (``cpu(0)/normal/0``, ``shared/1``, ``inline``,
      ``naive``), named by a ``thread_name`` metadata event in each device it ran work
      for; a worker keeps the same ``tid`` everywhere;
    * each operation as a ``B``/``E`` pair, ``cat`` ``"operator"``, with ``args`` op id,
      device, reads, writes, prop, priority and, when it failed or was skipped, error;
    * storage bytes in use per device as ``C`` (counter) events, from
      ``storage.alloc``/``storage.free`` (the rounded block sizes of the allocations seen
      while recording; frees of blocks allocated before the recording are ignored);
    * an extra ``host`` process: waits (``wait_for_var``/``wait_for_all``) as ``X``
      slices on a ``waits`` thread, kvstore push/pull and executor plans as instant
      events, training metrics as counters.

    ``ts`` is in microseconds since the first event. An operation still running at the
    last event is **closed at the last timestamp** and marked ``"unfinished": true``; an
    operation whose start was not recorded is omitted. Same for unfinished waits.
    """
    events = list(events)
    trace: dict[str, Any] = {"traceEvents": [], "displayTimeUnit": "ms"}
    if not events:
        return trace
    t0 = min(e["t_ns"] for e in events)
    t_last = max(e["t_ns"] for e in events)

    def us(t_ns: int) -> float:
        return (t_ns - t0) / 1000.0

    ops = collect_operations(events)
    storage_devices = {str(e.get("ctx")) for e in events if e["kind"] in ("storage.alloc", "storage.free")}
    devices = sorted({o.ctx for o in ops} | storage_devices, key=_device_sort_key)
    pid = {device: i + 1 for i, device in enumerate(devices)}
    host_pid = len(devices) + 1
    tid = {worker: i + 1 for i, worker in enumerate(sorted({o.worker for o in ops}))}

    meta: list[dict[str, Any]] = []
    for device in devices:
        meta.append({"ph": "M", "name": "process_name", "pid": pid[device], "tid": 0, "args": {"name": device}})
    lanes = sorted({(o.ctx, o.worker) for o in ops}, key=lambda lane: (_device_sort_key(lane[0]), lane[1]))
    for device, worker in lanes:
        meta.append(
            {"ph": "M", "name": "thread_name", "pid": pid[device], "tid": tid[worker], "args": {"name": worker}}
        )

    # (t_ns, position in input, trace event): sorting keeps each thread's ts monotonic and
    # B/E of back-to-back operations in the order they happened.
    timed: list[tuple[int, int, dict[str, Any]]] = []
    for o in ops:
        where = {"pid": pid[o.ctx], "tid": tid[o.worker]}
        args: dict[str, Any] = {
            "op": o.op,
            "ctx": o.ctx,
            "reads": o.reads,
            "writes": o.writes,
            "prop": o.prop,
            "priority": o.priority,
        }
        end_args: dict[str, Any] = {}
        if o.error is not None:
            args["error"] = end_args["error"] = o.error
        end_ns, end_seq = o.end_ns, o.end_seq
        if end_ns is None:
            end_ns, end_seq = t_last, len(events)
            args["unfinished"] = end_args["unfinished"] = True
        begin = {"ph": "B", "name": o.name, "cat": "operator", "ts": us(o.start_ns), **where, "args": args}
        end = {"ph": "E", "name": o.name, "cat": "operator", "ts": us(end_ns), **where, "args": end_args}
        timed.append((o.start_ns, o.start_seq, begin))
        timed.append((end_ns, end_seq, end))

    timed.extend(_storage_counters(events, pid, us))
    host_meta, host_timed = _host_events(events, host_pid, t_last, us)
    meta.extend(host_meta)
    timed.extend(host_timed)

    timed.sort(key=lambda item: (item[0], item[1]))
    trace["traceEvents"] = meta + [item[2] for item in timed]
    return trace


def _storage_counters(events: list[Event], pid: dict[str, int], us: Any) -> list[tuple[int, int, dict[str, Any]]]:
    """``C`` events: bytes held by live allocations, per device, after every alloc/free."""
    in_use: dict[str, int] = {}
    live: dict[Any, tuple[str, int]] = {}  # handle -> (device, bytes)
    out = []
    for seq, event in enumerate(events):
        if event["kind"] not in ("storage.alloc", "storage.free"):
            continue
        device = str(event.get("ctx"))
        size = event.get("rounded") or event.get("nbytes") or 0
        if event["kind"] == "storage.alloc":
            live[event["handle"]] = (device, size)
            in_use[device] = in_use.get(device, 0) + size
        else:
            known = live.pop(event["handle"], None)
            if known is None:
                continue  # allocated before the recording started: we never counted it
            device, size = known
            in_use[device] -= size
        counter = {
            "ph": "C",
            "name": "storage bytes in use",
            "cat": "memory",
            "ts": us(event["t_ns"]),
            "pid": pid[device],
            "tid": 0,
            "args": {"bytes": in_use[device]},
        }
        out.append((event["t_ns"], seq, counter))
    return out


def _host_events(
    events: list[Event], host_pid: int, t_last: int, us: Any
) -> tuple[list[dict[str, Any]], list[tuple[int, int, dict[str, Any]]]]:
    """The ``host`` process: waits as X slices, kvstore/executor instants, metric counters."""
    threads = {"waits": 1, "kvstore": 2, "executor": 3}
    var_names = {e["var"]: e.get("name") for e in events if e["kind"] == "engine.var_new"}
    used: set[str] = set()
    timed: list[tuple[int, int, dict[str, Any]]] = []
    open_waits: dict[Any, deque[tuple[int, int]]] = {}
    for seq, event in enumerate(events):
        kind, t_ns = event["kind"], event["t_ns"]
        if kind == "engine.wait_begin":
            open_waits.setdefault(event["var"], deque()).append((t_ns, seq))
        elif kind == "engine.wait_end":
            pending = open_waits.get(event["var"])
            if pending:  # an end without a recorded begin is dropped
                begin_ns, begin_seq = pending.popleft()
                wait = _wait_slice(event["var"], var_names.get(event["var"]), begin_ns, t_ns)
                timed.append((begin_ns, begin_seq, {**wait, "ts": us(begin_ns), "pid": host_pid, "tid": 1}))
                used.add("waits")
        elif kind in ("kvstore.push", "kvstore.pull"):
            args = {k: event.get(k) for k in ("key", "nbytes", "ctx")}
            instant = {"ph": "i", "s": "t", "name": kind, "cat": "kvstore", "ts": us(t_ns), "args": args}
            timed.append((t_ns, seq, {**instant, "pid": host_pid, "tid": threads["kvstore"]}))
            used.add("kvstore")
        elif kind == "executor.plan":
            args = {k: event.get(k) for k in ("bytes_planned", "bytes_naive")}
            instant = {"ph": "i", "s": "t", "name": "executor.plan", "cat": "executor", "ts": us(t_ns), "args": args}
            timed.append((t_ns, seq, {**instant, "pid": host_pid, "tid": threads["executor"]}))
            used.add("executor")
        elif kind == "train.metric":
            counter = {"ph": "C", "name": f"metric {event.get('name')}", "cat": "train", "ts": us(t_ns)}
            timed.append((t_ns, seq, {**counter, "pid": host_pid, "tid": 0, "args": {"value": event.get("value")}}))
            used.add("metrics")
    for var, pending in open_waits.items():
        for begin_ns, begin_seq in pending:  # still waiting at the last event
            wait = _wait_slice(var, var_names.get(var), begin_ns, t_last)
            wait["args"]["unfinished"] = True
            timed.append((begin_ns, begin_seq, {**wait, "ts": us(begin_ns), "pid": host_pid, "tid": 1}))
            used.add("waits")
    if not used:
        return [], []
    meta = [{"ph": "M", "name": "process_name", "pid": host_pid, "tid": 0, "args": {"name": "host"}}]
    for name in sorted(used & threads.keys(), key=threads.__getitem__):
        meta.append({"ph": "M", "name": "thread_name", "pid": host_pid, "tid": threads[name], "args": {"name": name}})
    return meta, timed


def _wait_slice(var: Any, var_name: str | None, begin_ns: int, end_ns: int) -> dict[str, Any]:
    """An ``X`` slice for one wait (``ts`` and place are filled in by the caller)."""
    name = "wait_for_all" if var == "all" else f"wait_for_var({var_name or var})"
    return {"ph": "X", "name": name, "cat": "wait", "dur": (end_ns - begin_ns) / 1000.0, "args": {"var": var}}


# =====================================================================================
# View 2: aggregate statistics
# =====================================================================================


def aggregate(events: Iterable[Event], since_ns: int | None = None) -> list[dict[str, Any]]:
    """Statistics per operation name, most total time first.

    Each row: ``name``, ``count``, ``total_ms``, ``min_ms``, ``max_ms``, ``avg_ms`` (run
    time from ``engine.start`` to ``engine.end``) and ``errors`` (how many failed or were
    skipped). Only operations with both a start and an end count; with ``since_ns``, only
    those that started at or after it (that is how ``dumps(reset=True)`` starts afresh).
    """
    durations: dict[str, list[float]] = {}
    errors: dict[str, int] = {}
    for o in collect_operations(events):
        if o.end_ns is None or (since_ns is not None and o.start_ns < since_ns):
            continue
        durations.setdefault(o.name, []).append((o.end_ns - o.start_ns) / 1e6)
        errors[o.name] = errors.get(o.name, 0) + (o.error is not None)
    rows = [
        {
            "name": name,
            "count": len(times),
            "total_ms": sum(times),
            "min_ms": min(times),
            "max_ms": max(times),
            "avg_ms": sum(times) / len(times),
            "errors": errors[name],
        }
        for name, times in durations.items()
    ]
    rows.sort(key=lambda row: (-row["total_ms"], row["name"]))
    return rows


def format_table(rows: list[dict[str, Any]], title: str = "operator") -> str:
    """MXNet's "Profile Statistics" text for rows from :func:`aggregate`."""
    name_width = max([30] + [min(len(row["name"]), 60) + 2 for row in rows])
    columns = ("Total Count", "Time (ms)", "Min Time (ms)", "Max Time (ms)", "Avg Time (ms)")
    lines = [
        "Profile Statistics:",
        "\tNote the difference in units for different entries.",
        "",
        title,
        "=================",
        "Name".ljust(name_width) + "".join(c.rjust(17) for c in columns),
        "----".ljust(name_width) + "".join(("-" * len(c)).rjust(17) for c in columns),
    ]
    if not rows:
        lines.append("(no operations recorded)")
    for row in rows:
        name = row["name"] if len(row["name"]) <= 60 else row["name"][:57] + "..."
        numbers = [row["total_ms"], row["min_ms"], row["max_ms"], row["avg_ms"]]
        lines.append(name.ljust(name_width) + f"{row['count']:>17d}" + "".join(f"{x:>17.4f}" for x in numbers))
    return "\n".join(lines) + "\n"


# =====================================================================================
# View 3: text timeline
# =====================================================================================

_SYMBOLS = string.ascii_uppercase + string.ascii_lowercase + string.digits


def stable_hash(text: str) -> int:
    """FNV-1a (32 bits) of ``text``'s UTF-8 bytes: the same in every process and run.

    Python's ``hash()`` of a string changes from one interpreter to the next; this one does
    not. The web UI derives an operation's colour from the same function (webui/src/colors.js).
    """
    value = 0x811C9DC5
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def timeline_symbols(names: Iterable[str]) -> dict[str, str]:
    """The letter of each operation name in a text timeline, derived from the name itself.

    A name's letter is ``_SYMBOLS[stable_hash(name) % 62]``, so ``X1`` is drawn with the same
    letter in every run. Two names that hash to the same letter are settled in sorted order:
    the later name takes the next free letter. Beyond 62 distinct names, the rest share ``*``.
    """
    letters: dict[str, str] = {}
    free = list(_SYMBOLS)
    for name in sorted(set(names)):
        if not free:
            letters[name] = "*"
            continue
        wanted = stable_hash(name) % len(_SYMBOLS)
        # The first free letter at or after the wanted one, wrapping around.
        letter = min(free, key=lambda s: (_SYMBOLS.index(s) - wanted) % len(_SYMBOLS))
        free.remove(letter)
        letters[name] = letter
    return letters


def text_timeline(events: Iterable[Event], width: int = 100) -> str:
    """An ASCII timeline: one lane per worker, each operation a run of its letter.

    Lanes are sorted by device, then worker name. Below the lanes, the ``overlap`` row says
    how many operations were running at once within each column (blank = idle, 1 = one,
    2 or more = operations overlapped in time); then a time axis in milliseconds since the
    first operation started, and the legend mapping letters to operation names (each name's
    letter comes from the name, see :func:`timeline_symbols`). Operations still running at
    the last event are drawn up to it.
    """
    if isinstance(width, bool) or not isinstance(width, int) or width < 10:
        raise ValueError(f"text_timeline: width must be an int >= 10, got {width!r}")
    events = list(events)
    if not events:
        return "profiler: nothing was recorded (no events).\n"
    ops = collect_operations(events)
    if not ops:
        return f"profiler: {len(events)} event(s) recorded, but no engine operation ran.\n"
    t_last = max(e["t_ns"] for e in events)
    spans = [(o, o.start_ns, o.end_ns if o.end_ns is not None else t_last) for o in ops]
    t0 = spans[0][1]
    t1 = max(end for _, _, end in spans)
    cols_per_ns = width / max(t1 - t0, 1)

    def first_col(t: int) -> int:
        return min(width - 1, int((t - t0) * cols_per_ns))

    def last_col(start: int, end: int) -> int:
        return max(first_col(start), min(width - 1, math.ceil((end - t0) * cols_per_ns) - 1))

    letters = timeline_symbols(o.name for o in ops)
    symbol = {o.name: letters[o.name] for o in ops}  # in order of first appearance, for the legend

    lane_keys = sorted({(o.ctx, o.worker) for o in ops}, key=lambda lane: (_device_sort_key(lane[0]), lane[1]))
    lanes = {key: [" "] * width for key in lane_keys}
    for o, start, end in spans:
        row = lanes[(o.ctx, o.worker)]
        for col in range(first_col(start), last_col(start, end) + 1):
            row[col] = symbol[o.name]

    overlap = _overlap_per_column(spans, first_col, last_col, width)
    for col in range(width):  # an instantaneous operation still deserves a mark
        if overlap[col] == 0 and any(row[col] != " " for row in lanes.values()):
            overlap[col] = 1

    labels = {key: key[1] if key[1].startswith(key[0]) else f"{key[0]} {key[1]}" for key in lane_keys}
    label_width = max(len("overlap"), *(len(label) for label in labels.values()))
    span_ms = (t1 - t0) / 1e6
    lines = [
        f"timeline: {len(ops)} operation(s) on {len(lane_keys)} worker lane(s) over {span_ms:.3f} ms "
        f"(one column = {span_ms / width:.3f} ms)"
    ]
    for key in lane_keys:
        lines.append(f"{labels[key]:<{label_width}} |{''.join(lanes[key])}|")
    marks = "".join(" " if n == 0 else str(n) if n < 10 else "+" for n in overlap)
    lines.append(f"{'overlap':<{label_width}} |{marks}|")
    lines.append(" " * label_width + " +" + "".join("+" if c % 10 == 0 else "-" for c in range(1, width)) + "+")
    lines.append(" " * (label_width + 1) + _axis_labels(width, span_ms))
    legend = [f"{s} = {name}" for name, s in symbol.items() if s != "*"]
    if "*" in symbol.values():
        legend.append("* = other operations")
    lines.append("legend: " + ", ".join(legend))
    unfinished = sum(o.end_ns is None for o in ops)
    if unfinished:
        lines.append(f"({unfinished} operation(s) still running at the last event, drawn up to it)")
    return "\n".join(lines) + "\n"


def _overlap_per_column(spans: list[tuple[OpRecord, int, int]], first_col: Any, last_col: Any, width: int) -> list[int]:
    """Peak number of operations running at the same instant, within each column."""
    points = sorted([(start, 1) for _, start, _ in spans] + [(end, -1) for _, _, end in spans])
    peak = [0] * width
    level, prev = 0, points[0][0]
    for t, delta in points:  # at equal times ends (-1) come first: touching is not overlapping
        if t > prev and level > 0:
            for col in range(first_col(prev), last_col(prev, t) + 1):
                peak[col] = max(peak[col], level)
        level += delta
        prev = max(prev, t)
    return peak


def _axis_labels(width: int, span_ms: float) -> str:
    """Millisecond labels under every tenth column, where they fit."""
    decimals = 3 if span_ms < 1 else 2 if span_ms < 10 else 1 if span_ms < 100 else 0
    axis = [" "] * (width + 12)
    free_from = 0
    for col in range(0, width + 1, 10):
        text = f"{col * span_ms / width:.{decimals}f}"
        if col == 0:
            text = "0 ms"
        if col >= free_from and col + len(text) <= len(axis):
            axis[col : col + len(text)] = text
            free_from = col + len(text) + 1
    return "".join(axis).rstrip()


# =====================================================================================
# The MXNet API: configuration, state, recording, dumping
# =====================================================================================

_FLAGS = (
    "profile_all",
    "profile_symbolic",
    "profile_imperative",
    "profile_memory",
    "profile_api",
    "aggregate_stats",
    "continuous_dump",
)
_DEFAULT_CONFIG: dict[str, Any] = {
    "filename": "profile.json",
    "profile_all": False,
    "profile_symbolic": True,
    "profile_imperative": True,
    "profile_memory": True,
    "profile_api": True,
    "aggregate_stats": False,
    "continuous_dump": False,
}
_STATES = ("run", "stop")

_lock = threading.Lock()
_config: dict[str, Any] = dict(_DEFAULT_CONFIG)
_state = "stop"
_paused = False
_recording = False  # state == "run" and not paused; checked by _record under _lock
_recorded: list[Event] = []
_subscription: _events_bus.Subscription | None = None
_aggregate_since_ns: int | None = None  # set by dumps(reset=True)


def _kinds_for(config: dict[str, Any]) -> frozenset[str]:
    """Which event kinds a configuration records (see :func:`set_config`)."""
    if config["profile_all"]:
        return frozenset(_events_bus.KINDS)
    kinds: set[str] = set()
    if config["profile_imperative"] or config["profile_symbolic"]:
        kinds |= {"engine.push", "engine.start", "engine.end"}
    if config["profile_symbolic"]:
        kinds.add("executor.plan")
    if config["profile_memory"]:
        kinds |= {"storage.alloc", "storage.free"}
    if config["profile_api"]:
        kinds |= {"engine.wait_begin", "engine.wait_end", "engine.var_new", "engine.var_delete"}
        kinds |= {"kvstore.push", "kvstore.pull"}
    return frozenset(kinds)


def _record(event: Event) -> None:
    """The subscriber callback; runs in whichever thread published (often a worker)."""
    with _lock:
        if _recording:
            _recorded.append(event)


def _subscribe_locked() -> None:
    global _subscription, _recording
    kinds = _kinds_for(_config)
    _subscription = _events_bus.subscribe(_record, kinds) if kinds else None
    _recording = True


def _unsubscribe_locked() -> None:
    global _subscription, _recording
    _recording = False
    if _subscription is not None:
        _events_bus.unsubscribe(_subscription)
        _subscription = None


def set_config(
    *,
    filename: str | os.PathLike[str] = "profile.json",
    profile_all: bool = False,
    profile_symbolic: bool = True,
    profile_imperative: bool = True,
    profile_memory: bool = True,
    profile_api: bool = True,
    aggregate_stats: bool = False,
    continuous_dump: bool = False,
    **unknown: Any,
) -> None:
    """Configure the profiler (keyword arguments only; omitted ones take their defaults).

    MXLab publishes fewer kinds of events than MXNet instruments, so the flags map as:

    * ``profile_imperative`` / ``profile_symbolic``: engine operations (push, start, end);
      the engine cannot tell which front end pushed an operation, so either flag turns
      them on. ``profile_symbolic`` also records ``executor.plan``.
    * ``profile_memory``: ``storage.alloc`` / ``storage.free`` (counters in the trace).
    * ``profile_api``: the API-level calls: waits, variable creation and deletion,
      kvstore push/pull.
    * ``profile_all``: every event kind, including ``train.metric``.
    * ``aggregate_stats``: accepted for compatibility; :func:`dumps` always works here
      because the table is computed from the recorded events.
    * ``continuous_dump``: ``set_state("stop")`` and :func:`pause` also write the trace
      file (keeping the events), so the file is always current.

    Raises:
        TypeError: for an unknown argument, a non-path filename or a non-bool flag.
    """
    if unknown:
        raise TypeError(
            f"profiler.set_config: unknown argument(s) {', '.join(sorted(unknown))}; "
            f"accepted: filename, {', '.join(_FLAGS)}"
        )
    if not isinstance(filename, (str, os.PathLike)) or not os.fspath(filename):
        raise TypeError(f"profiler.set_config: filename must be a non-empty str or path, got {filename!r}")
    new = {
        "filename": os.fspath(filename),
        "profile_all": profile_all,
        "profile_symbolic": profile_symbolic,
        "profile_imperative": profile_imperative,
        "profile_memory": profile_memory,
        "profile_api": profile_api,
        "aggregate_stats": aggregate_stats,
        "continuous_dump": continuous_dump,
    }
    for flag in _FLAGS:
        if not isinstance(new[flag], bool):
            raise TypeError(f"profiler.set_config: {flag} must be True or False, got {new[flag]!r}")
    global _config
    with _lock:
        _config = new
        if _recording:  # switch to the new set of kinds without losing what was recorded
            _unsubscribe_locked()
            _subscribe_locked()


def get_config() -> dict[str, Any]:
    """A copy of the current configuration."""
    with _lock:
        return dict(_config)


def set_state(state: str = "stop") -> None:
    """``"run"`` starts recording events, ``"stop"`` stops (the recorded events stay).

    Raises:
        ValueError: for anything but ``"run"`` or ``"stop"``.
    """
    if state not in _STATES:
        raise ValueError(f"profiler.set_state: state must be one of {_STATES}, got {state!r}")
    global _state, _paused
    with _lock:
        if state == _state:
            return
        _state, _paused = state, False
        if state == "run":
            _subscribe_locked()
        else:
            _unsubscribe_locked()
        write_now = state == "stop" and _config["continuous_dump"]
    if write_now:
        dump(finished=False)


def state() -> str:
    """The current state: ``"run"`` or ``"stop"`` (paused still counts as ``"run"``)."""
    return _state


def get_state() -> str:
    """Same as :func:`state`."""
    return _state


def pause() -> None:
    """Stop recording for a while without leaving the ``"run"`` state; see :func:`resume`."""
    global _paused
    with _lock:
        if _state != "run" or _paused:
            return
        _paused = True
        _unsubscribe_locked()
        write_now = _config["continuous_dump"]
    if write_now:
        dump(finished=False)


def resume() -> None:
    """Record again after :func:`pause`; does nothing unless paused."""
    global _paused
    with _lock:
        if _state != "run" or not _paused:
            return
        _paused = False
        _subscribe_locked()


def recorded_events() -> list[Event]:
    """A copy of the events recorded so far (the input of the view functions)."""
    with _lock:
        return list(_recorded)


def clear() -> None:
    """Forget the recorded events (the configuration and state stay)."""
    global _aggregate_since_ns
    with _lock:
        _recorded.clear()
        _aggregate_since_ns = None


def dump(finished: bool = True) -> str:
    """Write the Chrome trace of the recorded events to the configured filename.

    With ``finished=True`` the recorded events are cleared afterwards, so the next dump
    starts a new trace; with ``False`` they are kept and the next dump includes them
    again. Returns the file name.
    """
    global _aggregate_since_ns
    with _lock:
        recorded = list(_recorded)
        filename = _config["filename"]
        if finished:
            _recorded.clear()
            _aggregate_since_ns = None
    with open(filename, "w", encoding="utf-8") as f:
        json.dump(chrome_trace(recorded), f)
    return filename


def dumps(reset: bool = False) -> str:
    """The aggregate "Profile Statistics" table of the operations recorded so far.

    With ``reset=True``, the next table counts only operations that start after this
    call (the recorded events themselves stay, for :func:`dump`).
    """
    global _aggregate_since_ns
    with _lock:
        recorded = list(_recorded)
        since = _aggregate_since_ns
        if reset:
            _aggregate_since_ns = time.perf_counter_ns()
    return format_table(aggregate(recorded, since_ns=since))
