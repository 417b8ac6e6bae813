"""View 1: the recording as Chrome trace JSON, for https://ui.perfetto.dev and ``chrome://tracing``.

One process per device, one thread per engine worker, each operation a begin/end pair;
storage bytes in use as counters; waits, kvstore traffic, executor plans, training
metrics and mx.mon.Monitor statistics in an extra ``host`` process; the user's tasks, frames, events, counters and
markers (mx.profiler.Domain and friends) in processes of their own. A pure function of a list of event dicts, so the
server can serve the trace of any run (``GET /api/runs/{id}/trace``) without the
profiler having recorded it.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from typing import Any

from ..events import Event
from .operations import collect_operations, device_sort_key

#: The kvstore events written as instants on the host's ``kvstore`` thread, with these fields as ``args``:
#: each push and pull, and each distributed training step's split (milliseconds of compute,
#: communication and waiting, messages and bytes; :mod:`framework.kvstore.timing`).
KVSTORE_INSTANTS: dict[str, tuple[str, ...]] = {
    "kvstore.push": ("key", "nbytes", "ctx"),
    "kvstore.pull": ("key", "nbytes", "ctx"),
    "kvstore.step": ("rank", "step", "compute_ms", "comm_ms", "wait_ms", "calls", "nbytes"),
}
#: What an ``executor.plan`` instant keeps of the plan: its bytes, the naive bytes, the lower bound
#: no plan can go under, and the planning strategy (the graph itself stays out of a trace).
PLAN_ARGS = ("bytes_planned", "bytes_naive", "bytes_lower_bound", "strategy")


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
      slices on a ``waits`` thread, kvstore push/pull/step (:data:`KVSTORE_INSTANTS`) and
      executor plans (:data:`PLAN_ARGS`) as instant events, training metrics as counters,
      ``monitor.stat`` records as instants on a ``monitor`` thread (``args``: batch, name,
      role, stat, value; NaN and infinities as the strings ``"nan"``, ``"inf"``,
      ``"-inf"``, so the file stays strict JSON);
    * the user instrumentation (:mod:`.instrumentation`), in processes named as MXNet names
      them: ``<domain>`` (tasks as async ``b``/``e`` ranges, counters as ``C``),
      ``<domain>,frame``, ``<domain>,instant_marker`` (``i`` instants with the marker's
      scope) and ``event``; one thread per publishing thread.

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
    devices = sorted({o.ctx for o in ops} | storage_devices, key=device_sort_key)
    pid = {device: i + 1 for i, device in enumerate(devices)}
    host_pid = len(devices) + 1
    tid = {worker: i + 1 for i, worker in enumerate(sorted({o.worker for o in ops}))}

    meta: list[dict[str, Any]] = []
    for device in devices:
        meta.append({"ph": "M", "name": "process_name", "pid": pid[device], "tid": 0, "args": {"name": device}})
    lanes = sorted({(o.ctx, o.worker) for o in ops}, key=lambda lane: (device_sort_key(lane[0]), lane[1]))
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
    user_meta, user_timed = _user_events(events, host_pid + 1, t_last, us)
    meta.extend(user_meta)
    timed.extend(user_timed)

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
    """The ``host`` process: waits as X slices, kvstore/executor/monitor instants, metric counters."""
    threads = {"waits": 1, "kvstore": 2, "executor": 3, "monitor": 4}
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
        elif kind in KVSTORE_INSTANTS:
            args = {k: event.get(k) for k in KVSTORE_INSTANTS[kind]}
            instant = {"ph": "i", "s": "t", "name": kind, "cat": "kvstore", "ts": us(t_ns), "args": args}
            timed.append((t_ns, seq, {**instant, "pid": host_pid, "tid": threads["kvstore"]}))
            used.add("kvstore")
        elif kind == "executor.plan":
            args = {k: event.get(k) for k in PLAN_ARGS}
            instant = {"ph": "i", "s": "t", "name": "executor.plan", "cat": "executor", "ts": us(t_ns), "args": args}
            timed.append((t_ns, seq, {**instant, "pid": host_pid, "tid": threads["executor"]}))
            used.add("executor")
        elif kind == "train.metric":
            counter = {"ph": "C", "name": f"metric {event.get('name')}", "cat": "train", "ts": us(t_ns)}
            timed.append((t_ns, seq, {**counter, "pid": host_pid, "tid": 0, "args": {"value": event.get("value")}}))
            used.add("metrics")
        elif kind == "monitor.stat":
            args = {k: _finite_or_text(event.get(k)) for k in ("batch", "name", "role", "stat", "value")}
            instant = {"ph": "i", "s": "t", "name": f"monitor {event.get('name')}", "cat": "monitor", "ts": us(t_ns)}
            timed.append((t_ns, seq, {**instant, "pid": host_pid, "tid": threads["monitor"], "args": args}))
            used.add("monitor")
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


def _finite_or_text(value: Any) -> Any:
    """``value`` with NaN and infinities (also inside a list) as their ``str``: JSON has no NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, list | tuple):
        return [_finite_or_text(v) for v in value]
    return value


def _wait_slice(var: Any, var_name: str | None, begin_ns: int, end_ns: int) -> dict[str, Any]:
    """An ``X`` slice for one wait (``ts`` and place are filled in by the caller)."""
    name = "wait_for_all" if var == "all" else f"wait_for_var({var_name or var})"
    return {"ph": "X", "name": name, "cat": "wait", "dur": (end_ns - begin_ns) / 1000.0, "args": {"var": var}}


_RANGE_KINDS = {
    "profiler.task_begin": ("task", "b"),
    "profiler.task_end": ("task", "e"),
    "profiler.frame_begin": ("frame", "b"),
    "profiler.frame_end": ("frame", "e"),
    "profiler.event_begin": ("event", "b"),
    "profiler.event_end": ("event", "e"),
}
_MARKER_SCOPES = {"global": "g", "process": "p", "thread": "t", "task": "t", "marker": "t"}


def user_track(event: Event) -> str:
    """The track (a trace process, a table section) of a user instrumentation event, as MXNet names it."""
    kind, domain = event["kind"], event.get("domain")
    if kind.startswith("profiler.event_"):
        return "event"
    if kind.startswith("profiler.frame_"):
        return f"{domain},frame"
    if kind == "profiler.marker":
        return f"{domain},instant_marker"
    return str(domain)


def _user_events(
    events: list[Event], first_pid: int, t_last: int, us: Any
) -> tuple[list[dict[str, Any]], list[tuple[int, int, dict[str, Any]]]]:
    """Processes for the user's domains: ranges as async slices, counters, instant markers."""
    pids: dict[str, int] = {}
    tids: dict[str, int] = {}
    lanes: set[tuple[int, int, str]] = set()
    timed: list[tuple[int, int, dict[str, Any]]] = []
    open_ranges: dict[Any, tuple[int, dict[str, Any]]] = {}
    for seq, event in enumerate(events):
        kind = event["kind"]
        if not kind.startswith("profiler."):
            continue
        track = user_track(event)
        pid = pids.setdefault(track, first_pid + len(pids))
        thread = str(event.get("thread"))
        tid = tids.setdefault(thread, len(tids) + 1)
        lanes.add((pid, tid, thread))
        where = {"name": event.get("name"), "cat": track, "ts": us(event["t_ns"]), "pid": pid, "tid": tid}
        if kind in _RANGE_KINDS:
            phase = _RANGE_KINDS[kind][1]
            item = {**where, "ph": phase, "id": event.get("range")}
            if phase == "b":
                open_ranges[event.get("range")] = (seq, item)
            elif open_ranges.pop(event.get("range"), None) is None:
                continue  # an end whose begin was not recorded
            timed.append((event["t_ns"], seq, item))
        elif kind == "profiler.counter":
            timed.append((event["t_ns"], seq, {**where, "ph": "C", "args": {event.get("name"): event.get("value")}}))
        elif kind == "profiler.marker":
            scope = _MARKER_SCOPES.get(str(event.get("scope")), "p")
            timed.append((event["t_ns"], seq, {**where, "ph": "i", "s": scope}))
    for seq, begin in open_ranges.values():  # still open at the last event
        end = {**begin, "ph": "e", "ts": us(t_last), "args": {"unfinished": True}}
        timed.append((t_last, len(events) + seq, end))
    meta = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": track}}
        for track, pid in pids.items()
    ]
    meta += [
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": thread}}
        for pid, tid, thread in sorted(lanes)
    ]
    return meta, timed
