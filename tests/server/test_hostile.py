"""Hostile and broken input: every refusal is a 4xx naming the problem; nothing leaks a 500;
a crashing, hanging or flooding run stays in its process and its bounds."""

from __future__ import annotations

import itertools
import json
import threading
import time

import pytest
from server_helpers import TEST_HOSTS, read_stream, stream_events, wait_for
from starlette.testclient import TestClient

from server.app import create_app
from server.frames import decode_frame
from server.streaming import BATCH_MAX_EVENTS
from server.traces import MAX_TRACE_EVENTS


# ----------------------------------------------------------------------------- POST /api/runs
def test_unknown_scenario_is_404_naming_the_known_ones(client):
    response = client.post("/api/runs", json={"scenario": "rm -rf /"})
    assert response.status_code == 404
    assert "unknown scenario 'rm -rf /'" in response.json()["detail"] and "engine_basics" in response.json()["detail"]


@pytest.mark.parametrize(
    ("params", "field", "error_type"),
    [
        ({"workers": 0}, "workers", "greater_than_equal"),
        ({"workers": 9}, "workers", "less_than_equal"),
        ({"chain_length": 1000}, "chain_length", "less_than_equal"),
        ({"op_ms": -1}, "op_ms", "greater_than_equal"),
        ({"workers": "2"}, "workers", "int_type"),
        ({"workers": 2.5}, "workers", "int_type"),
        ({"workers": True}, "workers", "int_type"),
        ({"op_ms": "fast"}, "op_ms", "float_type"),
        ({"engine_type": "MagicEngine"}, "engine_type", "literal_error"),
        ({"program": None}, "program", "literal_error"),
        ({"chain_lenght": 4}, "chain_lenght", "extra_forbidden"),
    ],
)
def test_bad_parameters_are_422_with_pydantics_errors(client, params, field, error_type):
    response = client.post("/api/runs", json={"scenario": "engine_basics", "params": params})
    assert response.status_code == 422, response.text
    errors = response.json()["detail"]
    assert any(e["loc"][-1] == field and e["type"] == error_type for e in errors), errors
    assert client.get("/api/runs").json() == []  # nothing was started


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"params": {}},
        {"scenario": 3},
        {"scenario": "engine_basics", "params": [1, 2]},
        {"scenario": "engine_basics", "extra": 1},
        [1, 2, 3],
        "engine_basics",
        None,
        {"scenario": "x" * 101},
    ],
)
def test_malformed_run_requests_are_422(client, body):
    response = client.post("/api/runs", content=json.dumps(body), headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert isinstance(response.json()["detail"], list)


@pytest.mark.parametrize(
    "raw", [b"", b"{", b'{"scenario": "engine_basics",}', b"\xff\xfe", b'{"scenario": NaN}', b"[" * 100_000]
)
def test_malformed_json_is_400(client, raw):
    response = client.post("/api/runs", content=raw, headers={"content-type": "application/json"})
    assert response.status_code in (400, 413), response.text
    assert response.json()["detail"].startswith(("malformed JSON", "request body"))
    if len(raw) < 64 * 1024:
        assert response.status_code == 400


def test_run_body_over_64_kib_is_413(client):
    body = json.dumps({"scenario": "engine_basics", "params": {"pad": "x" * 70_000}})
    response = client.post("/api/runs", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 413 and "exceeds the limit of 65536 bytes" in response.json()["detail"]


def test_body_without_content_length_is_still_limited(client):
    def chunks():
        for _ in range(100):
            yield b"x" * 1024

    response = client.post("/api/runs", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413


# ----------------------------------------------------------------------------- trace uploads
@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"not json", "not valid JSON"),
        (b'{"traceEvents": [{"ph": "B", "ts": NaN}]}', "NaN is not allowed"),
        (b'{"traceEvents": [{"ph": "B", "ts": Infinity}]}', "Infinity is not allowed"),
        (b'{"events": []}', "no 'traceEvents'"),
        (b'{"traceEvents": {}}', "must be a list"),
        (b"42", "must be an object with 'traceEvents' or a list"),
        (b"[1]", "event 0: must be an object"),
        (b'[{"ts": 1}]', "event 0: 'ph' must be a string"),
        (b'[{"ph": "M", "name": "x"}, {"ph": "B", "ts": "1"}]', "event 1 (ph 'B'): 'ts' must be a finite number"),
        (b'[{"ph": "X", "ts": 1, "dur": -1}]', "'dur' must be a finite number >= 0"),
        (b'[{"ph": "B", "ts": 1, "pid": [1]}]', "'pid' must be an integer or a string"),
        (b'[{"ph": "B", "ts": 1, "args": 3}]', "'args' must be an object"),
        (b'[{"ph": "B", "ts": 1, "name": 5}]', "'name' must be a string"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b"\xff", "not UTF-8"),
    ],
)
def test_malformed_traces_are_400_saying_what_and_where(client, raw, message):
    response = client.post("/api/traces", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert message in response.json()["detail"]


def test_trace_upload_needs_json_content_type(client):
    response = client.post("/api/traces", content=b"[]", headers={"content-type": "text/plain"})
    assert response.status_code == 415 and "application/json" in response.json()["detail"]
    assert client.post("/api/traces", content=b"[]").status_code == 415


def test_oversized_trace_is_413(manager, tmp_path):
    client = TestClient(create_app(manager, webui_dir=tmp_path, max_trace_bytes=1000, extra_hosts=TEST_HOSTS))
    response = client.post(
        "/api/traces", content=b"[" + b" " * 2000 + b"]", headers={"content-type": "application/json"}
    )
    assert response.status_code == 413 and "limit of 1000 bytes" in response.json()["detail"]


def test_trace_limit_is_16_mib_by_default(client):
    response = client.post(
        "/api/traces", content=b"[]", headers={"content-type": "application/json", "content-length": str(17 << 20)}
    )
    assert response.status_code == 413 and str(16 << 20) in response.json()["detail"]


def test_unknown_phases_are_ignored_and_unmatched_slices_counted(client):
    trace = [
        {"ph": "Q", "weird": [1, 2]},
        {"ph": "E", "ts": 1, "pid": 1, "tid": 1},
        {"ph": "B", "ts": 2, "pid": 1, "tid": 1, "name": "open"},
        {"ph": "X", "ts": 3, "dur": 2, "pid": 1, "tid": 2, "name": "whole"},
    ]
    response = client.post("/api/traces", json=trace)
    assert response.status_code == 201
    result = response.json()["result"]
    assert result["operations"] == 2 and result["unmatched_ends"] == 1 and result["unfinished_operations"] == 1


# ----------------------------------------------------------------------------- static files
@pytest.fixture
def ui_client(manager, tmp_path):
    """An app over a small fake web UI with one allowed npm package and one that is not."""
    webui = tmp_path / "webui"
    (webui / "src").mkdir(parents=True)
    (webui / "index.html").write_text("<html>index</html>")
    (webui / "src" / "main.js").write_text("export const x = 1;")
    (webui / "src" / ".hidden.js").write_text("secret")
    (webui / "package.json").write_text(json.dumps({"dependencies": {"d3": "7.9.0", "@scope/pkg": "1.0.0"}}))
    for package in ("d3", "@scope/pkg", "left-pad"):
        (webui / "node_modules" / package / "dist").mkdir(parents=True)
        (webui / "node_modules" / package / "dist" / "lib.js").write_text(f"// {package}")
    (tmp_path / "secret.txt").write_text("top secret")
    (webui / "src" / "link.js").symlink_to(tmp_path / "secret.txt")
    return TestClient(create_app(manager, webui_dir=webui, extra_hosts=TEST_HOSTS))


def test_static_ui_files_are_served(ui_client):
    assert ui_client.get("/").text == "<html>index</html>"
    main = ui_client.get("/app/main.js")
    assert main.status_code == 200 and main.headers["content-type"].startswith("text/javascript")
    assert ui_client.get("/vendor/d3/dist/lib.js").text == "// d3"
    assert ui_client.get("/vendor/@scope/pkg/dist/lib.js").text == "// @scope/pkg"


@pytest.mark.parametrize(
    "path",
    [
        "/app/../index.html",
        "/app/%2e%2e/index.html",
        "/app/%2E%2E/%2E%2E/secret.txt",
        "/app/..%2f..%2fsecret.txt",
        "/app/%2fetc%2fpasswd",
        "/app//etc/passwd",
        "/app/.hidden.js",
        "/app/link.js",
        "/app/main.js%00.png",
        "/app/..\\..\\secret.txt",
        "/app/",
        "/vendor/left-pad/dist/lib.js",
        "/vendor/d3/../left-pad/dist/lib.js",
        "/vendor/d3/%2e%2e/left-pad/dist/lib.js",
        "/vendor/d3/%2e%2e%2f%2e%2e%2fpackage.json",
        "/vendor/d3",
        "/vendor/%2e%2e/package.json",
        "/vendor/@scope/pkg/%2e%2e/%2e%2e/d3/dist/lib.js",
        "/../secret.txt",
        "/%2e%2e/secret.txt",
    ],
)
def test_path_traversal_on_static_routes_is_404(ui_client, path):
    response = ui_client.get(path)
    assert response.status_code == 404, (path, response.text)
    assert "top secret" not in response.text


def test_missing_web_ui_is_a_404_that_says_so(client):
    response = client.get("/")
    assert response.status_code == 404 and "the web UI is missing" in response.json()["detail"]
    vendor = client.get("/vendor/d3/dist/d3.js")
    assert vendor.status_code == 404 and "package.json" in vendor.json()["detail"]


def test_listed_package_not_installed_asks_for_npm_ci(manager, tmp_path):
    (tmp_path / "package.json").write_text(json.dumps({"dependencies": {"d3": "7"}}))
    client = TestClient(create_app(manager, webui_dir=tmp_path, extra_hosts=TEST_HOSTS))
    response = client.get("/vendor/d3/dist/d3.js")
    assert response.status_code == 404 and "npm ci" in response.json()["detail"]


# ----------------------------------------------------------------------------- sweep
GARBAGE = [b"", b"null", b"{", b"\x00\xff", b'{"scenario": "engine_basics", "params": {"workers": -5}}', b"[]" * 1000]


@pytest.mark.slow  # every route x method x garbage body x content type
def test_no_route_answers_500_to_garbage(ui_client):
    paths = [route.path for route in ui_client.app.routes]
    for path in paths:
        concrete = path.replace("{run_id}", "x%2F..").replace("{path:path}", "..%2F%00")
        for method in ("GET", "POST", "PUT", "DELETE"):
            for body in GARBAGE:
                for content_type in ("application/json", "text/plain", "multipart/form-data; boundary=x"):
                    response = ui_client.request(method, concrete, content=body, headers={"content-type": content_type})
                    assert response.status_code < 500, (method, concrete, body, response.text)
                    assert response.headers["content-type"].startswith(("application/json", "text/html")), concrete


# ----------------------------------------------------------------------------- isolation
@pytest.mark.parametrize(
    ("scenario", "status", "error"),
    [
        ("crash", "failed", "exited with code 3"),
        ("segfault", "failed", "killed by SIGSEGV"),
        ("boom", "failed", "RuntimeError: the scenario failed on purpose"),
        ("not_a_dict", "failed", "returned list, expected a dict"),
    ],
)
def test_a_broken_scenario_fails_its_run_only(client, scenario, status, error):
    run = client.post("/api/runs", json={"scenario": scenario}).json()
    summary = wait_for(client, run["id"])
    assert summary["status"] == status and error in summary["error"], summary
    assert summary["result"] is None
    if scenario == "crash":  # what it published before dying still arrived
        assert summary["event_counts"] == {"train.metric": 1}
    assert client.get("/api/health").status_code == 200
    healthy = client.post("/api/runs", json={"scenario": "engine_basics", "params": {"chain_length": 1}}).json()
    assert wait_for(client, healthy["id"])["status"] == "done"


def test_a_hanging_run_times_out(make_manager, tmp_path):
    client = TestClient(create_app(make_manager(run_timeout_s=1.0), webui_dir=tmp_path, extra_hosts=TEST_HOSTS))
    run = client.post("/api/runs", json={"scenario": "hang", "params": {"seconds": 120.0}}).json()
    summary = wait_for(client, run["id"], timeout=30)
    assert summary["status"] == "timeout" and "1 s limit" in summary["error"]
    assert summary["ended"] - summary["started"] < 10


@pytest.mark.slow  # twenty runs
def test_twenty_concurrent_runs_get_201_or_429_and_all_accepted_finish(client):
    responses = []
    lock = threading.Lock()

    def start() -> None:
        # Runs of 2 s: none can finish (and free its slot) while the 20 requests arrive.
        response = client.post("/api/runs", json={"scenario": "hang", "params": {"seconds": 2.0}})
        with lock:
            responses.append(response)

    threads = [threading.Thread(target=start) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    codes = sorted(r.status_code for r in responses)
    assert codes == [201] * 4 + [429] * 16, codes
    assert all("limit is 4" in r.json()["detail"] for r in responses if r.status_code == 429)
    for accepted in (r.json() for r in responses if r.status_code == 201):
        assert wait_for(client, accepted["id"])["status"] == "done"
    again = client.post("/api/runs", json={"scenario": "engine_basics", "params": {"chain_length": 1}})
    assert again.status_code == 201  # capacity is back once they finished
    wait_for(client, again.json()["id"])


def _ten_clients_on_a_gated_flood(manager, tmp_path, events: int, **app_settings) -> tuple[list, dict]:
    """Attach ten WebSocket clients to one flood run before it publishes an event (the run waits for
    a gate file), let it flood, and return each client's ``(messages, close code)`` and the final summary.

    Without the gate the test would depend on timing: a warm worker process may finish the run before
    the clients connect (they then read the history), a cold one after (they receive it live)."""
    gate = tmp_path / "gate"
    client = TestClient(create_app(manager, webui_dir=tmp_path / "no-webui", extra_hosts=TEST_HOSTS, **app_settings))
    run = client.post("/api/runs", json={"scenario": "flood", "params": {"events": events, "gate": str(gate)}}).json()
    streams: list[tuple[list[dict], int]] = []
    lock = threading.Lock()

    def watch() -> None:
        stream = read_stream(client, run["id"])
        with lock:
            streams.append(stream)

    threads = [threading.Thread(target=watch) for _ in range(10)]
    for t in threads:
        t.start()
    live = manager.get(run["id"])
    deadline = time.monotonic() + 30
    while len(live.clients) < 10 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(live.clients) == 10 and live.total_events == 0, "all ten clients attached before the flood"
    gate.touch()
    for t in threads:
        t.join(60)
    assert len(streams) == 10
    return streams, client.get(f"/api/runs/{run['id']}").json()


def test_ten_clients_on_one_run_all_get_every_event(manager, tmp_path):
    # Queues that hold the whole run: however the threads are scheduled, no client may lose an event.
    room = {"client_queue_events": 40_000, "client_queue_bytes": 64 * 1024 * 1024}
    streams, summary = _ten_clients_on_a_gated_flood(manager, tmp_path, 30_000, **room)
    assert summary["status"] == "done" and summary["event_counts"]["train.metric"] == 30_000
    assert all(code == 1000 for _, code in streams)
    assert all(m["dropped"] == 0 for messages, _ in streams for m in messages if m["type"] == "frames")
    results = [stream_events(messages) for messages, _ in streams]  # each frame continues the previous one
    assert all(len(events) == summary["events"] for events in results)
    assert all(events == results[0] for events in results)
    assert [e["batch"] for e in results[0] if e["kind"] == "train.metric"] == list(range(30_000))


def test_ten_clients_that_fall_behind_are_told_every_event_they_lose(manager, tmp_path):
    # Queues of one frame, emptied once a second: the flood outruns every client, which loses frames
    # (whole: a train.metric block of a frame is too large to survive thinning) and is told each loss.
    cramped = {"client_queue_events": BATCH_MAX_EVENTS, "flush_interval": 1.0}
    streams, summary = _ten_clients_on_a_gated_flood(manager, tmp_path, 30_000, **cramped)
    assert summary["status"] == "done" and summary["event_counts"]["train.metric"] == 30_000
    told_by_client = []
    for messages, code in streams:
        assert code == 1000
        frames = [frame for m in messages if m["type"] == "frames" for frame in m["frames"]]
        assert all(a["seq"] + a["n"] <= b["seq"] for a, b in itertools.pairwise(frames)), "frames in order, none twice"
        received = [event for frame in frames for event in decode_frame(frame)]
        told = [m["dropped"] for m in messages if m["type"] == "frames"][-1]  # a running total
        assert len(received) + told == summary["events"], (len(received), told, summary["events"])
        batches = [e["batch"] for e in received if e["kind"] == "train.metric"]
        assert batches == sorted(set(batches))
        told_by_client.append(told)
    assert any(told_by_client), "the flood outran the clients (else this test shows nothing)"


def test_history_is_bounded_and_the_rest_counted(make_manager, tmp_path):
    manager = make_manager(max_history=10_000)
    client = TestClient(create_app(manager, webui_dir=tmp_path, extra_hosts=TEST_HOSTS))
    run = client.post("/api/runs", json={"scenario": "flood", "params": {"events": 50_000}}).json()
    summary = wait_for(client, run["id"])
    stored = manager.get(run["id"]).history_events
    assert stored <= 10_000 and summary["event_counts"]["train.metric"] == 50_000
    assert summary["dropped_history"] == summary["events"] - stored > 0
    messages, _ = read_stream(client, run["id"])
    assert len(stream_events(messages)) == stored


def test_a_trace_with_too_many_events_is_400(client):
    body = b"[" + b",".join([b'{"ph":"Z"}'] * (MAX_TRACE_EVENTS + 1)) + b"]"
    response = client.post("/api/traces", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400 and f"at most {MAX_TRACE_EVENTS} are accepted" in response.json()["detail"]


# ----------------------------------------------------------------------------- input that used to answer 500
JSON = {"content-type": "application/json"}


@pytest.mark.parametrize(
    ("path", "raw", "message"),
    [
        ("/api/runs", b'{"scenario": "engine_basics", "params": {"op_ms": 1e999}}', "1e999 is too large"),
        ("/api/runs", b'{"scenario": "\\ud800"}', "$.scenario holds a lone UTF-16 surrogate"),
        ("/api/runs", b'{"scenario": "engine_basics", "params": {"engine_type": "\\uDFFF"}}', "$.params.engine_type"),
        ("/api/runs", b'{"scenario": "engine_basics", "params": {"\\ud800": 1}}', "$.params (a key)"),
        ("/api/traces", b'[{"ph": "X", "ts": 1e308, "dur": 1}]', "'ts' must be a finite number within"),
        ("/api/traces", b'[{"ph": "X", "ts": 1, "dur": 1e308}]', "'dur' must be a finite number >= 0"),
        ("/api/traces", b'[{"ph": "B", "ts": ' + b"9" * 400 + b"}]", "'ts' must be a finite number within"),
        ("/api/traces", b'[{"ph": "X", "ts": 1, "dur": 1, "name": "\\ud800"}]', "$[0].name holds a lone"),
        ("/api/traces", b'[{"ph": "B", "ts": ' + b"9" * 5000 + b"}]", "not valid JSON"),
    ],
)
def test_hostile_numbers_and_strings_are_4xx_with_a_reason(client, path, raw, message):
    response = client.post(path, content=raw, headers=JSON)
    assert response.status_code == 400, response.text
    assert message in response.json()["detail"]
    assert client.get("/api/runs").json() == []


def test_a_valid_surrogate_pair_is_accepted(client):
    trace = b'[{"ph": "X", "ts": 1, "dur": 1, "name": "\\ud83d\\ude00 op"}]'
    replay = client.post("/api/traces", content=trace, headers=JSON)
    assert replay.status_code == 201, replay.text
    messages, code = read_stream(client, replay.json()["id"])
    assert code == 1000 and stream_events(messages)[0]["name"] == "\U0001f600 op"


def test_over_long_static_file_names_are_404(ui_client):
    for path in ("/app/" + "x" * 300, "/app/" + "x" * 5000, "/vendor/d3/" + "y" * 300, "/app/a/" + "b" * 256 + "/c"):
        response = ui_client.get(path)
        assert response.status_code == 404 and response.json()["detail"], path


def test_finished_histories_share_a_budget_and_the_oldest_lose_their_events_first(make_manager, tmp_path):
    manager = make_manager()
    client = TestClient(create_app(manager, webui_dir=tmp_path, extra_hosts=TEST_HOSTS))
    trace = [{"ph": "X", "name": f"op{i}", "ts": i, "dur": 1} for i in range(3000)]
    ids = [client.post("/api/traces", json=trace).json()["id"]]
    one_run = manager.get(ids[0]).stored_bytes()
    manager.max_stored_bytes = int(2.5 * one_run)  # room for two such runs
    ids += [client.post("/api/traces", json=trace).json()["id"] for _ in range(3)]
    summaries = [client.get(f"/api/runs/{run_id}").json() for run_id in ids]
    assert [s["history_evicted"] for s in summaries] == [True, True, False, False]
    assert all(s["events"] == 9000 and s["result"]["operations"] == 3000 for s in summaries)  # counts stay
    assert sum(manager.get(run_id).stored_bytes() for run_id in ids) == 2 * one_run
    messages, code = read_stream(client, ids[0])
    assert code == 1000 and messages[0]["run"]["history_evicted"] and stream_events(messages) == []
    assert client.get(f"/api/runs/{ids[0]}/trace").json()["traceEvents"] == []
    assert len(stream_events(read_stream(client, ids[-1])[0])) == 9000
