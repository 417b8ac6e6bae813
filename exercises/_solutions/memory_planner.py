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
        # BEGIN SOLUTION insert (nbytes, sid) into the sorted list of free blocks
        bisect.insort(self._keys, (nbytes, sid))
        # END SOLUTION

    def take(self, nbytes: int, usable: Callable[[int], bool]) -> int | None:
        """Remove and return the smallest usable block >= nbytes (within the range), else the
        largest usable smaller one (within the range), else None."""
        # BEGIN SOLUTION search upwards from nbytes, then downwards, within match_range; remove the pick
        low = nbytes // self.match_range
        high = nbytes * self.match_range
        mid = bisect.bisect_left(self._keys, (nbytes, -1))
        for i in range(mid, len(self._keys)):  # blocks at least as large, smallest first
            size, sid = self._keys[i]
            if size > high:
                break
            if usable(sid):
                del self._keys[i]
                return sid
        for i in range(mid - 1, -1, -1):  # then smaller blocks, largest first
            size, sid = self._keys[i]
            if size < low:
                break
            if usable(sid):
                del self._keys[i]
                return sid
        return None
        # END SOLUTION

    def __len__(self) -> int:
        return len(self._keys)
