"""Graph passes and the graph executor.

Bottom up: the passes (``graph``, ``infer``, ``mirror``, ``liveness``, the two memory planners
``plan_memory`` and ``greedy_by_size`` and ``planners``, which picks one; the gradient pass they
share with autograd is :mod:`framework.operator.gradient_pass`, re-exported here),
then ``arguments`` and ``segments``, the ``Executor`` (``executor``), ``binding``
(``bind`` / ``simple_bind``), the ``CachedOp`` (``cached_op``) and the runner of control-flow
bodies (``subgraph_runner``) on top. This package re-exports the public names.
"""

from __future__ import annotations

from ..operator.gradient_pass import GradientError, build_gradient
from .arguments import ExecutorError, UnknownArgumentError
from .binding import bind, simple_bind
from .cached_op import CachedOp, CachedOpError
from .executor import Executor
from .graph import IndexedGraph
from .infer import infer_shapes, infer_types  # noqa: F401 - the inference pass, re-exported
from .plan_memory import MemoryPlan, PlanOptions, plan_memory
from .subgraph_runner import BodyRunner  # noqa: F401 - installs the runner of control-flow bodies

__all__ = [
    "CachedOp",
    "CachedOpError",
    "Executor",
    "ExecutorError",
    "GradientError",
    "IndexedGraph",
    "MemoryPlan",
    "PlanOptions",
    "UnknownArgumentError",
    "bind",
    "build_gradient",
    "plan_memory",
    "simple_bind",
]
