"""Weight gradients split off into nodes of their own: the same numbers, more parallel work."""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework.executor import split_backward


def _lenet():
    """LeNet's shape (two 5x5 convolutions, tanh, pooling, two dense layers), batch 64."""
    x = mx.sym.var("data")
    for i, filters in enumerate((20, 50)):
        x = mx.sym.Convolution(x, kernel=(5, 5), num_filter=filters, name=f"conv{i}")
        x = mx.sym.Pooling(mx.sym.tanh(x), kernel=(2, 2), stride=(2, 2), pool_type="max", name=f"pool{i}")
    x = mx.sym.tanh(mx.sym.FullyConnected(mx.sym.flatten(x), num_hidden=500, name="fc0"))
    return mx.sym.FullyConnected(x, num_hidden=10, name="fc1")


def _bind(symbol, split: bool, data_grad: bool = False):
    rng = np.random.default_rng(0)
    shapes, _, _ = symbol.infer_shape(data=(64, 1, 28, 28))
    names = symbol.list_arguments()
    args = {n: mx.nd.array(rng.standard_normal(s).astype(np.float32) * 0.1) for n, s in zip(names, shapes, strict=True)}
    grads = {n: mx.nd.zeros(s) for n, s in zip(names, shapes, strict=True) if n != "data" or data_grad}
    return symbol.bind(mx.cpu(), args, args_grad=grads, split_weight_gradients=split)


def _run(executor):
    head = np.random.default_rng(1).standard_normal(executor.outputs[0].shape).astype(np.float32)
    executor.forward(is_train=True)
    executor.backward(mx.nd.array(head))
    return {n: g.asnumpy() for n, g in executor.grad_dict.items() if g is not None}


def test_split_gives_the_same_gradients():
    whole, split = _bind(_lenet(), False), _bind(_lenet(), True)
    expected, got = _run(whole), _run(split)
    assert expected.keys() == got.keys()
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-6, err_msg=name)
    # conv1 and fc0 are split; conv0 is not (no input gradient wanted), nor fc1 (too small to pay)
    assert (whole.num_split_nodes, split.num_split_nodes) == (0, 2)
    backward_names = [step.name for segment in split._backward_segments for step in segment.steps]
    assert "conv1_backward_weight" in backward_names and "fc0_backward_weight" in backward_names
    assert "conv0_backward_weight" not in backward_names and "fc1_backward_weight" not in backward_names


def test_the_weight_clone_runs_beside_the_chain():
    executor = _bind(_lenet(), True)
    segments = executor._backward_segments
    owner = {step.name: k for k, segment in enumerate(segments) for step in segment.steps}
    # the clone is a segment of its own, not in the chain that goes on to conv0's gradient
    assert owner["conv1_backward_weight"] != owner["conv0_backward"]
    assert segments[owner["conv1_backward_weight"]].steps[0].name == "conv1_backward_weight"


def test_the_first_layer_is_split_when_its_input_gradient_is_wanted():
    executor = _bind(_lenet(), True, data_grad=True)
    assert executor.num_split_nodes == 3  # conv0 too: the data gradient is read by nobody else but returned
    reference = _run(_bind(_lenet(), False, data_grad=True))
    for name, values in _run(executor).items():
        np.testing.assert_allclose(values, reference[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_no_split_when_the_weight_gradient_is_not_wanted():
    symbol = _lenet()
    shapes, _, _ = symbol.infer_shape(data=(64, 1, 28, 28))
    names = symbol.list_arguments()
    args = {n: mx.nd.ones(s) for n, s in zip(names, shapes, strict=True)}
    grads = {n: mx.nd.zeros(s) for n, s in zip(names, shapes, strict=True)}
    reqs = {n: ("null" if n.startswith("conv1") else "write") for n in names}
    executor = symbol.bind(mx.cpu(), args, args_grad=grads, grad_req=reqs, split_weight_gradients=True)
    assert executor.num_split_nodes == 2  # fc0 and conv0 (whose data gradient is wanted); not conv1


def test_the_setting_turns_it_on(monkeypatch):
    monkeypatch.setenv("MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS", "1")
    assert _bind(_lenet(), None).num_split_nodes == 2
    monkeypatch.setenv("MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS", "0")
    assert _bind(_lenet(), None).num_split_nodes == 0


def test_weight_gradient_work_counts_multiply_adds():
    executor = _bind(_lenet(), True)
    node = next(
        n
        for n in executor._graph.nodes
        if n.op is not None and n.op.name == "_backward_FullyConnected" and n.name == "fc0_backward"
    )
    shapes = {
        (e.node.id, e.index): s
        for e, s in ((executor._graph.entry(i), executor._shapes[i]) for i in range(executor._graph.num_entries))
    }
    work = split_backward.weight_gradient_work(node, lambda e: shapes.get((e.node.id, e.index)))
    assert work == 64 * 500 * 800  # (batch x hidden) outputs, each against one 800-wide weight row


@pytest.mark.parametrize("bad", ["maybe", "2"])
def test_a_bad_setting_is_named(monkeypatch, bad):
    monkeypatch.setenv("MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS", bad)
    with pytest.raises(Exception, match="MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS"):
        _bind(_lenet(), None)
