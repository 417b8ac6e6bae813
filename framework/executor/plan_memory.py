"""The memory planner: which storage block each intermediate array lives in.

A network's intermediate results (activations, their gradients) are needed only for a
while: an activation is produced by one node and read by a few later ones; after its
last reader it is dead, and its memory can hold something else. The planner walks the
schedule once, in the order the executor will push the nodes (the forward pass, then the
backward pass), and gives every entry a *storage id*. Entries with the same id share one
block. It is MXNet's (NNVM's) ``PlanMemory``, in four rules:

1. **Reference counts.** Every entry starts with the number of nodes that read it (a
   node reading it twice counts twice). Graph outputs get one extra reference, so they
   are never freed. After a node runs, each input's count drops by one; at zero the
   entry is dead and its block goes back to the free list at once.
2. **In place.** An operator may offer (input, output) pairs (``inplace_option``): the
   output may overwrite the input, as ``relu`` may. The planner takes the offer when the
   input's block has no other pending reader (this node is the last one), the element
   counts match and the dtypes have the same width. No new block, no copy.
3. **Sharing.** Every other output (largest first) asks the free list for a dead block
   of a similar size: first the smallest free block at least as large, within a factor
   of ``match_range`` (16), then the largest smaller one down to size / 16 (the block then
   grows to the larger size). Only if none fits is a new block created.
4. **External entries are not planned.** Arguments, auxiliary states and the gradients
   of arguments live in arrays the user bound; the planner marks them
   ``EXTERNAL_STORAGE_ID``. An output nobody reads (say, the mask of a Dropout at
   inference) keeps ``BAD_STORAGE_ID`` (no storage): the operator is told not to write
   it (``req = null``) and it needs no memory at all.

Because the gradient helpers make backward nodes read only what they need (``relu``'s
backward reads its output, not its input), activations the backward pass does not read
die during the forward pass.

One rule MXNet does not have, on by default (``parallel_safe``): sharing a block (or
overwriting an input in place) makes the new writer wait for every earlier user of the
block. When those users are all ancestors of the writer anyway, that costs nothing; when
they are on an independent branch, it would serialize branches that could run in
parallel. So a block is reused only by a node that already depends on everything that
touched it. On a chain (an MLP) every earlier node is an ancestor, so nothing changes.

Who reads what and when (reference counts, in-place candidates) comes from
:mod:`.liveness`, which :mod:`.greedy_by_size` (the other strategy, ``MXLAB_MEMORY_PLANNER``)
and the lower bound (``MemoryPlan.bytes_lower_bound``: no plan can use less) read too.

``plan_memory(graph, shapes, dtypes, ...)`` returns a :class:`MemoryPlan`; in-place,
sharing and the parallel-safety rule can be switched off one by one to see what each
contributes (``PlanOptions``; ``MXLAB_EXEC_ENABLE_INPLACE=0`` and ``MXLAB_EXEC_MATCH_RANGE``
set the executor's defaults, like MXNet's ``MXNET_EXEC_ENABLE_INPLACE`` and
``NNVM_EXEC_MATCH_RANGE``).
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .. import config
from ..base import MXLabError
from .graph import IndexedGraph
from .liveness import liveness

# Storage ids below zero are markers, with MXNet's (NNVM's) values and meanings; block ids are >= 0.
#: MXNet's ``kBadStorageID``: no storage. While planning, an entry not assigned yet; in the
#: finished plan, an output nobody reads: it is not written (``req = null``) and gets no memory.
BAD_STORAGE_ID = -1
#: MXNet's ``kExternalStorageID``: the entry lives in an array bound by the user (an
#: argument, an auxiliary state, an argument's gradient), so the planner does not place it.
EXTERNAL_STORAGE_ID = -2
#: MXNet's ``NNVM_EXEC_MATCH_RANGE``: a free block is reused for sizes within this factor.
MATCH_RANGE = config.setting("MXLAB_EXEC_MATCH_RANGE").default
_PLANNER_KIND = config.setting("MXLAB_MEMORY_PLANNER").kind
assert isinstance(_PLANNER_KIND, config.Choice)
#: The planning strategies by name, as ``MXLAB_MEMORY_PLANNER`` accepts them.
STRATEGIES: tuple[str, ...] = _PLANNER_KIND.values


class PlanError(MXLabError, ValueError):
    """The planner was given shapes or dtypes it cannot size."""


@dataclass(frozen=True)
class PlanOptions:
    """Planner switches (all on by default); the memory demo toggles them."""

    inplace: bool = True
    sharing: bool = True
    parallel_safe: bool = True
    match_range: int = MATCH_RANGE
    #: Which planner runs: ``mxnet`` (this module) or ``greedy_by_size`` (:mod:`.greedy_by_size`).
    strategy: str = "mxnet"

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise PlanError(f"PlanOptions: unknown strategy {self.strategy!r}; choose one of {', '.join(STRATEGIES)}")

    @classmethod
    def from_env(cls) -> PlanOptions:
        """The defaults, as ``MXLAB_EXEC_ENABLE_INPLACE`` (1), ``MXLAB_EXEC_MATCH_RANGE`` (16) and
        ``MXLAB_MEMORY_PLANNER`` (mxnet) set them."""
        return cls(
            inplace=config.get("MXLAB_EXEC_ENABLE_INPLACE"),
            match_range=config.get("MXLAB_EXEC_MATCH_RANGE"),
            strategy=config.get("MXLAB_MEMORY_PLANNER"),
        )


@dataclass
class MemoryPlan:
    """The result: a storage id per entry and the size of every block."""

    #: Per entry id: a block id (>= 0), ``EXTERNAL_STORAGE_ID`` or ``BAD_STORAGE_ID``.
    storage: list[int]
    #: Per entry id: its size in bytes (external entries too; 0 when their shape is unknown).
    entry_bytes: list[int]
    #: Per block id: its size, the largest entry it ever holds.
    block_bytes: list[int]
    #: (input entry, output entry) pairs where the output overwrote its input.
    inplace: list[tuple[int, int]]
    #: Per node: the block ids that become free after the node has run.
    released_after: list[list[int]]
    #: Per entry id: the node after which it is dead (None: never, or not planned).
    last_reader: list[int | None]
    #: Bytes if every internal entry had its own block.
    bytes_naive: int
    #: The least any plan can use: the peak of the bytes alive at once (:meth:`.Liveness.lower_bound`).
    bytes_lower_bound: int
    options: PlanOptions = field(default_factory=PlanOptions)

    @property
    def bytes_planned(self) -> int:
        return sum(self.block_bytes)

    @property
    def num_blocks(self) -> int:
        return len(self.block_bytes)

    def entries_of_block(self, sid: int) -> list[int]:
        return [eid for eid, s in enumerate(self.storage) if s == sid]


def entry_nbytes(shape: Sequence[int] | None, dtype: str | None) -> int:
    """Bytes of an entry; raises if the shape or dtype is not fully known."""
    if shape is None or dtype is None or any(d < 0 for d in shape):
        raise PlanError(f"cannot size an entry with shape {shape} and dtype {dtype}")
    return math.prod(shape) * np.dtype(dtype).itemsize


class FreeListLike(Protocol):
    """What the planner asks of a free list: give back a dead block, take one for a size."""

    def add(self, nbytes: int, sid: int) -> None: ...

    def take(self, nbytes: int, usable: Callable[[int], bool]) -> int | None: ...


class _FreeList:
    """Dead blocks by size; ``take`` implements rule 3 (the ratio-16 match)."""

    def __init__(self, match_range: int) -> None:
        self.match_range = match_range
        self._keys: list[tuple[int, int]] = []  # sorted (bytes, block id)

    def add(self, nbytes: int, sid: int) -> None:
        bisect.insort(self._keys, (nbytes, sid))

    def take(self, nbytes: int, usable: Callable[[int], bool]) -> int | None:
        """A block for ``nbytes``: the smallest large-enough one, else the largest smaller one."""
        if not self._keys:
            return None
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

    def __len__(self) -> int:
        return len(self._keys)


def size_entries(
    graph: IndexedGraph,
    shapes: Sequence[Sequence[int] | None],
    dtypes: Sequence[str | None],
    external: Iterable[int] = (),
) -> tuple[set[int], list[int]]:
    """The external entry ids (variables and ``external``) and every entry's size in bytes.

    Planned entries must have known shapes and dtypes; external ones are sized when possible (for reports).
    """
    n_entries = graph.num_entries
    if len(shapes) != n_entries or len(dtypes) != n_entries:
        raise PlanError(f"plan_memory: {n_entries} entries but {len(shapes)} shapes and {len(dtypes)} dtypes")
    external_set = set(external)
    for nid in graph.input_nodes:
        external_set.update(graph.output_entries(nid))
    sizes = [0] * n_entries
    for eid in range(n_entries):
        try:
            sizes[eid] = entry_nbytes(shapes[eid], dtypes[eid])
        except PlanError:
            if eid in external_set:
                continue
            raise PlanError(
                f"plan_memory: entry {graph.entry_name(eid)!r} has shape {shapes[eid]} and dtype {dtypes[eid]}; "
                "run shape and type inference first"
            ) from None
    return external_set, sizes


def plan_memory(
    graph: IndexedGraph,
    shapes: Sequence[Sequence[int] | None],
    dtypes: Sequence[str | None],
    external: Iterable[int] = (),
    keep: Iterable[int] | None = None,
    options: PlanOptions | None = None,
    free_list: Callable[[int], FreeListLike] | None = None,
) -> MemoryPlan:
    """Assign a storage id to every entry of ``graph``, walking its nodes in order.

    Args:
        graph: the graph; its node order is the schedule.
        shapes, dtypes: per entry id (from shape and type inference).
        external: entry ids bound to user arrays besides the variables (argument
            gradients); variables are always external.
        keep: entry ids that must never be freed (default: ``graph.outputs``).
        options: planner switches.
        free_list: builds rule 3's free list from the match range (default ``_FreeList``);
            the sharing exercise plugs the learner's in.
    """
    options = options or PlanOptions()
    n_entries = graph.num_entries
    storage = [BAD_STORAGE_ID] * n_entries
    external_set, sizes = size_entries(graph, shapes, dtypes, external)
    for eid in external_set:
        storage[eid] = EXTERNAL_STORAGE_ID
    keep = list(graph.outputs if keep is None else keep)
    live = liveness(graph, sizes, dtypes, external_set, keep, inplace=options.inplace)

    # Rule 1: reference counts (+1 for entries that must stay alive to the end).
    ref_count = [len(readers) for readers in live.readers]
    for eid in keep:
        ref_count[eid] += 1

    ancestors = graph.ancestors() if options.parallel_safe else None
    block_bytes: list[int] = []
    block_refs: list[int] = []  # pending reads of the entries living in each block
    block_users: list[int] = []  # bit set of nodes that wrote or read the block
    free = (free_list or _FreeList)(options.match_range if options.sharing else 1)
    inplace: list[tuple[int, int]] = []
    released_after: list[list[int]] = [[] for _ in graph.nodes]
    last_reader: list[int | None] = [None] * n_entries

    def safe_for(sid: int, nid: int) -> bool:
        """Would node ``nid`` writing block ``sid`` wait only for its own ancestors?"""
        if ancestors is None:
            return True
        return block_users[sid] & ~(ancestors[nid] | (1 << nid)) == 0

    for nid, node in enumerate(graph.nodes):
        if node.op is None:  # a variable: external
            continue
        inputs = graph.input_entries[nid]
        outs = list(graph.output_entries(nid))  # each not external is still BAD_STORAGE_ID here

        # Rule 2: in place, for the candidates liveness found (see :mod:`.liveness`).
        taken: set[int] = set()
        for e_in, e_out in live.inplace_candidates[nid]:
            sid = storage[e_in]
            if (
                e_in not in taken
                and storage[e_out] == BAD_STORAGE_ID
                and block_refs[sid] == 1  # no other entry of the block is still to be read
                and safe_for(sid, nid)
            ):
                taken.add(e_in)
                storage[e_out] = sid
                block_refs[sid] += ref_count[e_out]
                block_bytes[sid] = max(block_bytes[sid], sizes[e_out])
                inplace.append((e_in, e_out))

        # Rule 3: every other referenced output takes a dead block or a new one, largest first.
        for eid in sorted((e for e in outs if storage[e] == BAD_STORAGE_ID), key=lambda e: -sizes[e]):
            if ref_count[eid] == 0:
                continue  # nobody reads it: it keeps BAD_STORAGE_ID, is not written and gets no memory
            reused = free.take(sizes[eid], functools.partial(safe_for, nid=nid)) if options.sharing else None
            if reused is not None:
                sid = reused
            else:
                sid = len(block_bytes)
                block_bytes.append(0)
                block_refs.append(0)
                block_users.append(0)
            block_bytes[sid] = max(block_bytes[sid], sizes[eid])
            block_refs[sid] = ref_count[eid]
            storage[eid] = sid

        for eid in outs:
            if storage[eid] >= 0:
                block_users[storage[eid]] |= 1 << nid
        # Rule 1 again: inputs read for the last time release their block.
        for eid in inputs:
            sid = storage[eid]
            if sid < 0:
                continue
            block_users[sid] |= 1 << nid
            ref_count[eid] -= 1
            if ref_count[eid] == 0:
                last_reader[eid] = nid
            block_refs[sid] -= 1
            if block_refs[sid] == 0:
                released_after[nid].append(sid)
                if options.sharing:
                    free.add(block_bytes[sid], sid)

    naive = sum(sizes[eid] for eid in range(n_entries) if storage[eid] != EXTERNAL_STORAGE_ID)
    return MemoryPlan(
        storage=storage,
        entry_bytes=sizes,
        block_bytes=block_bytes,
        inplace=inplace,
        released_after=released_after,
        last_reader=last_reader,
        bytes_naive=naive,
        bytes_lower_bound=live.lower_bound(),
        options=options,
    )


def describe(graph: IndexedGraph, plan: MemoryPlan) -> list[str]:
    """One line per planned entry: name, shape-free size, storage id and how it got it."""
    inplace_of = {out: src for src, out in plan.inplace}
    lines = []
    for eid in range(graph.num_entries):
        sid = plan.storage[eid]
        name = graph.entry_name(eid)
        if sid == EXTERNAL_STORAGE_ID:
            lines.append(f"entry {eid} {name}: external, {plan.entry_bytes[eid]} bytes")
            continue
        if sid == BAD_STORAGE_ID:
            lines.append(f"entry {eid} {name}: not stored (nobody reads it), {plan.entry_bytes[eid]} bytes")
            continue
        how = f" in place of {graph.entry_name(inplace_of[eid])}" if eid in inplace_of else ""
        lines.append(f"entry {eid} {name}: storage {sid}, {plan.entry_bytes[eid]} bytes{how}")
    return lines
