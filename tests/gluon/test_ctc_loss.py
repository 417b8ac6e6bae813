"""gluon.loss.CTCLoss: layouts, lengths and weight against a brute-force sum over every alignment."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import framework as mx
from framework import autograd
from framework.gluon import loss as gloss
from framework.gluon.block import BlockError


def _collapse(path, blank):
    """An alignment's label: merge repeats, then drop blanks."""
    merged = [k for i, k in enumerate(path) if i == 0 or k != path[i - 1]]
    return [k for k in merged if k != blank]


def _brute_force_ctc(scores, label):
    """``-log`` of the summed probability of every path over ``scores`` (T, A) that collapses to ``label``."""
    steps, alphabet = scores.shape
    probs = np.exp(scores - scores.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    total = 0.0
    for path in itertools.product(range(alphabet), repeat=steps):
        if _collapse(list(path), alphabet - 1) == list(label):
            total += np.prod([probs[t, k] for t, k in enumerate(path)])
    return -np.log(total)


PRED = np.random.default_rng(0).standard_normal((2, 5, 4)).astype(np.float32)  # (N, T, C), blank = 3
LABEL = np.array([[1, 0, -1], [2, 1, 1]], dtype=np.float32)  # padded with -1


def _expected(pred_lengths=(5, 5), label_lengths=None):
    out = []
    for n in range(2):
        label = [int(k) for k in LABEL[n] if k >= 0]
        if label_lengths is not None:
            label = [int(k) for k in LABEL[n][: label_lengths[n]]]
        out.append(_brute_force_ctc(PRED[n, : pred_lengths[n]].astype(np.float64), label))
    return np.array(out)


@pytest.mark.parametrize("hybridize", [False, True])
def test_ntc_layout_matches_the_sum_over_alignments(hybridize):
    loss = gloss.CTCLoss()
    loss.hybridize(hybridize)
    out = loss(mx.nd.array(PRED), mx.nd.array(LABEL)).asnumpy()
    assert out.shape == (2,)
    np.testing.assert_allclose(out, _expected(), rtol=1e-4)


@pytest.mark.parametrize("hybridize", [False, True])
def test_lengths_cut_predictions_and_labels(hybridize):
    loss = gloss.CTCLoss()
    loss.hybridize(hybridize)
    out = loss(mx.nd.array(PRED), mx.nd.array(LABEL), mx.nd.array([4, 5]), mx.nd.array([1, 2])).asnumpy()
    np.testing.assert_allclose(out, _expected(pred_lengths=(4, 5), label_lengths=(1, 2)), rtol=1e-4)


def test_tnc_and_tn_layouts_with_weight_and_sample_weight():
    loss = gloss.CTCLoss(layout="TNC", label_layout="TN", weight=2.0)
    out = loss(mx.nd.array(PRED.transpose(1, 0, 2)), mx.nd.array(LABEL.T)).asnumpy()
    np.testing.assert_allclose(out, 2.0 * _expected(), rtol=1e-4)
    weighted = gloss.CTCLoss()(mx.nd.array(PRED), mx.nd.array(LABEL), None, None, mx.nd.array([0.5, 3.0])).asnumpy()
    np.testing.assert_allclose(weighted, np.array([0.5, 3.0]) * _expected(), rtol=1e-4)


def test_gradient_reaches_the_predictions():
    pred = mx.nd.array(PRED)
    pred.attach_grad()
    with autograd.record():
        out = gloss.CTCLoss()(pred, mx.nd.array(LABEL))
    out.backward()
    grad = pred.grad.asnumpy()
    assert np.abs(grad).sum() > 0
    # the gradient is softmax - posterior: each step's entries sum to zero
    np.testing.assert_allclose(grad.sum(axis=2), 0, atol=1e-5)


def test_bad_layouts_are_named():
    with pytest.raises(BlockError, match="layout"):
        gloss.CTCLoss(layout="NCT")
    with pytest.raises(BlockError, match="label_layout"):
        gloss.CTCLoss(label_layout="TT")
