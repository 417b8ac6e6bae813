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
import time
from collections import defaultdict
from typing import Any

from framework.profiler.trace import KVSTORE_INSTANTS, PLAN_ARGS

from . import strict_json
from .strict_json import StrictJSONError

MAX_TRACE_BYTES = 16 * 1024 * 1024
MAX_TRACE_EVENTS = 100_000  # trace events; each operation slice becomes 3 framework events
TRACE_TIME_LIMIT_S = 20.0  # seconds one upload may spend being parsed and replayed (about 1 s at the limits)
MAX_TIME_US = 2**53  # about 285 years: any real trace's ts and dur; their sum in ns stays within int64
_CHECK_EVERY = 4096  # events between two looks at the clock
_PHASES_USED = frozenset({"B", "E", "X", "C", "i", "I", "M"})
_WAIT_NAME = re.compile(r"wait_for_var\((.+)\)")


class TraceError(ValueError):
    """An uploaded trace that is not a valid Chrome trace; the message names the problem."""


def _is_number(value: Any) -> bool:
    """An int (any size: JSON allows 400 digits) or a finite float; never a bool."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


_NON_FINITE = ("nan", "inf", "-inf")  # how a trace (strict JSON) spells a NaN or infinite statistic
_MAX_STAT_VALUES = 16  # as many values as a monitor.stat event carries


def _monitor_fields(args: dict[str, Any]) -> dict[str, Any]:
    """The fields of a ``monitor.stat`` event from a monitor instant's ``args``; what is not of the
    event's types (a number, ``"nan"``/``"inf"``/``"-inf"``, a short list of those) becomes None."""

    def stat(v: Any) -> Any:
        return v if _is_number(v) or (isinstance(v, str) and v in _NON_FINITE) else None

    value = args.get("value")
    return {
        "batch": args.get("batch") if _is_number(args.get("batch")) else None,
        "name": args["name"],
        "role": args.get("role") if isinstance(args.get("role"), str) else "",
        "stat": args.get("stat") if isinstance(args.get("stat"), str) else "",
        "value": [stat(v) for v in value[:_MAX_STAT_VALUES]] if isinstance(value, list) else stat(value),
    }


def _is_time(value: Any) -> bool:
    """A number of microseconds that is finite and within +-MAX_TIME_US (so nanoseconds fit int64)."""
    return _is_number(value) and -MAX_TIME_US <= value <= MAX_TIME_US


class Deadline:
    """A time budget for one upload's parse and replay: ``check()`` raises TraceError once spent.

    Checked every few thousand events, so the cost of the check is nothing next to the work.
    """

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.ends = None if seconds is None else time.monotonic() + seconds

    def check(self) -> None:
        if self.ends is not None and time.monotonic() > self.ends:
            raise TraceError(f"the trace took more than {self.seconds:g} s to parse and replay; send a smaller one")


def parse_trace(
    data: bytes, max_events: int = MAX_TRACE_EVENTS, deadline: Deadline | None = None
) -> list[dict[str, Any]]:
    """The checked list of trace events in ``data`` (raises TraceError)."""
    deadline = deadline or Deadline(None)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise TraceError(f"trace is not UTF-8 text (byte {err.start})") from None
    try:
        document = strict_json.loads(text)
    except StrictJSONError as err:
        raise TraceError(f"trace is not valid JSON: {err}") from None
    except json.JSONDecodeError as err:
        raise TraceError(f"trace is not valid JSON: {err.msg} at line {err.lineno} column {err.colno}") from None
    except RecursionError:
        raise TraceError("trace is not valid JSON: nested too deeply") from None
    except ValueError as err:  # e.g. an integer of more than 4300 digits
        raise TraceError(f"trace is not valid JSON: {err}") from None
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
        if index % _CHECK_EVERY == 0:
            deadline.check()
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
    if not _is_time(event.get("ts")):
        raise TraceError(
            f"{where} (ph {ph!r}): 'ts' must be a finite number within +-2**53 us, got {_shown(event.get('ts'))}"
        )
    if ph == "X" and not (_is_time(event.get("dur")) and event["dur"] >= 0):
        raise TraceError(
            f"{where} (ph 'X'): 'dur' must be a finite number >= 0 (at most 2**53 us), got {_shown(event.get('dur'))}"
        )


def _shown(value: Any) -> str:
    """``repr(value)`` cut to 40 characters (a 400-digit number is not worth echoing)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


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

    def __init__(self, trace_events: list[dict[str, Any]], deadline: Deadline) -> None:
        self.trace_events = trace_events
        self.deadline = deadline
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
        self.storage: dict[str, _StorageLedger] = {}  # device -> its synthetic live blocks

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
            if event["ph"] not in _PHASES_USED:  # other phases are ignored, and were not checked: any args
                continue
            args = event.get("args") or {}
            if isinstance(args.get("op"), int) and not isinstance(args.get("op"), bool):
                self.reserved_ops.add(args["op"])
        last_ts = max((e["ts"] for e in self.trace_events if e.get("ph") in _PHASES_USED - {"M"}), default=0)
        open_slices: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
        named_vars: set[Any] = set()
        for index, event in enumerate(self.trace_events):
            if index % _CHECK_EVERY == 0:
                self.deadline.check()
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
                self.storage_to(device, int(args["bytes"]), _ns(event["ts"]))
            elif ph == "C" and str(event.get("name", "")).startswith("metric ") and _is_number(args.get("value")):
                metric = {"epoch": None, "batch": None, "name": event["name"][len("metric ") :]}
                self.emit(_ns(event["ts"]), {"kind": "train.metric", **metric, "value": args["value"]})
            elif ph in ("i", "I") and cat == "monitor" and isinstance(args.get("name"), str):
                self.emit(_ns(event["ts"]), {"kind": "monitor.stat", **_monitor_fields(args)})
            elif ph in ("i", "I") and event.get("name") in KVSTORE_INSTANTS:
                fields = {k: args.get(k) for k in KVSTORE_INSTANTS[event["name"]]}
                self.emit(_ns(event["ts"]), {"kind": event["name"], **fields})
            elif ph in ("i", "I") and event.get("name") == "executor.plan":
                # the bytes always (None if absent); the lower bound and strategy when the trace has them
                fields = {k: args.get(k) for k in PLAN_ARGS if k in args or k in ("bytes_planned", "bytes_naive")}
                self.emit(
                    _ns(event["ts"]), {"kind": "executor.plan", "graph": [], "storage": [], "inplace": [], **fields}
                )
        for stack in open_slices.values():
            for begin in stack:
                self.operation(begin, last_ts, {"unfinished": True})
                self.unfinished += 1
        self.out.sort(key=lambda item: (item[0], item[1]))
        return [item[2] for item in self.out]

    def storage_to(self, device: str, target: int, t_ns: int) -> None:
        """Emit the allocations and frees that take ``device``'s bytes in use to ``target``."""
        ledger = self.storage.get(device)
        if ledger is None:
            ledger = self.storage[device] = _StorageLedger()
        for kind, handle, size in ledger.move_to(target):
            if kind == "free":
                self.emit(
                    t_ns,
                    {
                        "kind": "storage.free",
                        "handle": handle,
                        "ctx": device,
                        "nbytes": size,
                        "rounded": size,
                        "pooled": True,
                    },
                )
            else:
                self.emit(
                    t_ns,
                    {
                        "kind": "storage.alloc",
                        "handle": handle,
                        "ctx": device,
                        "nbytes": size,
                        "rounded": size,
                        "pool_hit": False,
                    },
                )


class _StorageLedger:
    """The synthetic live blocks of one device, with their total kept as a running sum.

    ``move_to(target)`` decides which blocks to allocate or free so that the bytes in use
    become ``target``. A rise is one allocation of the difference. A fall frees the most
    recent block of exactly that size when there is one (the usual case: the counter came
    from real allocations and frees), else the most recent blocks until the total is at or
    below the target, then allocates back the overshoot.

    Every step is amortised O(1), so a trace of n counter events replays in O(n): the
    blocks live in an insertion-ordered dict (``popitem`` takes the most recent), and
    ``by_size`` keeps, per size, a stack of handles that may hold stale entries (blocks
    already freed another way), skipped when met; each handle enters and leaves it once.
    """

    def __init__(self) -> None:
        self.live: dict[int, int] = {}  # handle -> size, oldest first
        self.by_size: dict[int, list[int]] = defaultdict(list)
        self.in_use = 0
        self.next_handle = 1

    def _most_recent_of_size(self, size: int) -> int | None:
        stack = self.by_size.get(size)
        while stack:
            if stack[-1] in self.live:
                return stack.pop()
            stack.pop()  # already freed by the fall-through path
        return None

    def move_to(self, target: int) -> list[tuple[str, int, int]]:
        """``("alloc" | "free", handle, size)`` steps, in order, reaching ``target`` bytes."""
        steps: list[tuple[str, int, int]] = []
        fall = self.in_use - target
        if fall > 0:
            exact = self._most_recent_of_size(fall)
            if exact is not None:
                self.in_use -= self.live.pop(exact)
                return [("free", exact, fall)]
        while self.in_use > target and self.live:
            handle, size = self.live.popitem()
            self.in_use -= size
            steps.append(("free", handle, size))
        if target > self.in_use:
            size, handle = target - self.in_use, self.next_handle
            self.next_handle += 1
            self.live[handle] = size
            self.by_size[size].append(handle)
            self.in_use = target
            steps.append(("alloc", handle, size))
        return steps


def replay_events(
    trace_events: list[dict[str, Any]], deadline: Deadline | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Framework events rebuilt from checked trace events, and a summary for the run's result.

    Linear in the number of events (plus the final sort), bounded in time by ``deadline``.
    """
    replay = _Replay(trace_events, deadline or Deadline(None))
    events = replay.run()
    summary = {
        "trace_events": len(trace_events),
        "operations": replay.operations,
        "unmatched_ends": replay.unmatched_ends,
        "unfinished_operations": replay.unfinished,
    }
    return events, summary
