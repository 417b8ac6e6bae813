"""Frames: a batch of consecutive events as column arrays, one block per kind, in strict JSON.

Why columns: engine events come three per operation, hundreds of thousands a second, and
each event as its own JSON object repeats every key and every unchanging value ("ctx":
"cpu(0)", "stream": null, ...). A frame instead groups its events by kind (and, for events
published with a dict of fields, by field names) into *blocks*; a block holds one array per
field, so keys appear once per block, and a field with the same value in every row of the
block is sent once. The grouping and the encoding of whole arrays run in C (``sorted``,
``map``, ``zip``, the ``json`` encoder), not a Python loop per event.

The JSON of one frame (docs/server.md, "The WebSocket")::

    {"seq": 120, "n": 5, "blocks": [
      {"kind": "engine.push", "n": 2, "i": [0, 3], "t_ns": [10, 40],
       "fields": {"op": [7, 8], "name": ["a", "b"], "ctx": {"all": "cpu(0)"}, ...}},
      {"kind": "engine.start", "n": 3, "i": [1, 2, 4], ...}]}

``seq`` is the stream index of the frame's first event and ``n`` its number of events;
``i`` places each row of a block in the frame (0 .. n-1), so the events can be put back in
publication order, and a block that is left out (:meth:`Frame.thinned`) leaves holes
rather than shifting the rest. A field is either an array with one value per row or
``{"all": value}``. Values JSON cannot say exactly are made JSON-safe (:func:`json_safe`).
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate, groupby
from operator import itemgetter
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


def _column_json(column: tuple[Any, ...]) -> str:
    """One field's values: ``{"all": v}`` when every row holds the same value (same type), else an array."""
    first = column[0]
    try:
        same = column.count(first) == len(column) and len(set(map(type, column))) == 1
    except (ValueError, TypeError):  # an array's == is not a bool: compare no further
        same = False
    value: Any = first if same else column
    try:
        text = encode_strict(value)
    except (ValueError, TypeError):  # NaN, a tuple key, ...: say it in JSON's terms
        text = json.dumps(json_safe(value), separators=(",", ":"))
    return f'{{"all":{text}}}' if same else text


def _columns_block(
    kind: str, names: tuple[str, ...], columns: list[Any], times: list[int], positions: list[int]
) -> Block:
    """The block of ``kind`` whose field ``names[j]`` holds ``columns[j]``, one value per row."""
    fields = ",".join(f"{quote(str(name))}:{_column_json(column)}" for name, column in zip(names, columns, strict=True))
    text = (
        f'{{"kind":{quote(kind)},"n":{len(positions)},"i":{encode_strict(positions)},'
        f'"t_ns":{encode_strict(times)},"fields":{{{fields}}}}}'
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
    return _columns_block(kind, names, columns, list(map(_t_of, rows)), positions)


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
    return [
        _columns_block(
            kind,
            KINDS[kind],
            [columns[i] for i in fields],
            end_times if time_at is None else columns[time_at],
            [p + k for p in positions],
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
    kind_codes = list(map(codes.__getitem__, kinds))
    order = sorted(range(len(events)), key=kind_codes.__getitem__)
    op_code = codes.get("engine.op")
    places: list[int] | None = None  # where each event goes in the frame, when an engine.op takes three
    if op_code is not None:
        places = list(accumulate((3 if code == op_code else 1 for code in kind_codes), initial=0))
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


def decode_frame(frame: dict[str, Any]) -> list[dict[str, Any]]:
    """The event dicts of a parsed frame, in publication order (left-out events are skipped).

    The Python twin of the browser's decoder (webui/src/frames.js); the trace download uses it.
    """
    rows: list[dict[str, Any] | None] = [None] * frame["n"]
    for block in frame["blocks"]:
        n, kind = block["n"], block["kind"]
        columns = {
            name: (column["all"],) * n if isinstance(column, dict) else column
            for name, column in block["fields"].items()
        }
        names = list(columns)
        for j, (position, t_ns) in enumerate(zip(block["i"], block["t_ns"], strict=True)):
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
