"""Without a token, only pages this server served may use it: Host, Origin and POST body checks."""

from __future__ import annotations

import pytest
from server_helpers import TEST_HOSTS
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from server.app import create_app, host_name
from server.runs import Run


@pytest.fixture
def live_client(manager, tmp_path):
    """A client on an app with an endless live run (as attach mode has), Host 127.0.0.1:8000."""
    manager.add_live(Run("live", "attach", {})).set_running()
    app = create_app(manager, webui_dir=tmp_path, extra_hosts=TEST_HOSTS)
    return TestClient(app, base_url="http://127.0.0.1:8000")


def _websocket_close(client: TestClient, headers: dict[str, str]) -> tuple[int, str]:
    with client.websocket_connect("/api/runs/live/events", headers=headers) as ws:
        try:
            ws.receive_json()
        except WebSocketDisconnect as closed:
            return closed.code, closed.reason
    raise AssertionError("the WebSocket was not closed")


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("127.0.0.1:8000", "127.0.0.1"),
        ("localhost", "localhost"),
        ("[::1]:80", "::1"),
        ("evil.example", "evil.example"),
        ("a:b", None),
        ("[::1", None),
        ("[::1]x", None),
        ("", None),
    ],
)
def test_host_names_are_parsed_strictly(header, name):
    assert host_name(header) == name


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "localhost:8000", "[::1]:8000", "127.0.0.1", "localhost"])
def test_loopback_host_names_are_served(live_client, host):
    assert live_client.get("/api/runs", headers={"host": host}).status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example", "10.0.0.1:8000"])
def test_dns_rebinding_host_names_are_refused(live_client, host):
    response = live_client.get("/api/runs", headers={"host": host})
    assert response.status_code == 403 and "loopback host names" in response.json()["detail"]
    code, reason = _websocket_close(live_client, {"host": host})
    assert code == 4403 and "loopback host names" in reason


def test_cross_origin_requests_and_websockets_are_refused(live_client):
    evil = {"origin": "http://evil.example"}
    response = live_client.get("/api/runs", headers=evil)
    assert (
        response.status_code == 403 and "cross-origin request from 'http://evil.example'" in response.json()["detail"]
    )
    assert live_client.post("/api/runs", json={"scenario": "engine_basics"}, headers=evil).status_code == 403
    assert live_client.get("/api/runs", headers={"origin": "null"}).status_code == 403
    code, reason = _websocket_close(live_client, evil)
    assert code == 4403 and "cross-origin" in reason
    # another port of the same machine is another origin
    assert live_client.get("/api/runs", headers={"origin": "http://127.0.0.1:9999"}).status_code == 403


def test_same_origin_and_no_origin_are_served(live_client):
    same = {"origin": "http://127.0.0.1:8000"}
    assert live_client.get("/api/runs", headers=same).status_code == 200
    with live_client.websocket_connect("/api/runs/live/events", headers={**same, "host": "127.0.0.1:8000"}) as ws:
        assert ws.receive_json()["type"] == "hello"
    with live_client.websocket_connect("/api/runs/live/events", headers={"host": "127.0.0.1:8000"}) as ws:
        assert ws.receive_json()["type"] == "hello"


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]
)
def test_post_bodies_other_than_json_are_415(live_client, content_type):
    body = b'{"scenario": "engine_basics"}'
    for path in ("/api/runs", "/api/traces", "/api/runs/live/cancel"):
        response = live_client.post(path, content=body, headers={"content-type": content_type})
        assert response.status_code == 415, (path, response.text)
        assert "application/json" in response.json()["detail"]
    assert live_client.get("/api/runs").json()[0]["status"] == "running"  # the cancel was refused


def test_a_run_request_without_content_type_is_415(live_client):
    response = live_client.post("/api/runs", content=b'{"scenario": "engine_basics"}')
    assert response.status_code == 415 and "no content type" in response.json()["detail"]


def test_with_a_token_other_host_names_are_served(manager, tmp_path):
    client = TestClient(create_app(manager, webui_dir=tmp_path, token="t0ken"), base_url="http://lab.example:8000")
    assert client.get("/api/health", headers={"authorization": "Bearer t0ken"}).status_code == 200


def test_the_default_app_refuses_the_test_clients_own_host_name(manager, tmp_path):
    client = TestClient(create_app(manager, webui_dir=tmp_path))  # Host: testserver
    assert client.get("/api/health").status_code == 403
