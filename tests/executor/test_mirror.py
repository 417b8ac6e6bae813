"""Mirroring: recomputation in backward gives the same gradients with less planned memory."""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework import symbol as sym
from framework.config import ConfigError
from framework.executor import build_gradient, simple_bind
from framework.executor.mirror import (
    MirrorError,
    apply_mirror,
    mode_from_env,
    node_rule,
    parse_mode,
    recomputable,
    segment_rule,
)
from framework.operator.node import Entry, topo_sort, variable


def node_of(symbol):
    return symbol.outputs[0].node


def mlp(depth, hidden):
    x = sym.Variable("data")
    for i in range(depth):
        x = sym.Activation(sym.FullyConnected(x, num_hidden=hidden, name=f"fc{i}"), act_type="relu", name=f"relu{i}")
    return sym.SoftmaxOutput(sym.FullyConnected(x, num_hidden=10, name="fc_out"), name="softmax")


def sin_chain(depth=4):
    """FC -> sin layers: sin's backward reads its input, FC's backward reads the sin output."""
    h = sym.Variable("x")
    for i in range(depth):
        h = sym.sin(sym.FullyConnected(h, num_hidden=64, name=f"fc{i}"), name=f"sin{i}")
    return sym.MakeLoss(sym.sum(h, name="total"), name="loss")


def run(symbol, mirror, **shapes):
    """Bind with ``mirror``, fill every argument from a fixed seed, run one training step."""
    exe = simple_bind(symbol, mx.cpu(), mirror=mirror, **shapes)
    rng = np.random.default_rng(0)
    for name in sorted(exe.arg_dict):
        array = exe.arg_dict[name]
        if name.endswith("label"):
            array[:] = rng.integers(0, 10, array.shape)
        else:
            array[:] = rng.uniform(-0.3, 0.3, array.shape)
    exe.forward(is_train=True)
    exe.backward()
    return exe


def assert_same_gradients(a, b):
    for name, grad in a.grad_dict.items():
        assert np.array_equal(grad.asnumpy(), b.grad_dict[name].asnumpy()), name


# ---------------------------------------------------------------------------- modes and rules
def test_modes_and_the_environment_variable(monkeypatch):
    assert [parse_mode(v) for v in (None, False, 0, "0", True, 1, "1", "node", 2, "segment")] == [
        "none",
        "none",
        "none",
        "none",
        "node",
        "node",
        "node",
        "node",
        "segment",
        "segment",
    ]
    with pytest.raises(MirrorError, match="got 'sometimes'"):
        parse_mode("sometimes")
    monkeypatch.delenv("MXLAB_BACKWARD_DO_MIRROR", raising=False)
    assert mode_from_env() == "none"
    monkeypatch.setenv("MXLAB_BACKWARD_DO_MIRROR", "1")
    assert mode_from_env() == "node"
    exe = simple_bind(sin_chain(), mx.cpu(), x=(8, 64))  # the executor follows the variable
    assert exe.num_mirror_nodes > 0
    monkeypatch.setenv("MXLAB_BACKWARD_DO_MIRROR", "yes")
    with pytest.raises(ConfigError, match="MXLAB_BACKWARD_DO_MIRROR must be one of 0, 1, segment, got 'yes'"):
        mode_from_env()
    monkeypatch.delenv("MXLAB_BACKWARD_DO_MIRROR")
    monkeypatch.setenv("MXNET_BACKWARD_DO_MIRROR", "1")  # MXNet's name, MXNet's values (0 or 1)
    assert mode_from_env() == "node"
    monkeypatch.setenv("MXNET_BACKWARD_DO_MIRROR", "segment")
    with pytest.raises(ConfigError, match="MXNET_BACKWARD_DO_MIRROR .*must be one of 0, 1, got 'segment'"):
        mode_from_env()


def test_mxnets_per_node_rule():
    x = sym.Variable("x")
    fc = sym.FullyConnected(x, num_hidden=4, name="fc")
    assert not node_rule(node_of(fc))
    assert not node_rule(node_of(sym.Convolution(x, kernel=(3, 3), num_filter=2, name="conv")))
    assert not node_rule(node_of(sym.Concat(x, x, name="cat")))
    assert not node_rule(node_of(sym.SoftmaxOutput(x, name="out")))
    assert node_rule(node_of(sym.Activation(x, act_type="relu", name="act")))
    assert node_rule(node_of(sym.Pooling(x, kernel=(2, 2), pool_type="max", name="pool")))
    forced = sym.FullyConnected(x, num_hidden=4, name="fc2", attr={"__force_mirroring__": "True"})
    assert node_rule(node_of(forced))
    # never recomputed: random draws, state updates
    dropout = sym.Dropout(x, p=0.5, name="drop", attr={"__force_mirroring__": "True"})
    assert not recomputable(node_of(dropout)) and not node_rule(node_of(dropout))
    assert not node_rule(node_of(sym.BatchNorm(x, name="bn")))
    assert not node_rule(node_of(sym.random.uniform(shape=(2,), name="draw"))) if hasattr(sym, "random") else True
    assert not recomputable(node_of(x))


def test_apply_mirror_rewires_backward_nodes_to_clones():
    net = sin_chain(depth=2)
    heads = net.outputs
    args = [n for n in topo_sort(heads) if n.is_variable]
    grads = build_gradient(heads, [Entry(variable("head_grad"), 0)], [Entry(n, 0) for n in args])
    forward = topo_sort(heads)
    before = {n.id: list(n.inputs) for n in forward}
    clones = apply_mirror(heads, grads, node_rule)
    # sum's output ("total") is read by no backward node: its clone is dropped
    assert sorted((a.name, c.name) for a, c in clones) == [("sin0", "sin0_mirror"), ("sin1", "sin1_mirror")]
    assert {n.id: list(n.inputs) for n in forward} == before  # the forward graph is untouched
    by_name = {n.name: n for n in topo_sort(heads + grads)}
    fc1_backward = by_name["fc1_backward"]
    assert fc1_backward.inputs[1].node is by_name["sin0_mirror"]  # not the forward sin0
    assert by_name["sin0_mirror"].inputs[0].node is by_name["fc0"]  # FC is kept, not recomputed
    # each clone waits for the backward node scheduled before it: recomputed just in time
    assert [d.name for d in by_name["sin0_mirror"].control_deps] == ["sin1_backward"]
    assert [d.name for d in by_name["sin1_mirror"].control_deps] == ["loss_backward"]
    assert apply_mirror(heads, grads, lambda n: False) == []


def test_segment_rule_keeps_about_sqrt_n_checkpoints():
    net = mlp(16, 8)
    heads = net.outputs
    args = [n for n in topo_sort(heads) if n.is_variable]
    grads = build_gradient(heads, [Entry(variable("head_grad"), 0)], [Entry(n, 0) for n in args])
    rule = segment_rule(heads, grads, lambda node: 100)
    mirrored = [n.name for n in topo_sort(heads) if not n.is_variable and rule(n)]
    # 17 units (16 fc+relu layers, fc_out), 4 segments: a checkpoint every 4.1 units, and
    # fc and relu of a layer go together (relu overwrites the fc output in place)
    kept = [k for k in range(16) if f"fc{k}" not in mirrored]
    assert kept == [4, 8, 12, 13, 14, 15]  # the last segment (13-15) is kept: backward needs it first
    assert all((f"fc{k}" in mirrored) == (f"relu{k}" in mirrored) for k in range(16))
    assert "fc_out" not in mirrored and "softmax" not in mirrored
    assert segment_rule(heads, grads, lambda node: 100, num_segments=1)(node_of(net)) is False


# ---------------------------------------------------------------------------- through the executor
def test_node_mirroring_gives_identical_gradients_with_less_memory():
    plain = run(sin_chain(), None, x=(32, 64))
    mirrored = run(sin_chain(), "node", x=(32, 64))
    assert mirrored.num_mirror_nodes == 4  # the sin layers
    assert_same_gradients(plain, mirrored)
    assert mirrored.plan.bytes_planned < plain.plan.bytes_planned
    assert "sin0_mirror" in mirrored.debug_str()


@pytest.mark.slow  # trains a 20-layer MLP
def test_segment_checkpointing_cuts_mlp20_training_memory_by_more_than_40_percent():
    net = mlp(20, 512)
    plain = run(net, None, data=(64, 784))
    segment = run(net, "segment", data=(64, 784))
    assert_same_gradients(plain, segment)
    np.testing.assert_array_equal(plain.outputs[0].asnumpy(), segment.outputs[0].asnumpy())
    saved = 1 - segment.plan.bytes_planned / plain.plan.bytes_planned
    assert saved >= 0.4, f"segment checkpointing saved {saved:.0%}"
    # MXNet's per-node rule keeps FC outputs instead of (in-place) relu outputs: no saving
    node = simple_bind(net, mx.cpu(), mirror="node", data=(64, 784))
    assert node.plan.bytes_planned == plain.plan.bytes_planned


def test_mirroring_leaves_dropout_and_batchnorm_alone():
    x = sym.Variable("x")
    h = sym.Dropout(sym.relu(sym.FullyConnected(x, num_hidden=32, name="fc"), name="r"), p=0.3, name="drop")
    h = sym.BatchNorm(sym.exp(h, name="e"), name="bn")
    net = sym.MakeLoss(sym.sum(sym.relu(h, name="r2")), name="loss")
    for mode in ("node", "segment"):
        exe = simple_bind(net, mx.cpu(), mirror=mode, x=(16, 8))
        names = {n.name for n in exe.graph.nodes}
        assert "drop_mirror" not in names and "bn_mirror" not in names
    mx.random.seed(3)
    plain = run(net, None, x=(16, 8))
    mx.random.seed(3)
    node = run(net, "node", x=(16, 8))
    assert_same_gradients(plain, node)
    assert np.array_equal(plain.aux_dict["bn_moving_mean"].asnumpy(), node.aux_dict["bn_moving_mean"].asnumpy())
