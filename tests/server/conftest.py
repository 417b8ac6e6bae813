"""Fixtures for the server tests: run managers over the real and the hostile scenarios, and
a FastAPI test client."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest
import uvicorn
from hostile_scenarios import HOSTILE
from server_helpers import TEST_HOSTS
from starlette.testclient import TestClient

from server.app import create_app
from server.runs import RunManager
from server.scenarios import REGISTRY
from server.serving import uvicorn_config


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
    servers: list[tuple[uvicorn.Server, threading.Thread]] = []

    def start(**app_settings: Any) -> tuple[RunManager, int]:
        manager = make_manager()
        app = create_app(manager, webui_dir=tmp_path, **app_settings)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        server = uvicorn.Server(uvicorn_config(app, lifespan="off", timeout_graceful_shutdown=1))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        servers.append((server, thread))
        while not server.started:
            time.sleep(0.01)
        return manager, sock.getsockname()[1]

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(10)


@pytest.fixture
def live_server(make_live_server):
    """The app on a real uvicorn server (client queues of 5000 events): ``(manager, port)``."""
    return make_live_server(client_queue_events=5000)
