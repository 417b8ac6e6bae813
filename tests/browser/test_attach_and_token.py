"""Attach mode (``server.attach`` inside this process) with a token: the UI opens the live run."""

from __future__ import annotations

import gc

import httpx
import pytest

import framework as mx
import server
from framework import events

from .browser_helpers import ARTIFACTS

pytestmark = pytest.mark.browser

TOKEN = "browser-test-secret"


@pytest.fixture
def attached():
    handle = server.attach(port=0, token=TOKEN)
    try:
        yield handle
    finally:
        handle.stop()
        gc.unfreeze()  # attach froze what the test session held (freeze_gc): give it back


def test_attach_mode_streams_this_process_and_needs_the_token(page, attached):
    base = attached.url.split("?")[0].rstrip("/")
    assert httpx.get(f"{base}/", timeout=10).status_code == 401
    page.goto(f"{base}/?token={TOKEN}")
    page.wait_for_selector("body[data-ready=true]", timeout=15_000)
    # The UI opened the live run by itself, dropped the token from the address, and refuses scenario runs.
    assert page.get_attribute("#run-bar", "data-run") == "live"
    assert "token" not in page.url
    assert page.is_disabled("#run-button")
    assert page.is_hidden("#scenario-card")  # scenarios do not apply to an attached process
    assert "attached" in page.inner_text("#server-status")

    with events.record(["engine.push"]) as recorder:
        a = mx.nd.ones((64, 64))
        b = mx.nd.dot(a, a) + 1
        (b * 2).wait_to_read()
        mx.nd.waitall()
    ops = {str(e["op"]) for e in recorder.events}
    assert ops
    selector = " && ".join(f"document.querySelector('#timeline rect.bar[data-op=\"{op}\"]')" for op in sorted(ops))
    page.wait_for_function(f"() => {selector}", timeout=10_000)
    page.screenshot(path=str(ARTIFACTS / "attach-live.png"))
    assert not page.problems
