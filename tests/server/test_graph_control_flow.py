"""The graph endpoint shows a loop's body: memory_planning's ``rnn`` network is a ``_foreach`` node.

plot_network draws a control-flow node's subgraphs as dashed clusters beside the node, named
``<node>/<role>/<name>``, so the web UI's Graphviz renderer draws the body like any graph.
"""

from __future__ import annotations

import re

from server_helpers import wait_for


def _nodes_in(dot: str, cluster: str) -> list[str]:
    """The node names declared inside the DOT cluster ``cluster``."""
    body = dot.split(f'subgraph "{cluster}" {{', 1)[1].split("\n\t}", 1)[0]
    return re.findall(r'^\s*"([^"]+)" \[', body, flags=re.MULTILINE)


def test_graph_of_a_foreach_network_draws_the_body(client):
    run = client.post("/api/runs", json={"scenario": "memory_planning", "params": {"network": "rnn"}}).json()
    summary = wait_for(client, run["id"])
    assert summary["status"] == "done" and summary["has_graph"] is True
    assert summary["result"]["network"] == "rnn"
    response = client.get(f"/api/runs/{run['id']}/graph.dot")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/vnd.graphviz")
    dot = response.text
    assert re.search(r"^\s*_foreach0 \[", dot, flags=re.MULTILINE)  # the loop node itself
    body = _nodes_in(dot, "cluster__foreach0/body/")
    assert body == [
        "_foreach0/body/foreach_data0",
        "_foreach0/body/rnn_i2h",
        "_foreach0/body/foreach_state0",
        "_foreach0/body/rnn_h2h",
        "_foreach0/body/_plus0",
        "_foreach0/body/rnn_tanh",
    ]
    assert 'label="_foreach0: body" style=dashed' in dot
    # the body's output leads to the loop node; inside, the body's own arrows
    assert '_foreach0 -> "_foreach0/body/rnn_tanh" [arrowtail=open dir=back style=dashed]' in dot
    assert '"_foreach0/body/rnn_tanh" -> "_foreach0/body/_plus0"' in dot


def test_graph_of_the_other_networks_has_no_cluster(client):
    run = client.post("/api/runs", json={"scenario": "memory_planning", "params": {"network": "mlp"}}).json()
    wait_for(client, run["id"])
    assert "cluster" not in client.get(f"/api/runs/{run['id']}/graph.dot").text
