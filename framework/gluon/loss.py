"""``mx.gluon.loss``: losses as HybridBlocks, computed as MXNet 1.x computes them.

Every loss returns one value per sample: the element-wise loss is multiplied by
``sample_weight`` (broadcast) and by the scalar ``weight``, then averaged over every axis
except ``batch_axis``. ``hybrid_forward(F, pred, label, sample_weight=None)`` uses only
``F.*`` operators, so a loss can be hybridized (and traced into a network's graph).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .. import ndarray as nd
from .block import BlockError, HybridBlock


def _apply_weighting(F: Any, loss: Any, weight: float | None = None, sample_weight: Any = None) -> Any:
    """``loss * sample_weight * weight`` (each when given)."""
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, numbers.Number):
            raise BlockError(f"loss: weight must be a number, got {weight!r}")
        loss = loss * weight
    return loss


def _reshape_like(F: Any, x: Any, y: Any) -> Any:
    """``x`` with the shape of ``y`` (a view for NDArrays, the ``reshape_like`` operator for symbols)."""
    return x.reshape(y.shape) if F is nd else F.reshape_like(x, y)


class Loss(HybridBlock):
    """Base class: ``weight`` (a global scale) and ``batch_axis`` (the axis kept)."""

    def __init__(self, weight: float | None, batch_axis: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self) -> str:
        return f"{type(self).__name__}(batch_axis={self._batch_axis}, w={self._weight})"

    def _mean(self, F: Any, loss: Any) -> Any:
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class L2Loss(Loss):
    """``weight / 2 * (label - pred)^2``."""

    def __init__(self, weight: float = 1.0, batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        label = _reshape_like(F, label, pred)
        loss = F.square(label - pred)
        half = None if self._weight is None else self._weight / 2
        return self._mean(F, _apply_weighting(F, loss, half, sample_weight))


class L1Loss(Loss):
    """``|label - pred|``."""

    def __init__(self, weight: float | None = None, batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


class SigmoidBinaryCrossEntropyLoss(Loss):
    """Binary cross-entropy on logits (stable form), or on probabilities with ``from_sigmoid``."""

    def __init__(self, from_sigmoid: bool = False, weight: float | None = None, batch_axis: int = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None, pos_weight: Any = None) -> Any:
        label = _reshape_like(F, label, pred)
        if not self._from_sigmoid:
            # max(x, 0) - x * z + log(1 + exp(-|x|)): the logistic loss without overflow
            softplus = F.Activation(-F.abs(pred), act_type="softrelu")
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + softplus
            else:
                log_weight = 1 + F.broadcast_mul(pos_weight - 1, label)
                loss = pred - pred * label + log_weight * (softplus + F.relu(-pred))
        else:
            eps = 1e-12
            if pos_weight is None:
                loss = -(F.log(pred + eps) * label + F.log(1.0 - pred + eps) * (1.0 - label))
            else:
                loss = -(
                    F.broadcast_mul(F.log(pred + eps) * label, pos_weight) + F.log(1.0 - pred + eps) * (1.0 - label)
                )
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    """Cross-entropy of ``softmax(pred)`` along ``axis`` with class indices (or distributions)."""

    def __init__(
        self,
        axis: int = -1,
        sparse_label: bool = True,
        from_logits: bool = False,
        weight: float | None = None,
        batch_axis: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label:
            loss = -F.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            label = _reshape_like(F, label, pred)
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    """``label * (log(label) - pred)``, ``pred`` being log-probabilities (``from_logits=True``).

    Unlike most losses it is *summed* over the non-batch axes (a KL divergence per sample), as
    MXNet 1.9.1 computes it.
    """

    def __init__(
        self, from_logits: bool = True, axis: int = -1, weight: float | None = None, batch_axis: int = 0, **kwargs: Any
    ) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        return F.sum(_apply_weighting(F, loss, self._weight, sample_weight), axis=self._batch_axis, exclude=True)


class SDMLLoss(Loss):
    """Smoothed Deep Metric Learning: row ``i`` of ``x1`` should be nearest to row ``i`` of ``x2``.

    The negative squared distances between every pair of rows are log-softmaxed per row and
    compared (KL divergence) with smoothed one-hot labels: ``1 - smoothing_parameter`` on the
    diagonal, the rest spread evenly over the other rows of the batch, which act as negatives.
    Inputs are (batch_size, dim); the output is one loss per row of ``x1``.
    """

    def __init__(self, smoothing_parameter: float = 0.3, weight: float = 1.0, batch_axis: int = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        if not 0 <= smoothing_parameter < 1:
            raise BlockError(f"SDMLLoss: smoothing_parameter must be in [0, 1), got {smoothing_parameter}")
        self.smoothing_parameter = smoothing_parameter

    def hybrid_forward(self, F: Any, x1: Any, x2: Any) -> Any:
        if F is nd and (x1.shape != x2.shape or x1.ndim != 2 or x1.shape[0] < 2):
            raise BlockError(
                f"{self.name}: x1 and x2 must both be (batch_size, dim) with batch_size >= 2 (the other rows are "
                f"the negatives), got {x1.shape} and {x2.shape}"
            )
        # distances[i, j] = |x1[i] - x2[j]|^2, by broadcasting (batch, 1, dim) against (1, batch, dim)
        diffs = F.broadcast_sub(F.expand_dims(x1, axis=1), F.expand_dims(x2, axis=0))
        distances = F.sum(F.square(diffs), axis=2)
        # the identity matrix and batch_size - 1, from the distances themselves (no shape needed when tracing)
        gold = F.diag(F.ones_like(F.sum(distances, axis=1)))
        others = F.sum(1 - gold, axis=1, keepdims=True)
        labels = gold * (1 - self.smoothing_parameter) + F.broadcast_div((1 - gold) * self.smoothing_parameter, others)
        log_probabilities = F.log_softmax(-distances, axis=1)
        loss = labels * (F.log(labels + 1e-12) - log_probabilities)  # KLDivLoss: summed per row
        return F.sum(_apply_weighting(F, loss, self._weight), axis=self._batch_axis, exclude=True)


class HuberLoss(Loss):
    """``0.5 / rho * err^2`` for ``|err| <= rho``, else ``|err| - 0.5 * rho``."""

    def __init__(self, rho: float = 1, weight: float | None = None, batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        loss = F.where(loss > self._rho, loss - 0.5 * self._rho, (0.5 / self._rho) * F.square(loss))
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


class HingeLoss(Loss):
    """``max(0, margin - pred * label)``, labels -1 or 1."""

    def __init__(self, margin: float = 1, weight: float | None = None, batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        label = _reshape_like(F, label, pred)
        loss = F.relu(self._margin - pred * label)
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


class SquaredHingeLoss(Loss):
    """``max(0, margin - pred * label)^2``, labels -1 or 1."""

    def __init__(self, margin: float = 1, weight: float | None = None, batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        label = _reshape_like(F, label, pred)
        loss = F.square(F.relu(self._margin - pred * label))
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


class LogisticLoss(Loss):
    """``log(1 + exp(-pred * label))`` with ``signed`` (-1/1) or ``binary`` (0/1) labels."""

    def __init__(
        self, weight: float | None = None, batch_axis: int = 0, label_format: str = "signed", **kwargs: Any
    ) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        if label_format not in ("signed", "binary"):
            raise ValueError(f"label_format can only be signed or binary, recieved {label_format}.")
        self._label_format = label_format

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        label = _reshape_like(F, label, pred)
        if self._label_format == "signed":
            label = (label + 1.0) / 2.0  # -1/1 -> 0/1
        loss = F.relu(pred) - pred * label + F.Activation(-F.abs(pred), act_type="softrelu")
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


class TripletLoss(Loss):
    """``max(0, |pred - positive|^2 - |pred - negative|^2 + margin)`` per sample."""

    def __init__(self, margin: float = 1, weight: float | None = None, batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F: Any, pred: Any, positive: Any, negative: Any) -> Any:
        positive = _reshape_like(F, positive, pred)
        negative = _reshape_like(F, negative, pred)
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred), axis=self._batch_axis, exclude=True)
        loss = F.relu(loss + self._margin)
        return _apply_weighting(F, loss, self._weight)


class PoissonNLLLoss(Loss):
    """Negative log-likelihood of ``target`` under a Poisson of rate ``exp(pred)`` (or ``pred``).

    As in MXNet, the result is one scalar: the mean over all elements.
    """

    def __init__(
        self,
        weight: float | None = None,
        from_logits: bool = True,
        batch_axis: int = 0,
        compute_full: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F: Any, pred: Any, target: Any, sample_weight: Any = None, epsilon: float = 1e-08) -> Any:
        target = _reshape_like(F, target, pred)
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            # Stirling's approximation of log(target!), only where target > 1
            stirling = target * F.log(target) - target + 0.5 * F.log(2 * target * np.pi)
            loss = loss + stirling * (target > 1)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss)


class CosineEmbeddingLoss(Loss):
    """``1 - cos(x1, x2)`` for label 1, ``max(0, cos(x1, x2) - margin)`` for label -1."""

    def __init__(self, weight: float | None = None, batch_axis: int = 0, margin: float = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F: Any, input1: Any, input2: Any, label: Any, sample_weight: Any = None) -> Any:
        input1 = _reshape_like(F, input1, input2)
        label = label.reshape((-1, 1))
        cos_sim = self._cosine_similarity(F, input1, input2)
        y_1 = label == 1
        y_minus_1 = label == -1
        cos_sim_a = (1 - cos_sim) * y_1
        zero = F.zeros((1, 1)) if F is not nd else nd.zeros((1, 1), ctx=cos_sim.context)
        cos_sim_b = F.broadcast_maximum(zero, y_minus_1 * (cos_sim - self._margin))
        return _apply_weighting(F, cos_sim_a + cos_sim_b, self._weight, sample_weight)

    @staticmethod
    def _cosine_similarity(F: Any, x: Any, y: Any, axis: int = -1) -> Any:
        x_norm = F.norm(x, axis=axis).reshape((-1, 1))
        y_norm = F.norm(y, axis=axis).reshape((-1, 1))
        x_dot_y = F.sum(x * y, axis=axis).reshape((-1, 1))
        eps = F.full((1, 1), 1e-12) if F is not nd else nd.full((1, 1), 1e-12, ctx=x.context)
        return x_dot_y / F.broadcast_maximum(x_norm * y_norm, eps)


class CTCLoss(Loss):
    """Connectionist temporal classification: ``-log p(label | pred)`` summed over all alignments.

    ``pred`` holds unnormalized scores (the operator applies the softmax) in ``layout`` 'NTC' or
    'TNC'; the last symbol, ``alphabet_size - 1``, is the blank, and ``label`` (``label_layout``
    'NT' or 'TN') is padded with -1. ``pred_lengths`` / ``label_lengths`` ``(batch,)`` give each
    sequence's true lengths. The loss is per sample, ``(batch,)``, not averaged over time.
    """

    def __init__(self, layout: str = "NTC", label_layout: str = "NT", weight: float | None = None, **kwargs: Any):
        if layout not in ("NTC", "TNC"):
            raise BlockError(f"CTCLoss: layout must be 'NTC' or 'TNC', got {layout!r}")
        if label_layout not in ("NT", "TN"):
            raise BlockError(f"CTCLoss: label_layout must be 'NT' or 'TN', got {label_layout!r}")
        self._layout = layout
        self._label_layout = label_layout
        super().__init__(weight, label_layout.find("N"), **kwargs)

    def hybrid_forward(
        self,
        F: Any,
        pred: Any,
        label: Any,
        pred_lengths: Any = None,
        label_lengths: Any = None,
        sample_weight: Any = None,
    ) -> Any:
        # the operator wants data (T, N, A) and labels (N, L)
        if self._layout == "NTC":
            pred = F.swapaxes(pred, 0, 1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, 0, 1)
        lengths = {"data_lengths": pred_lengths, "label_lengths": label_lengths}
        loss = F.CTCLoss(
            pred,
            label,
            **{name: value for name, value in lengths.items() if value is not None},
            use_data_lengths=pred_lengths is not None,
            use_label_lengths=label_lengths is not None,
            blank_label="last",
        )
        return _apply_weighting(F, loss, self._weight, sample_weight)


__all__ = [
    "CTCLoss",
    "CosineEmbeddingLoss",
    "HingeLoss",
    "HuberLoss",
    "KLDivLoss",
    "L1Loss",
    "L2Loss",
    "LogisticLoss",
    "Loss",
    "PoissonNLLLoss",
    "SigmoidBCELoss",
    "SigmoidBinaryCrossEntropyLoss",
    "SDMLLoss",
    "SoftmaxCELoss",
    "SoftmaxCrossEntropyLoss",
    "SquaredHingeLoss",
    "TripletLoss",
]
