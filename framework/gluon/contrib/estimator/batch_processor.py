"""``BatchProcessor``: what the Estimator does with one batch (split, forward, loss, backward).

Subclass it to change a training step (several outputs, a custom loss call) without touching
the loop or its event handlers.
"""

from __future__ import annotations

from typing import Any

from .... import autograd
from ...utils import split_and_load

__all__ = ["BatchProcessor"]


class BatchProcessor:
    """The default step: the batch's first element is the data, the second the label."""

    def _get_data_and_label(self, batch: Any, ctx: list, batch_axis: int = 0) -> tuple[list, list]:
        """``batch`` split into one slice of data and label per context."""
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    def evaluate_batch(self, estimator: Any, val_batch: Any, batch_axis: int = 0) -> tuple[list, list, list, list]:
        """Forward ``val_net`` and ``val_loss`` (no recording); returns ``(data, label, pred, loss)``."""
        data, label = self._get_data_and_label(val_batch, estimator.context, batch_axis)
        pred = [estimator.val_net(x) for x in data]
        loss = [estimator.val_loss(y_hat, y) for y_hat, y in zip(pred, label, strict=True)]
        return data, label, pred, loss

    def fit_batch(self, estimator: Any, train_batch: Any, batch_axis: int = 0) -> tuple[list, list, list, list]:
        """Forward and backward under ``autograd.record``; the update is GradientUpdateHandler's."""
        data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
        with autograd.record():
            pred = [estimator.net(x) for x in data]
            loss = [estimator.loss(y_hat, y) for y_hat, y in zip(pred, label, strict=True)]
        for each in loss:
            each.backward()
        return data, label, pred, loss
