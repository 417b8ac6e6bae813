"""Fixtures for the browser tests: a real MXLab server and headless Chromium driven by Playwright.

The server runs as a subprocess (``python -m server --no-default-run`` on a free port) from this
worktree, serving ``webui/``. Chromium is the system's ``/usr/bin/chromium``; Playwright never
downloads a browser. Without Chromium or Playwright the tests skip, except under CI where a missing
tool is a failure (the rule of ``tests/needs.py``).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from needs import needs_module, needs_tool

from .browser_helpers import ARTIFACTS, ROOT, WEBUI

CHROMIUM = os.environ.get("MXLAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    """Base URL of a fresh MXLab server serving this worktree's web UI."""
    if not (WEBUI / "node_modules" / "d3").is_dir():
        pytest.fail("webui/node_modules is missing: run `npm ci` in webui/ (make install does it)")
    if not (ROOT / "server" / "app.py").exists():
        pytest.fail("server/app.py is missing: the browser tests need the MXLab server")
    port = _free_port()
    ARTIFACTS.mkdir(exist_ok=True)
    log = (ARTIFACTS / "server.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "server", "--port", str(port), "--no-default-run"],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                pytest.fail(f"the server exited with code {process.returncode}; see {log.name}")
            try:
                if httpx.get(f"{url}/api/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the server did not answer /api/health within 30 s; see {log.name}")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the session."""
    why = f"the browser tests drive it headless (looked for {CHROMIUM} and on PATH)"
    executable = CHROMIUM if Path(CHROMIUM).exists() else needs_tool("chromium", why)
    playwright = needs_module("playwright.sync_api", "the browser tests drive Chromium through it")
    with playwright.sync_playwright() as p:
        instance = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def page(browser, request):
    """A fresh page; console errors and uncaught exceptions fail the test; a screenshot is kept."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda msg: problems.append(f"console.{msg.type}: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda err: problems.append(f"page error: {err}"))
    page.problems = problems
    yield page
    with contextlib.suppress(Exception):
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-final.png"), full_page=True)
    context.close()
    assert not problems, f"the page reported errors: {problems}"
