"""The extension_library scenario, run in-process: a C++ pass or partitioner rewrites a symbol, shown as the graph."""

from __future__ import annotations

import pytest
from needs import needs_tool
from pydantic import ValidationError
from server_helpers import wait_for

from server.scenarios import DirectContext, get

pytestmark = pytest.mark.slow  # compiles the example libraries with g++ on first use

SCENARIO = get("extension_library")


def run(**raw):
    needs_tool("g++", "the scenario compiles the MXNet 1.9.1-style example libraries")
    ctx = DirectContext()
    return SCENARIO.run(SCENARIO.validate(raw), ctx), ctx


@pytest.mark.parametrize("backend", ["myProp", "mySelect"])
def test_partitioner_result_is_drawn_with_groups_and_computes_the_same(backend):
    result, ctx = run(backend=backend)
    assert result["max_abs_difference"] < 1e-4
    assert [g["ops"] for g in result["subgraph_nodes"]] == [["null", "log", "exp", "sqrt"], ["null", "exp", "sqrt"]]
    assert result["nodes_after"] < result["nodes_before"]
    assert ctx.graph.startswith("digraph") and "subgraph cluster_custom_subgraph_op0" in ctx.graph
    assert any("loaded libsubgraph_lib" in line for line in ctx.lines)


def test_pass_result_is_drawn():
    result, ctx = run(backend="foldExpLog")
    assert result["max_abs_difference"] < 1e-4
    assert result["nodes_after"] == result["nodes_before"] - 2  # exp(log(...)) folded; the side branch has no log
    assert result["subgraph_nodes"] == [] and "log" not in ctx.graph
    annotated, _ = run(backend="annotatePass")
    assert annotated["annotated_nodes"] == annotated["nodes_after"] - 3  # every operator node (3 variables)


def test_unknown_backend_is_refused_by_the_parameter_model():
    with pytest.raises(ValidationError, match="backend"):
        SCENARIO.validate({"backend": "tensorrt"})


def test_graph_endpoint_serves_the_partitioned_symbol(client):
    needs_tool("g++", "the scenario compiles the MXNet 1.9.1-style example libraries")
    run_id = client.post("/api/runs", json={"scenario": "extension_library", "params": {"backend": "mySelect"}}).json()[
        "id"
    ]
    summary = wait_for(client, run_id)
    assert summary["status"] == "done" and summary["has_graph"] is True, summary
    dot = client.get(f"/api/runs/{run_id}/graph.dot").text
    assert dot.startswith("digraph mySelect") and dot.count("subgraph cluster_") == 2
