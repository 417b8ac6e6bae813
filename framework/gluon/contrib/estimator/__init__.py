"""``mx.gluon.contrib.estimator``: the :class:`Estimator` training loop and its event handlers."""

from __future__ import annotations

from . import batch_processor, estimator, event_handler
from .batch_processor import BatchProcessor
from .estimator import Estimator
from .event_handler import (
    BatchBegin,
    BatchEnd,
    CheckpointHandler,
    EarlyStoppingHandler,
    EpochBegin,
    EpochEnd,
    GradientUpdateHandler,
    LoggingHandler,
    MetricHandler,
    StoppingHandler,
    TrainBegin,
    TrainEnd,
    ValidationHandler,
)

__all__ = [
    "BatchBegin",
    "BatchEnd",
    "BatchProcessor",
    "CheckpointHandler",
    "EarlyStoppingHandler",
    "EpochBegin",
    "EpochEnd",
    "Estimator",
    "GradientUpdateHandler",
    "LoggingHandler",
    "MetricHandler",
    "StoppingHandler",
    "TrainBegin",
    "TrainEnd",
    "ValidationHandler",
    "batch_processor",
    "estimator",
    "event_handler",
]
