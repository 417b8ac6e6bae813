"""Frames: a batch of consecutive events as column arrays, one block per kind, in strict JSON.

Why columns: engine events come three per operation, hundreds of thousands a second, and
each event as its own JSON object repeats every key and every unchanging value ("ctx":
"cpu(0)", "stream": null, ...). A frame instead groups its events by kind (and, for events
published with a dict of fields, by field names) into *blocks*; a block holds one array per
field, so keys appear once per block, and a field with the same value in every row of the
block is sent once. The grouping and the encoding of whole arrays run in C (``sorted``,
``map``, ``zip``, the ``json`` encoder), not a Python loop per event.

The JSON of one frame (docs/server.md, "The WebSocket")::

    {"seq": 120, "n": 6, "blocks": [
      {"kind": "engine.push", "n": 3, "i": {"from": 0, "step": 2},
       "t_ns": {"from": 81230000000000, "deltas": [4102, 3987]},
       "fields": {"op": [7, 8, 12], "name": ["a", "b", "c"], "ctx": {"all": "cpu(0)"}, ...}},
      {"kind": "engine.start", "n": 3, "i": {"from": 1, "step": 2}, ...}]}

``seq`` is the stream index of the frame's first event and ``n`` its number of events;
``i`` places each row of a block in the frame (0 .. n-1), so the events can be put back in
publication order, and a block that is left out (:meth:`Frame.thinned`) leaves holes
rather than shifting the rest. Each column (``i``, ``t_ns`` and every field) has one value
per row, written in one of four forms: an array; ``{"all": v}`` when every row holds ``v``
(fields only); and, for integers, ``{"from": a, "step": s}`` when row ``j`` holds
``a + j*s`` (``i`` of a batch of operations: every third place) or ``{"from": a, "deltas":
[d1, ...]}`` when row ``j`` holds ``a + d1 + ... + dj`` (times in ns, whose 14 digits
differ by a few thousand from row to row; ids). The integer forms are used only when they
are shorter and every value and difference stays below 2**53, which the browser's doubles
hold exactly (:data:`EXACT_INTEGER_LIMIT`); the decoders accept every form, so frames
kept from before the integer forms still decode. Values JSON cannot say exactly are made
JSON-safe (:func:`json_safe`).
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate, groupby, islice, repeat
from operator import add, itemgetter, sub
from typing import Any

import numpy as np

from framework.events import KINDS, OPERATION_PARTS, RawEvent

_kind_of, _t_of, _values_of = itemgetter(0), itemgetter(1), itemgetter(2)


# ----------------------------------------------------------------------------- JSON-safe values
def _json_default(value: Any) -> Any:
    """What ``json.dumps`` cannot encode: NumPy scalars become numbers, anything else ``str``."""
    if isinstance(value, np.generic):
        return json_safe(value.item())
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    return str(value)


def json_safe(value: Any) -> Any:
    """``value`` with only JSON types left: tuples become lists, keys strings, and NaN,
    infinities and unknown objects their ``str`` (JSON has no NaN; browsers refuse it)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return json_safe(_json_default(value))


#: Compact JSON that refuses NaN and infinities (the caller falls back to :func:`json_safe`).
encode_strict = json.JSONEncoder(default=_json_default, allow_nan=False, separators=(",", ":")).encode
quote = json.encoder.encode_basestring_ascii  # a str as an ASCII JSON string literal (C; lone surrogates escaped)


# ----------------------------------------------------------------------------- frames


@dataclass(frozen=True)
class Block:
    """The events of one kind (and one set of field names) in a frame, as JSON text."""

    kind: str
    count: int
    json: str


#: Integers that a browser reads exactly from JSON: magnitudes below 2**53 (JavaScript numbers are
#: doubles; ``Number.MAX_SAFE_INTEGER`` is 2**53 - 1). ``perf_counter_ns`` stays below it for the
#: first 104 days after the clock's origin (usually the boot).
EXACT_INTEGER_LIMIT = 2**53


def _array_chars(n: int, first: int, last: int) -> int:
    """About how long the JSON array of ``n`` integers from ``first`` to ``last`` is: ``n``
    values as wide as the wider end, commas, brackets (what a compact form has to beat)."""
    return n * (len(str(max(abs(first), abs(last)))) + 1) + 1


def _progression_json(column: Sequence[int]) -> str | None:
    """``{"from": a, "step": s}`` when row ``j`` of ``column`` holds ``a + j*s`` (``s != 0``) and
    that is shorter than the array, else None.

    The common case of a frame's ``i``: the engine blocks of a batch of ``engine.op`` sit at
    every third place. Two subtractions reject most other columns before the whole column is
    compared with a ``range`` (a C loop).
    """
    first, last = column[0], column[-1]
    step = column[1] - first
    if not step or (len(column) > 2 and column[2] - column[1] != step):
        return None
    if not -EXACT_INTEGER_LIMIT < min(first, last) <= max(first, last) < EXACT_INTEGER_LIMIT:
        return None
    text = f'{{"from":{first},"step":{step}}}'
    if len(text) >= _array_chars(len(column), first, last) or list(column) != list(range(first, last + step, step)):
        return None
    return text


def _deltas_json(column: Sequence[int]) -> str | None:
    """``{"from": a, "deltas": [d1, ...]}`` (``n - 1`` differences) when that is shorter and exact, else None.

    Exact: ``|a|`` plus the sum of the differences' magnitudes stays below
    :data:`EXACT_INTEGER_LIMIT`; that sum bounds how far any value lies from ``a``, so every
    value, every difference and every running sum of the decoder is exact. (For times, which
    mostly increase, the sum is about the column's span: the bound is about the last value.)
    Shorter: the differences, a digit wider than their mean (for a sign, or an outlier), and
    the form's keys take fewer characters than the array (times in ns, ids; not sizes in
    bytes). Three C loops: the differences, their magnitudes' sum, the JSON encoder.
    """
    deltas = list(map(sub, islice(column, 1, None), column))
    first, last = column[0], column[-1]
    spread = sum(map(abs, deltas))
    if abs(first) + spread >= EXACT_INTEGER_LIMIT:
        return None
    estimate = len(str(first)) + len(deltas) * (len(str(spread // len(deltas))) + 2) + 20
    if estimate >= _array_chars(len(column), first, last):
        return None
    return f'{{"from":{first},"deltas":{encode_strict(deltas)}}}'


def _integers_json(column: Sequence[Any]) -> str | None:
    """A column of at least two values, all ``int`` (not ``bool``), as a progression or as
    differences when one of them applies; None otherwise (the caller sends the array)."""
    if len(column) < 2 or type(column[0]) is not int or set(map(type, column)) != {int}:
        return None
    return _progression_json(column) or _deltas_json(column)


def _column_json(column: Sequence[Any]) -> str:
    """One field's values: ``{"all": v}`` when every row holds the same value (same type), a
    compact form of integers (:func:`_integers_json`) when there is one, else an array."""
    first = column[0]
    try:
        same = column.count(first) == len(column) and len(set(map(type, column))) == 1
    except (ValueError, TypeError):  # an array's == is not a bool: compare no further
        same = False
    compact = None if same else _integers_json(column)
    if compact is not None:
        return compact
    value: Any = first if same else column
    try:
        text = encode_strict(value)
    except (ValueError, TypeError):  # NaN, a tuple key, ...: say it in JSON's terms
        text = json.dumps(json_safe(value), separators=(",", ":"))
    return f'{{"all":{text}}}' if same else text


def _block_json(kind: str, positions: list[int], times: list[Any], fields: Iterable[tuple[str, str]]) -> Block:
    """The block of ``kind`` at ``positions`` of the frame, with its times and its fields' JSON (name, text)."""
    # positions are ints the encoder made itself: no type check; a batch of engine.op gives a progression
    places = (_progression_json(positions) or _deltas_json(positions)) if len(positions) > 1 else None
    body = ",".join(f"{quote(str(name))}:{text}" for name, text in fields)
    text = (
        f'{{"kind":{quote(kind)},"n":{len(positions)},"i":{places or encode_strict(positions)},'
        f'"t_ns":{_integers_json(times) or encode_strict(times)},"fields":{{{body}}}}}'
    )
    return Block(kind, len(positions), text)


def _checked_values(kind: str, values: list[Any]) -> list[Any]:
    """``values`` (tuples of fields in ``KINDS`` order), after checking that each has every field."""
    names = KINDS.get(kind, ())
    if set(map(len, values)) != {len(names)}:
        bad = next(v for v in values if len(v) != len(names))
        raise ValueError(f"events: {kind} has fields {names}, got {len(bad)} values {bad!r}")
    return values


def _block(kind: str, rows: list[RawEvent], positions: list[int]) -> Block:
    values = list(map(_values_of, rows))
    first = values[0]
    if isinstance(first, dict):
        names: tuple[str, ...] = tuple(first)
        columns = list(zip(*map(dict.values, values), strict=True)) if names else []
    else:
        names = KINDS.get(kind, ())
        columns = list(zip(*_checked_values(kind, values), strict=True)) if names else []
    fields = zip(names, map(_column_json, columns), strict=True)
    return _block_json(kind, positions, list(map(_t_of, rows)), fields)


def _operation_blocks(rows: list[RawEvent], positions: list[int]) -> list[Block]:
    """The engine.push, engine.start and engine.end blocks of ``engine.op`` rows (what
    :func:`framework.events.expand` would give), built column by column: the ``k``-th part of
    the row at ``p`` goes to ``p + k``."""
    values = list(map(_values_of, rows))
    if set(map(type, values)) != {tuple}:  # fields given as dicts (publish, a replay): rare
        names = KINDS["engine.op"]
        values = [tuple(v.get(n) for n in names) if isinstance(v, dict) else v for v in values]
    columns = list(zip(*_checked_values("engine.op", values), strict=True))
    end_times = list(map(_t_of, rows))
    shared = {field for _, fields, _ in OPERATION_PARTS for field in fields}  # op, worker, ...: in several kinds
    texts = {field: _column_json(columns[field]) for field in shared}  # each encoded once
    return [
        _block_json(
            kind,
            list(map(add, positions, repeat(k))),
            end_times if time_at is None else columns[time_at],
            zip(KINDS[kind], map(texts.__getitem__, fields), strict=True),
        )
        for k, (kind, fields, time_at) in enumerate(OPERATION_PARTS)
    ]


def _blocks_of_kind(kind: str, rows: list[RawEvent], positions: list[int]) -> list[Block]:
    """One block for events of one kind; events published with dicts of fields split by field names."""
    if set(map(type, map(_values_of, rows))) == {tuple}:  # emit()'s events: the kind decides the fields
        return [_block(kind, rows, positions)]
    shapes: dict[Any, tuple[list[RawEvent], list[int]]] = {}
    for row, position in zip(rows, positions, strict=True):  # publish()'s events: rare, a loop will do
        values = row[2]
        shape = tuple(values) if isinstance(values, dict) else len(values)
        group = shapes.setdefault(shape, ([], []))
        group[0].append(row)
        group[1].append(position)
    return [_block(kind, group_rows, group_positions) for group_rows, group_positions in shapes.values()]


def as_raw(event: RawEvent | dict[str, Any]) -> RawEvent:
    """A raw event ``(kind, t_ns, values)``; an event dict becomes ``(kind, t_ns, {other fields})``."""
    if isinstance(event, dict):
        fields = dict(event)
        return (str(fields.pop("kind")), fields.pop("t_ns"), fields)
    return event


def encode_blocks(events: list[RawEvent]) -> tuple[Block, ...]:
    """The blocks of a frame holding ``events`` (raw events, in publication order).

    Grouping is a stable sort of the positions by kind (kinds numbered in order of first
    appearance), so each block's rows keep their order and no Python code runs per event.
    An ``engine.op`` (one quick operation, :data:`framework.events.combine_operations`) is
    encoded as the three events it stands for, in three places of the frame; its
    engine.push, engine.start and engine.end blocks are built from its columns directly,
    without making the three event tuples first.
    """
    if not events:
        return ()
    kinds = list(map(_kind_of, events))
    codes = {kind: code for code, kind in enumerate(dict.fromkeys(kinds))}
    if len(codes) == 1:  # one kind (most often a batch of operations): nothing to sort or group
        if kinds[0] == "engine.op":
            return tuple(_operation_blocks(events, list(range(0, 3 * len(events), 3))))
        return tuple(_blocks_of_kind(kinds[0], events, list(range(len(events)))))
    kind_codes = list(map(codes.__getitem__, kinds))
    order = sorted(range(len(events)), key=kind_codes.__getitem__)
    op_code = codes.get("engine.op")
    places: list[int] | None = None  # where each event goes in the frame, when an engine.op takes three
    if op_code is not None:
        widths = map((1, 3).__getitem__, map(op_code.__eq__, kind_codes))  # an engine.op takes 3 places
        places = list(accumulate(widths, initial=0))
    blocks: list[Block] = []
    for code, group in groupby(order, kind_codes.__getitem__):
        indices = list(group)
        rows = list(map(events.__getitem__, indices))
        positions = indices if places is None else list(map(places.__getitem__, indices))
        if code == op_code:
            blocks += _operation_blocks(rows, positions)
        else:
            blocks += _blocks_of_kind(rows[0][0], rows, positions)
    return tuple(blocks)


def frame_size(events: list[RawEvent]) -> int:
    """The number of events a frame of ``events`` holds: an ``engine.op`` counts three."""
    return len(events) + 2 * sum(1 for raw in events if raw[0] == "engine.op")


@dataclass(frozen=True)
class Frame:
    """``count`` consecutive events starting at stream index ``seq``, as blocks of JSON.

    A thinned frame keeps the positions of the events it still holds; ``count`` stays the
    number of events the frame had, ``dropped`` says how many of each kind were left out.
    """

    seq: int
    count: int
    blocks: tuple[Block, ...]
    dropped: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(cls, seq: int, events: list[RawEvent]) -> Frame:
        return cls(seq, frame_size(events), encode_blocks(events))

    @property
    def held(self) -> int:
        """Events this frame holds (``count`` minus what thinning left out)."""
        return sum(block.count for block in self.blocks)

    @property
    def json(self) -> str:
        """The frame object (see the module docstring)."""
        body = ",".join(block.json for block in self.blocks)
        dropped = ""
        if self.dropped:
            dropped = ',"dropped":{' + ",".join(f"{quote(kind)}:{n}" for kind, n in self.dropped) + "}"
        return f'{{"seq":{self.seq},"n":{self.count},"blocks":[{body}]{dropped}}}'

    @property
    def chars(self) -> int:
        return sum(len(block.json) for block in self.blocks) + 40

    def kind_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for block in self.blocks:
            counts[block.kind] = counts.get(block.kind, 0) + block.count
        return counts

    def thinned(self, max_block_events: int) -> Frame:
        """The same frame with only its small blocks (at most ``max_block_events`` rows each).

        What a client that fell behind still receives of a frame: the rare kinds (a metric, a
        memory plan, a marker) pass, the flood (engine operations) is left out and counted.
        """
        kept = tuple(b for b in self.blocks if b.count <= max_block_events)
        dropped: dict[str, int] = dict(self.dropped)
        for block in self.blocks:
            if block.count > max_block_events:
                dropped[block.kind] = dropped.get(block.kind, 0) + block.count
        return Frame(self.seq, self.count, kept, tuple(dropped.items()))

    def decode(self) -> list[dict[str, Any]]:
        return decode_frame(json.loads(self.json))

    def packed(self) -> PackedFrame:
        """The same frame, compressed (a finished run's history is kept this way)."""
        text = self.json
        kinds = tuple(self.kind_counts().items())
        return PackedFrame(self.seq, self.count, len(text), zlib.compress(text.encode("utf-8"), 1), kinds)


@dataclass(frozen=True)
class PackedFrame:
    """A :class:`Frame` kept zlib-compressed; ``json`` inflates it again when a message or a download needs it."""

    seq: int
    count: int
    chars: int  # the length of the inflated JSON
    data: bytes
    kinds: tuple[tuple[str, int], ...] = ()  # how many events of each kind it holds

    @property
    def json(self) -> str:
        return zlib.decompress(self.data).decode("utf-8")

    @property
    def held(self) -> int:
        return sum(n for _, n in self.kinds)

    def kind_counts(self) -> dict[str, int]:
        return dict(self.kinds)

    def thinned(self, max_block_events: int) -> Frame:
        """Nothing of it (a packed frame is not taken apart again): every event counted as left out."""
        return Frame(self.seq, self.count, (), self.kinds)

    def decode(self) -> list[dict[str, Any]]:
        return decode_frame(json.loads(self.json))

    def packed(self) -> PackedFrame:
        return self


StoredFrame = Frame | PackedFrame  # what a run's history holds


def column_values(column: list[Any] | dict[str, Any], n: int) -> Sequence[Any]:
    """The ``n`` values of a parsed column in any of its forms: an array, ``{"all": v}``,
    ``{"from": a, "step": s}`` or ``{"from": a, "deltas": [...]}`` (see the module docstring)."""
    if isinstance(column, list):
        values: Sequence[Any] = column
    elif "all" in column:
        values = (column["all"],) * n
    elif "step" in column:
        start, step = column["from"], column["step"]
        values = range(start, start + step * n, step) if step else (start,) * n
    elif "deltas" in column:
        values = list(accumulate(column["deltas"], initial=column["from"]))
    else:
        raise ValueError(f"frame: a column is an array, 'all', 'step' or 'deltas', got the keys {sorted(column)}")
    if len(values) != n:
        raise ValueError(f"frame: a column of a block of {n} rows holds {len(values)} values")
    return values


def decode_frame(frame: dict[str, Any]) -> list[dict[str, Any]]:
    """The event dicts of a parsed frame, in publication order (left-out events are skipped).

    The Python twin of the browser's decoder (webui/src/frames.js); the trace download uses it.
    """
    rows: list[dict[str, Any] | None] = [None] * frame["n"]
    for block in frame["blocks"]:
        n, kind = block["n"], block["kind"]
        columns = {name: column_values(column, n) for name, column in block["fields"].items()}
        names = list(columns)
        places, times = column_values(block["i"], n), column_values(block["t_ns"], n)
        for j, (position, t_ns) in enumerate(zip(places, times, strict=True)):
            event = {"kind": kind, "t_ns": t_ns}
            for name in names:
                event[name] = columns[name][j]
            rows[position] = event
    return [row for row in rows if row is not None]


def frames_message(frames: Iterable[StoredFrame], dropped: int, dropped_kinds: dict[str, int]) -> str:
    """One ``frames`` message: the frames' JSON inside a small envelope (see docs/server.md)."""
    body = ",".join(frame.json for frame in frames)
    kinds = json.dumps(dropped_kinds, separators=(",", ":"))
    return f'{{"type":"frames","frames":[{body}],"dropped":{dropped},"dropped_kinds":{kinds}}}'
