"""Graph passes and the graph executor (the gradient pass they share with autograd is
:mod:`framework.operator.gradient_pass`, re-exported here)."""

from __future__ import annotations

from ..operator.gradient_pass import GradientError, build_gradient  # re-exported: the pass executors run
from .executor import Executor, ExecutorError, bind, simple_bind
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
