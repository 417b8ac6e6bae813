"""Fixtures for the server tests: run managers over the real and the hostile scenarios, and
a FastAPI test client."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hostile_scenarios import HOSTILE
from server_helpers import TEST_HOSTS, serve_in_thread
from starlette.testclient import TestClient

from server.app import create_app
from server.runs import RunManager
from server.scenarios import REGISTRY


@pytest.fixture
def make_manager():
    """RunManagers over the registered and hostile scenarios; shut down after the test."""
    built: list[RunManager] = []

    def build(**settings: Any) -> RunManager:
        settings.setdefault("run_timeout_s", 60.0)
        manager = RunManager({**REGISTRY, **HOSTILE}, **settings)
        built.append(manager)
        return manager

    yield build
    for manager in built:
        manager.shutdown()


@pytest.fixture
def manager(make_manager):
    return make_manager()


@pytest.fixture
def client(manager, tmp_path):
    """A test client on an app whose web UI directory is empty (no UI installed)."""
    return TestClient(create_app(manager, webui_dir=tmp_path / "no-webui", extra_hosts=TEST_HOSTS))


@pytest.fixture
def make_live_server(make_manager, tmp_path):
    """Start the app (``create_app`` settings as keywords) on a real uvicorn server in a thread,
    on a free loopback port; returns ``(manager, port)``. Stopped after the test."""
    with contextlib.ExitStack() as servers:

        def start(manager: RunManager | None = None, **app_settings: Any) -> tuple[RunManager, int]:
            manager = manager if manager is not None else make_manager()
            return manager, servers.enter_context(serve_in_thread(manager, tmp_path, **app_settings))

        yield start


@pytest.fixture
def live_server(make_live_server):
    """The app on a real uvicorn server (client queues of 5000 events): ``(manager, port)``."""
    return make_live_server(client_queue_events=5000)
