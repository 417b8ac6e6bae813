"""``mx.mod.BucketingModule``: one module per bucket, parameters and memory shared, trained as MXNet's
``example/rnn/bucketing`` language model (embed -> LSTM unrolled per bucket -> FC -> SoftmaxOutput) on a
small text kept in tests/data/text/."""

from __future__ import annotations

import importlib.util
import logging
import os

import numpy as np
import pytest

import framework as mx
from framework.module import ModuleError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "text", "sentences.txt")
INVALID = 0  # padding id; words count from 1, as in MXNet's example


def _sentences():
    with open(TEXT, encoding="utf-8") as handle:
        lines = [line.split() for line in handle if line.strip()]
    encoded, vocab = mx.rnn.encode_sentences(lines, invalid_label=INVALID, start_label=1)
    return encoded, vocab


def _sym_gen_factory(vocab_size, num_embed=16, num_hidden=32):
    cell = mx.rnn.LSTMCell(num_hidden, prefix="lstm_")

    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        embed = mx.sym.Embedding(data=data, input_dim=vocab_size, output_dim=num_embed, name="embed")
        cell.reset()
        outputs, _ = cell.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.Reshape(outputs, shape=(-1, num_hidden))
        pred = mx.sym.FullyConnected(data=pred, num_hidden=vocab_size, name="pred")
        label = mx.sym.Reshape(label, shape=(-1,))
        pred = mx.sym.SoftmaxOutput(data=pred, label=label, name="softmax", use_ignore=True, ignore_label=INVALID)
        return pred, ("data",), ("softmax_label",)

    return sym_gen


def _perplexity(module, data_iter):
    metric = mx.metric.Perplexity(INVALID)
    data_iter.reset()
    module.score(data_iter, metric)
    return metric.get()[1]


def test_lstm_language_model_trains_with_buckets():
    sentences, vocab = _sentences()
    buckets = [8, 10, 17]
    train = mx.rnn.BucketSentenceIter(sentences, 8, buckets=buckets, invalid_label=INVALID)
    module = mx.mod.BucketingModule(
        _sym_gen_factory(len(vocab) + 1), default_bucket_key=train.default_bucket_key, context=mx.cpu()
    )
    module.bind(train.provide_data, train.provide_label)
    module.init_params(mx.init.Xavier(factor_type="in", magnitude=2.34))
    module.init_optimizer(optimizer="adam", optimizer_params={"learning_rate": 0.01})
    before = _perplexity(module, train)
    train.reset()
    module.fit(train, num_epoch=6, eval_metric=mx.metric.Perplexity(INVALID))
    after = _perplexity(module, train)
    # every bucket got its own module, all sharing the default bucket's parameter arrays
    assert sorted(module._buckets) == buckets
    default = module._buckets[17]._exec_group.execs[0].arg_dict
    for key in (8, 10):
        shared = module._buckets[key]._exec_group.execs[0].arg_dict
        assert shared["lstm_i2h_weight"] is default["lstm_i2h_weight"]
        assert module._buckets[key]._optimizer is module._buckets[17]._optimizer
    assert before > len(vocab) * 0.5  # an untrained model is about as unsure as a uniform guess
    assert after < before / 3, (before, after)


def test_buckets_share_parameters_so_an_update_reaches_every_bucket():
    sentences, vocab = _sentences()
    train = mx.rnn.BucketSentenceIter(sentences, 4, buckets=[8, 17], invalid_label=INVALID)
    module = mx.mod.BucketingModule(_sym_gen_factory(len(vocab) + 1), default_bucket_key=17)
    module.bind(train.provide_data, train.provide_label)
    module.init_params(mx.init.Xavier())
    module.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    batch = next(b for b in train if b.bucket_key == 8)
    before = module.get_params()[0]["pred_weight"].asnumpy().copy()
    module.forward_backward(batch)
    module.update()
    assert module.symbol.list_arguments() == module._buckets[8].symbol.list_arguments()
    assert module.get_outputs()[0].shape == (4 * 8, len(vocab) + 1)
    after = module.get_params()[0]["pred_weight"].asnumpy()
    assert not np.allclose(before, after)
    np.testing.assert_array_equal(module._buckets[17]._exec_group.execs[0].arg_dict["pred_weight"].asnumpy(), after)


def test_checkpoint_round_trip(tmp_path):
    sentences, vocab = _sentences()
    sym_gen = _sym_gen_factory(len(vocab) + 1)
    train = mx.rnn.BucketSentenceIter(sentences, 4, buckets=[8, 17], invalid_label=INVALID)
    module = mx.mod.BucketingModule(sym_gen, default_bucket_key=17)
    module.bind(train.provide_data, train.provide_label, for_training=False)
    module.init_params(mx.init.Xavier())
    batch = next(b for b in train if b.bucket_key == 8)
    module.forward(batch, is_train=False)
    expected = module.get_outputs()[0].asnumpy()
    prefix = str(tmp_path / "lm")
    module.save_checkpoint(prefix, 3)
    assert sorted(os.listdir(tmp_path)) == ["lm-0003.params", "lm-17-symbol.json", "lm-8-symbol.json", "lm.buckets"]
    loaded = mx.mod.BucketingModule.load(prefix, 3, sym_gen=sym_gen, default_bucket_key=17)
    loaded.bind(train.provide_data, train.provide_label, for_training=False)
    loaded.forward(batch, is_train=False)
    np.testing.assert_allclose(loaded.get_outputs()[0].asnumpy(), expected, rtol=1e-6)


def test_failures_are_named(caplog):
    with pytest.raises(ModuleError, match="default_bucket_key is required"):
        mx.mod.BucketingModule(lambda key: None)
    with pytest.raises(ModuleError, match=r"must return \(symbol, data_names, label_names\)"):
        mx.mod.BucketingModule(lambda key: mx.sym.Variable("data"), default_bucket_key=3)
    module = mx.mod.BucketingModule(_sym_gen_factory(5), default_bucket_key=4)
    assert module.data_names == ["data"]
    with pytest.raises(ModuleError, match="bind"):
        module.forward(mx.io.DataBatch([mx.nd.zeros((1, 4))]))
    with pytest.raises(ModuleError, match="shared_module is not supported"):
        module.bind([("data", (1, 4))], [("softmax_label", (1, 4))], shared_module=module)
    with pytest.raises(ModuleError, match="empty BucketingModule"):
        module.save_checkpoint("unused", 1)
    with pytest.raises(ModuleError, match="sym_gen and default_bucket_key are required"):
        mx.mod.BucketingModule.load("unused", 1)
    module.bind([("data", (1, 4))], [("softmax_label", (1, 4))])
    with caplog.at_level(logging.WARNING):
        module.bind([("data", (1, 4))], [("softmax_label", (1, 4))])
    assert "Already bound" in caplog.text


def test_the_example_script_trains():
    """examples/rnn/lstm_bucketing.py (the same model, stacked, with Speedometer logging) runs and learns."""
    spec = importlib.util.spec_from_file_location(
        "lstm_bucketing", os.path.join(ROOT, "examples", "rnn", "lstm_bucketing.py")
    )
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    perplexity = example.main(["--num-epochs", "3", "--num-layers", "1", "--num-hidden", "32"])
    assert perplexity < 40  # an untrained model scores about the vocabulary size (~66)


def test_set_params_with_allow_missing_reaches_every_bucket_and_keeps_the_rest():
    sentences, vocab = _sentences()
    train = mx.rnn.BucketSentenceIter(sentences, 4, buckets=[8, 17], invalid_label=INVALID)
    module = mx.mod.BucketingModule(_sym_gen_factory(len(vocab) + 1), default_bucket_key=17)
    with pytest.raises(ModuleError, match="call bind"):
        module.set_params({}, {}, allow_missing=True)
    module.bind(train.provide_data, train.provide_label)
    module.init_params(mx.init.Xavier())
    before = module.get_params()[0]
    bias = mx.nd.ones(before["pred_bias"].shape)
    module.set_params({"pred_bias": bias}, {}, allow_missing=True)
    module.switch_bucket(8, [("data", (4, 8))], [("softmax_label", (4, 8))])
    after = module.get_params()[0]
    np.testing.assert_array_equal(after["pred_bias"].asnumpy(), bias.asnumpy())
    np.testing.assert_array_equal(after["pred_weight"].asnumpy(), before["pred_weight"].asnumpy())
    np.testing.assert_array_equal(module._buckets[8]._exec_group.execs[0].arg_dict["pred_bias"].asnumpy(), 1)
