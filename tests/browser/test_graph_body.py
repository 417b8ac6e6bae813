"""The graph view draws a loop's body: memory_planning's ``rnn`` network holds a ``_foreach`` node.

plot_network puts the body in a dashed Graphviz cluster beside the loop node; the web UI lays it
out with the same renderer as the rest of the graph, so the body's nodes are clickable like any.
"""

from __future__ import annotations

import pytest

from .browser_helpers import ARTIFACTS, open_ui, start, wait_finished

pytestmark = pytest.mark.browser

BODY = "_foreach0/body/"


def test_graph_view_shows_the_foreach_body_as_a_cluster(page, server_url):
    open_ui(page, server_url)
    start(page, "memory_planning", network="rnn")
    assert wait_finished(page) == "done"
    page.click('[data-tab="graph"]')
    page.wait_for_selector("#graph svg g.cluster", timeout=20_000)
    clusters = page.eval_on_selector_all("#graph svg g.cluster", "gs => gs.map(g => g.textContent)")
    assert any("_foreach0: body" in text for text in clusters)
    names = page.eval_on_selector_all("#graph svg g.node", "gs => gs.map(g => g.dataset.node)")
    body = [n for n in names if n.startswith(BODY)]
    assert sorted(body) == sorted(
        BODY + n for n in ("foreach_data0", "foreach_state0", "rnn_i2h", "rnn_h2h", "_plus0", "rnn_tanh")
    )
    assert "_foreach0" in names and "fc_out" in names  # the outer graph is drawn around it
    page.locator(f'#graph svg g.node[data-node="{BODY}rnn_tanh"]').click()
    detail = page.inner_text("#graph-detail")
    assert "Activation" in detail and "_foreach0" in detail  # the body output feeds the loop node
    page.screenshot(path=str(ARTIFACTS / "graph_foreach_body.png"), full_page=True)
    assert not page.problems
