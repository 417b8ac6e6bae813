"""The hybridize scenario, run in-process: both phases train, the graph is traced, pushes and memory compare."""

from __future__ import annotations

import gc

import pytest
from pydantic import ValidationError

import framework as mx
from framework import events
from server.scenarios import DirectContext, get

SCENARIO = get("hybridize")


def run(**raw):
    ctx = DirectContext()
    gc.collect()
    mx.nd.waitall()
    with events.record() as recorder:
        result = SCENARIO.run(SCENARIO.validate(raw), ctx)
    return result, ctx, recorder


@pytest.fixture(scope="module")
def default_run():
    return run()


def test_both_phases_train_and_the_traced_graph_is_published(default_run):
    result, ctx, recorder = default_run
    steps = SCENARIO.params().steps
    assert [r["phase"] for r in result["steps"]] == ["imperative"] * steps + ["hybridized"] * steps
    assert result["steps"][-1]["loss"] < result["steps"][0]["loss"]  # one network, trained on through both phases
    assert "hybridsequential0_dense0_fwd" in ctx.graph and "digraph" in ctx.graph
    plans = [e for e in recorder.events if e["kind"] == "executor.plan"]
    assert len(plans) == result["cached_op_executors"] == 1
    assert plans[0]["bytes_planned"] == result["planned_bytes"]
    metrics = {e["name"] for e in recorder.events if e["kind"] == "train.metric"}
    assert metrics == {f"{p}-{n}" for p in ("imperative", "hybridized") for n in ("loss", "step-ms")}


def test_the_forward_call_is_one_push_per_operator_imperatively_and_bulked_hybridized(default_run):
    result, _, _ = default_run
    imperative, hybridized = result["summary"]["imperative"], result["summary"]["hybridized"]
    assert imperative["forward_pushes"] == 5  # 3 FullyConnected + 2 relu
    assert hybridized["forward_pushes"] == 3  # input copy, one bulk segment, output copy
    assert result["forward_push_ratio"] == pytest.approx(5 / 3, abs=1e-3)


def test_the_hybridized_step_pushes_fewer_operations(default_run):
    result, _, _ = default_run
    imperative, hybridized = result["summary"]["imperative"], result["summary"]["hybridized"]
    # bulked backward segments, and no copies of the parameters' gradients out of the executor
    assert hybridized["engine_pushes"] < imperative["engine_pushes"] - 6


def test_one_push_per_node_without_bulking():
    result, _, _ = run(bulk_size=1, steps=2)
    assert result["summary"]["hybridized"]["forward_pushes"] == 2 + 5


def test_planned_memory_is_below_the_imperative_peak(default_run):
    result, _, _ = default_run
    assert 0 < result["planned_bytes"] < result["naive_bytes"]
    assert result["planned_bytes"] < result["imperative_peak_pool_bytes"]
    assert result["debug_str"].strip()


def test_bad_parameters_are_refused():
    with pytest.raises(ValidationError, match="steps"):
        SCENARIO.validate({"steps": 1})
    with pytest.raises(ValidationError, match="batch_size"):
        SCENARIO.validate({"batch_size": 0})
