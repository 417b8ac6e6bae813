"""Uploaded Chrome traces: parsed strictly, then turned back into framework events for replay.

A trace comes from a stranger's disk, so it is data to check, never to trust. The parser
refuses (with :class:`TraceError`, which says what is wrong and where):

* anything that is not JSON, or JSON with NaN/Infinity (not JSON, though Python accepts it);
* a document that is neither ``{"traceEvents": [...]}`` nor a bare list of events;
* an event that is not an object, lacks a string ``ph``, or whose ``ts``/``dur``/``pid``/
  ``tid``/``name``/``args`` have the wrong type; more than ``max_events`` events.

Phases other than ``B``, ``E``, ``X``, ``C``, ``i``/``I`` and ``M`` (metadata) are ignored.

The replay rebuilds the events :func:`framework.profiler.chrome_trace` was made from:
every operation slice (``B``/``E`` pair or ``X``) becomes ``engine.push``, ``engine.start``
and ``engine.end`` (op id, device, reads, writes, prop and priority come from ``args``
when the trace was written by MXLab; otherwise the op gets a fresh id, the device is the
process name and the worker the thread name); ``storage bytes in use`` counters become
``storage.alloc``/``storage.free`` events that reproduce the same curve; MXLab's waits,
kvstore and executor instants and metric counters become their events again. A ``B``
without its ``E`` is closed at the last timestamp, an ``E`` without a ``B`` is ignored
(both counted in the replay's result).
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from typing import Any

MAX_TRACE_BYTES = 16 * 1024 * 1024
MAX_TRACE_EVENTS = 100_000  # trace events; each operation slice becomes 3 framework events
_PHASES_USED = frozenset({"B", "E", "X", "C", "i", "I", "M"})
_WAIT_NAME = re.compile(r"wait_for_var\((.+)\)")


class TraceError(ValueError):
    """An uploaded trace that is not a valid Chrome trace; the message names the problem."""


def _refuse_constant(name: str) -> Any:
    raise TraceError(f"trace is not valid JSON: {name} is not allowed")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def parse_trace(data: bytes, max_events: int = MAX_TRACE_EVENTS) -> list[dict[str, Any]]:
    """The checked list of trace events in ``data`` (raises TraceError)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise TraceError(f"trace is not UTF-8 text (byte {err.start})") from None
    try:
        document = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as err:
        raise TraceError(f"trace is not valid JSON: {err.msg} at line {err.lineno} column {err.colno}") from None
    except RecursionError:
        raise TraceError("trace is not valid JSON: nested too deeply") from None
    if isinstance(document, dict):
        if "traceEvents" not in document:
            raise TraceError("trace object has no 'traceEvents' list")
        trace_events = document["traceEvents"]
        if not isinstance(trace_events, list):
            raise TraceError(f"'traceEvents' must be a list, got {type(trace_events).__name__}")
    elif isinstance(document, list):
        trace_events = document
    else:
        raise TraceError(f"trace must be an object with 'traceEvents' or a list, got {type(document).__name__}")
    if len(trace_events) > max_events:
        raise TraceError(f"trace has {len(trace_events)} events; at most {max_events} are accepted")
    for index, event in enumerate(trace_events):
        _check_event(index, event)
    return trace_events


def _check_event(index: int, event: Any) -> None:
    where = f"event {index}"
    if not isinstance(event, dict):
        raise TraceError(f"{where}: must be an object, got {type(event).__name__}")
    ph = event.get("ph")
    if not isinstance(ph, str):
        raise TraceError(f"{where}: 'ph' must be a string, got {type(ph).__name__}")
    if ph not in _PHASES_USED:
        return
    if "name" in event and not isinstance(event["name"], str):
        raise TraceError(f"{where} (ph {ph!r}): 'name' must be a string")
    for key in ("pid", "tid"):
        if key in event and not (
            isinstance(event[key], str) or (isinstance(event[key], int) and not isinstance(event[key], bool))
        ):
            raise TraceError(f"{where} (ph {ph!r}): {key!r} must be an integer or a string")
    if "args" in event and not isinstance(event["args"], dict):
        raise TraceError(f"{where} (ph {ph!r}): 'args' must be an object")
    if ph == "M":
        return
    if not _is_number(event.get("ts")):
        raise TraceError(f"{where} (ph {ph!r}): 'ts' must be a finite number, got {event.get('ts')!r}")
    if ph == "X" and not (_is_number(event.get("dur")) and event["dur"] >= 0):
        raise TraceError(f"{where} (ph 'X'): 'dur' must be a finite number >= 0, got {event.get('dur')!r}")


# ----------------------------------------------------------------------------- replay
def _ns(ts_us: float) -> int:
    return round(ts_us * 1000)


def _int_list(value: Any) -> list[Any]:
    """Var ids from an MXLab trace's args (ints or strings), anything else ignored."""
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, int | str) and not isinstance(v, bool)]


class _Replay:
    """Builds framework events from checked trace events (one pass, then a sort by time)."""

    def __init__(self, trace_events: list[dict[str, Any]]) -> None:
        self.trace_events = trace_events
        self.process_names: dict[Any, str] = {}
        self.thread_names: dict[tuple[Any, Any], str] = {}
        self.out: list[tuple[int, int, dict[str, Any]]] = []  # (t_ns, order, event)
        self.claimed_ops: set[int] = set()  # op ids given out so far
        self.reserved_ops: set[int] = set()  # op ids the trace names: fresh ids avoid them
        self.next_op = 1
        self.unmatched_ends = 0
        self.unfinished = 0
        self.operations = 0
        self.order = 0

    def emit(self, t_ns: int, event: dict[str, Any]) -> None:
        self.out.append((t_ns, self.order, {**event, "t_ns": t_ns}))
        self.order += 1

    def op_id(self, args: dict[str, Any]) -> int:
        op = args.get("op")
        if isinstance(op, int) and not isinstance(op, bool) and op not in self.claimed_ops:
            self.claimed_ops.add(op)
            return op
        while self.next_op in self.claimed_ops or self.next_op in self.reserved_ops:
            self.next_op += 1
        self.claimed_ops.add(self.next_op)
        return self.next_op

    def operation(self, begin: dict[str, Any], end_ts: float, end_args: dict[str, Any]) -> None:
        args = begin.get("args") or {}
        pid, tid = begin.get("pid", 0), begin.get("tid", 0)
        op = self.op_id(args)
        ctx = args.get("ctx") if isinstance(args.get("ctx"), str) else self.process_names.get(pid, f"pid {pid}")
        worker = self.thread_names.get((pid, tid), f"{ctx}/tid {tid}")
        start_ns, end_ns = _ns(begin["ts"]), _ns(end_ts)
        prop = args.get("prop") if isinstance(args.get("prop"), str) else "normal"
        priority = args.get("priority") if isinstance(args.get("priority"), int) else 0
        error = end_args.get("error", args.get("error"))
        self.emit(
            start_ns,
            {
                "kind": "engine.push",
                "op": op,
                "name": begin.get("name", ""),
                "ctx": ctx,
                "reads": _int_list(args.get("reads")),
                "writes": _int_list(args.get("writes")),
                "priority": priority,
                "prop": prop,
            },
        )
        self.emit(start_ns, {"kind": "engine.start", "op": op, "worker": worker, "stream": None})
        self.emit(
            end_ns,
            {
                "kind": "engine.end",
                "op": op,
                "worker": worker,
                "stream": None,
                "error": error if isinstance(error, str) else None,
            },
        )
        self.operations += 1

    def run(self) -> list[dict[str, Any]]:
        for event in self.trace_events:  # names first: metadata may come anywhere
            if event.get("ph") == "M":
                name = (event.get("args") or {}).get("name")
                if not isinstance(name, str):
                    continue
                if event.get("name") == "process_name":
                    self.process_names[event.get("pid", 0)] = name
                elif event.get("name") == "thread_name":
                    self.thread_names[(event.get("pid", 0), event.get("tid", 0))] = name
        for event in self.trace_events:
            args = event.get("args") or {}
            if isinstance(args.get("op"), int) and not isinstance(args.get("op"), bool):
                self.reserved_ops.add(args["op"])
        last_ts = max((e["ts"] for e in self.trace_events if e.get("ph") in _PHASES_USED - {"M"}), default=0)
        open_slices: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
        storage: dict[str, list[tuple[int, int]]] = defaultdict(list)  # device -> live synthetic blocks
        next_handle = [1]
        named_vars: set[Any] = set()
        for event in self.trace_events:
            ph = event["ph"]
            if ph not in _PHASES_USED or ph == "M":
                continue
            cat, args = event.get("cat"), event.get("args") or {}
            if ph == "B":
                open_slices[(event.get("pid", 0), event.get("tid", 0))].append(event)
            elif ph == "E":
                stack = open_slices.get((event.get("pid", 0), event.get("tid", 0)))
                if stack:
                    self.operation(stack.pop(), event["ts"], args)
                else:
                    self.unmatched_ends += 1
            elif ph == "X" and cat == "wait":
                var = args.get("var") if isinstance(args.get("var"), int | str) else "all"
                named = _WAIT_NAME.fullmatch(event.get("name", ""))
                if var != "all" and named and var not in named_vars:  # the variable's name, as var_new said
                    named_vars.add(var)
                    self.emit(_ns(event["ts"]), {"kind": "engine.var_new", "var": var, "name": named.group(1)})
                self.emit(_ns(event["ts"]), {"kind": "engine.wait_begin", "var": var})
                self.emit(_ns(event["ts"] + event["dur"]), {"kind": "engine.wait_end", "var": var})
            elif ph == "X":
                self.operation(event, event["ts"] + event["dur"], {})
            elif ph == "C" and event.get("name") == "storage bytes in use" and _is_number(args.get("bytes")):
                device = self.process_names.get(event.get("pid", 0), f"pid {event.get('pid', 0)}")
                self.storage_to(storage[device], device, int(args["bytes"]), _ns(event["ts"]), next_handle)
            elif ph == "C" and str(event.get("name", "")).startswith("metric ") and _is_number(args.get("value")):
                metric = {"epoch": None, "batch": None, "name": event["name"][len("metric ") :]}
                self.emit(_ns(event["ts"]), {"kind": "train.metric", **metric, "value": args["value"]})
            elif ph in ("i", "I") and event.get("name") in ("kvstore.push", "kvstore.pull"):
                fields = {k: args.get(k) for k in ("key", "nbytes", "ctx")}
                self.emit(_ns(event["ts"]), {"kind": event["name"], **fields})
            elif ph in ("i", "I") and event.get("name") == "executor.plan":
                fields = {k: args.get(k) for k in ("bytes_planned", "bytes_naive")}
                self.emit(
                    _ns(event["ts"]), {"kind": "executor.plan", "graph": [], "storage": [], "inplace": [], **fields}
                )
        for stack in open_slices.values():
            for begin in stack:
                self.operation(begin, last_ts, {"unfinished": True})
                self.unfinished += 1
        self.out.sort(key=lambda item: (item[0], item[1]))
        return [item[2] for item in self.out]

    def storage_to(
        self, blocks: list[tuple[int, int]], device: str, target: int, t_ns: int, next_handle: list[int]
    ) -> None:
        """Allocate or free synthetic blocks so that the bytes in use on ``device`` become ``target``.

        A rise is one allocation of the difference. A fall frees the most recent block of
        exactly that size when there is one (the usual case: the counter came from real
        allocations and frees), else the most recent blocks until the total is at or below
        the target, then allocates back the overshoot.
        """
        in_use = sum(size for _, size in blocks)
        fall = in_use - target
        exact = next((i for i in range(len(blocks) - 1, -1, -1) if blocks[i][1] == fall), None) if fall > 0 else None
        if exact is not None:
            self.free_block(blocks.pop(exact), device, t_ns)
            return
        while in_use > target and blocks:
            block = blocks.pop()
            in_use -= block[1]
            self.free_block(block, device, t_ns)
        if target > in_use:
            size = target - in_use
            handle = next_handle[0]
            next_handle[0] += 1
            blocks.append((handle, size))
            alloc = {"kind": "storage.alloc", "handle": handle, "ctx": device, "nbytes": size, "rounded": size}
            self.emit(t_ns, {**alloc, "pool_hit": False})

    def free_block(self, block: tuple[int, int], device: str, t_ns: int) -> None:
        handle, size = block
        free = {"kind": "storage.free", "handle": handle, "ctx": device, "nbytes": size, "rounded": size}
        self.emit(t_ns, {**free, "pooled": True})


def replay_events(trace_events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Framework events rebuilt from checked trace events, and a summary for the run's result."""
    replay = _Replay(trace_events)
    events = replay.run()
    summary = {
        "trace_events": len(trace_events),
        "operations": replay.operations,
        "unmatched_ends": replay.unmatched_ends,
        "unfinished_operations": replay.unfinished,
    }
    return events, summary
