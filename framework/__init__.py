"""MXLab: the architecture of Apache MXNet 1.x, rebuilt in Python to be read, run and watched.

Use it as MXNet: ``import framework as mx``.
"""

from __future__ import annotations

from . import (
    autograd,
    base,
    callback,
    engine,
    events,
    initializer,
    io,
    lr_scheduler,
    metric,
    model,
    module,
    ndarray,
    operator,
    optimizer,
    profiler,
    random,
    recordio,
    resource,
    storage,
    symbol,
    test_utils,
    visualization,
)
from . import initializer as init
from . import module as mod
from . import ndarray as nd
from . import symbol as sym
from . import visualization as viz
from .base import MXLabError
from .context import Context, cpu, current_context, gpu, num_gpus
from .symbol import naming as name

__version__ = "0.1.0"

__all__ = [
    "Context",
    "MXLabError",
    "autograd",
    "base",
    "callback",
    "cpu",
    "current_context",
    "engine",
    "events",
    "gpu",
    "init",
    "io",
    "initializer",
    "lr_scheduler",
    "metric",
    "mod",
    "model",
    "module",
    "num_gpus",
    "nd",
    "ndarray",
    "operator",
    "optimizer",
    "profiler",
    "random",
    "recordio",
    "resource",
    "sym",
    "test_utils",
    "visualization",
    "viz",
    "symbol",
    "name",
    "storage",
]
