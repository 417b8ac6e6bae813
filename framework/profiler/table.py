"""View 2: MXNet's "Profile Statistics" table: count and run time per operation name.

:func:`aggregate` computes the rows from a list of event dicts; :func:`format_table`
prints them in MXNet's layout. The profiler's ``dumps()`` is these two functions applied
to what it recorded.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..events import Event
from .operations import collect_operations


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
