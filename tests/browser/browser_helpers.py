"""What the browser tests share besides fixtures: the paths of the worktree, the web UI and the
screenshots, and the steps of driving the UI (open it, start a scenario, wait for the run's end).

conftest.py's fixtures and the test modules import from here; no test module imports another.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
WEBUI = ROOT / "webui"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"

FINAL = ("done", "failed", "cancelled", "timeout")


def open_ui(page, server_url: str, query: str = "") -> None:
    page.goto(f"{server_url}/{query}")
    page.wait_for_selector("body[data-ready=true]", timeout=15_000)


def start(page, scenario: str, **params) -> str:
    """Pick ``scenario``, fill ``params`` into its generated form, press Run; return the run id."""
    page.select_option("#scenario-select", scenario)
    for name, value in params.items():
        field = page.locator(f'#scenario-form [data-param="{name}"]')
        if isinstance(value, bool):
            field.set_checked(value)
        elif field.evaluate("el => el.tagName") == "SELECT":
            field.select_option(json.dumps(value))
        else:
            field.fill(str(value))
    page.click("#run-button")
    page.wait_for_function("() => document.querySelector('#run-bar').dataset.run", timeout=15_000)
    return page.get_attribute("#run-bar", "data-run")


def wait_finished(page, timeout_ms: int = 30_000) -> str:
    page.wait_for_function(
        f"() => {json.dumps(FINAL)}.includes(document.querySelector('#run-bar').dataset.status)", timeout=timeout_ms
    )
    return page.get_attribute("#run-bar", "data-status")


def summary(server_url: str, run_id: str) -> dict:
    response = httpx.get(f"{server_url}/api/runs/{run_id}", timeout=10)
    response.raise_for_status()
    return response.json()
