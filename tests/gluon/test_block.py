"""Block and HybridBlock: naming, registration, hooks, hybridize, deferred init, save/load, export, errors."""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework import autograd, events, gluon
from framework.gluon import nn
from framework.gluon.block import BlockError
from framework.symbol.backends import SymbolBackendError


def _x(shape, seed=0):
    return mx.nd.array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _mlp():
    """Dense(8, relu) -> BatchNorm -> Dense(3), named as the first network of a fresh program."""
    with mx.name.NameManager():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(8, activation="relu"), nn.BatchNorm(), nn.Dense(3))
    return net


def test_prefixes_follow_mxnet_naming():
    net = _mlp()
    with mx.name.NameManager():
        other = nn.Dense(2)
    assert net.prefix == "hybridsequential0_"
    assert [c.prefix for c in net._children.values()] == [
        "hybridsequential0_dense0_",
        "hybridsequential0_batchnorm0_",
        "hybridsequential0_dense1_",
    ]
    assert other.name == "dense0"
    assert "hybridsequential0_dense0_relu_" in net[0].act.prefix
    names = list(net.collect_params())
    assert names[:2] == ["hybridsequential0_dense0_weight", "hybridsequential0_dense0_bias"]
    assert list(net.collect_params(".*running.*")) == [
        "hybridsequential0_batchnorm0_running_mean",
        "hybridsequential0_batchnorm0_running_var",
    ]


def test_children_and_parameters_register_through_attributes():
    class Net(gluon.Block):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.encoder = nn.Dense(4, in_units=3)
                self.scale = self.params.get("scale", shape=(1,), init="ones")

        def forward(self, x):
            return self.encoder(x) * self.scale.data()

    net = Net()
    assert list(net._children) == ["encoder"]
    assert sorted(net._collect_params_with_prefix()) == ["encoder.bias", "encoder.weight", "scale"]
    net.initialize()
    assert net(_x((2, 3))).shape == (2, 4)
    with pytest.raises(TypeError, match="Changing attribute type"):
        net.encoder = 3
    with pytest.raises(BlockError, match="Children of HybridBlock must also be HybridBlock"):
        nn.HybridSequential().add(Net())


def test_deferred_init_from_the_first_input_imperative_and_hybridized():
    for hybridize in (False, True):
        net = _mlp()
        net.initialize()
        if hybridize:
            net.hybridize()
        assert net(_x((4, 5))).shape == (4, 3)
        assert net[0].weight.shape == (8, 5)
        assert net[1].gamma.shape == (8,)


def test_hybridized_forward_and_backward_match_imperative():
    net = _mlp()
    net.initialize(mx.init.Xavier())
    x = _x((6, 5))
    params = list(net.collect_params().values())
    results = []
    for hybridize in (False, True):
        net.hybridize(hybridize)
        with autograd.record():
            y = net(x)
            loss = (y * y).sum()
        loss.backward()
        results.append([y.asnumpy()] + [p.grad().asnumpy().copy() for p in params if p.grad_req != "null"])
    for imperative, hybrid in zip(*results, strict=True):
        np.testing.assert_allclose(imperative, hybrid, rtol=1e-4, atol=1e-5)
    assert net._cached_op is not None  # the hybridized run went through the CachedOp
    assert len(net._cached_op.executors()) >= 1


def test_hybridize_static_alloc_and_unknown_option():
    net = _mlp()
    net.initialize()
    net.hybridize(static_alloc=True, static_shape=True)
    a = net(_x((4, 5)))
    b = net(_x((4, 5), seed=1))
    assert not np.allclose(a.asnumpy(), b.asnumpy())  # outputs are not overwritten by the next call
    assert net._cached_op.static_alloc and net._cached_op.static_shape
    with pytest.raises(
        SymbolBackendError, match=r"unknown backend 'tensorrt'; registered graph passes and partitioners"
    ):
        net.hybridize(backend="tensorrt")
    with pytest.raises(BlockError, match=r"backend options \['fast'\] given without a backend"):
        net.hybridize(fast=True)
    net.hybridize(backend=None, forward_bulk_size=1, backward_bulk_size=1, inline_limit=4)
    with mx.autograd.record():  # the bulk sizes are a recorded call's; inference bulks the whole graph
        net(_x((4, 5)))
    (executor,) = net._cached_op.executors()
    assert len(executor._forward_segments) == 4  # bulk size 1: a segment per node (FC, relu, BatchNorm, FC)


def test_forward_hooks_and_detach():
    net = nn.Dense(2, in_units=3)
    net.initialize()
    calls = []
    pre = net.register_forward_pre_hook(lambda block, inputs: calls.append(("pre", inputs[0].shape)))
    post = net.register_forward_hook(lambda block, inputs, out: calls.append(("post", out.shape)))
    net(_x((5, 3)))
    assert calls == [("pre", (5, 3)), ("post", (5, 2))]
    pre.detach()
    post.detach()
    net(_x((5, 3)))
    assert len(calls) == 2


def test_apply_and_cast():
    net = _mlp()
    net.initialize()
    net(_x((2, 5)))
    seen = []
    net.apply(lambda b: seen.append(type(b).__name__))
    assert seen == ["Activation", "Dense", "BatchNorm", "Dense", "HybridSequential"]
    net.cast("float64")
    assert net[0].weight.data().dtype == np.float64
    assert net(_x((2, 5)).astype("float64")).dtype == np.float64


def test_save_and_load_parameters_round_trip(tmp_path):
    net = _mlp()
    net.initialize()
    x = _x((4, 5))
    expected = net(x).asnumpy()
    path = str(tmp_path / "net.params")
    net.save_parameters(path)
    assert sorted(mx.nd.load(path)) == sorted(
        ["0.weight", "0.bias", "1.gamma", "1.beta", "1.running_mean", "1.running_var", "2.weight", "2.bias"]
    )
    fresh = _mlp()
    fresh.load_parameters(path)
    np.testing.assert_allclose(fresh(x).asnumpy(), expected, rtol=1e-6)


def test_load_parameters_errors_name_the_parameter_and_block(tmp_path):
    net = _mlp()
    net.initialize()
    net(_x((2, 5)))
    path = str(tmp_path / "net.params")
    net.save_parameters(path)
    smaller = nn.HybridSequential()
    smaller.add(nn.Dense(8), nn.BatchNorm())
    with pytest.raises(BlockError, match=r"Parameter '2.weight' loaded from file .* is not present in the block"):
        smaller.load_parameters(path)
    smaller.load_parameters(path, ignore_extra=True)
    bigger = _mlp()
    with bigger.name_scope():
        bigger.add(nn.Dense(2))
    with pytest.raises(BlockError, match=r"Parameter '3.weight' is missing"):
        bigger.load_parameters(path)
    bigger.load_parameters(path, allow_missing=True)
    wrong = nn.HybridSequential()
    wrong.add(nn.Dense(4, in_units=5))
    with pytest.raises(mx.MXLabError, match="shape incompatible"):
        wrong.load_parameters(path, ignore_extra=True)


def test_export_and_symbol_block_imports(tmp_path):
    net = _mlp()
    net.initialize()
    net.hybridize()
    x = _x((3, 5))
    expected = net(x).asnumpy()
    symbol_file, params_file = net.export(str(tmp_path / "mlp"), epoch=7)
    assert symbol_file.endswith("mlp-symbol.json") and params_file.endswith("mlp-0007.params")
    keys = sorted(mx.nd.load(params_file))
    assert "aux:hybridsequential0_batchnorm0_running_mean" in keys
    assert "arg:hybridsequential0_dense0_weight" in keys
    block = gluon.SymbolBlock.imports(symbol_file, ["data"], params_file)
    np.testing.assert_allclose(block(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    # a SymbolBlock composes into a bigger graph too
    outer = nn.HybridSequential()
    outer.add(block, nn.Dense(2, in_units=3))
    outer[1].initialize()
    outer.hybridize()
    assert outer(x).shape == (3, 2)


def test_export_before_a_hybridized_call_is_an_error(tmp_path):
    net = _mlp()
    with pytest.raises(BlockError, match="hybridize"):
        net.export(str(tmp_path / "x"))


def test_numpy_in_hybrid_forward_names_the_block():
    class UsesNumpy(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.relu(mx.nd.array(x.asnumpy()))

    with mx.name.NameManager():
        block = UsesNumpy()
    block.hybridize()
    with pytest.raises(BlockError, match=r"usesnumpy0 \(UsesNumpy\): hybrid_forward failed while tracing"):
        block(_x((2, 2)))


def test_wrong_input_shape_names_the_block():
    for hybridize in (False, True):
        with mx.name.NameManager():
            net = nn.Dense(3, in_units=4)
        net.initialize()
        net.hybridize(hybridize)
        with pytest.raises(BlockError, match="dense0"):
            net(_x((2, 5)))


def test_summary_prints_layers_and_counts(capsys):
    net = _mlp()
    net.initialize()
    net.summary(_x((2, 5)))
    text = capsys.readouterr().out
    # one count over every layer as it finishes (MXNet's names and columns, checked beside the peer)
    assert "             Dense-3                                      (2, 8)              48" in text
    assert "BatchNorm-4" in text and "Dense-5" in text and "(2, 3)" in text
    assert "Total params: 107" in text  # 5*8+8 + 4*8 + 8*3+3
    assert "HybridSequential" not in text  # the container is not a row of its own
    net.hybridize()
    with pytest.raises(BlockError, match="must not be hybridized to print summary"):
        net.summary(_x((2, 5)))
    assert not net._forward_hooks and not net[0]._forward_hooks  # nothing left attached


def test_hybridized_call_pushes_the_cached_graph_segments_not_one_push_per_operator():
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu"), nn.Dense(16, activation="relu"), nn.Dense(4))
    net.initialize()
    x = _x((8, 5))
    net(x).wait_to_read()  # deferred initialization done
    with events.record(["engine.push"]) as imperative:
        net(x).wait_to_read()
    net.hybridize()
    net(x).wait_to_read()  # the trace and the bind happen here
    with events.record(["engine.push"]) as hybrid:
        net(x).wait_to_read()
    names = [e["name"] for e in imperative.events]
    assert names.count("FullyConnected") == 3 and names.count("Activation") == 2  # one push per operator
    (executor,) = net._cached_op.executors()
    segments = len(executor._forward_segments)
    # copy the input in, the graph's segments (a chain: bulked), copy the output out
    assert len(hybrid.events) == 1 + segments + 1
    assert segments < 5


def test_shared_parameters_and_deduplicated_save(tmp_path):
    first = nn.Dense(3, in_units=2)
    second = nn.Dense(3, in_units=2, params=first.collect_params())
    assert second.weight is first.weight
    net = nn.HybridSequential()
    net.add(first, second)
    net.initialize()
    path = str(tmp_path / "shared.params")
    net.save_parameters(path, deduplicate=True)
    assert sorted(mx.nd.load(path)) == ["1.bias", "1.weight"]  # one copy, under its last name
    other = nn.HybridSequential()
    a = nn.Dense(3, in_units=2)
    other.add(a, nn.Dense(3, in_units=2, params=a.collect_params()))
    other.load_parameters(path)  # found under either of its names
    np.testing.assert_array_equal(a.weight.data().asnumpy(), first.weight.data().asnumpy())


def test_optional_none_inputs_and_nested_outputs_hybridize():
    class Scaled(gluon.HybridBlock):
        def hybrid_forward(self, F, x, scale=None):
            y = x * 2 if scale is None else F.broadcast_mul(x, scale)
            return y, [y + 1, F.relu(x)]

    block = Scaled()
    x, scale = _x((2, 3)), mx.nd.array([[3.0], [4.0]])
    results = []
    for hybridize in (False, True):
        block.hybridize(hybridize)
        first, (second, third) = block(x, None)
        with_scale = block(x, scale)[0] if not hybridize else None
        results.append((first.asnumpy(), second.asnumpy(), third.asnumpy()))
        if with_scale is not None:
            np.testing.assert_allclose(with_scale.asnumpy(), x.asnumpy() * [[3.0], [4.0]], rtol=1e-6)
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    with pytest.raises(BlockError, match="invalid input format"):
        block(x, scale)  # traced with scale=None: a different call pattern


def test_a_float64_batch_gets_a_dtype_hint():
    for hybridize in (False, True):
        net = nn.Dense(2, in_units=3)
        net.initialize()
        net.hybridize(hybridize)
        with pytest.raises(BlockError, match=r"inputs are \['float64'\] but the parameters \['float32'\]"):
            net(mx.nd.array(np.ones((2, 3)), dtype="float64"))  # a float64 batch for float32 parameters


def test_blocks_in_a_plain_list_or_dict_are_warned_about():
    """MXNet's warning: such Blocks are not children, so their parameters are never collected or trained."""

    class Net(nn.Block):
        def __init__(self):
            super().__init__()
            self.kept = nn.Dense(2)
            self.lost = [nn.Dense(2)]
            self.nested = {"k": (nn.Dense(1),)}
            self.numbers = [1, 2]

        def forward(self, x):
            return self.kept(x)

    with pytest.warns(UserWarning, match='"Net.lost" is an unregistered container with Blocks') as caught:
        Net().initialize()
    assert sorted(str(w.message).split('"')[1] for w in caught if "unregistered" in str(w.message)) == [
        "Net.lost",
        "Net.nested",
    ]
