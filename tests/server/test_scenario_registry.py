"""The scenario registry is the one list of scenarios: the API serves it, with the tutorials table and the panels.

Also the default run ``mxlab`` starts: engine_basics looping until it is stopped, with the
time limit the scenario states instead of the server's usual one.
"""

from __future__ import annotations

import time

import pytest
from server_helpers import wait_for

from server.scenarios import PANELS, REGISTRY, TUTORIALS, Scenario, ScenarioParams
from server.scenarios.engine_basics import LOOP_TIME_LIMIT_S, loop_programs


def test_tutorials_endpoint_serves_the_table_and_names_only_registered_scenarios(client):
    served = client.get("/api/tutorials").json()
    assert served == [tutorial.describe() for tutorial in TUTORIALS]
    assert [t["number"] for t in served] == [f"{n:02d}" for n in range(1, len(served) + 1)]
    assert {name for t in served for name in t["scenarios"]} <= set(REGISTRY)


def test_scenarios_endpoint_says_which_panels_each_scenario_shows_and_every_panel_has_one(client):
    served = [s for s in client.get("/api/scenarios").json() if s["name"] in REGISTRY]  # (not the hostile ones)
    assert [s["name"] for s in served] == list(REGISTRY)
    assert all(set(s["panels"]) <= set(PANELS) for s in served)
    assert {panel for s in served for panel in s["panels"]} == set(PANELS)  # the UI can suggest one for each


def test_the_documented_run_body_lists_the_scenarios_the_server_runs(client, manager):
    body = client.get("/openapi.json").json()["paths"]["/api/runs"]["post"]["requestBody"]
    assert body["content"]["application/json"]["schema"]["properties"]["scenario"]["enum"] == list(manager.scenarios)
    assert set(REGISTRY) <= set(manager.scenarios)
    unknown = client.post("/api/runs", json={"scenario": "no_such_scenario"})
    assert unknown.status_code == 404 and "known scenarios" in unknown.json()["detail"]


def test_a_scenario_with_an_unknown_panel_is_refused():
    with pytest.raises(ValueError, match=r"unknown panels \['timelines'\]"):
        Scenario("x", "X", "x", ScenarioParams, lambda params, ctx: {}, panels=("timelines",))


def test_the_launch_run_loops_until_cancelled_with_the_scenarios_own_time_limit(client, manager):
    scenario = REGISTRY["engine_basics"]
    assert scenario.launch_params["loop"] is True
    run = client.post(
        "/api/runs", json={"scenario": "engine_basics", "params": {"loop": True, "chain_length": 1, "op_ms": 1.0}}
    ).json()
    assert run["time_limit_s"] == LOOP_TIME_LIMIT_S > manager.run_timeout_s
    # Two complete rounds of both programs (4 operations each) have ended, and the run goes on.
    deadline = time.monotonic() + 60
    summary = client.get(f"/api/runs/{run['id']}").json()
    while summary["event_counts"].get("engine.end", 0) < 8 and time.monotonic() < deadline:
        time.sleep(0.05)
        summary = client.get(f"/api/runs/{run['id']}").json()
    assert summary["event_counts"].get("engine.end", 0) >= 8, summary
    assert summary["status"] == "running"
    cancelled = client.post(f"/api/runs/{run['id']}/cancel").json()
    assert cancelled["status"] == "cancelled"
    assert wait_for(client, run["id"])["status"] == "cancelled"


def test_a_run_without_a_loop_keeps_the_servers_limit(client, manager):
    run = client.post("/api/runs", json={"scenario": "engine_basics", "params": {"chain_length": 1}}).json()
    assert run["time_limit_s"] == manager.run_timeout_s
    assert wait_for(client, run["id"])["status"] == "done"


def test_a_loop_ends_by_itself_at_its_maximum_and_counts_its_rounds():
    rounds = loop_programs("ThreadedEngine", 2, ["dependent", "independent"], 1, 0.0, max_s=0.01)
    assert rounds >= 1  # at least one full round, then the deadline (not a cancel) ended it
