"""The memory planners by name: ``MXLAB_MEMORY_PLANNER`` or ``PlanOptions(strategy=...)`` picks one.

Both return a :class:`~.plan_memory.MemoryPlan` built from the same lifetimes
(:mod:`.liveness`), so the executor allocates and runs either plan the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from .graph import IndexedGraph
from .greedy_by_size import plan_greedy_by_size
from .plan_memory import STRATEGIES, MemoryPlan, PlanOptions, plan_memory

#: Strategy name -> planner; the names are ``MXLAB_MEMORY_PLANNER``'s choices.
PLANNERS: dict[str, Callable[..., MemoryPlan]] = {"mxnet": plan_memory, "greedy_by_size": plan_greedy_by_size}
assert tuple(PLANNERS) == STRATEGIES, "every strategy the setting accepts has a planner"


def plan(
    graph: IndexedGraph,
    shapes: Sequence[Sequence[int] | None],
    dtypes: Sequence[str | None],
    external: Iterable[int] = (),
    keep: Iterable[int] | None = None,
    options: PlanOptions | None = None,
) -> MemoryPlan:
    """The plan of ``graph`` by the strategy ``options`` names (default: MXNet's)."""
    options = options or PlanOptions()
    return PLANNERS[options.strategy](graph, shapes, dtypes, external=external, keep=keep, options=options)
