"""The browser's side of the frame format: its decoder agrees with the server's, and a stream the
server only sampled (a page that fell behind) shows as gaps in the timeline and a drop count."""

from __future__ import annotations

import json

import pytest

from server.frames import Frame, decode_frame

from .browser_helpers import open_ui

pytestmark = pytest.mark.browser

RAW = [
    ("engine.push", 1_000_000, (7, "X1", "cpu(0)", [], [1], 0, "normal")),
    ("engine.start", 2_000_000, (7, "cpu(0)/normal/0", None)),
    ("monitor", 2_500_000, {"name": "fc1_output", "value": 0.25}),  # any kind passes, with its own fields
    ("engine.end", 3_000_000, (7, "cpu(0)/normal/0", None, None)),
    ("train.metric", 4_000_000, {"epoch": 0, "batch": 1, "name": "accuracy", "value": float("nan")}),
]


T0 = 81_230_000_000_000  # a perf_counter_ns value a day after boot (14 digits)


def _operation(op: int, t_end: int, worker: str = "cpu(0)/normal/0") -> tuple:
    """One engine.op (push 3000 ns and start 1000 ns before its end), as a watched process sends it."""
    values = (op, "tiny", "cpu(0)", (), (op % 4,), 0, "normal", worker, None, None, t_end - 3000, t_end - 1000)
    return ("engine.op", t_end, values)


def _every_form() -> dict[str, Frame]:
    """Frames whose columns take every form: arrays, constants, progressions, differences (some negative)."""
    batch = [_operation(2000 + 4 * k, T0 + 5000 * k + (k % 3) * 7) for k in range(200)]
    mixed = list(batch[:80])
    mixed[10:10] = [("train.metric", T0 + 50_000, {"epoch": 0, "batch": 1, "name": "accuracy", "value": 0.5})]
    mixed[40:40] = [("engine.var_new", T0 + 200_000 + k, (100 + k, f"v{k}")) for k in range(30)]
    shuffled = [_operation(5000 + (k * 7) % 11, T0 + 900 * ((k * 5) % 13), f"w/{k % 2}") for k in range(40)]
    return {
        "raw": Frame.of(40, RAW),
        "batch": Frame.of(0, batch),
        "mixed": Frame.of(600, mixed),
        "mixed thinned": Frame.of(600, mixed).thinned(64),
        "out of order": Frame.of(9, shuffled),
    }


def _frames(seq: int, count: int, t_ms: float) -> list[dict]:
    """``count`` no-op operations from ``t_ms`` on (push, start, end each), as parsed frame JSON."""
    raw = []
    for k in range(count):
        op, t = seq + k, int((t_ms + k) * 1e6)
        raw += [
            ("engine.push", t, (op, f"op{op}", "cpu(0)", [], [1], 0, "normal")),
            ("engine.start", t + 100_000, (op, "cpu(0)/normal/0", None)),
            ("engine.end", t + 500_000, (op, "cpu(0)/normal/0", None, None)),
        ]
    return json.loads(Frame.of(seq * 3, raw).json)


def test_the_browser_decodes_frames_as_the_server_does(page, server_url):
    open_ui(page, server_url)
    frame = Frame.of(40, RAW)
    thinned = frame.thinned(1)  # blocks of more than one event left out: the engine.push/start/end stay
    decoded = page.evaluate(
        "async ([a, b]) => { const m = await import('/app/frames.js');"
        " return [m.decodeFrame(a), m.decodeFrame(b), m.leftOut(a), m.leftOut(b)]; }",
        [json.loads(frame.json), json.loads(thinned.json)],
    )
    assert decoded[0] == frame.decode()
    assert decoded[0][2] == {"kind": "monitor", "t_ns": 2_500_000, "name": "fc1_output", "value": 0.25}
    assert decoded[1] == thinned.decode() and decoded[2:] == [0, 0]  # nothing of more than one event here
    sparse = Frame.of(0, RAW[:2] + RAW[:2]).thinned(1)
    assert (
        page.evaluate("async (f) => (await import('/app/frames.js')).leftOut(f)", json.loads(sparse.json))
        == sparse.count
    )  # both kinds had two events: all left out


def test_the_browser_decodes_every_column_form_as_the_server_does(page, server_url):
    open_ui(page, server_url)
    frames = _every_form()
    parsed = {name: json.loads(frame.json) for name, frame in frames.items()}
    forms = {
        json.dumps(sorted(column)) if isinstance(column, dict) else "array"
        for frame in parsed.values()
        for block in frame["blocks"]
        for column in (block["i"], block["t_ns"], *block["fields"].values())
    }
    assert forms == {"array", '["all"]', '["from", "step"]', '["deltas", "from"]'}  # every form is exercised
    assert any(d < 0 for b in parsed["out of order"]["blocks"] for d in b["t_ns"].get("deltas", []))
    decoded = page.evaluate(
        "async (frames) => { const m = await import('/app/frames.js');"
        " return Object.fromEntries(Object.entries(frames).map(([k, f]) => [k, m.decodeFrame(f)])); }",
        parsed,
    )
    for name, frame in frames.items():
        assert decoded[name] == frame.decode(), name
    assert len(decoded["mixed thinned"]) == 31 and len(decoded["batch"]) == 600
    error = page.evaluate(
        "async (f) => { try { (await import('/app/frames.js')).decodeFrame(f); return null; }"
        " catch (e) { return String(e.message); } }",
        {"n": 2, "blocks": [{"kind": "k", "n": 2, "i": {"from": 0, "steps": 1}, "t_ns": [1, 2], "fields": {}}]},
    )
    assert error == "frame: a column is an array, all, step or deltas; got the keys from,steps"


def test_the_browser_decodes_frames_in_the_old_form(page, server_url):
    """Frames kept from before the compact integer forms (plain arrays only) decode as they did."""
    open_ui(page, server_url)
    old = {
        "seq": 0,
        "n": 3,
        "blocks": [
            {"kind": "engine.push", "n": 2, "i": [0, 2], "t_ns": [T0, T0 + 9], "fields": {"op": [7, 8]}},
            {"kind": "engine.start", "n": 1, "i": [1], "t_ns": [T0 + 5], "fields": {"op": {"all": 7}}},
        ],
    }
    decoded = page.evaluate("async (f) => (await import('/app/frames.js')).decodeFrame(f)", old)
    expected = [
        {"kind": "engine.push", "t_ns": T0, "op": 7},
        {"kind": "engine.start", "t_ns": T0 + 5, "op": 7},
        {"kind": "engine.push", "t_ns": T0 + 9, "op": 8},
    ]
    assert decoded == decode_frame(old) == expected


def test_a_sampled_stream_shows_gaps_on_the_timeline_and_counts_what_was_dropped(page, server_url):
    open_ui(page, server_url)
    first, later = _frames(0, 10, 0.0), _frames(30, 10, 30.0)  # operations 10..29 never arrive
    thinned = json.loads(Frame(60, 30, (), (("engine.push", 10), ("engine.start", 10), ("engine.end", 10))).json)
    result = page.evaluate(
        """async ([first, thinned, later]) => {
          const { RunModel } = await import('/app/model.js');
          const { Timeline } = await import('/app/timeline.js');
          const host = document.createElement('div');
          host.style.width = '800px';
          document.body.append(host);
          const [legend, detail, reset] = ['div', 'div', 'button'].map((t) => document.createElement(t));
          const model = new RunModel({ id: 'sampled', status: 'running' });
          model.addFrames([first]);
          const wholeGaps = model.sampledRanges().length;
          model.addFrames([thinned], 30, { 'engine.push': 10, 'engine.start': 10, 'engine.end': 10 });
          const openGap = model.sampledRanges().map((g) => ({ ...g }));
          model.addFrames([later, first], 30, {});  // `first` again (a reconnect's history): skipped
          const timeline = new Timeline({ host, legend, detail, resetButton: reset });
          timeline.setModel(model);
          timeline.render(true);
          const gaps = [...host.querySelectorAll('rect.sampled-gap')].map((r) => +r.dataset.events);
          return { wholeGaps, openGap, gaps, bars: host.querySelectorAll('rect.bar').length,
                   ops: model.order.length, dropped: model.dropped, closed: model.gaps };
        }""",
        [first, thinned, later],
    )
    assert result["wholeGaps"] == 0
    assert result["openGap"] == [{"tFrom": 9.5, "tTo": 9.5, "events": 30 + 30}]  # 10..19 skipped, 20..29 thinned
    assert result["closed"] == [{"tFrom": 9.5, "tTo": 30.0, "events": 60}]
    assert result["ops"] == result["bars"] == 20 and result["dropped"] == 30
    assert result["gaps"] == [60]
    assert not page.problems
