"""View 3: an ASCII timeline of which engine worker ran what, and when.

Made for a terminal or a tutorial's printed output, where a trace viewer is not at hand:
one lane per worker, one letter per operation name, and an ``overlap`` row that shows
where operations ran at the same time (the point of a threaded engine).
"""

from __future__ import annotations

import math
import string
from collections.abc import Iterable
from typing import Any

from ..events import Event
from .operations import OpRecord, collect_operations, device_sort_key

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

    lane_keys = sorted({(o.ctx, o.worker) for o in ops}, key=lambda lane: (device_sort_key(lane[0]), lane[1]))
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
