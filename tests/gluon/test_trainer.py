"""gluon.Trainer (one and several contexts, states, stale gradients) and gluon.utils."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import framework as mx
from framework import autograd, gluon
from framework.gluon import nn
from framework.gluon.trainer import TrainerError
from framework.gluon.utils import SplitError

datasets = pytest.importorskip("sklearn.datasets")


@pytest.fixture(scope="module")
def digits():
    bunch = datasets.load_digits()
    x = (bunch.data / 16.0).astype(np.float32)
    y = bunch.target.astype(np.float32)
    order = np.random.default_rng(0).permutation(len(x))
    train, val = order[:1437], order[1437:]
    return x[train], y[train], x[val], y[val]


def _mlp():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(64, activation="relu"), nn.Dense(10))
    return net


def _accuracy(net, x, y, ctx):
    predictions = net(mx.nd.array(x, ctx=ctx)).asnumpy().argmax(axis=1)
    return float((predictions == y).mean())


def _train(net, digits, contexts, epochs, hybridize, kvstore="device"):
    x_train, y_train, x_val, y_val = digits
    mx.random.seed(7)
    net.initialize(mx.init.Xavier(), ctx=contexts)
    if hybridize:
        net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9}, kvstore=kvstore)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    batch = 60
    for _ in range(epochs):
        for start in range(0, len(x_train) - batch + 1, batch):
            xs = gluon.utils.split_and_load(x_train[start : start + batch], contexts)
            ys = gluon.utils.split_and_load(y_train[start : start + batch], contexts)
            with autograd.record():
                losses = [loss_fn(net(xb), yb) for xb, yb in zip(xs, ys, strict=True)]
            for loss in losses:
                loss.backward()
            trainer.step(batch)
    return trainer, _accuracy(net, x_val, y_val, contexts[0])


@pytest.mark.parametrize("hybridize", [False, True])
def test_mlp_learns_digits(digits, hybridize):
    _, accuracy = _train(_mlp(), digits, [mx.cpu()], epochs=4, hybridize=hybridize)
    assert accuracy > 0.85  # this run reaches ~0.97; chance is 0.1


def test_two_contexts_keep_replicas_identical_and_learn(digits):
    net = _mlp()
    trainer, accuracy = _train(net, digits, [mx.cpu(0), mx.cpu(1)], epochs=3, hybridize=True)
    assert trainer._kvstore is not None and trainer._update_on_kvstore  # summed through the device store
    for param in net.collect_params().values():
        replicas = [d.asnumpy() for d in param.list_data()]
        np.testing.assert_allclose(replicas[0], replicas[1], rtol=1e-6, atol=1e-7)
    assert accuracy > 0.85


@pytest.mark.parametrize("kvstore", ["device", "local"])
@pytest.mark.parametrize("update_on_kvstore", [False, True])
def test_two_contexts_match_one_context(kvstore, update_on_kvstore):
    """The same batch split over two contexts gives the update of the whole batch on one."""
    x = mx.nd.array(np.random.default_rng(1).standard_normal((8, 5)).astype(np.float32))
    y = mx.nd.array(np.arange(8) % 3)
    results = []
    for contexts, on_kvstore in (([mx.cpu(0)], None), ([mx.cpu(0), mx.cpu(1)], update_on_kvstore)):
        with mx.name.NameManager():
            net = nn.Dense(3, in_units=5)
        net.initialize(mx.init.Constant(0.1), ctx=contexts)
        trainer = gluon.Trainer(
            net.collect_params(),
            "sgd",
            {"learning_rate": 0.1, "momentum": 0.9},
            kvstore=kvstore,
            update_on_kvstore=on_kvstore,
        )
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        xs, ys = gluon.utils.split_and_load(x, contexts), gluon.utils.split_and_load(y, contexts)
        for _ in range(3):  # several steps: the momentum state matters too
            with autograd.record():
                losses = [loss_fn(net(a), b) for a, b in zip(xs, ys, strict=True)]
            autograd.backward(losses)
            trainer.step(8)
        results.append([w.asnumpy() for w in net.weight.list_data()])
    for replica in results[1]:
        np.testing.assert_allclose(replica, results[0][0], rtol=1e-5, atol=1e-6)


def test_learning_rate_states_and_stale_gradients(tmp_path):
    net = nn.Dense(2, in_units=3)
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.2, "momentum": 0.5})
    assert trainer.learning_rate == pytest.approx(0.2)
    trainer.set_learning_rate(0.05)
    assert trainer.optimizer.learning_rate == pytest.approx(0.05)
    x = mx.nd.ones((4, 3))
    with autograd.record():
        net(x).sum().backward()
    trainer.step(4)
    with pytest.raises(TrainerError, match="has not been updated by backward since last `step`"):
        trainer.step(4)  # no backward since: stale
    before = net.weight.data().asnumpy().copy()
    trainer.step(4, ignore_stale_grad=True)  # skips the stale parameters
    np.testing.assert_array_equal(net.weight.data().asnumpy(), before)
    path = str(tmp_path / "trainer.states")
    trainer.save_states(path)
    other = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.9})
    other.load_states(path)
    assert other.learning_rate == pytest.approx(0.05)
    momentum = other._updaters[0].states[1]  # parameters are taken in name order: bias (0), weight (1)
    assert momentum is not None and momentum.shape == (2, 3)


def test_trainer_argument_errors():
    p = gluon.Parameter("w", shape=(2,))
    with pytest.raises(mx.MXNetError, match="Parameter 'w' has not been initialized"):  # at once, as in MXNet
        gluon.Trainer([p], "sgd")
    p.initialize()
    with pytest.raises(TrainerError, match="list or dict of Parameters"):
        gluon.Trainer("w", "sgd")
    with pytest.raises(TrainerError, match="duplicated"):
        gluon.Trainer([p, p], "sgd")
    with pytest.raises(TrainerError, match="optimizer_params must be None"):
        gluon.Trainer([p], mx.optimizer.SGD(), {"learning_rate": 0.1})
    q = gluon.Parameter("q", shape=(2,))
    q.initialize()
    trainer = gluon.Trainer([q], "sgd", update_on_kvstore=True)
    with pytest.raises(TrainerError, match="no kvstore"):
        trainer.step(1)


def test_split_data_and_split_and_load():
    data = mx.nd.arange(10).reshape((5, 2))
    parts = gluon.utils.split_data(data, 2, even_split=False)
    assert [p.shape for p in parts] == [(3, 2), (2, 2)]  # MXNet 1.9.1: the first slices take the extra rows
    assert [p.shape[0] for p in gluon.utils.split_data(mx.nd.ones((11, 1)), 3, even_split=False)] == [4, 4, 3]
    assert [p.shape[0] for p in gluon.utils.split_data(mx.nd.ones((3, 1)), 4, even_split=False)] == [1, 1, 1, 0]
    assert parts[1].asnumpy().tolist() == [[6, 7], [8, 9]]
    with pytest.raises(SplitError, match="cannot be evenly split"):
        gluon.utils.split_data(data, 2)
    cols = gluon.utils.split_data(mx.nd.arange(12).reshape((2, 6)), 3, batch_axis=1)
    assert [c.asnumpy().tolist() for c in cols][1] == [[2, 3], [8, 9]]
    loaded = gluon.utils.split_and_load(np.arange(8, dtype=np.float32), [mx.cpu(0), mx.cpu(1)])
    assert [a.context for a in loaded] == [mx.cpu(0), mx.cpu(1)]
    assert loaded[1].asnumpy().tolist() == [4, 5, 6, 7]


def test_clip_global_norm_and_check_sha1(tmp_path):
    a, b = mx.nd.array([3.0, 0.0]), mx.nd.array([0.0, 4.0])
    norm = gluon.utils.clip_global_norm([a, b], 1.0)
    assert norm == pytest.approx(5.0)
    np.testing.assert_allclose(np.concatenate([a.asnumpy(), b.asnumpy()]), [0.6, 0, 0, 0.8], rtol=1e-5)
    small = mx.nd.array([0.1])
    gluon.utils.clip_global_norm([small], 1.0)
    np.testing.assert_allclose(small.asnumpy(), [0.1], rtol=1e-5)  # under the limit: unchanged
    path = tmp_path / "f.bin"
    path.write_bytes(b"mxlab")
    assert gluon.utils.check_sha1(str(path), hashlib.sha1(b"mxlab").hexdigest())
    assert not gluon.utils.check_sha1(str(path), "0" * 40)
