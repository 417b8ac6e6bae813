"""A run whose events the server dropped for its memory budget says so in the page, not as empty panels.

The server here runs in this process (``create_app`` around a ``RunManager`` whose finished runs
may keep one byte of history between them), so every finished run but the newest loses its events.
"""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest
import uvicorn

from server.app import create_app
from server.runs import RunManager
from server.serving import uvicorn_config

from .browser_helpers import ARTIFACTS, FINAL, WEBUI, open_ui

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def tiny_budget_url():
    """A server whose finished runs share a 1-byte history budget: only the newest keeps its events."""
    if not (WEBUI / "node_modules" / "d3").is_dir():
        pytest.fail("webui/node_modules is missing: run `npm ci` in webui/ (make install does it)")
    manager = RunManager(max_stored_bytes=1, run_timeout_s=60)
    app = create_app(manager, webui_dir=WEBUI)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn_config(app, timeout_graceful_shutdown=1))  # lifespan: stops runs and replays
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(15)


def finished_engine_run(url: str) -> str:
    params = {"workers": 2, "chain_length": 2, "op_ms": 5, "program": "dependent"}
    response = httpx.post(f"{url}/api/runs", json={"scenario": "engine_basics", "params": params}, timeout=10)
    response.raise_for_status()
    run_id = response.json()["id"]
    deadline = time.monotonic() + 60
    while httpx.get(f"{url}/api/runs/{run_id}", timeout=10).json()["status"] not in FINAL:
        assert time.monotonic() < deadline, f"run {run_id} did not finish within 60 s"
        time.sleep(0.1)
    return run_id


def replayed_trace(url: str) -> str:
    trace = [{"ph": "X", "name": f"op{i}", "ts": 10 * i, "dur": 5, "pid": 1, "tid": 1} for i in range(20)]
    response = httpx.post(f"{url}/api/traces", json=trace, timeout=30)
    response.raise_for_status()
    return response.json()["id"]


def test_an_evicted_run_says_its_history_was_dropped(page, tiny_budget_url):
    url = tiny_budget_url
    engine_run = finished_engine_run(url)
    old_replay = replayed_trace(url)  # evicts the engine run's events
    new_replay = replayed_trace(url)  # evicts the first replay's; the newest keeps its own
    summaries = {
        run_id: httpx.get(f"{url}/api/runs/{run_id}", timeout=10).json()
        for run_id in (engine_run, old_replay, new_replay)
    }
    assert [s["history_evicted"] for s in summaries.values()] == [True, True, False]

    # The evicted scenario run: the run bar explains, offers a re-run, and has no (empty) trace link.
    open_ui(page, url, f"?run={engine_run}")
    notice = page.wait_for_selector("#run-evicted", timeout=10_000).inner_text()
    assert "memory budget" in notice and "no trace to download" in notice and "Re-run" in notice, notice
    assert f"the {summaries[engine_run]['events']} events" in notice, notice
    assert page.locator("#run-bar a[download]").count() == 0
    assert page.is_visible("#rerun-button")
    for tab, panel in (("1", "#panel-timeline"), ("2", "#panel-dag"), ("3", "#panel-memory"), ("5", "#panel-training")):
        page.keyboard.press(tab)
        text = page.inner_text(panel)
        assert "no longer keeps this run's events" in text and "pushed no engine operations" not in text, (panel, text)
        assert "allocated no storage" not in text and "reported no training metrics" not in text, (panel, text)
    page.screenshot(path=str(ARTIFACTS / "evicted-run.png"), full_page=True)

    # The run list marks both evicted runs, not the newest one.
    for run_id, evicted in ((engine_run, True), (old_replay, True), (new_replay, False)):
        item = page.locator(f'#run-list button[data-run="{run_id}"]')
        assert ("history dropped" in item.inner_text()) == evicted, (run_id, item.inner_text())

    # An evicted replay cannot be re-run: the notice says to upload the trace again instead.
    page.click(f'#run-list button[data-run="{old_replay}"]')
    page.wait_for_function(f"() => document.querySelector('#run-bar').dataset.run === {old_replay!r}")
    notice = page.wait_for_selector("#run-evicted").inner_text()
    assert "Upload its trace file again" in notice and "Re-run" not in notice, notice

    # The newest run kept its events: no notice, its bars and its trace link are there.
    page.click(f'#run-list button[data-run="{new_replay}"]')
    page.keyboard.press("1")
    page.wait_for_function("() => document.querySelectorAll('#timeline rect.bar').length === 20")
    assert page.locator("#run-evicted").count() == 0
    assert page.locator("#run-bar a[download]").count() == 1
