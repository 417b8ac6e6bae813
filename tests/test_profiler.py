"""The profiler: traces, tables and timelines built from real engine runs and synthetic events."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import framework as mx
from framework import events, profiler, storage


@pytest.fixture(autouse=True)
def fresh_profiler():
    """Every test starts and ends with a stopped, default-configured, empty profiler."""
    profiler.set_state("stop")
    profiler.set_config()
    profiler.clear()
    yield
    profiler.set_state("stop")
    profiler.set_config()
    profiler.clear()


def sleeper(ms: float):
    def fn(run_ctx):
        time.sleep(ms / 1000)

    return fn


def meeting(barrier: threading.Barrier, ms: float):
    """Wait until every party of ``barrier`` runs, then sleep: the parties overlap on any machine."""

    def fn(run_ctx):
        barrier.wait()
        time.sleep(ms / 1000)

    return fn


def noop(run_ctx):
    pass


def fail(run_ctx):
    raise ValueError("boom in the profiled op")


def lanes_of(timeline: str) -> dict[str, str]:
    """{label: bar string} for every ``label |bars|`` row of a text timeline."""
    rows = {}
    for line in timeline.splitlines():
        if " |" in line and line.endswith("|"):
            label, bars = line.split(" |", 1)
            rows[label.strip()] = bars[:-1]
    return rows


def by_phase(trace: dict, ph: str) -> list[dict]:
    return [e for e in trace["traceEvents"] if e["ph"] == ph]


# ----------------------------------------------------------------------------- Chrome trace
def test_chrome_trace_of_a_real_run_is_well_formed(make_engine):
    eng = make_engine("ThreadedEnginePerDevice", 2)
    a, b, c = eng.new_variable("a"), eng.new_variable("b"), eng.new_variable("c")
    profiler.set_state("run")
    for i in range(6):
        eng.push_sync(sleeper(1), mx.cpu(0), mutable_vars=[a if i % 2 else b], name="work0")
        eng.push_sync(sleeper(1), mx.cpu(1), const_vars=[a], mutable_vars=[c], name="work1")
    eng.push_sync(fail, mx.cpu(0), mutable_vars=[b], name="failing")
    with pytest.raises(ValueError, match="boom"):
        eng.wait_for_all()
    profiler.set_state("stop")
    recorded = profiler.recorded_events()
    trace = json.loads(json.dumps(profiler.chrome_trace(recorded)))  # valid JSON round trip

    assert trace["displayTimeUnit"] == "ms"
    processes = {e["args"]["name"]: e["pid"] for e in by_phase(trace, "M") if e["name"] == "process_name"}
    assert {"cpu(0)", "cpu(1)"} <= processes.keys()
    assert processes["cpu(0)"] != processes["cpu(1)"]

    # one thread_name per worker that ran something, in the process of its device
    ran = {(e["worker"]) for e in recorded if e["kind"] == "engine.start"}
    threads = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in by_phase(trace, "M")
        if e["name"] == "thread_name" and e["args"]["name"] != "waits"
    }
    assert set(threads.values()) == ran
    assert len(threads) == len(ran)
    for (pid, _), worker in threads.items():
        device = worker.split("/")[0]
        assert processes[device] == pid

    # B/E pairs nest per thread, timestamps never go back
    stacks: dict[tuple, list[str]] = {}
    last_ts: dict[tuple, float] = {}
    for e in trace["traceEvents"]:
        if e["ph"] not in "BE":
            continue
        assert e["cat"] == "operator"
        key = (e["pid"], e["tid"])
        assert e["ts"] >= last_ts.get(key, 0.0)
        last_ts[key] = e["ts"]
        if e["ph"] == "B":
            stacks.setdefault(key, []).append(e["name"])
        else:
            assert stacks[key].pop() == e["name"]
    assert all(not stack for stack in stacks.values())
    begins = by_phase(trace, "B")
    assert len(begins) == 13
    assert {e["name"] for e in begins} == {"work0", "work1", "failing"}

    failing = next(e for e in begins if e["name"] == "failing")
    assert "boom in the profiled op" in failing["args"]["error"]
    assert failing["args"]["writes"] == [b.id]
    work1 = next(e for e in begins if e["name"] == "work1")
    assert work1["pid"] == processes["cpu(1)"]
    assert work1["args"]["reads"] == [a.id] and work1["args"]["prop"] == "normal"
    assert "error" not in work1["args"] and work1["args"]["priority"] == 0

    waits = [e for e in by_phase(trace, "X") if e["cat"] == "wait"]
    assert [w["name"] for w in waits] == ["wait_for_all"] and waits[0]["dur"] > 0
    assert processes["host"] == waits[0]["pid"]


def test_still_running_operations_are_closed_at_the_last_timestamp():
    recorded = [
        {"kind": "engine.push", "t_ns": 1_000, "op": 7, "name": "long", "ctx": "cpu(0)", "reads": [], "writes": [1],
         "priority": 0, "prop": "normal"},
        {"kind": "engine.start", "t_ns": 2_000, "op": 7, "worker": "cpu(0)/normal/0", "stream": None},
        {"kind": "engine.push", "t_ns": 3_000, "op": 8, "name": "queued", "ctx": "cpu(0)", "reads": [1],
         "writes": [], "priority": 0, "prop": "normal"},
        {"kind": "engine.wait_begin", "t_ns": 9_000, "var": "all"},
    ]  # fmt: skip
    trace = profiler.chrome_trace(recorded)
    ends = by_phase(trace, "E")
    assert [(e["name"], e["ts"], e["args"]["unfinished"]) for e in ends] == [("long", 8.0, True)]
    assert [e["name"] for e in by_phase(trace, "B")] == ["long"]  # never started: omitted
    assert profiler.aggregate(recorded) == []  # no end: no duration to count
    assert "still running" in profiler.text_timeline(recorded)


# ----------------------------------------------------------------------------- aggregate table
def test_aggregate_counts_and_orders_by_total_time(make_engine):
    eng = make_engine("ThreadedEngine", 2)
    v = eng.new_variable("v")
    profiler.set_state("run")
    for _ in range(3):
        eng.push_sync(sleeper(20), mx.cpu(0), mutable_vars=[v], name="slow")  # far above 5 no-ops on any machine
    for _ in range(5):
        eng.push_sync(noop, mx.cpu(0), mutable_vars=[v], name="fast")
    eng.wait_for_all()
    profiler.set_state("stop")

    rows = profiler.aggregate(profiler.recorded_events())
    assert [(r["name"], r["count"]) for r in rows] == [("slow", 3), ("fast", 5)]
    slow = rows[0]
    assert slow["min_ms"] >= 19.5 and slow["min_ms"] <= slow["avg_ms"] <= slow["max_ms"]
    assert slow["total_ms"] == pytest.approx(3 * slow["avg_ms"])

    table = profiler.format_table(rows)
    assert table.startswith("Profile Statistics:")
    for column in ("Name", "Total Count", "Time (ms)", "Min Time (ms)", "Max Time (ms)", "Avg Time (ms)"):
        assert column in table
    lines = table.splitlines()
    slow_line = next(line for line in lines if line.startswith("slow"))
    assert slow_line.split()[1] == "3"
    assert lines.index(slow_line) < lines.index(next(line for line in lines if line.startswith("fast")))


def test_many_operations_from_many_workers_are_all_recorded(make_engine):
    eng = make_engine("ThreadedEngine", 4)
    variables = [eng.new_variable(f"v{i}") for i in range(8)]
    profiler.set_state("run")
    for i in range(400):
        eng.push_sync(noop, mx.cpu(0), mutable_vars=[variables[i % 8]], name="tiny")
    eng.wait_for_all()
    profiler.set_state("stop")
    assert profiler.aggregate(profiler.recorded_events())[0]["count"] == 400


# ----------------------------------------------------------------------------- text timeline
def test_timeline_shows_independent_operations_overlapping(make_engine):
    eng = make_engine("ThreadedEnginePerDevice", 2)
    x, y = eng.new_variable("x"), eng.new_variable("y")
    both = threading.Barrier(2, timeout=10)  # breaks (and fails the run) unless left and right run at once
    with events.record() as rec:
        eng.push_sync(meeting(both, 20), mx.cpu(0), mutable_vars=[x], name="left")
        eng.push_sync(meeting(both, 20), mx.cpu(0), mutable_vars=[y], name="right")
        eng.wait_for_all()
    timeline = profiler.text_timeline(rec.events, width=60)
    lanes = lanes_of(timeline)
    workers = [label for label in lanes if label != "overlap"]
    assert workers == ["cpu(0)/normal/0", "cpu(0)/normal/1"]
    first, second = (lanes[w] for w in workers)
    assert len(first) == 60
    assert any(p != " " and q != " " for p, q in zip(first, second, strict=True)), timeline
    assert "2" in lanes["overlap"]
    letter = profiler.timeline_symbols(["left", "right"])
    assert f"{letter['left']} = left" in timeline and f"{letter['right']} = right" in timeline
    assert "0 ms" in timeline


@pytest.mark.parametrize("workers", [1, 2])
def test_timeline_shows_dependent_operations_one_after_the_other(make_engine, workers):
    eng = make_engine("ThreadedEnginePerDevice", workers)
    x = eng.new_variable("x")
    with events.record() as rec:
        eng.push_sync(sleeper(10), mx.cpu(0), mutable_vars=[x], name="produce")
        eng.push_sync(sleeper(10), mx.cpu(0), const_vars=[x], name="consume")
        eng.wait_for_all()
    timeline = profiler.text_timeline(rec.events, width=50)
    lanes = lanes_of(timeline)
    overlap = lanes.pop("overlap")
    assert set(overlap) <= {" ", "1"}, timeline
    if workers == 1:
        assert list(lanes) == ["cpu(0)/normal/0"]
    bars = "".join(max(column) for column in zip(*lanes.values(), strict=True))  # letters win over blanks
    letter = profiler.timeline_symbols(["produce", "consume"])
    bars = "".join(next((c for c in column if c != " "), " ") for column in zip(*lanes.values(), strict=True))
    assert bars.rindex(letter["produce"]) <= bars.index(letter["consume"]), timeline


def test_timeline_letters_come_from_the_names_not_their_order():
    """The same name gets the same letter whatever else ran and in whichever order."""
    assert profiler.stable_hash("") == 0x811C9DC5 and profiler.stable_hash("a") == 0xE40C292C  # FNV-1a vectors
    names = ["X1", "Y1", "X2", "Y2", "P1", "Q1"]
    letters = profiler.timeline_symbols(names)
    assert profiler.timeline_symbols(reversed(names)) == letters
    assert len(set(letters.values())) == len(names)
    alone = profiler.timeline_symbols(["X1"])["X1"]
    assert alone == "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"[profiler.stable_hash("X1") % 62]
    # Two names wanting the same letter: the first in sorted order keeps it, the other takes the next free one.
    first = "op0"
    second = next(
        f"op{i}" for i in range(1, 10_000) if profiler.stable_hash(f"op{i}") % 62 == profiler.stable_hash(first) % 62
    )
    pair = profiler.timeline_symbols([second, first])
    wanted = profiler.timeline_symbols([first])[first]
    assert pair[min(first, second)] == wanted and pair[max(first, second)] != wanted
    many = profiler.timeline_symbols(f"n{i}" for i in range(63))
    assert sorted(many.values()).count("*") == 1 and len(set(many.values())) == 63


def test_views_of_nothing_say_so():
    assert "nothing was recorded" in profiler.text_timeline([])
    assert profiler.chrome_trace([]) == {"traceEvents": [], "displayTimeUnit": "ms"}
    assert profiler.aggregate([]) == []
    assert "no operations recorded" in profiler.format_table([])
    only_waits = [{"kind": "engine.wait_begin", "t_ns": 1, "var": "all"}]
    assert "no engine operation ran" in profiler.text_timeline(only_waits)
    with pytest.raises(ValueError, match="width"):
        profiler.text_timeline(only_waits, width=3)


# ----------------------------------------------------------------------------- memory counters
def test_storage_events_become_counters_per_device():
    profiler.set_state("run")
    events.publish("storage.alloc", handle=1, ctx="cpu(0)", nbytes=1000, rounded=1024, pool_hit=False)
    events.publish("storage.alloc", handle=2, ctx="cpu(1)", nbytes=4096, rounded=4096, pool_hit=False)
    events.publish("storage.alloc", handle=3, ctx="cpu(0)", nbytes=10, rounded=16, pool_hit=True)
    events.publish("storage.free", handle=1, ctx="cpu(0)", nbytes=1000, rounded=1024, pooled=True)
    events.publish("storage.free", handle=99, ctx="cpu(0)", nbytes=8, rounded=8, pooled=True)  # before recording
    profiler.set_state("stop")
    trace = profiler.chrome_trace(profiler.recorded_events())
    pids = {e["args"]["name"]: e["pid"] for e in by_phase(trace, "M") if e["name"] == "process_name"}
    counters = by_phase(trace, "C")
    assert {c["name"] for c in counters} == {"storage bytes in use"}
    series = {device: [c["args"]["bytes"] for c in counters if c["pid"] == pid] for device, pid in pids.items()}
    assert series == {"cpu(0)": [1024, 1040, 16], "cpu(1)": [4096]}


def test_real_storage_allocations_are_profiled():
    profiler.set_state("run")
    handle = storage.alloc(3000, mx.cpu(0))
    storage.free(handle)
    profiler.set_state("stop")
    counters = by_phase(profiler.chrome_trace(profiler.recorded_events()), "C")
    values = [c["args"]["bytes"] for c in counters]
    assert values[-2] >= 3000 and values[-1] == 0


def test_profile_memory_false_leaves_storage_out():
    profiler.set_config(profile_memory=False)
    profiler.set_state("run")
    events.publish("storage.alloc", handle=1, ctx="cpu(0)", nbytes=8, rounded=8, pool_hit=False)
    events.publish("engine.wait_begin", var="all")
    profiler.set_state("stop")
    assert [e["kind"] for e in profiler.recorded_events()] == ["engine.wait_begin"]


# ----------------------------------------------------------------------------- the MXNet API
def test_set_config_rejects_unknown_and_mistyped_arguments():
    with pytest.raises(TypeError, match="profile_everything"):
        profiler.set_config(profile_everything=True)
    with pytest.raises(TypeError, match="profile_memory"):
        profiler.set_config(profile_memory="yes")
    with pytest.raises(TypeError, match="filename"):
        profiler.set_config(filename=3)
    profiler.set_config(filename="x.json", aggregate_stats=True)
    assert profiler.get_config()["filename"] == "x.json"


def test_set_state_accepts_only_run_and_stop():
    assert profiler.state() == profiler.get_state() == "stop"
    for bad in ("go", "RUN", 1, None):
        with pytest.raises(ValueError, match=r"run.*stop"):
            profiler.set_state(bad)
    profiler.set_state("run")
    assert profiler.get_state() == "run"
    assert events.enabled
    profiler.set_state("stop")
    assert profiler.state() == "stop"


def test_pause_and_resume(make_engine):
    eng = make_engine("NaiveEngine")
    v = eng.new_variable("v")
    profiler.set_state("run")
    eng.push_sync(noop, mx.cpu(0), mutable_vars=[v], name="before")
    profiler.pause()
    assert profiler.state() == "run"
    eng.push_sync(noop, mx.cpu(0), mutable_vars=[v], name="paused")
    profiler.resume()
    eng.push_sync(noop, mx.cpu(0), mutable_vars=[v], name="after")
    profiler.set_state("stop")
    eng.push_sync(noop, mx.cpu(0), mutable_vars=[v], name="stopped")
    names = [r["name"] for r in profiler.aggregate(profiler.recorded_events())]
    assert sorted(names) == ["after", "before"]
    letter = profiler.timeline_symbols(["before", "after"])["before"]
    assert f"{letter} = before" in profiler.text_timeline(profiler.recorded_events())


def test_dump_writes_a_trace_and_finished_clears_it(make_engine, tmp_path):
    eng = make_engine("ThreadedEnginePerDevice", 2)
    v = eng.new_variable("v")
    target = tmp_path / "trace.json"
    profiler.set_config(filename=str(target))
    profiler.set_state("run")
    eng.push_sync(noop, mx.cpu(0), mutable_vars=[v], name="dumped")
    eng.wait_for_all()
    profiler.set_state("stop")

    profiler.dump(finished=False)
    with open(target) as f:
        kept = json.load(f)
    assert [e["name"] for e in by_phase(kept, "B")] == ["dumped"]
    profiler.dump()  # finished=True: written, then forgotten
    with open(target) as f:
        assert [e["name"] for e in by_phase(json.load(f), "B")] == ["dumped"]
    assert profiler.recorded_events() == []
    profiler.dump()
    with open(target) as f:
        assert by_phase(json.load(f), "B") == []


def test_continuous_dump_writes_on_stop(make_engine, tmp_path):
    eng = make_engine("NaiveEngine")
    target = tmp_path / "live.json"
    profiler.set_config(filename=target, continuous_dump=True)
    profiler.set_state("run")
    eng.push_sync(noop, mx.cpu(0), mutable_vars=[eng.new_variable()], name="seen")
    profiler.set_state("stop")
    with open(target) as f:
        assert [e["name"] for e in by_phase(json.load(f), "B")] == ["seen"]


def test_dumps_after_reset_is_empty(make_engine):
    eng = make_engine("ThreadedEngine", 2)
    v = eng.new_variable("v")
    profiler.set_state("run")
    eng.push_sync(noop, mx.cpu(0), mutable_vars=[v], name="counted_once")
    eng.wait_for_all()
    first = profiler.dumps(reset=True)
    assert "counted_once" in first
    after_reset = profiler.dumps()
    assert "counted_once" not in after_reset and "no operations recorded" in after_reset
    eng.push_sync(noop, mx.cpu(0), mutable_vars=[v], name="counted_later")
    eng.wait_for_all()
    profiler.set_state("stop")
    later = profiler.dumps()
    assert "counted_later" in later and "counted_once" not in later
    assert len(by_phase(profiler.chrome_trace(profiler.recorded_events()), "B")) == 2  # trace keeps both


@pytest.mark.parametrize("variable", ["MXLAB_PROFILER_AUTOSTART", "MXNET_PROFILER_AUTOSTART"])
def test_autostart_records_from_import_and_writes_profile_json_at_exit(tmp_path, variable):
    script = (
        "import framework as mx\n"
        "from framework import profiler\n"
        "assert profiler.get_state() == 'run'\n"
        "(mx.nd.ones((2, 2)) * 3).wait_to_read()\n"
    )
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if "PROFILER_AUTOSTART" not in k}
    env.update({variable: "1", "PYTHONPATH": str(root)})
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    trace = json.loads((tmp_path / "profile.json").read_text())
    names = {e.get("name") for e in trace["traceEvents"]}
    assert {"_ones", "_mul_scalar"} <= names, sorted(map(str, names))


def test_without_autostart_nothing_is_written(tmp_path):
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if "PROFILER_AUTOSTART" not in k}
    env["PYTHONPATH"] = str(root)
    script = "import framework as mx\nassert mx.profiler.get_state() == 'stop'\nmx.nd.ones((2,)).wait_to_read()\n"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert not (tmp_path / "profile.json").exists()
