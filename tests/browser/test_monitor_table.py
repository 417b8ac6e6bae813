"""The Training panel's Monitor table: live rows from a training run, and the folding of odd values."""

from __future__ import annotations

import re

import pytest

from .browser_helpers import ARTIFACTS, open_ui, start, wait_finished

pytestmark = pytest.mark.browser

NUMBER = re.compile(r"^-?\d+(\.\d+)?(e[+-]\d+)?$")

# Before the run starts: note every (latest batch, run status) the table shows, as it changes.
WATCH_TABLE = """() => {
  window.monitorSeen = [];
  const host = document.querySelector('#monitor-table');
  new MutationObserver(() => {
    const seen = [host.dataset.batch, document.querySelector('#run-bar').dataset.status];
    const last = window.monitorSeen.at(-1);
    if (host.dataset.batch && (!last || last[0] !== seen[0])) window.monitorSeen.push(seen);
  }).observe(host, { attributes: true, childList: true });
}"""


def test_monitor_table_fills_and_updates_while_train_mlp_runs(page, server_url):
    open_ui(page, server_url)
    page.click('[data-tab="training"]')
    page.evaluate(WATCH_TABLE)
    start(page, "train_mlp", epochs=20, monitor_interval=5)
    page.wait_for_function("() => +document.querySelector('#monitor-table').dataset.rows >= 10", timeout=30_000)
    assert wait_finished(page, 120_000) == "done"
    page.wait_for_function("() => document.querySelector('#monitor-table').dataset.batch === '896'", timeout=10_000)
    seen = page.evaluate("() => window.monitorSeen")
    batches = [int(batch) for batch, _ in seen]
    assert batches == sorted(batches) and len(batches) >= 2, seen  # the table moved on as batches arrived
    assert any(status == "running" for _, status in seen), seen  # ... while the run was still going
    rows = page.locator("#monitor-table tbody tr")
    names = rows.evaluate_all("trs => trs.map((tr) => tr.dataset.name)")
    assert names[:4] == ["fc1_output", "relu1_output", "fc2_output", "softmax_output"]
    assert set(names[4:]) == {"data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias", "softmax_label"}
    latest = rows.locator(".monitor-latest").all_inner_texts()
    assert len(latest) == 10 and all(NUMBER.match(text) for text in latest), latest
    assert rows.locator("svg.sparkline path").count() == 10  # a trend per row
    assert page.locator("#monitor-table tr.monitor-bad").count() == 0
    assert "rms" in page.inner_text("#monitor-note")
    page.screenshot(path=str(ARTIFACTS / "monitor-table.png"), full_page=True)


def test_monitor_table_sorts_as_the_monitor_does(page, server_url):
    open_ui(page, server_url)
    page.click('[data-tab="training"]')
    start(page, "train_mlp", epochs=1, monitor_interval=10, monitor_pattern="fc.*", monitor_sort=True)
    assert wait_finished(page, 60_000) == "done"
    page.wait_for_function("() => document.querySelector('#monitor-table').dataset.rows === '6'", timeout=10_000)
    names = page.locator("#monitor-table tbody tr").evaluate_all("trs => trs.map((tr) => tr.dataset.name)")
    assert names == sorted(names) == ["fc1_bias", "fc1_output", "fc1_weight", "fc2_bias", "fc2_output", "fc2_weight"]


def test_monitor_stats_fold_nan_and_infinity_strings(page, server_url):
    open_ui(page, server_url)
    result = page.evaluate(
        """async () => {
          const { MonitorStats, RECENT, MAX_ROWS, recentRange } = await import('/app/monitorstats.js');
          const { MonitorTable } = await import('/app/monitortable.js');
          const stats = new MonitorStats();
          const ev = (batch, name, value, role = 'output') =>
            stats.add({ kind: 'monitor.stat', batch, name, role, stat: 'rms', value });
          ev(1, 'fc1_output', 0.5);
          ev(1, 'fc1_weight', 'nan', 'argument');
          ev(1, 'fc1_weight', 0.25, 'input');  // monitor_all: the same array as an input is its own row
          ev(2, 'fc1_output', 'inf');
          ev(3, 'fc1_output', ['-inf', 2, 'nan', 4, 5, 6]);
          for (let b = 4; b <= 4 + RECENT; b++) ev(b, 'many', b);  // one more than a row keeps
          for (let i = 0; i < MAX_ROWS + 3; i++) ev(99, `extra${i}`, 1);
          const host = document.createElement('div');
          const note = document.createElement('p');
          new MonitorTable({ host, note }).render(stats, '');
          const rows = [...host.querySelectorAll('tbody tr')];
          return {
            size: stats.size,
            skipped: stats.skipped,
            first: stats.order.slice(0, 4).map((r) => [r.role, r.name]),
            latest: stats.order[0].latest.map(String),
            range: recentRange(stats.order[0]),
            many: [stats.order[3].recent.length, stats.order[3].recent[0].batch, recentRange(stats.order[3])],
            bad: rows.filter((tr) => tr.classList.contains('monitor-bad')).map((tr) => tr.dataset.name),
            texts: rows.slice(0, 2).map((tr) => tr.querySelector('.monitor-latest').textContent),
            batch: host.dataset.batch,
            note: note.textContent,
          };
        }"""
    )
    assert result["size"] == 500 and result["skipped"] == 7  # 4 rows before the extras: 496 extras fit
    assert result["first"] == [
        ["output", "fc1_output"],
        ["argument", "fc1_weight"],
        ["input", "fc1_weight"],
        ["output", "many"],
    ]
    assert result["latest"] == ["-Infinity", "2", "NaN", "4", "5", "6"]
    assert result["range"] == {"min": 0.5, "max": 0.5}  # the finite values of the first elements: 0.5, inf, -inf
    assert result["many"] == [30, 5, {"min": 5, "max": 34}]  # the oldest record was dropped
    assert result["bad"] == ["fc1_output", "fc1_weight"]
    assert result["texts"] == ["[\u2212\u221e, 2.000, NaN, 4.000, \u2026]", "NaN"]  # minus infinity, ..., ellipsis
    assert result["batch"] == "99" and "7 records of further arrays are not shown" in result["note"]
    assert not page.problems


def test_a_run_without_a_monitor_says_so(page, server_url):
    open_ui(page, server_url)
    page.click('[data-tab="training"]')
    start(page, "engine_basics", chain_length=1, op_ms=0)
    assert wait_finished(page, 60_000) == "done"
    page.wait_for_function(
        "() => document.querySelector('#monitor-note').textContent.includes('installed no')", timeout=10_000
    )
    assert page.get_attribute("#monitor-table", "data-rows") == "0"
    assert page.locator("#monitor-table table").count() == 0
