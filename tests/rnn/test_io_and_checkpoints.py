"""``encode_sentences``, ``BucketSentenceIter`` and the RNN checkpoint functions of ``mx.rnn``."""

from __future__ import annotations

import os

import numpy as np
import pytest

import framework as mx
from framework.io.base import DataIterError


def test_encode_sentences_builds_a_vocabulary_skipping_the_invalid_label():
    encoded, vocab = mx.rnn.encode_sentences([["a", "b", "a"], ["c"]], invalid_label=1, start_label=0)
    assert encoded == [[0, 2, 0], [3]]
    assert vocab == {"\n": 1, "a": 0, "b": 2, "c": 3}


def test_encode_sentences_with_a_given_vocabulary():
    vocab = {"a": 5, "b": 6}
    assert mx.rnn.encode_sentences([["b", "a"]], vocab=vocab)[0] == [[6, 5]]
    with pytest.raises(DataIterError, match="unknown token 'z'"):
        mx.rnn.encode_sentences([["a", "z"]], vocab=dict(vocab))
    encoded, grown = mx.rnn.encode_sentences([["z", "a", "y"]], vocab=dict(vocab), unknown_token="<unk>")
    assert encoded == [[0, 5, 0]]
    assert grown["<unk>"] == 0


def _sentences():
    return [[1, 2, 3], [4, 5], [6, 7, 8, 9], [1, 1], [2, 2, 2], [3, 3, 3, 3, 3, 3, 3], [5]]


def test_buckets_padding_and_labels():
    it = mx.rnn.BucketSentenceIter(_sentences(), 2, buckets=[2, 4], invalid_label=-1)
    assert it.default_bucket_key == 4
    assert it.provide_data[0].shape == (2, 4) and it.provide_data[0].layout == "NT"
    assert it.provide_label[0].name == "softmax_label"
    # bucket 2: [4,5], [1,1], [5]; bucket 4: [1,2,3], [6,7,8,9], [2,2,2]; the 7-word sentence is dropped
    assert sorted(map(tuple, it.data[0].tolist())) == [(1, 1), (4, 5), (5, -1)]
    assert sorted(map(tuple, it.data[1].tolist())) == [(1, 2, 3, -1), (2, 2, 2, -1), (6, 7, 8, 9)]
    batches = list(it)
    assert sorted(b.bucket_key for b in batches) == [2, 4]  # one full batch per bucket
    for batch in batches:
        data, label = batch.data[0].asnumpy(), batch.label[0].asnumpy()
        assert data.shape == (2, batch.bucket_key) == batch.provide_data[0].shape
        np.testing.assert_array_equal(label[:, :-1], data[:, 1:])  # the next word is the label
        np.testing.assert_array_equal(label[:, -1], [-1, -1])
    with pytest.raises(StopIteration):
        it.next()
    it.reset()
    assert len(list(it)) == 2


def test_time_major_layout_and_default_buckets():
    sentences = [[1, 2]] * 4 + [[3, 4, 5]] * 2 + [[6]]
    it = mx.rnn.BucketSentenceIter(sentences, 2, layout="TN")
    assert it.buckets == [2, 3]  # lengths with at least batch_size sentences
    assert it.provide_data[0].shape == (3, 2)
    for batch in it:
        assert batch.data[0].shape == (batch.bucket_key, 2)


def test_bad_iterator_arguments_are_named():
    with pytest.raises(DataIterError, match="layout"):
        mx.rnn.BucketSentenceIter(_sentences(), 2, buckets=[4], layout="NC")
    with pytest.raises(DataIterError, match="no bucket"):
        mx.rnn.BucketSentenceIter([[1], [2, 3]], 5)
    with pytest.raises(DataIterError, match="batch_size"):
        mx.rnn.BucketSentenceIter(_sentences(), 0, buckets=[4])


def test_rnn_checkpoint_unpacks_on_save_and_packs_on_load(tmp_path):
    cell = mx.rnn.GRUCell(3, prefix="gru_")
    out, _ = cell.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    args = {
        "gru_i2h_weight": mx.nd.array(np.random.rand(9, 4)),
        "gru_i2h_bias": mx.nd.array(np.random.rand(9)),
        "gru_h2h_weight": mx.nd.array(np.random.rand(9, 3)),
        "gru_h2h_bias": mx.nd.array(np.random.rand(9)),
    }
    prefix = str(tmp_path / "gru")
    mx.rnn.save_rnn_checkpoint(cell, prefix, 2, out, args, {})
    saved = mx.nd.load(prefix + "-0002.params")
    assert "arg:gru_i2h_z_weight" in saved and "arg:gru_i2h_weight" not in saved
    sym, loaded, aux = mx.rnn.load_rnn_checkpoint([cell], prefix, 2)
    assert sym.list_arguments() == out.list_arguments() and aux == {}
    for name, value in args.items():
        np.testing.assert_allclose(loaded[name].asnumpy(), value.asnumpy(), rtol=1e-6)


def test_do_rnn_checkpoint_saves_every_period_epochs(tmp_path):
    cell = mx.rnn.RNNCell(2, prefix="r_")
    out, _ = cell.unroll(1, mx.sym.Variable("data"))
    args = {name: mx.nd.ones(shape) for name, shape in [("r_i2h_weight", (2, 3)), ("r_i2h_bias", (2,))]}
    args.update({"r_h2h_weight": mx.nd.ones((2, 2)), "r_h2h_bias": mx.nd.ones((2,))})
    callback = mx.rnn.do_rnn_checkpoint(cell, str(tmp_path / "r"), period=2)
    for epoch in range(4):
        callback(epoch, out[0], args, {})
    assert sorted(os.listdir(tmp_path)) == ["r-0002.params", "r-0004.params", "r-symbol.json"]
