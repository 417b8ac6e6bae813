"""mx.profiler's MXNet 1.9.1 API: user instrumentation (Domain, Task, Frame, Event, Counter, Marker,
scope) as events in the trace and the table; set_config keywords; dumps' format, sort_by, ascending."""

from __future__ import annotations

import json
import time

import pytest

import framework as mx
from framework import events, profiler


@pytest.fixture(autouse=True)
def fresh_profiler(tmp_path):
    profiler.set_state("stop")
    profiler.clear()
    profiler.set_config(filename=str(tmp_path / "trace.json"))
    yield
    profiler.set_state("stop")
    profiler.clear()
    profiler.set_config()


def _instrument():
    domain = profiler.Domain("training")
    task = domain.new_task("load batch")
    task.start()
    mx.nd.ones((4, 4)).wait_to_read()
    time.sleep(0.002)
    task.stop()
    counter = profiler.Counter(domain, "batches", 5)
    counter += 3
    counter -= 1
    counter.increment(2)
    counter.decrement()
    counter.set_value(10)
    profiler.Marker(domain, "epoch end").mark("global")
    with domain.new_frame("iteration"):
        pass
    event = profiler.Event("eval")
    event.start()
    event.stop()
    return counter


def test_instrumentation_publishes_events():
    with events.record() as recorder:
        counter = _instrument()
    recorded = recorder.events
    kinds = [e["kind"] for e in recorded if e["kind"].startswith("profiler.")]
    assert kinds[:2] == ["profiler.task_begin", "profiler.task_end"]
    assert [e["value"] for e in recorded if e["kind"] == "profiler.counter"] == [5, 8, 7, 9, 8, 10]
    assert counter.value == 10
    marker = next(e for e in recorded if e["kind"] == "profiler.marker")
    assert marker["domain"] == "training" and marker["scope"] == "global" and marker["thread"]
    begin = next(e for e in recorded if e["kind"] == "profiler.event_begin")
    end = next(e for e in recorded if e["kind"] == "profiler.event_end")
    assert begin["range"] == end["range"] and begin["domain"] is None


def test_instrumentation_is_in_the_chrome_trace_as_its_own_tracks():
    profiler.set_state("run")
    _instrument()
    profiler.set_state("stop")
    trace = json.loads(open(profiler.dump()).read())["traceEvents"]
    processes = {e["args"]["name"]: e["pid"] for e in trace if e.get("name") == "process_name"}
    assert {"training", "training,frame", "training,instant_marker", "event"} <= set(processes)
    task = [e for e in trace if e.get("name") == "load batch"]
    assert [e["ph"] for e in task] == ["b", "e"] and task[0]["id"] == task[1]["id"]
    assert task[0]["pid"] == processes["training"] and task[1]["ts"] >= task[0]["ts"] + 1000  # >= 2 ms, in us
    counters = [e["args"]["batches"] for e in trace if e.get("ph") == "C" and e.get("name") == "batches"]
    assert counters == [5, 8, 7, 9, 8, 10]
    marker = next(e for e in trace if e.get("name") == "epoch end")
    assert marker["ph"] == "i" and marker["s"] == "g" and marker["pid"] == processes["training,instant_marker"]
    assert any(e.get("cat") == "operator" for e in trace)  # next to the engine's operations


def test_unfinished_task_is_closed_at_the_last_event():
    profiler.set_state("run")
    task = profiler.Task(profiler.Domain("d"), "open")
    task.start()
    mx.nd.ones((2,)).wait_to_read()
    profiler.set_state("stop")
    trace = profiler.chrome_trace(profiler.recorded_events())["traceEvents"]
    ends = [e for e in trace if e.get("name") == "open" and e["ph"] == "e"]
    assert len(ends) == 1 and ends[0]["args"] == {"unfinished": True}
    task.stop()


def test_dumps_sections_table_and_json():
    profiler.set_state("run")
    _instrument()
    profiler.set_state("stop")
    table = profiler.dumps()
    for section in ("Device Storage", "operator", "training", "training,frame", "event", "training,counter"):
        assert f"\n{section}\n=================\n" in table
    assert "Memory: cpu(0)" in table and "Min Use  (kB)" in table
    stats = json.loads(profiler.dumps(format="json"))
    assert stats["Unit"] == {"Time": "ms", "Memory": "kB"}
    row = stats["Time"]["training"]["load batch"]
    assert row["Count"] == 1 and row["Total"] >= 2.0 and set(row) == {"Count", "Total", "Min", "Max", "Avg"}
    assert stats["Counter"]["training,counter"]["batches"] == {"Count": 6, "Min": 5, "Max": 10, "Last": 10}
    assert "Memory: cpu(0)" in stats["Memory"]["Device Storage"]


def test_dumps_sorts_rows():
    for ms in (3, 1, 2):
        task = profiler.Task(profiler.Domain("sorting"), f"t{ms}")
        profiler.set_state("run")
        task.start()
        time.sleep(ms / 100)
        task.stop()
    profiler.set_state("stop")
    names = list(json.loads(profiler.dumps(format="json"))["Time"]["sorting"])
    assert names == ["t3", "t2", "t1"]
    names = list(json.loads(profiler.dumps(format="json", sort_by="total", ascending=True))["Time"]["sorting"])
    assert names == ["t1", "t2", "t3"]
    table = profiler.dumps(sort_by="count")
    assert table.index("t1") > 0
    with pytest.raises(ValueError, match="format must be 'table' or 'json'"):
        profiler.dumps(format="csv")
    with pytest.raises(ValueError, match="sort_by must be one of"):
        profiler.dumps(sort_by="name")


def test_misuse_raises_clear_errors():
    domain = profiler.Domain("d")
    task = domain.new_task("t")
    with pytest.raises(profiler.ProfilerError, match="stop\\(\\) without start\\(\\)"):
        task.stop()
    task.start()
    with pytest.raises(profiler.ProfilerError, match="start\\(\\) twice"):
        task.start()
    task.stop()
    with pytest.raises(profiler.ProfilerError, match="expected an int"):
        domain.new_counter("c").increment(0.5)
    with pytest.raises(profiler.ProfilerError, match="scope must be one of"):
        domain.new_marker("m").mark("galaxy")
    with pytest.raises(profiler.ProfilerError, match="domain must be a Domain"):
        profiler.Task("d", "t")
    with pytest.raises(profiler.ProfilerError, match="non-empty string"):
        profiler.Domain("")


def test_scope_names_a_region_and_nests():
    assert profiler.current_scope() == "<unk>:"
    with events.record() as recorder:
        with profiler.scope("outer"):
            assert profiler.current_scope() == "outer:"
            with profiler.scope("inner", append_mode=True):
                assert profiler.current_scope() == "outer:inner:"
    assert profiler.current_scope() == "<unk>:"
    names = [e["name"] for e in recorder.events if e["kind"] == "profiler.event_begin"]
    assert names == ["outer:", "outer:inner:"]


def test_set_config_takes_every_mxnet_keyword_and_profile_process():
    profiler.set_config(
        filename="x.json",
        profile_all=False,
        profile_symbolic=True,
        profile_imperative=True,
        profile_memory=True,
        profile_api=True,
        aggregate_stats=True,
        continuous_dump=False,
        dump_period=0.5,
        profile_process="worker",
    )
    assert profiler.get_config()["dump_period"] == 0.5
    with pytest.raises(profiler.ProfilerError, match="kvstore servers are not instrumented"):
        profiler.set_config(profile_process="server")
    with pytest.raises(profiler.ProfilerError, match="'worker' or 'server'"):
        profiler.set_state("run", profile_process="both")
    with pytest.raises(TypeError, match="dump_period must be a positive number"):
        profiler.set_config(dump_period=0)
    profiler.set_state("run", profile_process="worker")
    profiler.pause(profile_process="worker")
    profiler.resume(profile_process="worker")
    profiler.set_state("stop", "worker")


def test_continuous_dump_rewrites_the_file_periodically(tmp_path):
    target = tmp_path / "continuous.json"
    profiler.set_config(filename=str(target), continuous_dump=True, dump_period=0.05)
    profiler.set_state("run")
    profiler.Marker(profiler.Domain("d"), "tick").mark()
    deadline = time.monotonic() + 20
    while not target.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert target.exists()  # written while still recording
    profiler.set_state("stop")
    assert any(e.get("name") == "tick" for e in json.loads(target.read_text())["traceEvents"])


def test_deprecated_names():
    profiler.profiler_set_config(mode="all", filename="y.json")
    assert profiler.get_config()["profile_imperative"] is True
    profiler.profiler_set_state("run")
    assert profiler.state() == "run"
    profiler.profiler_set_state("stop")
    with pytest.raises(profiler.ProfilerError, match="mode must be"):
        profiler.profiler_set_config(mode="fast")
