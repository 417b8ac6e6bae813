"""A second memory planner: greedy by size over known lifetimes (``MXLAB_MEMORY_PLANNER=greedy_by_size``).

MXNet's planner (:mod:`.plan_memory`) walks the schedule once and decides at each node,
knowing only the past: a new entry takes whichever dead block is free *now*. When every
lifetime is known in advance (:mod:`.liveness`), a planner can decide in a better order.
TensorFlow Lite's "greedy by size" does: place the largest tensors first, because they
decide the cost, and fit the small ones into the gaps. This module applies that idea to
shared blocks, in four rules:

1. **Groups.** An in-place pair (an output overwriting its input, as ``relu`` does) is
   one group: one block, alive from the first entry's producer to the last entry's last
   reader. Pairs come from the liveness candidates, in schedule order; with
   ``parallel_safe`` a pair is taken only when every node that touched the input is an
   ancestor of the writer (the rule :mod:`.plan_memory` applies). Every other planned
   entry is a group of its own.
2. **Largest first.** Groups are placed in order of size, largest first (ties: earlier
   producer first), so a block's size is that of the first group placed in it and never
   grows.
3. **First block that is free for the whole lifetime.** A group goes into the first block
   (in creation order) none of whose groups is alive while it is; with ``parallel_safe``
   also only when the block's earlier users are all ancestors of the group's writer and
   the group's users are all ancestors of every later writer of the block (sharing never
   links independent branches). Only if no block fits is a new one created. With
   ``sharing`` off every group gets a block of its own.
4. **External and unread entries** are treated as in :mod:`.plan_memory` (rule 4 there).

Why shared blocks and not offsets in one arena (TFLite's CPU arena): the executor gives
each block its own engine variable, and the engine runs two nodes at the same time only
when they touch different variables. One arena would be one variable, so every node would
wait for every other and independent branches would never run in parallel. Blocks keep
that parallelism; the price is that a block is as large as its largest group, where an
arena could pack two small tensors beside one large one.

``match_range`` does not apply: a group may go into any larger block, which costs no
bytes since the block's size is already set. The result is a :class:`MemoryPlan`, like
MXNet's, so the executor runs either plan the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .graph import IndexedGraph
from .liveness import Liveness, liveness, one_to_one
from .plan_memory import BAD_STORAGE_ID, EXTERNAL_STORAGE_ID, MemoryPlan, PlanOptions, size_entries


@dataclass
class _Group:
    """Entries that share one block because each overwrote the previous one in place."""

    entries: list[int]
    first: int  # the node that writes the first entry
    last: int  # the last node that reads the last entry (``num_nodes`` for a kept entry)
    size: int
    users: int = 0  # bit set of the nodes that write or read any entry of the group
    block: int = -1


@dataclass
class _Block:
    sid: int
    size: int
    groups: list[_Group] = field(default_factory=list)


def _groups(live: Liveness, ancestors: list[int] | None) -> list[_Group]:
    """Rule 1: one group per planned entry, in-place pairs merged, in schedule order."""
    group_of: dict[int, _Group] = {}
    groups: list[_Group] = []

    def users_of(eid: int) -> int:
        bits = 1 << live.producer[eid]
        for reader in live.readers[eid]:
            bits |= 1 << reader
        return bits

    for eid in range(len(live.sizes)):  # entry ids follow the schedule, so producers come first
        if not live.is_planned(eid):
            continue
        nid = live.producer[eid]
        pair = next((p for p in one_to_one(live.inplace_candidates[nid]) if p[1] == eid), None)
        if pair is not None:
            source = group_of[pair[0]]
            safe = ancestors is None or source.users & ~(ancestors[nid] | (1 << nid)) == 0
            if safe and source.entries[-1] == pair[0]:
                source.entries.append(eid)
                source.last = live.interval(eid)[1]
                source.size = max(source.size, live.sizes[eid])
                source.users |= users_of(eid)
                group_of[eid] = source
                continue
        first, last = live.interval(eid)
        group = _Group([eid], first, last, live.sizes[eid], users_of(eid))
        group_of[eid] = group
        groups.append(group)
    return groups


def _fits(block: _Block, group: _Group, ancestors: list[int] | None) -> bool:
    """Rule 3: is the block free for the group's whole lifetime (and parallel-safe)?"""
    for other in block.groups:
        if other.last < group.first:  # other comes before: its users must precede the group's writer
            if ancestors is not None and other.users & ~(ancestors[group.first] | (1 << group.first)):
                return False
        elif group.last < other.first:  # other comes after: the group's users must precede its writer
            if ancestors is not None and group.users & ~(ancestors[other.first] | (1 << other.first)):
                return False
        else:
            return False  # alive at the same time
    return True


def plan_greedy_by_size(
    graph: IndexedGraph,
    shapes: Sequence[Sequence[int] | None],
    dtypes: Sequence[str | None],
    external: Iterable[int] = (),
    keep: Iterable[int] | None = None,
    options: PlanOptions | None = None,
) -> MemoryPlan:
    """Assign a storage id to every entry of ``graph``: the largest lifetimes first.

    Arguments as :func:`.plan_memory.plan_memory` (no free list: this planner has none).
    """
    options = options or PlanOptions(strategy="greedy_by_size")
    n_entries = graph.num_entries
    external_set, sizes = size_entries(graph, shapes, dtypes, external)
    keep = list(graph.outputs if keep is None else keep)
    live = liveness(graph, sizes, dtypes, external_set, keep, inplace=options.inplace)
    ancestors = graph.ancestors() if options.parallel_safe else None
    groups = _groups(live, ancestors)

    # Rules 2 and 3: largest first, into the first block free for the whole lifetime.
    blocks: list[_Block] = []
    for group in sorted(groups, key=lambda g: (-g.size, g.first)):
        target = None
        if options.sharing:
            target = next((b for b in blocks if _fits(b, group, ancestors)), None)
        if target is None:
            target = _Block(len(blocks), group.size)
            blocks.append(target)
        target.groups.append(group)
        group.block = target.sid

    storage = [BAD_STORAGE_ID] * n_entries
    for eid in external_set:
        storage[eid] = EXTERNAL_STORAGE_ID
    inplace: list[tuple[int, int]] = []
    released_after: list[list[int]] = [[] for _ in graph.nodes]
    for group in groups:
        for eid in group.entries:
            storage[eid] = group.block
        inplace.extend(zip(group.entries, group.entries[1:], strict=False))
        if group.last < len(graph.nodes):  # a kept group is never released
            released_after[group.last].append(group.block)
    last_reader = [None if last is None or last < 0 else last for last in live.last_use]
    naive = sum(sizes[eid] for eid in range(n_entries) if eid not in external_set)
    return MemoryPlan(
        storage=storage,
        entry_bytes=sizes,
        block_bytes=[b.size for b in blocks],
        inplace=inplace,
        released_after=released_after,
        last_reader=last_reader,
        bytes_naive=naive,
        bytes_lower_bound=live.lower_bound(),
        options=options,
    )
