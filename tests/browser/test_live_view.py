"""What a newcomer sees: a run in progress at once, stable colours, re-running, node-by-node plans.

One server here is started the way ``make run`` starts it (with its default run), to measure
the first page load; the others use the session server of conftest.py.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys

import httpx
import pytest

from framework import profiler

from .browser_helpers import ARTIFACTS, ROOT, open_ui, start, summary, wait_finished

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def launched_server():
    """``python -m server`` with its default run, as ``make run`` starts it; yields the printed URL."""
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "server", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        line = process.stdout.readline()
        match = re.search(r"MXLab is running at (\S+)", line)
        assert match, f"no URL printed: {line!r}"
        yield match.group(1)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_the_first_page_load_shows_a_run_in_progress(page, launched_server):
    """The printed URL opens on the default run, live; how fast is the benchmarks' business (no timing here)."""
    base = launched_server.split("?")[0]
    for url in (launched_server, base):  # the printed URL, and the bare address a learner may type
        page.goto(url)
        # Before the run appears the page says it is connecting, never that there are no runs.
        assert "No runs yet" not in page.inner_text("#run-list")
        assert "No run open" not in page.inner_text("#run-bar")
        assert "No run open" not in page.inner_text("#panel-timeline")
        page.wait_for_function(
            "() => ['running'].includes(document.querySelector('#run-bar').dataset.status)"
            " && document.querySelector('#timeline rect.bar')",
            timeout=20_000,
        )
        assert "repeats until you press Stop" in page.inner_text("#run-bar")
        assert "No runs yet" not in page.inner_text("#run-list")
    page.screenshot(path=str(ARTIFACTS / "first-load.png"))
    run_id = page.get_attribute("#run-bar", "data-run")
    # Still busy a few rounds later: the default run is live, not a replay that is already over.
    page.wait_for_function("() => document.querySelectorAll('#timeline rect.bar').length >= 20", timeout=20_000)
    assert summary(base.rstrip("/"), run_id)["status"] == "running"
    assert page.get_attribute("#timeline svg", "data-following") in ("true", "false")


def test_starting_another_scenario_stops_the_looping_run(page, launched_server):
    base = launched_server.split("?")[0].rstrip("/")
    page.goto(launched_server)
    page.wait_for_selector("body[data-ready=true]", timeout=15_000)
    looping = page.get_attribute("#run-bar", "data-run")
    start(page, "rw_hazards", phases=1)
    page.wait_for_function(f"() => document.querySelector('#run-bar').dataset.run !== '{looping}'", timeout=15_000)
    assert wait_finished(page) == "done"
    assert summary(base, looping)["status"] == "cancelled"
    assert "Connection lost" not in page.inner_text("#run-bar")
    assert not page.problems


def start_new(page, scenario: str, **params) -> str:
    """start(), then wait until the run bar shows the new run (not the one open before) and it has finished."""
    before = page.get_attribute("#run-bar", "data-run") or ""
    start(page, scenario, **params)
    page.wait_for_function(f"() => document.querySelector('#run-bar').dataset.run !== '{before}'", timeout=15_000)
    wait_finished(page)
    return page.get_attribute("#run-bar", "data-run")


def bar_colours(page) -> dict[str, str]:
    return page.eval_on_selector_all(
        "#timeline rect.bar", "bars => Object.fromEntries(bars.map(b => [b.dataset.name, b.getAttribute('fill')]))"
    )


def test_an_operation_has_the_same_colour_in_every_run_whatever_ran_first(page, server_url):
    open_ui(page, server_url)
    start_new(page, "engine_basics", program="independent", chain_length=2, op_ms=1)
    first = bar_colours(page)
    start_new(page, "engine_basics", program="both", chain_length=2, op_ms=1)  # X, Y now arrive before P, Q
    second = bar_colours(page)
    assert {name: first[name] for name in ("P1", "Q1")} == {name: second[name] for name in ("P1", "Q1")}
    assert len({second[name] for name in ("X1", "Y1", "P1", "Q1")}) == 4  # one view, four distinct colours
    # The page's hash is the profiler's: the text timeline's letters come from the same function.
    hashes = page.evaluate(
        "async () => { const c = await import('/app/colors.js');"
        " return ['X1', 'fc1', 'émoji ✓'].map((n) => c.stableHash(n)); }"
    )
    assert hashes == [profiler.stable_hash(n) for n in ("X1", "fc1", "émoji ✓")]


def contrast_on_white(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return 1.05 / (luminance + 0.05)


def test_every_colour_of_the_palette_has_contrast_on_white(page, server_url):
    open_ui(page, server_url)
    colours = page.evaluate(
        "async () => { const c = await import('/app/colors.js');"
        " return [...c.colorsFor(Array.from({length: 10}, (_, i) => 'name' + i)).values()]; }"
    )
    assert len(set(colours)) == 10
    assert min(contrast_on_white(c) for c in colours) >= 3.0, colours


def test_a_finished_run_can_be_rerun_with_its_parameters(page, server_url):
    open_ui(page, server_url)
    first = start_new(page, "rw_hazards", phases=2)
    page.select_option("#scenario-select", "engine_basics")  # the form now shows another scenario
    page.click(f'.run-item[data-run="{first}"]')
    # Opening the run puts its scenario and parameters back in the form.
    page.wait_for_function("() => document.querySelector('#scenario-select').value === 'rw_hazards'", timeout=10_000)
    assert page.input_value('#scenario-form [data-param="phases"]') == "2"
    assert page.is_visible("#rerun-button")
    assert page.inner_text("#run-button") == "Start a new run"
    page.click("#rerun-button")
    page.wait_for_function(f"() => document.querySelector('#run-bar').dataset.run !== '{first}'", timeout=15_000)
    second = page.get_attribute("#run-bar", "data-run")
    assert wait_finished(page) == "done"
    assert summary(server_url, second)["params"] == summary(server_url, first)["params"]
    assert not page.problems


def test_memory_planning_shows_the_executor_pass_one_bar_per_operator(page, server_url):
    open_ui(page, server_url)
    run_id = start_new(page, "memory_planning", mode="inference")
    assert page.get_attribute("#run-bar", "data-status") == "done"
    names = page.eval_on_selector_all("#timeline rect.bar", "bars => bars.map(b => b.dataset.name)")
    assert not any(re.search(r"\[\d+ nodes\]$", name) for name in names), names  # no fused segment
    plan = summary(server_url, run_id)["result"]
    layers = {name for name in names if re.fullmatch(r"(fc\d+|relu\d+|fc_out|softmax)", name)}
    assert len(layers) >= 8, (names, plan)  # six hidden layers and their activations, the output, softmax


def test_empty_panels_suggest_scenarios_named_by_the_server(page, server_url):
    for run in httpx.get(f"{server_url}/api/runs", timeout=10).json():  # nothing in progress to open
        if run["status"] in ("queued", "running"):
            httpx.post(f"{server_url}/api/runs/{run['id']}/cancel", timeout=10)
    open_ui(page, server_url)
    assert "No run open" in page.inner_text("#run-bar")
    panels = {s["name"]: s["panels"] for s in httpx.get(f"{server_url}/api/scenarios", timeout=10).json()}
    text = page.inner_text("#panel-timeline")
    for name, shown in panels.items():
        assert (name in text) == ("timeline" in shown), (name, text)
    tutorial = httpx.get(f"{server_url}/api/tutorials", timeout=10).json()[1]
    assert tutorial["path"] in page.inner_text("#panel-timeline")  # the panel's tutorial link, from the API


def test_times_count_from_the_first_event_of_the_run(page, server_url):
    """An attached process's first event may come long after its server started: the axis starts there."""
    open_ui(page, server_url)
    times = page.evaluate(
        """async () => {
        const { RunModel } = await import('/app/model.js');
        const model = new RunModel({ id: 'live', status: 'running' });
        const t = 7_000_000_000;  // ns on the process's clock: seconds after its server started
        model.addEvents([
          { kind: 'engine.push', t_ns: t, op: 1, name: 'first', ctx: 'cpu(0)', reads: [], writes: [1] },
          { kind: 'engine.start', t_ns: t + 1_000_000, op: 1, worker: 'cpu(0)/normal/0' },
          { kind: 'engine.end', t_ns: t + 3_000_000, op: 1, worker: 'cpu(0)/normal/0' },
        ]);
        const op = model.ops.get(1);
        return [op.tPush, op.tStart, op.tEnd, model.now];
      }"""
    )
    assert times == [0, 1, 3, 3]
