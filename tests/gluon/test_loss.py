"""gluon.loss: each loss against a NumPy formula, hybridized against imperative, weights and batch_axis."""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework import autograd
from framework.gluon import loss as gloss

RNG = np.random.default_rng(0)
PRED = RNG.standard_normal((4, 3)).astype(np.float32)
TARGET = RNG.standard_normal((4, 3)).astype(np.float32)
SIGNS = np.sign(RNG.standard_normal((4, 3))).astype(np.float32)
CLASSES = np.array([0, 2, 1, 2], dtype=np.float32)
PROBS = (np.exp(TARGET) / np.exp(TARGET).sum(-1, keepdims=True)).astype(np.float32)


def _log_softmax(v, axis=-1):
    shifted = v - v.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _softplus(v):
    return np.log1p(np.exp(v))


_POSITIVE = (SIGNS > 0).astype(np.float32)
_BCE = (-_POSITIVE * np.log(1 / (1 + np.exp(-PRED))) - (1 - _POSITIVE) * np.log(1 - 1 / (1 + np.exp(-PRED)))).mean(1)


CASES = {
    "L2": (gloss.L2Loss(), (PRED, TARGET), (0.5 * (TARGET - PRED) ** 2).mean(1)),
    "L1": (gloss.L1Loss(), (PRED, TARGET), np.abs(TARGET - PRED).mean(1)),
    "SoftmaxCE": (
        gloss.SoftmaxCrossEntropyLoss(),
        (PRED, CLASSES),
        -_log_softmax(PRED)[np.arange(4), CLASSES.astype(int)],
    ),
    "SoftmaxCE dense": (
        gloss.SoftmaxCrossEntropyLoss(sparse_label=False),
        (PRED, PROBS),
        -(_log_softmax(PRED) * PROBS).sum(1),
    ),
    "SoftmaxCE logits axis0": (
        gloss.SoftmaxCrossEntropyLoss(axis=0, from_logits=True, batch_axis=1),
        (PRED, np.array([0, 3, 1], np.float32)),
        -PRED[[0, 3, 1], np.arange(3)],
    ),
    "SigmoidBCE": (
        gloss.SigmoidBinaryCrossEntropyLoss(),
        (PRED, (SIGNS > 0).astype(np.float32)),
        _BCE,
    ),
    "SigmoidBCE from_sigmoid": (
        gloss.SigmoidBCELoss(from_sigmoid=True),
        (1 / (1 + np.exp(-PRED)), (SIGNS > 0).astype(np.float32)),
        _BCE,
    ),
    "KLDiv": (
        gloss.KLDivLoss(from_logits=False),
        (PRED, PROBS),
        (PROBS * (np.log(PROBS + 1e-12) - _log_softmax(PRED))).sum(1),  # summed per sample, as in MXNet
    ),
    "Huber": (
        gloss.HuberLoss(rho=0.5),
        (PRED, TARGET),
        np.where(np.abs(TARGET - PRED) > 0.5, np.abs(TARGET - PRED) - 0.25, (TARGET - PRED) ** 2).mean(1),
    ),
    "Hinge": (gloss.HingeLoss(), (PRED, SIGNS), np.maximum(0, 1 - PRED * SIGNS).mean(1)),
    "SquaredHinge": (gloss.SquaredHingeLoss(), (PRED, SIGNS), (np.maximum(0, 1 - PRED * SIGNS) ** 2).mean(1)),
    "Logistic": (gloss.LogisticLoss(), (PRED, SIGNS), _softplus(-PRED * SIGNS).mean(1)),
    "Logistic binary": (
        gloss.LogisticLoss(label_format="binary"),
        (PRED, (SIGNS > 0).astype(np.float32)),
        _softplus(-PRED * SIGNS).mean(1),
    ),
    "Triplet": (
        gloss.TripletLoss(margin=0.5),
        (PRED, TARGET, SIGNS),
        np.maximum(0, ((TARGET - PRED) ** 2 - (SIGNS - PRED) ** 2).sum(1) + 0.5),
    ),
    "PoissonNLL": (
        gloss.PoissonNLLLoss(),
        (PRED, np.abs(TARGET)),
        np.array((np.exp(PRED) - np.abs(TARGET) * PRED).mean()),
    ),
    "CosineEmbedding": (
        gloss.CosineEmbeddingLoss(margin=0.1),
        (PRED, TARGET, np.array([1, -1, 1, -1], np.float32)),
        None,  # computed below
    ),
}
_cos = (PRED * TARGET).sum(1) / (np.linalg.norm(PRED, axis=1) * np.linalg.norm(TARGET, axis=1))
CASES["CosineEmbedding"] = (
    CASES["CosineEmbedding"][0],
    CASES["CosineEmbedding"][1],
    np.where(np.array([1, -1, 1, -1]) == 1, 1 - _cos, np.maximum(0, _cos - 0.1)).reshape(4, 1),
)


@pytest.mark.parametrize("name", list(CASES))
def test_loss_matches_numpy_and_hybridized_agrees(name):
    block, inputs, expected = CASES[name]
    arrays = [mx.nd.array(a) for a in inputs]
    outputs = []
    for hybridize in (False, True):
        block.hybridize(hybridize)
        pred = arrays[0].copy()
        pred.attach_grad()
        with autograd.record():
            out = block(pred, *arrays[1:])
        out.backward()
        outputs.append((out.asnumpy(), pred.grad.asnumpy()))
        np.testing.assert_allclose(out.asnumpy().reshape(np.shape(expected)), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(outputs[0][1], outputs[1][1], rtol=1e-4, atol=1e-6)


def test_weight_and_sample_weight_scale_the_loss():
    pred, label = mx.nd.array(PRED), mx.nd.array(TARGET)
    base = gloss.L1Loss()(pred, label).asnumpy()
    np.testing.assert_allclose(gloss.L1Loss(weight=3.0)(pred, label).asnumpy(), 3 * base, rtol=1e-6)
    sample_weight = mx.nd.array([[1.0], [0.0], [2.0], [1.0]])
    np.testing.assert_allclose(
        gloss.L1Loss()(pred, label, sample_weight).asnumpy(), base * np.array([1, 0, 2, 1]), rtol=1e-6
    )
    with pytest.raises(mx.MXLabError, match="weight must be a number"):
        gloss.L1Loss(weight="heavy")(pred, label)
    with pytest.raises(ValueError, match="label_format"):
        gloss.LogisticLoss(label_format="ternary")


def test_label_is_reshaped_like_pred_in_both_modes():
    loss = gloss.L2Loss()
    pred, label = mx.nd.array(PRED[:, :1]), mx.nd.array(TARGET[:, 0])  # (4, 1) and (4,)
    for hybridize in (False, True):
        loss.hybridize(hybridize)
        np.testing.assert_allclose(
            loss(pred, label).asnumpy(), 0.5 * (TARGET[:, 0] - PRED[:, 0]) ** 2, rtol=1e-5, atol=1e-7
        )


# two batches of 4 rows (tests/gluon/test_reference_numbers.py compares SDMLLoss with MXNet 1.9.1's numbers)
_SDML_X1 = [[2.040919, -2.555665, 0.418099], [-0.567770, -0.452649, -0.215597], [-2.019986, -0.231932, -0.865213]]
_SDML_X1.append([3.322999, 0.225787, -0.352631])
_SDML_X2 = [[-0.281287, -0.668046, -1.055151], [-0.390801, 0.481945, -0.238554], [0.957759, -0.199802, 0.024260]]
_SDML_X2.append([1.545821, 0.545106, -0.505229])


def _sdml_numpy(x1, x2, smoothing):
    n = len(x1)
    distances = ((x1[:, None, :] - x2[None, :, :]) ** 2).sum(-1)
    labels = np.where(np.eye(n) == 1, 1 - smoothing, smoothing / (n - 1))
    return (labels * (np.log(labels + 1e-12) - _log_softmax(-distances, axis=1))).sum(1)


@pytest.mark.parametrize("smoothing", [0.3, 0.1])
def test_sdml_loss_matches_numpy_and_hybridizes(smoothing):
    x1, x2 = np.array(_SDML_X1, dtype=np.float32), np.array(_SDML_X2, dtype=np.float32)
    block = gloss.SDMLLoss(smoothing_parameter=smoothing)
    results = []
    for hybridize in (False, True):
        block.hybridize(hybridize)
        a, b = mx.nd.array(x1), mx.nd.array(x2)
        a.attach_grad()
        with autograd.record():
            out = block(a, b)
        out.backward()
        results.append((out.asnumpy(), a.grad.asnumpy()))
        np.testing.assert_allclose(out.asnumpy(), _sdml_numpy(x1, x2, smoothing), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-4, atol=1e-6)
    assert np.abs(results[0][1]).sum() > 0


def test_sdml_loss_weight_and_bad_inputs():
    x1, x2 = mx.nd.array(_SDML_X1), mx.nd.array(_SDML_X2)
    doubled = gloss.SDMLLoss(weight=2.0)(x1, x2).asnumpy()
    np.testing.assert_allclose(doubled, 2 * gloss.SDMLLoss()(x1, x2).asnumpy(), rtol=1e-5)
    with pytest.raises(mx.gluon.BlockError, match="must both be \\(batch_size, dim\\) with batch_size >= 2"):
        gloss.SDMLLoss()(x1, x2[:3])
    with pytest.raises(mx.gluon.BlockError, match="batch_size >= 2"):
        gloss.SDMLLoss()(x1[:1], x2[:1])
    with pytest.raises(mx.gluon.BlockError, match="smoothing_parameter must be in \\[0, 1\\)"):
        gloss.SDMLLoss(smoothing_parameter=1.0)
