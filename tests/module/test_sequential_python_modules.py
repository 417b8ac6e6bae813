"""``SequentialModule`` (modules chained output to input), ``PythonModule`` and ``PythonLossModule``."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import framework as mx
from framework.module import ModuleError

BATCH, FEATURES, CLASSES = 6, 5, 3


def _batch(seed=3):
    rng = np.random.RandomState(seed)
    data = mx.nd.array(rng.uniform(-1, 1, (BATCH, FEATURES)))
    label = mx.nd.array(rng.randint(0, CLASSES, BATCH))
    return mx.io.DataBatch([data], [label])


def _params(seed=5):
    rng = np.random.RandomState(seed)
    return {
        "fc1_weight": mx.nd.array(rng.uniform(-0.5, 0.5, (8, FEATURES))),
        "fc1_bias": mx.nd.array(rng.uniform(-0.5, 0.5, (8,))),
        "fc2_weight": mx.nd.array(rng.uniform(-0.5, 0.5, (CLASSES, 8))),
        "fc2_bias": mx.nd.array(rng.uniform(-0.5, 0.5, (CLASSES,))),
    }


def _first_half():
    data = mx.sym.Variable("data")
    return mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=8, name="fc1"), act_type="relu", name="relu1")


def _second_half(data=None):
    data = mx.sym.Variable("data") if data is None else data
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=CLASSES, name="fc2"), name="softmax")


def _train_step(module, params, batch):
    module.bind(data_shapes=[("data", (BATCH, FEATURES))], label_shapes=[("softmax_label", (BATCH,))])
    module.init_params(arg_params=params, allow_missing=False)
    module.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    module.forward(batch, is_train=True)
    outputs = module.get_outputs()[0].asnumpy()
    module.backward()
    module.update()
    return outputs, {k: v.asnumpy() for k, v in module.get_params()[0].items()}


def test_sequential_module_of_two_modules_matches_one_module():
    batch, params = _batch(), _params()
    single = mx.mod.Module(_second_half(_first_half()), context=mx.cpu())
    want_outputs, want_params = _train_step(single, params, batch)

    chain = mx.mod.SequentialModule()
    chain.add(mx.mod.Module(_first_half(), label_names=None)).add(
        mx.mod.Module(_second_half()), take_labels=True, auto_wiring=True
    )
    got_outputs, got_params = _train_step(chain, params, batch)
    np.testing.assert_allclose(got_outputs, want_outputs, rtol=1e-5, atol=1e-6)
    assert sorted(got_params) == sorted(want_params)
    for name, value in want_params.items():
        np.testing.assert_allclose(got_params[name], value, rtol=1e-5, atol=1e-6)
    assert chain.output_names == ["softmax_output"] and chain.data_names == ["data"]
    assert chain.output_shapes == single.output_shapes
    metric = mx.metric.Accuracy()
    chain.update_metric(metric, batch.label)
    assert metric.num_inst == BATCH


def test_sequential_module_fits_and_predicts():
    rng = np.random.RandomState(0)
    data = rng.uniform(-1, 1, (60, FEATURES)).astype(np.float32)
    label = (data[:, 0] > 0).astype(np.float32) + (data[:, 1] > 0.5)
    train = mx.io.NDArrayIter(data, label, batch_size=10, shuffle=True)
    chain = mx.mod.SequentialModule()
    chain.add(mx.mod.Module(_first_half(), label_names=None))
    chain.add(mx.mod.Module(_second_half()), take_labels=True, auto_wiring=True)
    chain.fit(train, num_epoch=30, optimizer_params={"learning_rate": 0.5}, initializer=mx.init.Xavier())
    score = dict(chain.score(mx.io.NDArrayIter(data, label, batch_size=10), "acc"))
    assert score["accuracy"] > 0.8
    assert chain.predict(mx.io.NDArrayIter(data, batch_size=10)).shape == (60, CLASSES)


def test_sequential_module_failures_are_named(caplog):
    chain = mx.mod.SequentialModule()
    with pytest.raises(ModuleError, match="unknown meta"):
        chain.add(mx.mod.Module(_first_half(), label_names=None), take_label=True)
    with pytest.raises(ModuleError, match="empty"):
        chain.bind([("data", (BATCH, FEATURES))])
    with pytest.raises(ModuleError, match="bind"):
        chain.forward(_batch())
    # both halves name their layer fc1: one dict cannot hold both
    chain.add(mx.mod.Module(_first_half(), label_names=None))
    chain.add(mx.mod.Module(_first_half(), label_names=None), auto_wiring=True)
    chain.bind([("data", (BATCH, FEATURES))], for_training=False)
    with pytest.raises(ModuleError, match="duplicated argument name 'fc1_weight' in layer 1"):
        chain.init_params()
    with caplog.at_level(logging.WARNING):
        chain.bind([("data", (BATCH, FEATURES))])
    assert "Already bound" in caplog.text


def _softmax_cross_entropy_grad(scores, labels):
    """d/dscores of softmax cross-entropy, summed over the batch: softmax(scores) - onehot(labels)."""
    values = scores.asnumpy()
    probs = np.exp(values - values.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    probs[np.arange(len(values)), labels.asnumpy().astype(int)] -= 1.0
    return probs


def test_python_loss_module_gradient_trains_like_softmax_output():
    batch, params = _batch(), _params()
    logits = mx.sym.FullyConnected(_first_half(), num_hidden=CLASSES, name="fc2")
    single = mx.mod.Module(mx.sym.SoftmaxOutput(logits, name="softmax"))
    _, want_params = _train_step(single, params, batch)

    loss = mx.mod.PythonLossModule(grad_func=_softmax_cross_entropy_grad)
    chain = mx.mod.SequentialModule()
    chain.add(mx.mod.Module(logits, label_names=None)).add(loss, take_labels=True, auto_wiring=True)
    got_outputs, got_params = _train_step(chain, params, batch)
    assert loss.output_names == ["pyloss_output"]
    assert loss.output_shapes == [("pyloss_output", (BATCH, CLASSES))]
    np.testing.assert_allclose(
        loss.get_input_grads()[0].asnumpy(),
        _softmax_cross_entropy_grad(mx.nd.array(got_outputs), batch.label[0]),
        rtol=1e-6,
    )
    for name, value in want_params.items():
        np.testing.assert_allclose(got_params[name], value, rtol=1e-4, atol=1e-6)


def test_python_loss_module_failures_are_named():
    with pytest.raises(ModuleError, match="one data and one label"):
        mx.mod.PythonLossModule(data_names=("a", "b"))
    with pytest.raises(ModuleError, match="grad_func must be callable"):
        mx.mod.PythonLossModule(grad_func=3)
    loss = mx.mod.PythonLossModule()
    with pytest.raises(ModuleError, match=r"data_shapes name \['x'\], expected \['data'\]"):
        loss.bind([("x", (2, 3))])
    loss.bind([("data", (2, 3))], [("softmax_label", (2,))])
    loss.forward(mx.io.DataBatch([mx.nd.ones((2, 3))], [mx.nd.zeros((2,))]), is_train=True)
    with pytest.raises(NotImplementedError, match="grad_func"):
        loss.backward()
    with pytest.raises(ModuleError, match="out_grads"):
        loss.backward(out_grads=[mx.nd.ones((2, 3))])


class _Doubler(mx.mod.PythonModule):
    """A PythonModule subclass: output = 2 * data, input gradient = 2 * output gradient."""

    def __init__(self):
        super().__init__(data_names=["data"], label_names=None, output_names=["double_output"])
        self._out = self._grad = None

    def _compute_output_shapes(self):
        return [("double_output", self._data_shapes[0][1])]

    def forward(self, data_batch, is_train=None):
        self._out = data_batch.data[0] * 2

    def backward(self, out_grads=None):
        self._grad = out_grads[0] * 2

    def get_outputs(self, merge_multi_context=True):
        return [self._out]

    def get_input_grads(self, merge_multi_context=True):
        return [self._grad]


def test_python_module_subclass_in_a_chain():
    batch, params = _batch(), _params()
    chain = mx.mod.SequentialModule()
    chain.add(_Doubler()).add(mx.mod.Module(_second_half(_first_half())), take_labels=True, auto_wiring=True)
    got, _ = _train_step(chain, params, batch)
    single = mx.mod.Module(_second_half(_first_half()))
    doubled = mx.io.DataBatch([batch.data[0] * 2], batch.label)
    want, _ = _train_step(single, params, doubled)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert _Doubler().get_params() == ({}, {})


def test_sequential_module_set_params_with_allow_missing_keeps_the_absent_values():
    chain = mx.mod.SequentialModule()
    chain.add(mx.mod.Module(_first_half(), label_names=None)).add(
        mx.mod.Module(_second_half()), take_labels=True, auto_wiring=True
    )
    chain.bind(data_shapes=[("data", (BATCH, FEATURES))], label_shapes=[("softmax_label", (BATCH,))])
    params = _params()
    chain.init_params(arg_params=params)
    chain.set_params({"fc2_bias": mx.nd.ones((CLASSES,))}, {}, allow_missing=True)
    got = chain.get_params()[0]
    np.testing.assert_array_equal(got["fc2_bias"].asnumpy(), np.ones(CLASSES, dtype=np.float32))
    np.testing.assert_array_equal(got["fc1_weight"].asnumpy(), params["fc1_weight"].asnumpy())
    with pytest.warns(UserWarning, match="force_init=False"):
        chain.set_params({"fc2_bias": mx.nd.zeros((CLASSES,))}, {}, allow_missing=True, force_init=False)
    assert chain.get_params()[0]["fc2_bias"].asnumpy().sum() == CLASSES
