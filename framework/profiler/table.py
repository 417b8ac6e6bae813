"""View 2: MXNet's "Profile Statistics": count and time per name, in sections.

:func:`aggregate` computes the operator rows from a list of event dicts; :func:`format_table`
prints them in MXNet's layout. :func:`aggregate_sections` computes every section MXNet's
``dumps()`` has that MXLab records: ``Device Storage`` (bytes in use per device), ``operator``,
and the user instrumentation (``<domain>`` tasks, ``<domain>,frame``, ``event``; counters in
``<domain>,counter``); :func:`format_stats` prints them as MXNet's table or JSON. The
profiler's ``dumps()`` is these two applied to what it recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..events import Event
from .operations import collect_operations
from .trace import user_track

#: ``dumps(sort_by=...)``: the statistic each keyword sorts the time sections by.
SORT_KEYS = {"total": "Total", "avg": "Avg", "min": "Min", "max": "Max", "count": "Count"}


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
    rows: list[dict[str, Any]] = [
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


def _time_row(times_ms: list[float]) -> dict[str, float]:
    return {
        "Count": len(times_ms),
        "Total": sum(times_ms),
        "Min": min(times_ms),
        "Max": max(times_ms),
        "Avg": sum(times_ms) / len(times_ms),
    }


def _user_ranges(events: list[Event], since_ns: int | None) -> dict[str, dict[str, list[float]]]:
    """Durations (ms) of the user's tasks, frames and events, by section and name."""
    begun: dict[object, int] = {}
    sections: dict[str, dict[str, list[float]]] = {}
    for event in events:
        kind = event["kind"]
        if not (kind.startswith("profiler.") and kind.rsplit("_", 1)[-1] in ("begin", "end")):
            continue
        if kind.endswith("_begin"):
            begun[event.get("range")] = event["t_ns"]
            continue
        start = begun.pop(event.get("range"), None)
        if start is None or (since_ns is not None and start < since_ns):
            continue
        sections.setdefault(user_track(event), {}).setdefault(str(event.get("name")), []).append(
            (event["t_ns"] - start) / 1e6
        )
    return sections


def _storage_use(events: list[Event], since_ns: int | None) -> dict[str, dict[str, float]]:
    """Per device: how many allocations/frees, and the min/max/mean kB in use after each."""
    in_use: dict[str, int] = {}
    live: dict[object, tuple[str, int]] = {}
    samples: dict[str, list[int]] = {}
    for event in events:
        if event["kind"] not in ("storage.alloc", "storage.free"):
            continue
        size = event.get("rounded") or event.get("nbytes") or 0
        if event["kind"] == "storage.alloc":
            device = str(event.get("ctx"))
            live[event["handle"]] = (device, size)
            in_use[device] = in_use.get(device, 0) + size
        else:
            known = live.pop(event["handle"], None)
            if known is None:
                continue
            device, size = known
            in_use[device] -= size
        if since_ns is None or event["t_ns"] >= since_ns:
            samples.setdefault(device, []).append(in_use[device])
    rows = {}
    for device, used in sorted(samples.items()):
        kb = [u / 1000.0 for u in used]
        rows[f"Memory: {device}"] = {"Count": len(kb), "Min": min(kb), "Max": max(kb), "Avg": sum(kb) / len(kb)}
    return rows


def _counters(events: list[Event], since_ns: int | None) -> dict[str, dict[str, dict[str, float]]]:
    values: dict[str, dict[str, list[int]]] = {}
    for event in events:
        if event["kind"] == "profiler.counter" and (since_ns is None or event["t_ns"] >= since_ns):
            section = f"{event.get('domain')},counter"
            values.setdefault(section, {}).setdefault(str(event.get("name")), []).append(int(event["value"]))
    return {
        section: {
            name: {"Count": len(v), "Min": min(v), "Max": max(v), "Last": v[-1]} for name, v in sorted(names.items())
        }
        for section, names in sorted(values.items())
    }


def aggregate_sections(events: Iterable[Event], since_ns: int | None = None) -> dict[str, Any]:
    """Every section of MXNet's aggregate statistics that MXLab records, in ``dumps(format="json")``'s shape.

    ``{"Time": {section: {name: {Count, Total, Min, Max, Avg}}}, "Memory": {"Device Storage":
    {name: {Count, Min, Max, Avg}}}, "Counter": {section: {name: {Count, Min, Max, Last}}},
    "Unit": {"Time": "ms", "Memory": "kB"}}``. Times and counts only for what started at or
    after ``since_ns`` (``dumps(reset=True)``).
    """
    events = list(events)
    time_sections: dict[str, dict[str, dict[str, float]]] = {}
    operators = {row["name"]: row for row in aggregate(events, since_ns)}
    if operators:
        time_sections["operator"] = {
            name: {
                "Count": row["count"],
                "Total": row["total_ms"],
                "Min": row["min_ms"],
                "Max": row["max_ms"],
                "Avg": row["avg_ms"],
            }
            for name, row in operators.items()
        }
    for section, names in sorted(_user_ranges(events, since_ns).items()):
        time_sections[section] = {name: _time_row(times) for name, times in names.items()}
    stats: dict[str, Any] = {"Time": time_sections}
    memory = _storage_use(events, since_ns)
    if memory:
        stats["Memory"] = {"Device Storage": memory}
    counters = _counters(events, since_ns)
    if counters:
        stats["Counter"] = counters
    stats["Unit"] = {"Time": "ms", "Memory": "kB"}
    return stats


def _sorted_rows(rows: dict[str, dict[str, float]], sort_by: str, ascending: bool) -> list[tuple[str, dict]]:
    key = SORT_KEYS[sort_by]
    return sorted(rows.items(), key=lambda item: (item[1][key], item[0]), reverse=not ascending)


def check_format(format: str, sort_by: str, ascending: bool) -> None:
    """Raise ValueError naming the bad argument of ``dumps``."""
    if format not in ("table", "json"):
        raise ValueError(f"profiler.dumps: format must be 'table' or 'json', got {format!r}")
    if sort_by not in SORT_KEYS:
        raise ValueError(f"profiler.dumps: sort_by must be one of {tuple(SORT_KEYS)}, got {sort_by!r}")
    if not isinstance(ascending, bool):
        raise ValueError(f"profiler.dumps: ascending must be True or False, got {ascending!r}")


def format_stats(stats: dict[str, Any], format: str = "table", sort_by: str = "total", ascending: bool = False) -> str:
    """:func:`aggregate_sections` as MXNet's text table (``format="table"``) or JSON (``"json"``),
    rows of each time section sorted by ``sort_by`` (total, avg, min, max, count)."""
    check_format(format, sort_by, ascending)
    ordered = {
        **stats,
        "Time": {
            section: dict(_sorted_rows(rows, sort_by, ascending)) for section, rows in stats.get("Time", {}).items()
        },
    }
    if format == "json":
        return json.dumps(ordered, indent=4)
    lines = ["", "Profile Statistics:", "\tNote the difference in units for different entries."]
    width = max([30] + [len(n) + 2 for section in stats.get("Time", {}).values() for n in section])

    def header(title: str, columns: tuple[str, ...]) -> None:
        lines.extend([title, "================="])
        lines.append("Name".ljust(width) + "".join(c.rjust(17) for c in columns))
        lines.append("----".ljust(width) + "".join(("-" * len(c)).rjust(17) for c in columns))

    for title, rows in ordered.get("Memory", {}).items():
        header(title, ("Total Count", "Min Use  (kB)", "Max Use  (kB)", "Avg Use  (kB)"))
        for name, row in rows.items():
            numbers = "".join(f"{row[k]:>17.4f}" for k in ("Min", "Max", "Avg"))
            lines.append(name.ljust(width) + f"{row['Count']:>17d}" + numbers)
        lines.append("")
    for title, rows in ordered["Time"].items():
        header(title, ("Total Count", "Time (ms)", "Min Time (ms)", "Max Time (ms)", "Avg Time (ms)"))
        for name, row in rows.items():
            numbers = "".join(f"{row[k]:>17.4f}" for k in ("Total", "Min", "Max", "Avg"))
            lines.append(name.ljust(width) + f"{row['Count']:>17d}" + numbers)
        lines.append("")
    for title, rows in ordered.get("Counter", {}).items():
        header(title, ("Total Count", "Min Value", "Max Value", "Last Value"))
        for name, row in rows.items():
            lines.append(name.ljust(width) + "".join(f"{row[k]:>17d}" for k in ("Count", "Min", "Max", "Last")))
        lines.append("")
    if "operator" not in ordered["Time"]:
        lines.append("(no operations recorded)")
    return "\n".join(lines) + "\n"
