"""MXLab: the architecture of Apache MXNet 1.x, rebuilt in Python to be read, run and watched.

Use it as MXNet: ``import framework as mx``.
"""

from __future__ import annotations

from . import autograd, base, engine, events, ndarray, operator, profiler, random, resource, storage
from . import ndarray as nd
from .base import MXLabError
from .context import Context, cpu, current_context, gpu, num_gpus

__version__ = "0.1.0"

__all__ = [
    "Context",
    "MXLabError",
    "autograd",
    "base",
    "cpu",
    "current_context",
    "engine",
    "events",
    "gpu",
    "num_gpus",
    "nd",
    "ndarray",
    "operator",
    "profiler",
    "random",
    "resource",
    "storage",
]
