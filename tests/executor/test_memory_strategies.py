"""Liveness, the lower bound and the greedy-by-size planner against MXNet's.

Both planners must give plans the executor runs to the same results, never put two entries
alive at the same time in one block (except an in-place pair), and never use less than the
lower bound.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import framework as mx
from framework import symbol as sym
from framework.config import ConfigError
from framework.executor import IndexedGraph, PlanOptions, infer_shapes, infer_types, simple_bind
from framework.executor.greedy_by_size import plan_greedy_by_size
from framework.executor.liveness import END, liveness
from framework.executor.plan_memory import EXTERNAL_STORAGE_ID, PlanError, plan_memory, size_entries
from framework.executor.planners import PLANNERS
from server.scenarios.memory_planning import lenet

STRATEGIES = ("mxnet", "greedy_by_size")


def graph_of(net: sym.Symbol, **shapes):
    heads = net.outputs
    graph = IndexedGraph(heads)
    known_shapes = infer_shapes(heads, shapes)
    known_types = infer_types(heads, dict.fromkeys(shapes, "float32"))
    keys = [(graph.entry(e).node.id, graph.entry(e).index) for e in range(graph.num_entries)]
    return graph, [known_shapes[k] for k in keys], [known_types[k] for k in keys]


def eid(graph, name):
    return next(e for e in range(graph.num_entries) if graph.entry_name(e) == name)


def chain():
    """data (2, 8) -> fc1 -> relu1 -> fc2 -> relu2: every entry 64 bytes."""
    x = sym.FullyConnected(sym.Variable("data"), num_hidden=8, name="fc1")
    x = sym.Activation(x, act_type="relu", name="relu1")
    x = sym.FullyConnected(x, num_hidden=8, name="fc2")
    return sym.Activation(x, act_type="relu", name="relu2")


# ---------------------------------------------------------------------------- liveness and the bound
def test_liveness_runs_from_producer_to_last_reader_and_keeps_heads_to_the_end():
    graph, shapes, dtypes = graph_of(chain(), data=(2, 8))
    external, sizes = size_entries(graph, shapes, dtypes)
    live = liveness(graph, sizes, dtypes, external, graph.outputs)
    fc1, relu1, relu2 = eid(graph, "fc1_output"), eid(graph, "relu1_output"), eid(graph, "relu2_output")
    node = {n.name: i for i, n in enumerate(graph.nodes)}
    assert live.interval(fc1) == (node["fc1"], node["relu1"])
    assert live.interval(relu1) == (node["relu1"], node["fc2"])
    assert live.last_use[relu2] == END and live.interval(relu2) == (node["relu2"], len(graph.nodes))
    assert live.last_use[eid(graph, "data")] is None  # external: not planned
    assert live.inplace_candidates[node["relu1"]] == [(fc1, relu1)]
    assert not liveness(graph, sizes, dtypes, external, graph.outputs, inplace=False).inplace_candidates[node["relu1"]]


def test_lower_bound_counts_in_place_pairs_once():
    graph, shapes, dtypes = graph_of(chain(), data=(2, 8))
    # At fc2 both relu1_output (its input) and fc2_output are alive: 2 x 64 bytes.
    assert plan_memory(graph, shapes, dtypes).bytes_lower_bound == 128
    three = sym.Activation(
        sym.Activation(sym.FullyConnected(sym.Variable("data"), num_hidden=8, name="fc"), act_type="relu", name="r1"),
        act_type="relu",
        name="r2",
    )
    graph, shapes, dtypes = graph_of(three, data=(2, 8))
    assert plan_memory(graph, shapes, dtypes).bytes_lower_bound == 64  # the chain lives in one block
    assert plan_memory(graph, shapes, dtypes, options=PlanOptions(inplace=False)).bytes_lower_bound == 128


def test_a_node_reading_its_input_twice_offers_no_in_place_candidate():
    x = sym.FullyConnected(sym.Variable("data"), num_hidden=8, name="fc")
    graph, shapes, dtypes = graph_of(sym.elemwise_mul(x, x, name="sq"), data=(2, 8))
    external, sizes = size_entries(graph, shapes, dtypes)
    live = liveness(graph, sizes, dtypes, external, graph.outputs)
    assert all(not pairs for pairs in live.inplace_candidates)
    assert plan_memory(graph, shapes, dtypes).bytes_lower_bound == 128


# ---------------------------------------------------------------------------- the greedy planner
def test_greedy_places_the_largest_entries_first_into_the_first_free_block():
    # big (2x64 floats) is read by small (2x8), small by out (2x64). Placed largest first: big opens block 0;
    # out is alive after big's last reader (small), so it fits into block 0; small is alive with both: block 1.
    x = sym.FullyConnected(sym.Variable("data"), num_hidden=64, name="big")
    x = sym.FullyConnected(x, num_hidden=8, name="small")
    x = sym.FullyConnected(x, num_hidden=64, name="out")
    graph, shapes, dtypes = graph_of(x, data=(2, 8))
    p = plan_greedy_by_size(graph, shapes, dtypes)
    assert p.block_bytes == [512, 64]
    assert p.storage[eid(graph, "big_output")] == p.storage[eid(graph, "out_output")] == 0
    assert p.storage[eid(graph, "small_output")] == 1
    assert p.bytes_planned == p.bytes_lower_bound == 576
    alone = plan_greedy_by_size(graph, shapes, dtypes, options=PlanOptions(strategy="greedy_by_size", sharing=False))
    assert alone.bytes_planned == alone.bytes_naive == 1088


def test_greedy_never_links_independent_branches_when_parallel_safe():
    # Two towers from data, joined at the end: a block shared across towers would make one wait for the other.
    x = sym.Variable("data")
    a = sym.FullyConnected(sym.FullyConnected(x, num_hidden=16, name="a1"), num_hidden=16, name="a2")
    b = sym.FullyConnected(sym.FullyConnected(x, num_hidden=16, name="b1"), num_hidden=16, name="b2")
    graph, shapes, dtypes = graph_of(sym.elemwise_add(a, b, name="join"), data=(4, 16))
    ancestors = graph.ancestors()
    for parallel_safe in (True, False):
        options = PlanOptions(strategy="greedy_by_size", parallel_safe=parallel_safe)
        p = plan_greedy_by_size(graph, shapes, dtypes, options=options)
        linked = False
        for sid in range(p.num_blocks):
            writers = sorted(graph.entry_nodes[e] for e in p.entries_of_block(sid))
            for early, late in itertools.pairwise(writers):
                linked |= not ancestors[late] >> early & 1
        assert linked is not parallel_safe


def test_strategy_comes_from_the_environment_or_the_options(monkeypatch):
    monkeypatch.setenv("MXLAB_MEMORY_PLANNER", "greedy_by_size")
    assert PlanOptions.from_env().strategy == "greedy_by_size"
    exe = simple_bind(chain(), mx.cpu(), data=(2, 8))
    assert exe.plan.options.strategy == "greedy_by_size"
    assert "planner greedy_by_size" in exe.debug_str()
    monkeypatch.setenv("MXLAB_MEMORY_PLANNER", "tflite")
    with pytest.raises(ConfigError, match="MXLAB_MEMORY_PLANNER"):
        PlanOptions.from_env()
    with pytest.raises(PlanError, match="unknown strategy 'tflite'"):
        PlanOptions(strategy="tflite")
    assert set(PLANNERS) == set(STRATEGIES)


def test_debug_str_shows_the_lower_bound_beside_the_total():
    exe = simple_bind(chain(), mx.cpu(), data=(2, 8))
    text = exe.debug_str()
    bound = exe.plan.bytes_lower_bound
    assert f"Lower bound {bound >> 20} MB ({bound} bytes alive at once at the peak)" in text
    assert "planner mxnet" in text and bound <= exe.plan.bytes_planned


# ---------------------------------------------------------------------------- same results either way
def mlp() -> sym.Symbol:
    x = sym.Variable("data")
    for i in range(3):
        x = sym.Activation(sym.FullyConnected(x, num_hidden=32, name=f"fc{i}"), act_type="relu", name=f"relu{i}")
    return sym.SoftmaxOutput(sym.FullyConnected(x, num_hidden=10, name="out"), name="softmax")


def resnet_style() -> sym.Symbol:
    """A stem and two residual blocks (convolution, batch norm, relu, identity shortcut)."""
    x = sym.Activation(
        sym.BatchNorm(sym.Convolution(sym.Variable("data"), kernel=(3, 3), pad=(1, 1), num_filter=8, name="stem")),
        act_type="relu",
    )
    for i in range(2):
        y = sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=8, name=f"b{i}_conv1")
        y = sym.Activation(sym.BatchNorm(y, name=f"b{i}_bn1"), act_type="relu", name=f"b{i}_relu1")
        y = sym.BatchNorm(sym.Convolution(y, kernel=(3, 3), pad=(1, 1), num_filter=8, name=f"b{i}_conv2"))
        x = sym.Activation(sym.elemwise_add(x, y, name=f"b{i}_add"), act_type="relu", name=f"b{i}_out")
    x = sym.FullyConnected(sym.Flatten(sym.Pooling(x, global_pool=True, kernel=(1, 1), pool_type="avg")), num_hidden=10)
    return sym.SoftmaxOutput(x, name="softmax")


def run_step(net, data_shape, strategy, train, **bind_kwargs):
    """Bind with ``strategy``, run one step on fixed random data; the plan, its graph and the results."""
    options = PlanOptions(strategy=strategy, inplace=bind_kwargs.pop("inplace", True))
    exe = simple_bind(
        net, mx.cpu(), grad_req="write" if train else "null", plan_options=options, data=data_shape, **bind_kwargs
    )
    rng = np.random.default_rng(0)
    for name, array in sorted(exe.arg_dict.items()):
        if name == "softmax_label":
            array[:] = rng.integers(0, 10, array.shape)
        else:
            array[:] = rng.uniform(-0.5, 0.5, array.shape)
    exe.forward(is_train=train)
    if train:
        exe.backward()
    results = [o.asnumpy() for o in exe.outputs]
    results += [g.asnumpy() for _, g in sorted(exe.grad_dict.items()) if g is not None]
    return exe.plan, exe.graph, results


NETS = {"mlp": (mlp, (8, 20)), "lenet": (lenet, (4, 1, 28, 28)), "resnet_style": (resnet_style, (2, 3, 12, 12))}


@pytest.mark.parametrize("net_name", sorted(NETS))
@pytest.mark.parametrize(
    "config",
    [{"train": True}, {"train": False}, {"train": True, "inplace": False}, {"train": True, "mirror": "segment"}],
)
def test_both_strategies_compute_identical_results(net_name, config):
    build, shape = NETS[net_name]
    net = build()
    train = config["train"]
    extra = {k: v for k, v in config.items() if k != "train"}
    plans, graphs, results = {}, {}, {}
    for strategy in STRATEGIES:
        plans[strategy], graphs[strategy], results[strategy] = run_step(net, shape, strategy, train, **dict(extra))
    for a, b in zip(results["mxnet"], results["greedy_by_size"], strict=True):
        np.testing.assert_array_equal(a, b)
    assert plans["mxnet"].bytes_lower_bound == plans["greedy_by_size"].bytes_lower_bound
    for strategy, p in plans.items():
        assert_valid(p, graphs[strategy].entry_nodes)


# ---------------------------------------------------------------------------- properties over random graphs
def assert_valid(p, producers):
    """Entries alive at once never share a block (but in-place pairs), blocks hold them, the bound holds."""
    inplace = set(p.inplace)
    for sid in range(p.num_blocks):
        entries = p.entries_of_block(sid)
        assert all(p.entry_bytes[e] <= p.block_bytes[sid] for e in entries)
        for i, a in enumerate(entries):  # in id order, which is schedule order
            for b in entries[i + 1 :]:
                # a must be dead before b is written, unless b overwrote a in place
                last = p.last_reader[a]
                assert (a, b) in inplace or (last is not None and last < producers[b]), (sid, a, b)
    assert p.bytes_lower_bound <= p.bytes_planned <= p.bytes_naive


@st.composite
def random_graphs(draw):
    """Random DAGs of FullyConnected, activations, adds and a two-output split, on (4, width) arrays."""
    nodes = [(sym.Variable("data"), 8)]
    for i in range(draw(st.integers(2, 12))):
        kind = draw(st.sampled_from(["fc", "relu", "tanh", "add", "mul", "split"]))
        src, width = nodes[draw(st.integers(0, len(nodes) - 1))]
        if kind == "fc":
            hidden = draw(st.sampled_from([4, 8, 16, 64]))
            nodes.append((sym.FullyConnected(src, num_hidden=hidden, name=f"n{i}"), hidden))
        elif kind in ("relu", "tanh"):
            nodes.append((sym.Activation(src, act_type=kind, name=f"n{i}"), width))
        elif kind == "split":
            if width % 2:
                continue
            halves = sym.split(src, num_outputs=2, axis=1, name=f"n{i}")
            nodes.append((halves[draw(st.integers(0, 1))], width // 2))
        else:
            same = [s for s, w in nodes if w == width]
            other = same[draw(st.integers(0, len(same) - 1))]
            op = sym.elemwise_add if kind == "add" else sym.elemwise_mul
            nodes.append((op(src, other, name=f"n{i}"), width))
    heads = (
        draw(st.lists(st.integers(1, len(nodes) - 1), min_size=1, max_size=2, unique=True)) if len(nodes) > 1 else []
    )
    outs = [nodes[h][0] for h in heads] or [sym.relu(nodes[0][0])]
    return sym.Group(outs) if len(outs) > 1 else outs[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    net=random_graphs(),
    strategy=st.sampled_from(STRATEGIES),
    inplace=st.booleans(),
    sharing=st.booleans(),
    parallel_safe=st.booleans(),
    train=st.booleans(),
)
def test_no_two_live_entries_share_memory_on_random_graphs(net, strategy, inplace, sharing, parallel_safe, train):
    options = PlanOptions(strategy=strategy, inplace=inplace, sharing=sharing, parallel_safe=parallel_safe)
    exe = simple_bind(net, mx.cpu(), grad_req="write" if train else "null", plan_options=options, data=(4, 8))
    p, graph = exe.plan, exe.graph
    assert_valid(p, graph.entry_nodes)
    assert all(p.storage[e] == EXTERNAL_STORAGE_ID for e in exe._grad_eids.values())
    # the other strategy on the same graph: one liveness, so one bound
    other = exe.plan_with(dataclasses.replace(options, strategy=STRATEGIES[1 - STRATEGIES.index(strategy)]))
    assert_valid(other, graph.entry_nodes)
    assert other.bytes_lower_bound == p.bytes_lower_bound


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(net=random_graphs())
def test_random_graphs_compute_the_same_with_either_strategy(net):
    outputs = {}
    for strategy in STRATEGIES:
        exe = simple_bind(net, mx.cpu(), plan_options=PlanOptions(strategy=strategy), data=(4, 8))
        rng = np.random.default_rng(1)
        for _, array in sorted(exe.arg_dict.items()):
            array[:] = rng.uniform(-1, 1, array.shape)
        exe.forward(is_train=True)
        exe.backward([mx.nd.ones(o.shape) for o in exe.outputs])
        grads = [g.asnumpy() for _, g in sorted(exe.grad_dict.items()) if g is not None]
        outputs[strategy] = [o.asnumpy() for o in exe.outputs] + grads
    for a, b in zip(outputs["mxnet"], outputs["greedy_by_size"], strict=True):
        np.testing.assert_array_equal(a, b)
