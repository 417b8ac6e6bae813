"""The memory planning scenario, run in-process: the plan it reports, its events, its switches."""

from __future__ import annotations

import gc
import itertools
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import framework as mx
from framework import events
from server.scenarios import DirectContext, get
from server.scenarios import memory_planning as mp

SCENARIO = get("memory_planning")

RESULT_KEYS = {
    "network",
    "mode",
    "data_shape",
    "options",
    "planner",
    "bytes_planned",
    "bytes_lower_bound",
    "bytes_naive",
    "bytes_saved",
    "bytes_inplace",
    "bytes_not_stored",
    "bytes_external",
    "saved_fraction",
    "num_blocks",
    "blocks",
    "inplace",
    "not_stored",
    "schedule",
    "strategies",
    "mirror_mode",
    "mirror_nodes",
    "step_seconds",
    "debug_str",
}


def run(**raw: Any) -> tuple[dict[str, Any], DirectContext, events.Recorder]:
    ctx = DirectContext()
    # Arrays that earlier tests left for the next sync point, or in reference cycles for the
    # garbage collector, would otherwise be freed inside the recording, as storage.free
    # events this run never allocated.
    gc.collect()
    mx.nd.waitall()
    with events.record() as recorder:
        result = SCENARIO.run(SCENARIO.validate(raw), ctx)
    return result, ctx, recorder


@pytest.fixture(scope="module")
def default_run() -> tuple[dict[str, Any], DirectContext, events.Recorder]:
    return run()


# ----------------------------------------------------------------------------- defaults
def test_defaults_report_a_consistent_plan(default_run):
    result, ctx, _ = default_run
    assert set(result) == RESULT_KEYS
    assert result["network"] == "mlp" and result["mode"] == "training"
    assert result["data_shape"] == [32, 784]
    assert 0 < result["bytes_planned"] < result["bytes_naive"]
    assert result["bytes_saved"] == result["bytes_naive"] - result["bytes_planned"]
    assert result["num_blocks"] == len(result["blocks"]) > 0
    assert sum(block["bytes"] for block in result["blocks"]) == result["bytes_planned"]
    # relu runs in place forward, and its gradient in place backward: one pair each per layer
    assert len(result["inplace"]) == 2 * len(mp.MLP_HIDDEN)
    assert {pair["output"] for pair in result["inplace"]} >= {f"relu{i}_output" for i in range(1, 7)}
    assert result["mirror_mode"] == "none" and result["mirror_nodes"] == 0
    assert "Total" in result["debug_str"] and f"({result['bytes_planned']} bytes" in result["debug_str"]
    assert {row["pass"] for row in result["schedule"]} == {"forward", "backward"}
    assert ctx.graph is not None and ctx.graph.startswith("digraph") and "fc1" in ctx.graph
    assert ctx.lines and "planned" in ctx.lines[-1]


def test_entries_of_a_block_never_live_at_the_same_time(default_run):
    """Schedule order inside a block; the next entry starts after the previous one's last read.

    An entry written in place starts at the very node that reads its predecessor for the
    last time; a shared block is taken only after the node that released it.
    """
    assert_blocks_hold_disjoint_lifetimes(default_run[0])


def assert_blocks_hold_disjoint_lifetimes(result: dict[str, Any]) -> None:
    for block in result["blocks"]:
        entries = block["entries"]
        assert entries, f"block {block['block']} holds no entry"
        assert [e["produced_at"] for e in entries] == sorted(e["produced_at"] for e in entries)
        assert all(e["bytes"] <= block["bytes"] for e in entries)
        assert max(e["bytes"] for e in entries) == block["bytes"]
        for previous, entry in itertools.pairwise(entries):
            assert previous["last_read_at"] is not None, f"{previous['name']} is kept, yet {entry['name']} follows"
            if entry["inplace_of"] == previous["name"]:
                assert entry["produced_at"] == previous["last_read_at"]
            else:
                assert entry["produced_at"] > previous["last_read_at"]


def test_events_match_the_result(default_run):
    result, _, recorder = default_run
    plans = recorder.of_kind("executor.plan")
    assert len(plans) == 1
    assert plans[0]["bytes_planned"] == result["bytes_planned"]
    assert plans[0]["bytes_naive"] == result["bytes_naive"]
    assert len(plans[0]["inplace"]) == len(result["inplace"])
    allocs = {e["handle"]: e for e in recorder.of_kind("storage.alloc")}
    frees = [e["handle"] for e in recorder.of_kind("storage.free")]
    for block in result["blocks"]:
        assert block["handle"] in allocs, f"block {block['block']}: no storage.alloc for its handle"
        assert allocs[block["handle"]]["nbytes"] == block["bytes"]
        assert frees.count(block["handle"]) == 1, f"block {block['block']} was not freed exactly once"
    # every array the run allocated (blocks, weights, gradients) was freed before it returned
    assert sorted(frees) == sorted(allocs)
    pushes = recorder.of_kind("engine.push")
    assert len(pushes) == len(recorder.of_kind("engine.end")) > 0


def test_a_run_is_deterministic(default_run):
    first, _, _ = default_run
    second, _, _ = run()

    def stable(result: dict[str, Any]) -> dict[str, Any]:
        blocks = [{k: v for k, v in b.items() if k != "handle"} for b in result["blocks"]]
        return {**{k: v for k, v in result.items() if k != "step_seconds"}, "blocks": blocks}

    assert stable(first) == stable(second)


# ----------------------------------------------------------------------------- the switches
@pytest.mark.parametrize("network", ["mlp", "lenet"])
@pytest.mark.parametrize("mode", ["training", "inference"])
def test_the_planner_switch_runs_either_strategy_beside_the_lower_bound(network, mode):
    mxnet, _, _ = run(network=network, mode=mode)
    greedy, _, recorder = run(network=network, mode=mode, planner="greedy_by_size")
    assert mxnet["planner"] == mxnet["options"]["planner"] == "mxnet"
    assert greedy["planner"] == greedy["options"]["planner"] == "greedy_by_size"
    # each run reports both totals (the same numbers) and the lower bound both planners share
    assert mxnet["strategies"] == greedy["strategies"]
    strategies = greedy["strategies"]
    assert set(strategies) == {"mxnet", "greedy_by_size", "lower_bound"}
    assert strategies["mxnet"] == mxnet["bytes_planned"] and strategies["greedy_by_size"] == greedy["bytes_planned"]
    bound = strategies["lower_bound"]
    assert bound == mxnet["bytes_lower_bound"] == greedy["bytes_lower_bound"]
    assert 0 < bound <= min(mxnet["bytes_planned"], greedy["bytes_planned"])
    assert_blocks_hold_disjoint_lifetimes(greedy)
    (event,) = recorder.of_kind("executor.plan")
    assert event["strategy"] == "greedy_by_size" and event["bytes_lower_bound"] == bound
    assert f"Lower bound {bound >> 20} MB ({bound} bytes" in greedy["debug_str"]


@pytest.mark.parametrize("network", ["mlp", "lenet"])
@pytest.mark.parametrize("mode", ["training", "inference"])
def test_sharing_off_costs_the_naive_bytes_minus_inplace_and_unstored(network, mode):
    """The exact relation: naive counts every planned entry, even outputs nobody reads (stored nowhere)."""
    on, _, _ = run(network=network, mode=mode)
    no_sharing, _, _ = run(network=network, mode=mode, sharing=False)
    neither, _, _ = run(network=network, mode=mode, sharing=False, inplace=False)
    assert on["bytes_planned"] < no_sharing["bytes_planned"] < neither["bytes_planned"]
    assert no_sharing["bytes_inplace"] > 0
    assert no_sharing["bytes_planned"] == (
        no_sharing["bytes_naive"] - no_sharing["bytes_inplace"] - no_sharing["bytes_not_stored"]
    )
    assert neither["bytes_planned"] == neither["bytes_naive"] - neither["bytes_not_stored"]
    assert neither["inplace"] == [] and neither["bytes_inplace"] == 0
    assert all(len(block["entries"]) == 1 for block in neither["blocks"])
    if mode == "inference":  # no backward pass: no gradient nobody reads
        assert neither["not_stored"] == [] and neither["bytes_planned"] == neither["bytes_naive"]
    else:  # the gradients of data and label are computed by backward nodes but never stored
        assert {e["name"] for e in neither["not_stored"]} == {
            "softmax_backward_output1",
            "fc1_backward_output0" if network == "mlp" else "conv1_backward_output0",
        }


def test_inplace_off_gives_activations_blocks_of_their_own():
    on, _, _ = run(network="lenet", sharing=False)
    off, _, _ = run(network="lenet", sharing=False, inplace=False)
    assert off["inplace"] == [] and off["num_blocks"] > on["num_blocks"]
    assert off["bytes_planned"] - on["bytes_planned"] == on["bytes_inplace"]


def test_mirror_cuts_training_memory_of_the_mlp():
    plain, _, _ = run(network="mlp", mode="training")
    mirrored, _, recorder = run(network="mlp", mode="training", mirror=True)
    assert mirrored["mirror_mode"] == "segment" and mirrored["mirror_nodes"] > 0
    assert mirrored["bytes_planned"] <= 0.7 * plain["bytes_planned"]
    # the recomputed activations appear as backward entries named <node>_mirror
    mirror_entries = [e for b in mirrored["blocks"] for e in b["entries"] if e["node"].endswith("_mirror")]
    assert mirror_entries and all(e["pass"] == "backward" for e in mirror_entries)
    assert recorder.of_kind("executor.plan")[0]["mirror"] == "segment"


def test_mirror_is_inactive_without_backward_and_on_lenet():
    inference, _, _ = run(network="mlp", mode="inference")
    inference_mirror, _, _ = run(network="mlp", mode="inference", mirror=True)
    assert inference_mirror["mirror_mode"] == "none" and inference_mirror["mirror_nodes"] == 0
    assert inference_mirror["bytes_planned"] == inference["bytes_planned"]
    # LeNet: conv1's output alone exceeds a segment's budget and the rest forms the last
    # segment, which is kept; checkpointing finds nothing to recompute (docs/scenarios.md).
    lenet, _, _ = run(network="lenet")
    lenet_mirror, _, _ = run(network="lenet", mirror=True)
    assert lenet_mirror["mirror_nodes"] == 0 and lenet_mirror["bytes_planned"] == lenet["bytes_planned"]


def test_training_plans_backward_entries_and_more_memory_than_inference():
    training, _, _ = run(network="lenet", mode="training")
    inference, _, _ = run(network="lenet", mode="inference")
    assert all(row["pass"] == "forward" for row in inference["schedule"])
    assert any(row["pass"] == "backward" for row in training["schedule"])
    assert training["bytes_planned"] > inference["bytes_planned"]
    assert training["bytes_external"] > inference["bytes_external"]  # the weight gradients


def test_every_planned_byte_scales_with_the_batch():
    small, _, _ = run(network="lenet", batch_size=8)
    large, _, _ = run(network="lenet", batch_size=16)
    assert large["bytes_planned"] == 2 * small["bytes_planned"]
    assert large["bytes_naive"] == 2 * small["bytes_naive"]
    assert large["data_shape"] == [16, 1, 28, 28]


# ----------------------------------------------------------------------------- parameters
def test_defaults_and_schema_describe_every_parameter():
    described = SCENARIO.describe()
    assert described["defaults"] == {
        "network": "mlp",
        "mode": "training",
        "batch_size": 32,
        "inplace": True,
        "sharing": True,
        "planner": "mxnet",
        "mirror": False,
    }
    properties = described["schema"]["properties"]
    assert all(field.get("description") for field in properties.values())
    assert properties["batch_size"]["minimum"] == 1 and properties["batch_size"]["maximum"] == 512
    assert properties["network"]["enum"] == ["mlp", "lenet", "rnn"]
    assert properties["planner"]["enum"] == ["mxnet", "greedy_by_size"]
    assert described["tutorial"] == "tutorials/05-executor-memory.md"


@pytest.mark.parametrize(
    ("raw", "field", "error"),
    [
        ({"batch_size": 0}, "batch_size", "greater_than_equal"),
        ({"batch_size": 513}, "batch_size", "less_than_equal"),
        ({"batch_size": "3"}, "batch_size", "int_type"),
        ({"batch_size": 32.0}, "batch_size", "int_type"),
        ({"batch_size": True}, "batch_size", "int_type"),
        ({"inplace": 1}, "inplace", "bool_type"),
        ({"sharing": "true"}, "sharing", "bool_type"),
        ({"mirror": None}, "mirror", "bool_type"),
        ({"network": "resnet"}, "network", "literal_error"),
        ({"mode": "train"}, "mode", "literal_error"),
        ({"planner": "tflite"}, "planner", "literal_error"),
        ({"workers": 2}, "workers", "extra_forbidden"),
    ],
)
def test_bad_parameters_are_refused_naming_the_field(raw, field, error):
    with pytest.raises(ValidationError) as info:
        SCENARIO.validate(raw)
    errors = info.value.errors()
    assert [(e["loc"], e["type"]) for e in errors] == [((field,), error)]


# ----------------------------------------------------------------------------- the documentation
DOCS = Path(__file__).resolve().parents[2] / "docs" / "scenarios.md"


def test_the_docs_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), flags=re.S)
    assert blocks, "docs/scenarios.md has no python block"
    for block in blocks:
        exec(compile(block, str(DOCS), "exec"), {})
    planned, naive = (int(word) for word in capsys.readouterr().out.split())
    assert 0 < planned < naive


@pytest.mark.slow  # plans every network of the table
def test_the_docs_table_holds_the_measured_numbers():
    """Every row of the table in docs/scenarios.md is what the scenario reports today."""
    row = re.compile(r"^\| (mlp|lenet) \| (training|inference) \| (on|off) \| (on|off) \| (on|off) \|(.*)\|$", re.M)
    rows = row.findall(DOCS.read_text())
    assert len(rows) >= 10
    for network, mode, inplace, sharing, mirror, numbers in rows:
        switches = {"inplace": inplace == "on", "sharing": sharing == "on", "mirror": mirror == "on"}
        result, _, _ = run(network=network, mode=mode, **switches)
        measured = [
            result["bytes_planned"],
            result["num_blocks"],
            result["bytes_naive"],
            len(result["inplace"]),
            result["bytes_not_stored"],
            result["mirror_nodes"],
        ]
        documented = [int(cell.strip().replace(",", "")) for cell in numbers.split("|")]
        assert documented == measured, f"docs/scenarios.md row {network} {mode} {inplace} {sharing} {mirror}"


@pytest.mark.slow  # plans every network of the table
def test_the_docs_planner_table_holds_the_measured_numbers():
    """The two-planner table in docs/scenarios.md is what the scenario's ``strategies`` report today."""
    row = re.compile(r"^\| (mlp|lenet|rnn) \| (training|inference) \|([\d, |]+)\|$", re.M)
    rows = row.findall(DOCS.read_text())
    assert len(rows) == 6
    for network, mode, numbers in rows:
        result, _, _ = run(network=network, mode=mode)
        strategies = result["strategies"]
        measured = [strategies["mxnet"], strategies["greedy_by_size"], strategies["lower_bound"], result["bytes_naive"]]
        documented = [int(cell.strip().replace(",", "")) for cell in numbers.split("|")]
        assert documented == measured, f"docs/scenarios.md planner row {network} {mode}"
