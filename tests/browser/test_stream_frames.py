"""The browser's side of the frame format: its decoder agrees with the server's, and a stream the
server only sampled (a page that fell behind) shows as gaps in the timeline and a drop count."""

from __future__ import annotations

import json

import pytest

from server.frames import Frame

from .browser_helpers import open_ui

pytestmark = pytest.mark.browser

RAW = [
    ("engine.push", 1_000_000, (7, "X1", "cpu(0)", [], [1], 0, "normal")),
    ("engine.start", 2_000_000, (7, "cpu(0)/normal/0", None)),
    ("monitor", 2_500_000, {"name": "fc1_output", "value": 0.25}),  # any kind passes, with its own fields
    ("engine.end", 3_000_000, (7, "cpu(0)/normal/0", None, None)),
    ("train.metric", 4_000_000, {"epoch": 0, "batch": 1, "name": "accuracy", "value": float("nan")}),
]


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
