"""Graph passes and the graph executor. Today: the gradient pass shared with autograd."""

from __future__ import annotations

from .executor import Executor, ExecutorError, bind, simple_bind
from .gradient import GradientError, build_gradient
from .graph import IndexedGraph
from .infer import infer_shapes, infer_types  # noqa: F401 - the inference pass, re-exported
from .plan_memory import MemoryPlan, PlanOptions, plan_memory

__all__ = [
    "Executor",
    "ExecutorError",
    "GradientError",
    "IndexedGraph",
    "MemoryPlan",
    "PlanOptions",
    "bind",
    "build_gradient",
    "plan_memory",
    "simple_bind",
]
