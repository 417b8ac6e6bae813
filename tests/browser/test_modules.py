"""The UI's pure logic, imported as ES modules in the browser: dependency rule, plan lifetimes, forms."""

from __future__ import annotations

import pytest

from .browser_helpers import open_ui

pytestmark = pytest.mark.browser


def test_dependency_rule_matches_the_engine(page, server_url):
    open_ui(page, server_url)
    waits = page.evaluate(
        """async () => {
          const { DependencyTracker } = await import('/app/dependencies.js');
          const t = new DependencyTracker();
          return [
            t.push(1, [], [10]),        // W1 writes v10
            t.push(2, [10], [20]),      // R2 reads v10 -> waits for W1
            t.push(3, [10], []),        // R3 reads v10 -> waits for W1 only (reads run together)
            t.push(4, [], [10]),        // W4 writes v10 -> waits for the reads R2, R3
            t.push(5, [10], [10]),      // read-and-write counts as a write -> waits for W4
            t.push(6, [30], [40]),      // untouched variables -> waits for nothing
            t.push(7, [20], []),        // reads v20 written by R2
          ].map((w) => w.sort());
        }"""
    )
    assert waits == [[], [1], [1], [2, 3], [4], [], [2]]
    assert not page.problems


def test_plan_lifetimes_follow_the_schedule(page, server_url):
    open_ui(page, server_url)
    result = page.evaluate(
        """async () => {
          const { planLifetimes } = await import('/app/memory.js');
          const plan = {
            graph: [
              {id: 0, name: 'data', op: 'null', inputs: []},
              {id: 1, name: 'fc', op: 'FullyConnected', inputs: [[0, 0]]},
              {id: 2, name: 'relu', op: 'Activation', inputs: [[1, 0]]},
              {id: 3, name: 'out', op: 'FullyConnected', inputs: [[2, 0]]},
            ],
            entries: [
              {id: 0, name: 'data', node: 0, bytes: 64},
              {id: 1, name: 'fc_output', node: 1, bytes: 128},
              {id: 2, name: 'relu_output', node: 2, bytes: 128},
              {id: 3, name: 'out_output', node: 3, bytes: 32},
            ],
            storage: [-2, 0, 0, 1],  // -2: external (a bound array)
            inplace: [[1, 2]],
            blocks: [128, 32],
          };
          const { lifetimes, steps } = planLifetimes(plan);
          return { steps, rows: lifetimes.map((l) => [l.entry.name, l.block, l.first, l.last, l.inplaceOf ?? null]) };
        }"""
    )
    assert result["steps"] == 3
    assert result["rows"] == [
        ["fc_output", 0, 0, 1, None],
        ["relu_output", 0, 1, 2, 1],
        ["out_output", 1, 2, 2, None],  # read by nobody: a graph output, kept to the end
    ]
    assert not page.problems


def test_form_sends_typed_values_and_refuses_out_of_range(page, server_url):
    open_ui(page, server_url)
    result = page.evaluate(
        """async () => {
          const { buildForm } = await import('/app/form.js');
          const form = document.createElement('form');
          const schema = {
            properties: {
              n: {type: 'integer', minimum: 1, maximum: 8, default: 2, title: 'N'},
              lr: {type: 'number', minimum: 0.0001, maximum: 1, default: 0.1},
              on: {type: 'boolean', default: true},
              kind: {type: 'string', enum: ['a', 'b'], default: 'b'},
            },
          };
          const read = buildForm(form, schema, schema.defaults);
          const ok = read();
          form.querySelector('[data-param=n]').value = '9';
          let tooBig = null;
          try { read(); } catch (e) { tooBig = e.message; }
          form.querySelector('[data-param=n]').value = '2.5';
          let fraction = null;
          try { read(); } catch (e) { fraction = e.message; }
          return { ok, tooBig, fraction };
        }"""
    )
    assert result["ok"] == {"n": 2, "lr": 0.1, "on": True, "kind": "b"}
    assert result["tooBig"] == "N: at most 8"
    assert result["fraction"] == "N: enter a whole number"
    assert not page.problems


def test_profiler_instrumentation_becomes_timeline_tracks(page, server_url):
    open_ui(page, server_url)
    result = page.evaluate(
        """async () => {
          const { RunModel } = await import('/app/model.js');
          const { Timeline } = await import('/app/timeline.js');
          const ms = (t) => t * 1e6;
          const model = new RunModel({ status: 'done' });
          model.addEvents([
            { kind: 'engine.push', t_ns: ms(0), op: 1, name: 'dot', ctx: 'cpu(0)', reads: [], writes: [5] },
            { kind: 'engine.start', t_ns: ms(1), op: 1, worker: 'cpu(0)/normal/0' },
            { kind: 'profiler.task_begin', t_ns: ms(1), domain: 'train', name: 'step', range: 7,
              thread: 'MainThread' },
            { kind: 'engine.end', t_ns: ms(3), op: 1, worker: 'cpu(0)/normal/0' },
            { kind: 'profiler.counter', t_ns: ms(3), domain: 'train', name: 'batches', value: 1,
              thread: 'MainThread' },
            { kind: 'profiler.task_end', t_ns: ms(4), domain: 'train', name: 'step', range: 7,
              thread: 'MainThread' },
            { kind: 'profiler.marker', t_ns: ms(4), domain: 'train', name: 'epoch', scope: 'process',
              thread: 'MainThread' },
            { kind: 'profiler.counter', t_ns: ms(5), domain: 'train', name: 'batches', value: 2,
              thread: 'MainThread' },
            { kind: 'profiler.event_begin', t_ns: ms(5), domain: null, name: 'eval', range: 8,
              thread: 'MainThread' },
          ]);
          const host = document.createElement('div');
          host.style.width = '900px';
          document.body.appendChild(host);
          const legend = document.createElement('div');
          const detail = document.createElement('div');
          const timeline = new Timeline({ host, legend, detail, resetButton: document.createElement('button') });
          timeline.setModel(model);
          const step = model.userTracks.tracks.get('train').ranges[0];
          const q = (sel) => [...host.querySelectorAll(sel)];
          return {
            tracks: model.userTracks.names(),
            step: [step.tStart, step.tEnd],
            lanes: q('g.user-lane').map((g) => g.getAttribute('data-track')),
            workerLanes: q('g.lane').map((g) => g.getAttribute('data-worker')),
            ranges: q('rect.user-range').map(
              (r) => [r.getAttribute('data-track'), r.getAttribute('data-name'), r.classList.contains('running')],
            ),
            markers: q('line.user-marker').map((l) => l.getAttribute('data-name')),
            counters: q('path.user-counter').map(
              (p) => [p.getAttribute('data-name'), p.querySelector('title').textContent],
            ),
            bars: q('rect.bar').length,
          };
        }"""
    )
    assert result["tracks"] == ["event", "train", "train,instant_marker"]
    assert result["step"] == [1, 4]
    assert result["lanes"] == ["event", "train", "train,instant_marker"]
    assert result["workerLanes"] == ["cpu(0)/normal/0"]
    assert sorted(result["ranges"]) == [["event", "eval", True], ["train", "step", False]]
    assert result["markers"] == ["epoch"]
    assert result["counters"] == [["batches", "batches = 2"]]
    assert result["bars"] == 1
    assert not page.problems


def test_kvstore_steps_fold_and_draw_one_stacked_bar_per_step(page, server_url):
    open_ui(page, server_url)
    result = page.evaluate(
        """async () => {
          const { addKVStoreEvent, meanSplit, KVStoreView } = await import('/app/kvstore.js');
          const traffic = { push: 0, pull: 0, bytes: 0, steps: [] };
          const step = (rank, step, compute_ms, comm_ms, wait_ms) =>
            ({ kind: 'kvstore.step', t_ns: 1, rank, step, compute_ms, comm_ms, wait_ms, calls: 3, nbytes: 100 });
          const folded = [
            addKVStoreEvent(traffic, { kind: 'kvstore.push', t_ns: 1, key: 'w', nbytes: 24, ctx: 'cpu(0)' }),
            addKVStoreEvent(traffic, { kind: 'kvstore.pull', t_ns: 2, key: 'w', nbytes: 24, ctx: 'cpu(0)' }),
            addKVStoreEvent(traffic, step(0, 0, 2, 6, 2)),
            addKVStoreEvent(traffic, step(0, 1, 4, 2, 0)),
            addKVStoreEvent(traffic, step(1, 0, 1, 1, 1)),
            addKVStoreEvent(traffic, { kind: 'engine.push', t_ns: 3 }),
          ];
          const host = document.createElement('div');
          const stats = document.createElement('div');
          const legend = document.createElement('div');
          document.body.append(stats, host);
          const view = new KVStoreView({ stats, host, legend });
          view.setModel({ kvstore: traffic, summary: { status: 'done' }, finished: true });
          const heights = [...host.querySelectorAll('g[data-rank="0"]')].map((g) =>
            [...g.querySelectorAll('rect')].reduce((h, r) => h + Number(r.getAttribute('height')), 0));
          return {
            folded, push: traffic.push, pull: traffic.pull, bytes: traffic.bytes,
            mean: meanSplit(traffic.steps.filter((s) => s.rank === 0)),
            bars: host.dataset.steps, rows: host.querySelectorAll('g').length, heights,
            parts: [...host.querySelector('g').querySelectorAll('rect')].map((r) => r.dataset.part),
            legend: legend.querySelectorAll('.legend-item').length,
          };
        }"""
    )
    assert result["folded"] == [True, True, True, True, True, False]
    assert (result["push"], result["pull"], result["bytes"]) == (1, 1, 48)
    assert result["mean"] == {"compute_ms": 3, "comm_ms": 4, "wait_ms": 1, "calls": 3, "nbytes": 100}
    assert (result["bars"], result["rows"]) == ("3", 3)
    # bar height is proportional to the step's wall time (10 ms and 6 ms; the tallest fills the row)
    assert result["heights"][0] == pytest.approx(120) and result["heights"][1] == pytest.approx(72)
    assert result["parts"] == ["compute_ms", "comm_ms", "wait_ms"]
    assert result["legend"] == 3
    assert not page.problems
