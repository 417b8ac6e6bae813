"""The frame encoder's compact integer columns: which form each column takes, that every form
decodes to the values it stands for, and that values a browser could not read exactly stay arrays."""

from __future__ import annotations

import json

import pytest

from framework import events
from server.frames import EXACT_INTEGER_LIMIT, Frame, column_values, decode_frame

T0 = 81_230_000_000_000  # a perf_counter_ns value about a day after boot: 14 digits


def _blocks(raw: list) -> list[dict]:
    return json.loads(Frame.of(0, raw).json)["blocks"]


def _operation(op: int, t_end: int) -> events.RawEvent:
    """One engine.op: push 3000 ns and start 1000 ns before its end."""
    values = (op, "tiny", "cpu(0)", (), (1,), 0, "normal", "cpu(0)/normal/0", None, None, t_end - 3000, t_end - 1000)
    return ("engine.op", t_end, values)


def test_a_batch_of_operations_sends_places_as_progressions_and_times_as_differences():
    raw = [_operation(2000 + 4 * k, T0 + 5000 * k + (k % 3) * 7) for k in range(666)]
    frame = Frame.of(0, raw)
    push, start, end = json.loads(frame.json)["blocks"]
    assert [b["i"] for b in (push, start, end)] == [{"from": k, "step": 3} for k in range(3)]
    assert end["t_ns"]["from"] == T0 and len(end["t_ns"]["deltas"]) == 665
    assert push["t_ns"]["from"] == T0 - 3000 and start["t_ns"]["from"] == T0 - 1000
    assert push["fields"]["op"] == {"from": 2000, "step": 4}  # ids pushed in order: a progression too
    assert frame.decode() == Frame.of(0, events.expand(raw)).decode()
    assert Frame.of(0, raw).json == Frame.of(0, events.expand(raw)).json  # the same text as expanding first
    decoded = frame.decode()
    assert [e["t_ns"] for e in decoded[2::3]] == [T0 + 5000 * k + (k % 3) * 7 for k in range(666)]
    assert len(frame.json) / 666 < 40  # characters per operation (about 75 as plain arrays)


def test_differences_may_be_negative_and_decode_exactly():
    times = [T0, T0 + 900, T0 + 400, T0 + 2500, T0 + 2400, T0 - 100] * 4  # ends out of order: two workers
    ids = [5000, 5001, 4999, 5003, 4998, 5004] * 4
    raw = [("engine.start", t, (op, "w", None)) for t, op in zip(times, ids, strict=True)]
    (block,) = _blocks(raw)
    assert block["t_ns"]["from"] == T0 and min(block["t_ns"]["deltas"]) < 0
    assert block["fields"]["op"]["deltas"][:6] == [1, -2, 4, -5, 6, -4]
    decoded = Frame.of(0, raw).decode()
    assert [e["t_ns"] for e in decoded] == times and [e["op"] for e in decoded] == ids


def test_a_column_stays_an_array_when_no_form_is_shorter():
    sizes = [4096, 64, 1_048_576, 12, 300_000, 8, 65_536, 2, 9999, 77, 123_456, 5]  # differences as wide as values
    raw = [("storage.alloc", T0 + k, {"bytes": size}) for k, size in enumerate(sizes)]
    (block,) = _blocks(raw)
    assert block["fields"]["bytes"] == sizes
    assert block["t_ns"] == {"from": T0, "step": 1} and block["i"] == {"from": 0, "step": 1}
    two = _blocks([("m", T0, {"v": 10}), ("m", T0 + 7, {"v": 12})])[0]
    assert two["i"] == [0, 1] and two["t_ns"] == [T0, T0 + 7] and two["fields"]["v"] == [10, 12]  # too short to pay
    ragged = [("m", t, {}) for t in (T0, T0 + 3, T0 + 6, T0 + 10, T0 + 13, T0 + 16, T0 + 20, T0 + 23, T0 + 26)]
    assert _blocks(ragged)[0]["t_ns"] == {"from": T0, "deltas": [3, 3, 4, 3, 3, 4, 3, 3]}  # not a progression


def test_a_single_row_is_an_array_or_a_constant():
    (block,) = _blocks([("engine.start", T0, (7, "w", None))])
    assert block["i"] == [0] and block["t_ns"] == [T0] and block["fields"]["op"] == {"all": 7}
    assert Frame.of(3, [("engine.start", T0, (7, "w", None))]).decode()[0]["t_ns"] == T0


@pytest.mark.parametrize(
    "times",
    [
        [EXACT_INTEGER_LIMIT + k for k in range(20)],  # past 2**53: doubles cannot hold them
        [-EXACT_INTEGER_LIMIT - k for k in range(20)],
        [EXACT_INTEGER_LIMIT - 10 + k for k in range(20)],  # crossing it
        [k * (EXACT_INTEGER_LIMIT // 8) for k in range(10)],  # a progression whose end passes it
        [0, EXACT_INTEGER_LIMIT // 2 + 1] * 10,  # each value exact, the differences summed are not
    ],
)
def test_values_a_browser_cannot_read_exactly_fall_back_to_the_array(times):
    raw = [("m", t, {"v": t}) for t in times]
    (block,) = _blocks(raw)
    assert block["t_ns"] == times and block["fields"]["v"] == times
    assert [e["t_ns"] for e in Frame.of(0, raw).decode()] == times


def test_just_below_the_limit_the_compact_forms_still_apply():
    top = EXACT_INTEGER_LIMIT - 1
    times = [top - 10 * (19 - k) for k in range(20)]
    (block,) = _blocks([("m", t, {}) for t in times])
    assert block["t_ns"] == {"from": times[0], "step": 10}
    assert list(column_values(block["t_ns"], 20)) == times


def test_dict_field_events_keep_their_types():
    flags = [("m", T0 + 1000 * k, {"id": 10_000 + k, "flag": k % 2 == 0, "mixed": 100_000 + k}) for k in range(12)]
    flags[5] = ("m", T0 + 5000, {"id": 10_005, "flag": False, "mixed": True})  # a bool among the ints
    (block,) = _blocks(flags)
    assert block["fields"]["id"] == {"from": 10_000, "step": 1}
    assert block["fields"]["flag"] == [k % 2 == 0 for k in range(12)]
    assert block["fields"]["mixed"][5] is True  # not an int column: an array, the bool stays a bool
    decoded = Frame.of(0, flags).decode()
    assert decoded[5]["mixed"] is True and decoded[4]["mixed"] == 100_004
    floats = [("m", T0 + k, {"x": 1.0 * k}) for k in range(12)]  # floats are never differences
    assert _blocks(floats)[0]["fields"]["x"] == [1.0 * k for k in range(12)]
    numpy_times = [("m", float(T0 + k), {}) for k in range(12)]  # a replay's float times: the array
    assert _blocks(numpy_times)[0]["t_ns"] == [float(T0 + k) for k in range(12)]


def test_frames_in_the_old_form_still_decode():
    old = {
        "seq": 0,
        "n": 3,
        "blocks": [
            {"kind": "engine.push", "n": 2, "i": [0, 2], "t_ns": [T0, T0 + 9],
             "fields": {"op": [7, 8], "name": {"all": "x"}}},
            {"kind": "engine.start", "n": 1, "i": [1], "t_ns": [T0 + 5], "fields": {"op": [7]}},
        ],
    }  # fmt: skip
    assert decode_frame(old) == [
        {"kind": "engine.push", "t_ns": T0, "op": 7, "name": "x"},
        {"kind": "engine.start", "t_ns": T0 + 5, "op": 7},
        {"kind": "engine.push", "t_ns": T0 + 9, "op": 8, "name": "x"},
    ]


def test_every_column_form_decodes_and_a_malformed_one_is_named():
    assert list(column_values({"from": 5, "step": -2}, 4)) == [5, 3, 1, -1]
    assert list(column_values({"from": 5, "step": 0}, 3)) == [5, 5, 5]
    assert column_values({"from": 5, "deltas": [1, -3]}, 3) == [5, 6, 3]
    assert list(column_values({"all": None}, 2)) == [None, None]
    with pytest.raises(ValueError, match=r"got the keys \['from', 'steps'\]"):
        column_values({"from": 5, "steps": 1}, 3)
    with pytest.raises(ValueError, match="a column of a block of 3 rows holds 2 values"):
        column_values({"from": 5, "deltas": [1]}, 3)
    with pytest.raises(ValueError, match="a column of a block of 2 rows holds 3 values"):
        column_values([1, 2, 3], 2)


def test_a_thinned_frame_keeps_the_compact_forms_of_what_it_holds():
    raw = [_operation(k, T0 + 5000 * k) for k in range(100)] + [("train.metric", T0 + 600_000, {"value": 0.5})]
    thinned = Frame.of(0, raw).thinned(64)
    (metric,) = json.loads(thinned.json)["blocks"]
    assert metric["i"] == [300] and thinned.decode() == [{"kind": "train.metric", "t_ns": T0 + 600_000, "value": 0.5}]
