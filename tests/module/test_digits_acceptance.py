"""Issue 4's acceptance: ``Module.fit`` learns scikit-learn's bundled handwritten digits.

The data set is ``sklearn.datasets.load_digits``: 1797 grey 8x8 images of the digits 0-9,
shipped inside scikit-learn (nothing is downloaded). Pixels are scaled to [0, 1]; a fixed
permutation keeps 1437 images for training and 360 for validation.

* An MLP (64 -> 64 relu -> 10) trained with ``fit`` reaches at least 95% validation accuracy,
  well under a minute (about a second here).
* The LeNet-style network of the benchmark (Convolution, tanh, max Pooling, twice, then two
  FullyConnected), with kernels that fit 1x8x8 images, trains for two epochs and ends far
  above chance (10%).
* Two devices (cpu(0) and cpu(1)) train the MLP to the same weights as one.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pytest
from needs import needs_module

import framework as mx
import framework.io
import framework.symbol as sym
from framework.module import Module

datasets = needs_module("sklearn.datasets", "it bundles the handwritten digits (the [dev] extra installs it)")

pytestmark = pytest.mark.slow  # real training, several seconds per test

BATCH = 40  # divides the 360 validation images: no padded batch in the validation score


@pytest.fixture(scope="module")
def digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    bunch = datasets.load_digits()
    x = (bunch.data / 16.0).astype(np.float32)
    y = bunch.target.astype(np.float32)
    order = np.random.default_rng(0).permutation(len(x))
    train, val = order[:1437], order[1437:]
    return x[train], y[train], x[val], y[val]


def mlp() -> sym.Symbol:
    h = sym.Activation(sym.FullyConnected(sym.Variable("data"), num_hidden=64, name="fc1"), act_type="relu")
    return sym.SoftmaxOutput(sym.FullyConnected(h, num_hidden=10, name="fc2"), name="softmax")


def lenet() -> sym.Symbol:
    """The benchmark's LeNet with kernels for 8x8 inputs: 8x8 -conv3-> 6x6 -pool-> 3x3 -conv2-> 2x2 -pool-> 1x1."""
    h = sym.Convolution(sym.Variable("data"), kernel=(3, 3), num_filter=8, name="conv1")
    h = sym.Pooling(sym.Activation(h, act_type="tanh"), pool_type="max", kernel=(2, 2), stride=(2, 2))
    h = sym.Convolution(h, kernel=(2, 2), num_filter=16, name="conv2")
    h = sym.Pooling(sym.Activation(h, act_type="tanh"), pool_type="max", kernel=(2, 2), stride=(2, 2))
    h = sym.Activation(sym.FullyConnected(sym.Flatten(h), num_hidden=64, name="fc1"), act_type="tanh")
    return sym.SoftmaxOutput(sym.FullyConnected(h, num_hidden=10, name="fc2"), name="softmax")


def fit(net: sym.Symbol, digits: tuple, shape: tuple, epochs: int, context: list | None = None) -> Module:
    x_train, y_train, x_val, y_val = digits
    mx.random.seed(42)
    np.random.seed(42)
    mod = Module(net, data_names=["data"], label_names=["softmax_label"], context=context or [mx.cpu(0)])
    mod.fit(
        mx.io.NDArrayIter(x_train.reshape(-1, *shape), y_train, batch_size=BATCH, shuffle=True),
        eval_data=mx.io.NDArrayIter(x_val.reshape(-1, *shape), y_val, batch_size=BATCH),
        eval_metric="acc",
        initializer=mx.init.Xavier(),
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
        num_epoch=epochs,
    )
    return mod


def validation_accuracy(mod: Module, digits: tuple, shape: tuple) -> float:
    _, _, x_val, y_val = digits
    probs = mod.predict(mx.io.NDArrayIter(x_val.reshape(-1, *shape), y_val, batch_size=BATCH))
    assert probs.shape == (360, 10)
    return float(np.mean(probs.asnumpy().argmax(axis=1) == y_val))


def test_mlp_reaches_95_percent_on_digits_within_a_minute(digits, caplog):
    start = time.perf_counter()
    with caplog.at_level(logging.INFO):
        mod = fit(mlp(), digits, (64,), epochs=10)
    elapsed = time.perf_counter() - start
    accuracy = validation_accuracy(mod, digits, (64,))
    assert accuracy >= 0.95, f"validation accuracy {accuracy:.4f} < 0.95"
    assert elapsed < 60, f"training took {elapsed:.1f} s"
    logged = [r.getMessage() for r in caplog.records if "Validation-accuracy" in r.getMessage()]
    assert len(logged) == 10 and logged[-1] == f"Epoch[9] Validation-accuracy={accuracy:f}"


def test_lenet_trains_on_8x8_digits(digits):
    mod = fit(lenet(), digits, (1, 8, 8), epochs=2)
    assert mod.data_shapes[0].shape == (BATCH, 1, 8, 8)
    accuracy = validation_accuracy(mod, digits, (1, 8, 8))
    assert accuracy > 0.5, f"LeNet validation accuracy {accuracy:.4f} is not far above chance (0.1)"


def test_two_devices_learn_the_digits_like_one(digits):
    one = fit(mlp(), digits, (64,), epochs=2)
    two = fit(mlp(), digits, (64,), epochs=2, context=[mx.cpu(0), mx.cpu(1)])
    for name, value in one.get_params()[0].items():
        np.testing.assert_allclose(two.get_params()[0][name].asnumpy(), value.asnumpy(), rtol=1e-4, atol=1e-5)
    assert validation_accuracy(two, digits, (64,)) == pytest.approx(validation_accuracy(one, digits, (64,)))
