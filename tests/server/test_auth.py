"""The token guard: every route, static file and the WebSocket."""

from __future__ import annotations

import pytest
from server_helpers import read_stream, wait_for
from starlette.testclient import TestClient

from server.app import create_app

TOKEN = "correct-horse"


@pytest.fixture
def guarded(manager, tmp_path):
    (tmp_path / "index.html").write_text("<html>ui</html>")
    return TestClient(create_app(manager, webui_dir=tmp_path, token=TOKEN))


@pytest.mark.parametrize(
    "path", ["/api/health", "/api/scenarios", "/api/runs", "/docs", "/openapi.json", "/", "/app/x.js"]
)
def test_every_route_needs_the_token(guarded, path):
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic " + TOKEN}):
        response = guarded.get(path, headers=headers)
        assert response.status_code == 401 and "token" in response.json()["detail"]
    assert guarded.get(path, params={"token": "nope"}).status_code == 401
    assert guarded.post("/api/runs", json={"scenario": "engine_basics"}).status_code == 401


def test_the_token_is_accepted_as_header_query_or_cookie(guarded):
    assert guarded.get("/api/health", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert guarded.get("/api/health", params={"token": TOKEN}).status_code == 200
    page = guarded.get("/", params={"token": TOKEN})
    assert page.status_code == 200 and page.text == "<html>ui</html>"
    cookie = page.headers["set-cookie"]
    assert f"mxlab_token={TOKEN}" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert guarded.get("/api/health").status_code == 200  # the test client kept the cookie
    guarded.cookies.clear()
    assert guarded.get("/api/health").status_code == 401


def test_websocket_without_token_closes_with_4401(guarded):
    run = guarded.post(
        "/api/runs", json={"scenario": "engine_basics", "params": {"chain_length": 1}}, params={"token": TOKEN}
    )
    run_id = run.json()["id"]
    messages, code = read_stream(guarded, run_id)
    assert messages == [] and code == 4401
    messages, code = read_stream(guarded, run_id, token=TOKEN)
    assert code == 1000 and messages[0]["type"] == "hello"
    guarded.headers["Authorization"] = f"Bearer {TOKEN}"
    wait_for(guarded, run_id)
