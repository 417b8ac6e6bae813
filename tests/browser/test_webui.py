"""The web UI in real headless Chromium against a real server: run scenarios and check each panel."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from .browser_helpers import ARTIFACTS, FINAL, open_ui, start, summary, wait_finished

pytestmark = pytest.mark.browser


def trace_workers(server_url: str, run_id: str) -> dict[str, str]:
    """op id -> worker (thread name) according to the run's Chrome trace."""
    trace = httpx.get(f"{server_url}/api/runs/{run_id}/trace", timeout=10).json()
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    threads = [e for e in events if e.get("ph") == "M" and e["name"] == "thread_name"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in threads}
    return {
        str(e["args"]["op"]): names[(e["pid"], e["tid"])]
        for e in events
        if e.get("ph") in ("B", "X") and e.get("cat") == "operator"
    }


def test_engine_run_draws_one_bar_per_operation_in_its_worker_lane(page, server_url):
    open_ui(page, server_url)
    run_id = start(page, "engine_basics", workers=2, chain_length=4, op_ms=60, program="both")
    # While the run goes, the timeline grows: record the bar count at every poll.
    counts = []
    while page.get_attribute("#run-bar", "data-status") not in FINAL:
        counts.append(page.locator("#timeline rect.bar").count())
        page.wait_for_timeout(40)
    assert wait_finished(page) == "done"
    run = summary(server_url, run_id)
    pushes = run["event_counts"]["engine.push"]
    assert pushes == 16  # two programs x two chains x 4 operations
    page.wait_for_function(f"() => document.querySelectorAll('#timeline rect.bar').length === {pushes}")
    assert any(0 < c < pushes for c in counts), f"the timeline never showed a partial run: {counts}"
    page.screenshot(path=str(ARTIFACTS / "engine-timeline.png"), full_page=True)

    bars = page.eval_on_selector_all(
        "#timeline rect.bar",
        "els => els.map(e => ({op: e.dataset.op, worker: e.dataset.worker, y: +e.getAttribute('y'),"
        " h: +e.getAttribute('height'), name: e.dataset.name}))",
    )
    lanes = page.eval_on_selector_all(
        "#timeline g.lane",
        "els => els.map(e => ({worker: e.dataset.worker, y: e.transform.baseVal[0].matrix.f}))",
    )
    assert len({b["op"] for b in bars}) == pushes
    expected = trace_workers(server_url, run_id)
    assert {b["op"]: b["worker"] for b in bars} == expected
    lane_y = {lane["worker"]: lane["y"] for lane in lanes}
    assert set(lane_y) == set(expected.values())
    axis = min(lane_y.values())  # the plot group starts where the first lane starts
    for bar in bars:
        top = axis + bar["y"]
        assert lane_y[bar["worker"]] <= top < lane_y[bar["worker"]] + 26, bar

    # Hovering Y2 (reads x, written by X2) draws one arrow per operation it waited for.
    page.hover('#timeline rect.bar[data-name="Y2"]')
    assert page.locator("#timeline path.dep-arrow").count() >= 1
    detail = page.inner_text("#timeline-detail")
    assert "reads" in detail and "x" in detail and "X2" in detail
    page.screenshot(path=str(ARTIFACTS / "engine-timeline-hover.png"))

    # The dependency view shows every operation, all finished.
    page.keyboard.press("Escape")
    page.click('[data-tab="dag"]')
    page.wait_for_function(
        f"() => document.querySelectorAll('#dag g.node[data-state=done]').length === {pushes}", timeout=15_000
    )
    page.screenshot(path=str(ARTIFACTS / "engine-dependencies.png"), full_page=True)
    assert not page.problems


def test_memory_planning_draws_graph_memory_chart_and_plan(page, server_url):
    open_ui(page, server_url, "?scenario=memory_planning")
    assert page.input_value("#scenario-select") == "memory_planning"
    page.click('[data-tab="memory"]')
    assert page.get_attribute("#memory-chart", "data-points") == "0"
    run_id = start(page, "memory_planning")
    assert wait_finished(page) == "done"
    run = summary(server_url, run_id)
    page.wait_for_function("() => +document.querySelector('#memory-chart').dataset.points > 0", timeout=10_000)
    points = int(page.get_attribute("#memory-chart", "data-points"))
    assert points >= run["event_counts"].get("storage.alloc", 0) > 0
    assert page.locator("#memory-chart canvas").count() >= 1
    page.wait_for_selector("#plan .segment")
    planned = run["result"]["bytes_planned"]
    assert int(page.get_attribute("[data-bytes-planned]", "data-bytes-planned")) == planned
    page.screenshot(path=str(ARTIFACTS / "memory.png"), full_page=True)

    dot = httpx.get(f"{server_url}/api/runs/{run_id}/graph.dot", timeout=10).text
    node_statements = [
        line for line in dot.splitlines() if re.match(r'^\s*("[^"]+"|[\w.]+)\s*\[', line) and "->" not in line
    ]
    node_statements = [s for s in node_statements if not re.match(r"^\s*(node|edge|graph)\s*\[", s)]
    assert node_statements
    page.click('[data-tab="graph"]')
    page.wait_for_selector("#graph svg g.node", timeout=20_000)
    assert page.locator("#graph svg g.node").count() == len(node_statements)
    assert page.locator("#graph svg g.edge text").count() >= 1  # shapes on edges
    page.locator("#graph svg g.node").nth(1).click()
    assert "operator" in page.inner_text("#graph-detail")
    page.screenshot(path=str(ARTIFACTS / "graph.png"), full_page=True)
    assert not page.problems


def test_memory_view_shows_the_chosen_planner_beside_the_lower_bound(page, server_url):
    """The scenario's planner select (generated from its parameters) switches the strategy the view reports."""
    open_ui(page, server_url, "?scenario=memory_planning")
    page.click('[data-tab="memory"]')
    run_id = start(page, "memory_planning", network="lenet", planner="greedy_by_size")
    assert wait_finished(page) == "done"
    result = summary(server_url, run_id)["result"]
    assert result["planner"] == "greedy_by_size"
    page.wait_for_selector("#plan .segment")
    assert page.get_attribute("[data-strategy]", "data-strategy") == "greedy_by_size"
    assert int(page.get_attribute("[data-bytes-planned]", "data-bytes-planned")) == result["bytes_planned"]
    bound = int(page.get_attribute("[data-bytes-lower-bound]", "data-bytes-lower-bound"))
    assert bound == result["bytes_lower_bound"] == result["strategies"]["lower_bound"]
    assert 0 < bound <= result["bytes_planned"]
    assert not page.problems


def test_training_curves_appear_for_train_mlp(page, server_url):
    open_ui(page, server_url)
    page.click('[data-tab="training"]')
    start(page, "train_mlp", epochs=2, hidden=32)
    page.wait_for_function(
        "() => +document.querySelector('#training-loss').dataset.points > 0"
        " || +document.querySelector('#training-accuracy').dataset.points > 0",
        timeout=30_000,
    )
    assert wait_finished(page, 60_000) == "done"
    page.wait_for_selector("#training-accuracy canvas")
    assert int(page.get_attribute("#training-accuracy", "data-points")) > 1
    page.screenshot(path=str(ARTIFACTS / "training.png"), full_page=True)
    assert not page.problems


def test_replayed_trace_shows_the_same_operations(page, server_url, tmp_path):
    response = httpx.post(
        f"{server_url}/api/runs",
        json={"scenario": "engine_basics", "params": {"chain_length": 2, "op_ms": 5}},
        timeout=10,
    )
    assert response.status_code == 201, response.text
    run_id = response.json()["id"]
    deadline = time.monotonic() + 30
    while summary(server_url, run_id)["status"] not in FINAL:
        assert time.monotonic() < deadline, "the engine run did not finish"
        time.sleep(0.1)
    pushes = summary(server_url, run_id)["event_counts"]["engine.push"]
    trace_file = tmp_path / "engine.json"
    trace_file.write_bytes(httpx.get(f"{server_url}/api/runs/{run_id}/trace", timeout=10).content)

    open_ui(page, server_url)
    page.set_input_files("#trace-file", str(trace_file))
    page.click("#replay-button")
    page.wait_for_function("() => document.querySelector('#run-bar').dataset.run", timeout=10_000)
    page.wait_for_function("() => document.querySelector('#run-bar b').textContent === 'replay'", timeout=10_000)
    page.wait_for_function(f"() => document.querySelectorAll('#timeline rect.bar').length === {pushes}", timeout=10_000)
    assert not page.problems


def test_bad_inputs_are_reported_not_sent(page, server_url, tmp_path):
    open_ui(page, server_url)
    before = len(httpx.get(f"{server_url}/api/runs", timeout=10).json())
    page.select_option("#scenario-select", "engine_basics")
    page.fill('#scenario-form [data-param="workers"]', "99")
    page.click("#run-button")
    assert "at most 8" in page.inner_text("#form-error")
    assert len(httpx.get(f"{server_url}/api/runs", timeout=10).json()) == before

    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"ph": 1}]}')
    page.set_input_files("#trace-file", str(bad))
    page.click("#replay-button")
    page.wait_for_function("() => document.querySelector('#replay-error').textContent.length > 0")
    assert "bad.json" in page.inner_text("#replay-error")
    # 4xx answers show up in the console as failed resources; those are expected here.
    page.problems[:] = [p for p in page.problems if "Failed to load resource" not in p]

    page.goto(f"{server_url}/?run=does-not-exist")
    page.wait_for_selector("body[data-ready=true]")
    assert "Cannot open run" in page.inner_text("#run-bar")
    page.problems[:] = [p for p in page.problems if "Failed to load resource" not in p]
    assert not page.problems


def test_stop_cancels_a_running_run(page, server_url):
    open_ui(page, server_url)
    run_id = start(page, "engine_basics", chain_length=64, op_ms=200, program="dependent")
    page.wait_for_function("() => document.querySelector('#run-bar').dataset.status === 'running'", timeout=15_000)
    page.wait_for_function("() => document.querySelectorAll('#timeline rect.bar').length > 0", timeout=15_000)
    page.click("#stop-button")
    assert wait_finished(page, 15_000) == "cancelled"
    assert summary(server_url, run_id)["status"] == "cancelled"
    assert page.is_disabled("#stop-button")
    assert not page.problems
