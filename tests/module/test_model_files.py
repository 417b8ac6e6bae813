"""Checkpoint files: ``prefix-symbol.json`` + ``prefix-%04d.params`` written and read like MXNet 1.9.1.

Files written by MXNet 1.9.1 (tests/data/mxnet_1_9_1/symbols/, written by its
make_symbols.py, and tests/data/mxnet_1_9_1/module/, written by make_module_files.py after a
real ``Module.fit``) load with ``Module.load`` / ``mx.model.load_checkpoint`` and reproduce
MXNet's outputs and gradients. (A checkpoint written here was also checked by hand to load
in MXNet 1.9.1 and predict the same values; the tests never import MXNet.)
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import framework as mx
import framework.io
import framework.symbol as sym
from framework import model
from framework.callback import do_checkpoint
from framework.model import CheckpointError
from framework.module import Module

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "mxnet_1_9_1")
SYMBOLS = os.path.join(DATA, "symbols")
MODULE = os.path.join(DATA, "module")


def bn_mlp() -> sym.Symbol:
    x = sym.FullyConnected(sym.Variable("data"), num_hidden=8, name="fc1")
    x = sym.Activation(sym.BatchNorm(x, name="bn1"), act_type="relu", name="relu1")
    return sym.SoftmaxOutput(sym.FullyConnected(x, num_hidden=3, name="fc2"), name="softmax")


def trained_bn_mlp() -> tuple[Module, np.ndarray]:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((40, 6)).astype(np.float32)
    y = rng.integers(0, 3, 40).astype(np.float32)
    mx.random.seed(2)
    mod = Module(bn_mlp())
    mod.fit(mx.io.NDArrayIter(x, y, batch_size=8), num_epoch=2, initializer=mx.init.Xavier())
    return mod, x


def test_save_and_load_checkpoint_round_trip(tmp_path):
    mod, _ = trained_bn_mlp()
    arg, aux = mod.get_params()
    prefix = str(tmp_path / "net")
    model.save_checkpoint(prefix, 7, mod.symbol, arg, aux)
    assert sorted(os.listdir(tmp_path)) == ["net-0007.params", "net-symbol.json"]
    keys = sorted(mx.nd.load(prefix + "-0007.params"))
    assert keys == sorted([f"arg:{k}" for k in arg] + [f"aux:{k}" for k in aux])
    assert "aux:bn1_moving_var" in keys and "arg:bn1_gamma" in keys
    symbol, arg2, aux2 = model.load_checkpoint(prefix, 7)
    assert symbol.tojson() == mod.symbol.tojson()
    for saved, loaded in ((arg, arg2), (aux, aux2)):
        assert sorted(saved) == sorted(loaded)
        for name, value in saved.items():
            np.testing.assert_array_equal(loaded[name].asnumpy(), value.asnumpy())
    assert model.load_params(prefix, 7)[1].keys() == aux.keys()
    with open(prefix + "-symbol.json", encoding="utf-8") as f:
        assert json.load(f)["attrs"]["mxnet_version"] == ["int", 10901]


def test_module_checkpoint_round_trip_predicts_the_same(tmp_path):
    mod, x = trained_bn_mlp()
    expected = mod.predict(x).asnumpy()
    prefix = str(tmp_path / "bn")
    mod.save_checkpoint(prefix, 2, save_optimizer_states=True)
    assert sorted(os.listdir(tmp_path)) == ["bn-0002.params", "bn-0002.states", "bn-symbol.json"]
    loaded = Module.load(prefix, 2, load_optimizer_states=True, context=mx.cpu())
    loaded.bind(data_shapes=[("data", (5, 6))], label_shapes=[("softmax_label", (5,))])
    np.testing.assert_allclose(loaded.predict(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    # the optimizer states come back with init_optimizer: both modules take the same next step
    for m in (mod, loaded):
        m.init_optimizer(optimizer_params={"learning_rate": 0.01}, force_init=True)
    loaded.load_optimizer_states(prefix + "-0002.states")
    batch = mx.io.DataBatch([mx.nd.array(x[:5])], [mx.nd.array(np.zeros(5, np.float32))])
    for m in (mod, loaded):
        m.forward(batch, is_train=True)
        m.backward()
        m.update()
    for name, value in mod.get_params()[0].items():
        np.testing.assert_allclose(loaded.get_params()[0][name].asnumpy(), value.asnumpy(), rtol=1e-5, atol=1e-6)


def test_do_checkpoint_and_save_load_params(tmp_path):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((16, 6)).astype(np.float32), rng.integers(0, 3, 16).astype(np.float32)
    prefix = str(tmp_path / "cb")
    mod = Module(bn_mlp())
    mod.fit(mx.io.NDArrayIter(x, y, batch_size=8), num_epoch=2, epoch_end_callback=do_checkpoint(prefix))
    assert sorted(os.listdir(tmp_path)) == ["cb-0001.params", "cb-0002.params", "cb-symbol.json"]
    other = Module(bn_mlp())
    other.bind(data_shapes=[("data", (8, 6))], label_shapes=[("softmax_label", (8,))])
    other.load_params(prefix + "-0002.params")
    for name, value in mod.get_params()[0].items():
        np.testing.assert_array_equal(other.get_params()[0][name].asnumpy(), value.asnumpy())
    mod.save_params(str(tmp_path / "p.params"))
    assert sorted(mx.nd.load(str(tmp_path / "p.params"))) == sorted(mx.nd.load(prefix + "-0002.params"))


@pytest.mark.parametrize("name", ["mlp", "lenet"])
def test_mxnet_checkpoints_load_and_reproduce_outputs_and_gradients(name):
    reference = mx.nd.load(os.path.join(SYMBOLS, f"{name}-reference.nd"))
    data, label = reference["data"], reference["softmax_label"]
    symbol, arg_params, aux_params = model.load_checkpoint(os.path.join(SYMBOLS, name), 0)
    assert symbol.list_outputs() == ["softmax_output"] and aux_params == {}

    mod = Module.load(os.path.join(SYMBOLS, name), 0)
    mod.bind(data_shapes=[("data", data.shape)], label_shapes=[("softmax_label", label.shape)])
    batch = mx.io.DataBatch([data], [label])
    mod.forward(batch, is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), reference["output"].asnumpy(), rtol=1e-4, atol=1e-5)
    mod.forward(batch, is_train=True)
    mod.backward()
    np.testing.assert_allclose(
        mod.get_outputs()[0].asnumpy(), reference["train_output"].asnumpy(), rtol=1e-4, atol=1e-5
    )
    for param, grads in zip(mod._exec_group.param_names, mod._exec_group.grad_arrays, strict=True):
        np.testing.assert_allclose(
            grads[0].asnumpy(), reference[f"grad:{param}"].asnumpy(), rtol=1e-3, atol=1e-5, err_msg=param
        )
    for pname, value in arg_params.items():
        np.testing.assert_array_equal(mod.get_params()[0][pname].asnumpy(), value.asnumpy())


def test_mxnet_module_fit_checkpoint_with_aux_states_predicts_like_mxnet():
    reference = mx.nd.load(os.path.join(MODULE, "bn_mlp-reference.nd"))
    mod = Module.load(os.path.join(MODULE, "bn_mlp"), 3, label_names=None)
    assert sorted(mod._aux_params) == ["bn1_moving_mean", "bn1_moving_var"]
    mod.bind(data_shapes=[("data", (4, 6))], for_training=False)
    out = mod.predict(mx.io.NDArrayIter(reference["data"], batch_size=4))
    assert out.shape == (10, 3)
    np.testing.assert_allclose(out.asnumpy(), reference["output"].asnumpy(), rtol=1e-5, atol=1e-6)


def test_missing_and_malformed_files_are_named(tmp_path):
    with pytest.raises(CheckpointError, match=r"no symbol file '.*nothing-symbol.json'"):
        model.load_checkpoint(str(tmp_path / "nothing"), 1)
    with pytest.raises(CheckpointError, match=r"no parameter file '.*nothing-0003.params'.*epoch 3"):
        model.load_params(str(tmp_path / "nothing"), 3)
    mx.nd.save(str(tmp_path / "bad-0001.params"), {"weight": mx.nd.zeros((2,))})
    with pytest.raises(CheckpointError, match="invalid parameter name 'weight'; expected 'arg:<name>'"):
        model.load_params(str(tmp_path / "bad"), 1)
    mx.nd.save(str(tmp_path / "list-0001.params"), [mx.nd.zeros((2,))])
    with pytest.raises(CheckpointError, match="list of 1 unnamed arrays"):
        model.load_params(str(tmp_path / "list"), 1)
    with pytest.raises(CheckpointError, match="prefix must be a non-empty string"):
        model.save_checkpoint("", 1, None, {}, {})
