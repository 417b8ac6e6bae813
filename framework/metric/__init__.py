"""``mx.metric``: running evaluation metrics (MXNet 1.x's ``metric`` module), one family per module.

- :mod:`.base`: :class:`EvalMetric` (local and global sums), the registry, input checks;
- :mod:`.classification`: Accuracy, TopKAccuracy, F1, MCC, PCC;
- :mod:`.regression`: MAE, MSE, RMSE, PearsonCorrelation;
- :mod:`.likelihood`: Perplexity, CrossEntropy, NegativeLogLikelihood;
- :mod:`.loss`: Loss and its twins Torch and Caffe;
- :mod:`.composite`: CompositeEvalMetric, CustomMetric, ``np`` and ``create``.

Values are computed with NumPy on the host (``asnumpy()`` waits for the arrays), as MXNet
1.x does; they match MXNet 1.9.1's for the same inputs (tests/training/test_metric_reference.py).
Metrics are registered by lower-case class name and by MXNet's aliases for :func:`create`:
``create("acc")``, ``create(["acc", "ce"])``, ``create(my_function)``.

Differences from MXNet 1.9.1, on purpose (docs/differences.md): NumPy arrays are accepted
wherever NDArrays are; ``CompositeEvalMetric.get_metric`` raises for a bad index (MXNet
returns the exception); ``average`` of F1, MCC and PearsonCorrelation accepts only "macro"
and "micro" and is part of ``get_config``; PearsonCorrelation "micro" keeps local and
global statistics apart (MXNet's ``get_global`` returns 0 there).
"""

from __future__ import annotations

from .base import _REGISTRY, EvalMetric, MetricError, alias, check_label_shapes, register
from .classification import F1, MCC, PCC, Accuracy, TopKAccuracy
from .composite import CompositeEvalMetric, CustomMetric, create, np
from .likelihood import CrossEntropy, NegativeLogLikelihood, Perplexity
from .loss import Caffe, Loss, Torch
from .regression import MAE, MSE, RMSE, PearsonCorrelation

__all__ = [
    "_REGISTRY",
    "Accuracy",
    "Caffe",
    "CompositeEvalMetric",
    "CrossEntropy",
    "CustomMetric",
    "EvalMetric",
    "F1",
    "Loss",
    "MAE",
    "MCC",
    "MSE",
    "MetricError",
    "NegativeLogLikelihood",
    "PCC",
    "PearsonCorrelation",
    "Perplexity",
    "RMSE",
    "TopKAccuracy",
    "Torch",
    "alias",
    "check_label_shapes",
    "create",
    "np",
    "register",
]
