"""The memory planner on small graphs whose plans can be checked by hand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import framework as mx
from framework import symbol as sym
from framework.executor import IndexedGraph, build_gradient, infer_shapes, infer_types
from framework.executor.graph import GraphError
from framework.executor.plan_memory import (
    BAD_STORAGE_ID,
    EXTERNAL_STORAGE_ID,
    PlanError,
    PlanOptions,
    describe,
    plan_memory,
)
from framework.operator.node import Entry, variable


def plan_of(outputs, options=None, external=(), **shapes):
    """Index ``outputs`` (a Symbol or entries), infer float32 shapes from ``shapes``, plan."""
    heads = outputs.outputs if hasattr(outputs, "outputs") else list(outputs)
    graph = IndexedGraph(heads)
    known_shapes = infer_shapes(heads, shapes)
    known_types = infer_types(heads, dict.fromkeys(shapes, "float32"))
    keys = [(graph.entry(e).node.id, graph.entry(e).index) for e in range(graph.num_entries)]
    plan = plan_memory(
        graph, [known_shapes[k] for k in keys], [known_types[k] for k in keys], external=external, options=options
    )
    return graph, plan


def sid(graph, plan, name):
    """The storage id of the entry called ``name`` (``<node>_output`` or a variable name)."""
    matches = [e for e in range(graph.num_entries) if graph.entry_name(e) == name]
    assert len(matches) == 1, (name, [graph.entry_name(e) for e in range(graph.num_entries)])
    return plan.storage[matches[0]]


def eid(graph, name):
    return next(e for e in range(graph.num_entries) if graph.entry_name(e) == name)


def nid(graph, name):
    return next(i for i, n in enumerate(graph.nodes) if n.name == name)


# ---------------------------------------------------------------------------- the indexed graph
def test_indexed_graph_numbers_nodes_and_entries_in_topological_order():
    x = sym.Variable("x")
    bn = sym.BatchNorm(sym.FullyConnected(x, num_hidden=4, name="fc"), name="bn")
    graph = IndexedGraph(bn.outputs)
    names = [n.name for n in graph.nodes]
    assert names.index("fc") < names.index("bn") and names[0] == "x"
    assert graph.node_row_ptr[0] == 0 and graph.node_row_ptr[-1] == graph.num_entries
    assert graph.num_entries == sum(n.num_outputs() for n in graph.nodes)
    bn_id = graph.node_id(bn.outputs[0].node)
    assert list(graph.output_entries(bn_id)) == [graph.node_row_ptr[bn_id] + k for k in range(3)]
    assert graph.outputs == [graph.entry_id(bn.outputs[0])]
    assert graph.entry(graph.outputs[0]) == bn.outputs[0]
    fc_id = nid(graph, "fc")
    assert [graph.entry_name(e) for e in graph.input_entries[fc_id]] == ["x", "fc_weight", "fc_bias"]
    assert [graph.nodes[i].name for i in graph.auxiliary_nodes()] == ["bn_moving_mean", "bn_moving_var"]
    assert [graph.nodes[i].name for i in graph.argument_nodes()] == ["x", "fc_weight", "fc_bias", "bn_gamma", "bn_beta"]
    assert graph.ancestors()[bn_id] >> fc_id & 1 and not graph.ancestors()[fc_id] >> bn_id & 1
    with pytest.raises(GraphError, match="has 1 output"):
        graph.entry_id(graph.nodes[fc_id], 1)
    with pytest.raises(GraphError, match="not part of this graph"):
        graph.node_id(sym.Variable("elsewhere").outputs[0].node)


# ---------------------------------------------------------------------------- in place
def test_an_in_place_chain_reuses_one_block():
    x = sym.Variable("x")
    y = sym.Activation(sym.sigmoid(sym.relu(sym.exp(x, name="a"), name="b"), name="c"), act_type="tanh", name="d")
    graph, plan = plan_of(y, x=(4, 8))
    assert sid(graph, plan, "x") == EXTERNAL_STORAGE_ID
    blocks = {sid(graph, plan, f"{n}_output") for n in "abcd"}
    assert blocks == {0}  # exp needs a new block (its input is an argument), the rest overwrite it
    assert [(graph.entry_name(i), graph.entry_name(o)) for i, o in plan.inplace] == [
        ("a_output", "b_output"),
        ("b_output", "c_output"),
        ("c_output", "d_output"),
    ]
    assert plan.bytes_planned == 4 * 8 * 4 and plan.bytes_naive == 4 * 4 * 8 * 4


def test_in_place_needs_the_last_reader_equal_sizes_and_dtype_widths():
    x = sym.Variable("x")
    a = sym.exp(x, name="a")
    b = sym.relu(a, name="b")  # a is read again later: b may not overwrite it
    c = sym.elemwise_add(a, b, name="c")  # last reader of a and b: overwrites one of them
    graph, plan = plan_of(c, x=(3, 5))
    assert sid(graph, plan, "b_output") != sid(graph, plan, "a_output")
    assert sid(graph, plan, "c_output") == sid(graph, plan, "a_output")
    assert (eid(graph, "a_output"), eid(graph, "c_output")) in plan.inplace

    # relu offers (0, 0); the planner takes it only for equal element counts and dtype widths
    graph = IndexedGraph(sym.relu(sym.exp(x, name="e"), name="r").outputs)
    for shape_r, dtype_r, taken in [
        ((3, 5), "float32", True),
        ((3, 5), "int32", True),
        ((3, 5), "float64", False),
        ((15,), "float32", True),
        ((3, 4), "float32", False),
    ]:
        plan = plan_memory(graph, [(3, 5), (3, 5), shape_r], ["float32", "float32", dtype_r])
        assert bool(plan.inplace) is taken, (shape_r, dtype_r)


# ---------------------------------------------------------------------------- liveness
def test_a_diamond_keeps_a_block_alive_until_its_last_reader():
    x = sym.Variable("x")
    a = sym.exp(x, name="a")
    b = sym.sin(a, name="b")
    c = sym.cos(b, name="c")
    d = sym.elemwise_add(a, c, name="d")
    graph, plan = plan_of(d, PlanOptions(inplace=False), x=(2, 3))
    a_block = sid(graph, plan, "a_output")
    assert a_block not in {sid(graph, plan, "b_output"), sid(graph, plan, "c_output")}
    assert plan.last_reader[eid(graph, "a_output")] == nid(graph, "d")
    assert a_block in plan.released_after[nid(graph, "d")] or eid(graph, "d_output") in graph.outputs
    # b dies at c, so d (allocated after c ran) reuses b's block
    assert plan.released_after[nid(graph, "c")] == [sid(graph, plan, "b_output")]
    assert sid(graph, plan, "d_output") == sid(graph, plan, "b_output")
    assert plan.num_blocks == 3


def test_graph_outputs_are_never_freed_and_unread_outputs_get_no_memory():
    x = sym.Variable("x")
    a = sym.exp(x, name="a")
    group = sym.Group([a, sym.sin(a, name="b")])
    graph, plan = plan_of(group, x=(2, 3))
    assert sid(graph, plan, "b_output") != sid(graph, plan, "a_output")  # a is an output: not overwritten
    assert plan.released_after == [[] for _ in graph.nodes]
    # Dropout's mask is read by nobody in an inference graph: not stored, still counted as naive
    drop = sym.Dropout(sym.exp(x, name="e"), p=0.5, name="drop")
    graph, plan = plan_of(drop, x=(2, 3))
    mask = eid(graph, "drop_mask")
    assert plan.storage[mask] == BAD_STORAGE_ID and plan.entry_bytes[mask] == 24
    assert plan.bytes_naive == 3 * 24 and plan.bytes_planned == 2 * 24


def test_training_graph_frees_activations_once_backward_has_read_them():
    x = sym.Variable("data")
    h = sym.Activation(sym.FullyConnected(x, num_hidden=16, name="fc0"), act_type="relu", name="relu0")
    s = sym.Activation(sym.FullyConnected(h, num_hidden=16, name="fc1"), act_type="sigmoid", name="sig1")
    out = sym.MakeLoss(sym.sum(s, name="total"), name="loss")
    heads = out.outputs
    args = [n for n in IndexedGraph(heads).nodes if n.is_variable]
    grads = build_gradient(heads, [Entry(variable("head_grad"), 0)], [Entry(n, 0) for n in args])
    graph = IndexedGraph(heads + grads)
    shapes, types = infer_shapes(graph.heads, {"data": (8, 10)}), infer_types(graph.heads, {"data": "float32"})
    keys = [(graph.entry(e).node.id, graph.entry(e).index) for e in range(graph.num_entries)]
    grad_ids = [graph.entry_id(g) for g in grads]
    plan = plan_memory(graph, [shapes[k] for k in keys], [types[k] for k in keys], external=grad_ids)
    backward_start = nid(graph, "loss_backward")
    assert all(plan.storage[g] == EXTERNAL_STORAGE_ID for g in grad_ids)
    # relu0's output is read by fc1's backward and relu0's backward, then its block is free
    relu0 = eid(graph, "relu0_output")
    assert plan.last_reader[relu0] == nid(graph, "relu0_backward") > backward_start
    assert plan.storage[relu0] in plan.released_after[nid(graph, "relu0_backward")]
    # total's output is read only by the loss in forward (MakeLoss's backward reads its own output)
    assert plan.last_reader[eid(graph, "total_output")] == nid(graph, "loss") < backward_start
    # fc1's output: sigmoid may overwrite it (sigmoid's backward reads the output, not the input)
    assert sid(graph, plan, "sig1_output") == sid(graph, plan, "fc1_output")
    assert plan.bytes_planned < plan.bytes_naive / 2


# ---------------------------------------------------------------------------- sharing by size
def _sized_chain(first: int, second: int):
    """x -> a (first floats) -> b (1 float) -> c (second floats): a is dead when c is placed."""
    x = sym.Variable("x")
    a = sym.FullyConnected(x, num_hidden=first, name="a")
    b = sym.FullyConnected(a, num_hidden=1, name="b")
    return sym.FullyConnected(b, num_hidden=second, name="c")


@pytest.mark.parametrize(
    ("first", "second", "shared"),
    [(16 * 64, 64, True), (17 * 64, 64, False), (64, 16 * 64, True), (64, 17 * 64, False), (64, 64, True)],
)
def test_dead_blocks_are_shared_within_a_size_ratio_of_16(first, second, shared):
    graph, plan = plan_of(_sized_chain(first, second), x=(1, 4))
    a, c = sid(graph, plan, "a_output"), sid(graph, plan, "c_output")
    assert (a == c) is shared
    if shared:
        assert plan.block_bytes[a] == 4 * max(first, second)  # the block grows to the larger size
        assert plan.num_blocks == 2
    else:
        assert plan.num_blocks == 3


def test_larger_free_blocks_are_preferred_smallest_first():
    x = sym.Variable("x")
    big = sym.FullyConnected(x, num_hidden=400, name="big")
    mid = sym.FullyConnected(x, num_hidden=200, name="mid")
    small = sym.FullyConnected(x, num_hidden=50, name="small")
    joined = sym.Concat(big, mid, small, dim=1, name="cat")  # the three die together
    want = sym.FullyConnected(joined, num_hidden=100, name="want")
    graph, plan = plan_of(sym.FullyConnected(want, num_hidden=3, name="tail"), x=(1, 4))
    # free at `want`: 1600, 800, 200 bytes (+ the concat is still alive): 800 >= 400 is the tightest fit
    assert sid(graph, plan, "want_output") == sid(graph, plan, "mid_output")


def test_planner_switches_show_what_each_rule_saves():
    x = sym.Variable("x")
    y = x
    for i in range(6):
        y = sym.relu(sym.FullyConnected(y, num_hidden=32, name=f"fc{i}"), name=f"r{i}")
    full = plan_of(y, x=(4, 32))[1]
    no_inplace = plan_of(y, PlanOptions(inplace=False), x=(4, 32))[1]
    no_sharing = plan_of(y, PlanOptions(sharing=False), x=(4, 32))[1]
    nothing = plan_of(y, PlanOptions(inplace=False, sharing=False), x=(4, 32))[1]
    block = 4 * 32 * 4
    assert nothing.bytes_planned == nothing.bytes_naive == 12 * block
    # inference: fc_i+1 needs a block while relu_i is alive, so two blocks alternate either way
    assert not no_inplace.inplace and no_inplace.bytes_planned == 2 * block
    assert no_sharing.bytes_planned == 6 * block and len(no_sharing.inplace) == 6
    assert full.bytes_planned == 2 * block


def test_parallel_safe_sharing_never_links_independent_branches():
    x = sym.Variable("x")
    left = sym.FullyConnected(
        sym.exp(sym.FullyConnected(x, num_hidden=8, name="l1"), name="l2"), num_hidden=8, name="l3"
    )
    right = sym.FullyConnected(
        sym.exp(sym.FullyConnected(x, num_hidden=8, name="r1"), name="r2"), num_hidden=8, name="r3"
    )
    out = sym.elemwise_add(left, right, name="join")
    graph, plan = plan_of(out, x=(2, 8))
    left_blocks = {sid(graph, plan, n) for n in ("l1_output", "l2_output", "l3_output")}
    right_blocks = {sid(graph, plan, n) for n in ("r1_output", "r2_output", "r3_output")}
    assert left_blocks.isdisjoint(right_blocks)
    graph, mxnet_like = plan_of(out, PlanOptions(parallel_safe=False), x=(2, 8))
    left_blocks = {sid(graph, mxnet_like, n) for n in ("l1_output", "l2_output", "l3_output")}
    right_blocks = {sid(graph, mxnet_like, n) for n in ("r1_output", "r2_output", "r3_output")}
    assert not left_blocks.isdisjoint(right_blocks)  # MXNet's rule: the right branch waits for the left
    assert mxnet_like.bytes_planned < plan.bytes_planned


def test_external_entries_and_errors():
    x = sym.Variable("x")
    y = sym.relu(sym.exp(x, name="a"), name="b")
    graph, plan = plan_of(y, external=[0], x=(2, 2))
    assert plan.storage[0] == EXTERNAL_STORAGE_ID
    lines = describe(graph, plan)
    assert lines[0] == "entry 0 x: external, 16 bytes" and "in place of a_output" in lines[2]
    with pytest.raises(PlanError, match=r"entry 'a_output' has shape None"):
        plan_memory(graph, [(2, 2), None, (2, 2)], ["float32"] * 3)
    with pytest.raises(PlanError, match="3 entries but 2 shapes"):
        plan_memory(graph, [(2, 2)] * 2, ["float32"] * 2)
    assert mx.executor.PlanOptions().match_range == 16


# ---------------------------------------------------------------------------- against MXNet
@pytest.mark.slow  # plans every benchmark network: several seconds
def test_benchmark_plans_at_most_mxnets_memory_for_the_w4_networks():
    """benchmarks/executor_memory.py's memory workload: MLP-8, LeNet, MLP-20, train and infer."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "executor_memory.py"), "--quick", "--only", "memory"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    records = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert {(r["net"], r["mode"]) for r in records} == {
        (n, m) for n in ("mlp8", "lenet", "mlp20") for m in ("train", "infer")
    }
    for r in records:
        assert r["meets_target"], r
        assert r["reported_MB"] <= r["mxnet_reported_MB"] and r["planned_MB"] < r["naive_MB"]


@pytest.mark.slow  # plans every benchmark network, ResNet-18 included
def test_benchmark_reports_both_planners_and_the_lower_bound():
    """benchmarks/executor_memory.py's planners workload: MLP-8, LeNet, MLP-20, ResNet-18, train and infer."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "executor_memory.py"), "--quick", "--only", "planners"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    records = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert {(r["net"], r["mode"]) for r in records} == {
        (n, m) for n in ("mlp8", "lenet", "mlp20", "resnet18") for m in ("train", "infer")
    }
    for r in records:
        sizes = r["bytes"]
        assert 0 < sizes["lower_bound"] <= min(sizes["mxnet"], sizes["greedy_by_size"]) < sizes["naive"], r
        assert r["least"] and all(sizes[s] == min(sizes["mxnet"], sizes["greedy_by_size"]) for s in r["least"])


def test_planner_defaults_follow_the_environment(monkeypatch):
    monkeypatch.setenv("MXLAB_EXEC_ENABLE_INPLACE", "0")
    monkeypatch.setenv("MXLAB_EXEC_MATCH_RANGE", "4")
    assert PlanOptions.from_env() == PlanOptions(inplace=False, match_range=4)
    exe = mx.executor.simple_bind(sym.relu(sym.exp(sym.Variable("x"), name="a"), name="b"), mx.cpu(), x=(2, 2))
    assert exe.plan.options.inplace is False and not exe.plan.inplace
    monkeypatch.setenv("MXLAB_EXEC_MATCH_RANGE", "zero")
    with pytest.raises(mx.MXLabError, match="MXLAB_EXEC_MATCH_RANGE must be an integer"):
        PlanOptions.from_env()
