# The exercise stub: fill in every `# TODO(exercise)` gap (generated from the reference solution).
# ruff: noqa: F401, RUF100  (the imports are the ones your code will need)
"""Exercise ``memory_planner``: the planner's sharing step, a free list of dead blocks.

The memory planner (``framework/executor/plan_memory.py``, rule 3 of its docstring) walks
the graph in execution order. When an entry's last reader has run, its block is dead and
goes to a *free list*; every new output first asks the free list for a dead block of a
similar size, and only gets a fresh block when none fits. This is MXNet's (NNVM's)
``PlanMemory`` matching rule, with ``match_range`` (``NNVM_EXEC_MATCH_RANGE``, 16):

1. among the free blocks *at least as large* as the request, but at most
   ``nbytes * match_range``, take the **smallest**;
2. otherwise, among the *smaller* blocks, down to ``nbytes // match_range``, take the
   **largest** (the planner then grows that block to the requested size);
3. otherwise return None (the planner creates a new block).

Only blocks for which ``usable(sid)`` is True may be taken (the planner's parallel-safety
rule), and a taken block leaves the free list: it holds a live entry now. ``match_range ==
1`` (sharing switched off) still reuses a block of exactly the requested size.

Contract (the planner calls these; the checker plugs ``FreeList`` into ``plan_memory`` with
``plan_memory(..., free_list=FreeList)``):

* ``add(nbytes, sid)``: block ``sid`` of ``nbytes`` bytes is dead and may be reused.
* ``take(nbytes, usable) -> int | None``: remove and return the block the rule picks.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable


class FreeList:
    """Dead blocks, kept sorted by (size, block id) so a search is a bisection."""

    def __init__(self, match_range: int) -> None:
        self.match_range = match_range
        self._keys: list[tuple[int, int]] = []  # sorted (nbytes, sid) of the free blocks

    def add(self, nbytes: int, sid: int) -> None:
        """Block ``sid`` (``nbytes`` bytes) is dead: keep it for reuse."""
        # TODO(exercise): insert (nbytes, sid) into the sorted list of free blocks
        raise NotImplementedError("exercise gap in add")

    def take(self, nbytes: int, usable: Callable[[int], bool]) -> int | None:
        """Remove and return the smallest usable block >= nbytes (within the range), else the
        largest usable smaller one (within the range), else None."""
        # TODO(exercise): search upwards from nbytes, then downwards, within match_range; remove the pick
        raise NotImplementedError("exercise gap in take")

    def __len__(self) -> int:
        return len(self._keys)
