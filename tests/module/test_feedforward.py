"""``mx.model.FeedForward``, the legacy training API: fit/predict/score on NumPy arrays, save/load, create."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import framework as mx
from framework.feedforward import FeedForwardError

pytestmark = pytest.mark.filterwarnings("ignore:mxnet.model.FeedForward has been deprecated:DeprecationWarning")


def _net():
    data = mx.sym.Variable("data")
    hidden = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=16, name="fc1"), act_type="relu")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(hidden, num_hidden=3, name="fc2"), name="softmax")


def _problem(n=150, seed=0):
    """Three Gaussian blobs in 4-D: separable, so a small MLP learns it."""
    rng = np.random.RandomState(seed)
    label = rng.randint(0, 3, n)
    centres = np.array([[2, 0, 0, 0], [0, 2, 0, 0], [0, 0, 2, 0]], dtype=np.float32)
    data = centres[label] + rng.normal(0, 0.5, (n, 4)).astype(np.float32)
    return data, label.astype(np.float32)


def test_fit_predict_and_score_on_numpy_arrays():
    data, label = _problem()
    with pytest.warns(DeprecationWarning, match="Please use mxnet.mod.Module"):
        model = mx.model.FeedForward(
            _net(), num_epoch=15, numpy_batch_size=25, learning_rate=0.2, initializer=mx.init.Xavier()
        )
    model.fit(data, label, eval_data=(data[:50], label[:50]))
    assert sorted(model.arg_params) == ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"]
    probs = model.predict(data)
    assert probs.shape == (150, 3)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    assert (probs.argmax(axis=1) == label).mean() > 0.9
    assert model.score(mx.io.NDArrayIter(data, label, batch_size=30)) > 0.9
    outputs, inputs, labels = model.predict(mx.io.NDArrayIter(data[:40], label[:40], batch_size=16), return_data=True)
    assert outputs.shape == (40, 3)  # the last batch's padding is dropped
    np.testing.assert_array_equal(inputs, data[:40])
    np.testing.assert_array_equal(labels, label[:40])
    assert model.predict(data, num_batch=2).shape == (50, 3)


def test_save_load_and_create(tmp_path):
    data, label = _problem(90, seed=1)
    model = mx.model.FeedForward.create(
        _net(), data, label, num_epoch=3, numpy_batch_size=30, learning_rate=0.1, initializer=mx.init.Xavier()
    )
    prefix = str(tmp_path / "ff")
    model.save(prefix)  # epoch defaults to num_epoch
    loaded = mx.model.FeedForward.load(prefix, 3)
    assert loaded.begin_epoch == 3
    np.testing.assert_allclose(loaded.predict(data), model.predict(data), rtol=1e-6)
    copied = pickle.loads(pickle.dumps(model))
    assert copied.symbol.list_arguments() == model.symbol.list_arguments()
    np.testing.assert_allclose(copied.predict(data), model.predict(data), rtol=1e-6)


def test_predict_with_given_parameters_matches_the_network():
    data, _ = _problem(10)
    rng = np.random.RandomState(2)
    params = {
        "fc1_weight": mx.nd.array(rng.normal(0, 0.3, (16, 4))),
        "fc1_bias": mx.nd.zeros((16,)),
        "fc2_weight": mx.nd.array(rng.normal(0, 0.3, (3, 16))),
        "fc2_bias": mx.nd.zeros((3,)),
        "unused": mx.nd.zeros((1,)),
    }
    model = mx.model.FeedForward(_net(), arg_params=params, allow_extra_params=True)
    assert "unused" not in model.arg_params
    hidden = np.maximum(data @ params["fc1_weight"].asnumpy().T, 0)
    logits = hidden @ params["fc2_weight"].asnumpy().T
    want = np.exp(logits - logits.max(axis=1, keepdims=True))
    want /= want.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(model.predict(data), want, rtol=1e-4, atol=1e-6)


def test_failures_are_named():
    data, label = _problem(20)
    with pytest.raises(FeedForwardError, match="does not have"):
        mx.model.FeedForward(_net(), arg_params={"bogus": mx.nd.zeros((1,))})
    with pytest.raises(FeedForwardError, match="num_epoch"):
        mx.model.FeedForward(_net()).fit(data, label)
    model = mx.model.FeedForward(_net(), num_epoch=1)
    with pytest.raises(FeedForwardError, match="y must be specified"):
        model.fit(data)
    with pytest.raises(FeedForwardError, match="20 data points but 19 labels"):
        model.fit(data, label[:19])
    with pytest.raises(FeedForwardError, match="no parameters yet"):
        model.predict(data)
    with pytest.raises(FeedForwardError, match="X must be a DataIter"):
        model.predict([1, 2, 3])
    with pytest.raises(FeedForwardError, match="Symbol or a sym_gen"):
        mx.model.FeedForward(42)


def test_fit_with_a_sym_gen_trains_through_buckets():
    sentences = [[1, 2, 3, 1], [2, 3, 1, 2], [3, 1, 2, 3], [1, 2], [2, 3], [3, 1]] * 4
    train = mx.rnn.BucketSentenceIter(sentences, 4, buckets=[2, 4], invalid_label=0)
    cell = mx.rnn.GRUCell(8, prefix="gru_")

    def sym_gen(seq_len):
        embed = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=4, output_dim=4, name="embed")
        cell.reset()
        outputs, _ = cell.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.FullyConnected(mx.sym.Reshape(outputs, shape=(-1, 8)), num_hidden=4, name="pred")
        label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
        return mx.sym.SoftmaxOutput(pred, label, name="softmax", use_ignore=True, ignore_label=0)

    model = mx.model.FeedForward(sym_gen, num_epoch=20, optimizer="adam", learning_rate=0.05)
    model.fit(train, eval_metric=mx.metric.Perplexity(0))
    assert model.symbol.list_arguments() == sym_gen(4).list_arguments()
    # after the first word, the next word of the cycle 1 -> 2 -> 3 -> 1 is certain: perplexity near 1
    # (score binds one executor, as MXNet's does: score the default bucket's sentences)
    longest = mx.rnn.BucketSentenceIter([s for s in sentences if len(s) == 4], 4, buckets=[4], invalid_label=0)
    assert model.score(longest, mx.metric.Perplexity(0)) < 1.8
