"""The UI's pure logic, imported as ES modules in the browser: dependency rule, plan lifetimes, forms."""

from __future__ import annotations

import pytest

from .test_webui import open_ui

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
