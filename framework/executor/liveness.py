"""Liveness: when every planned entry is alive, and the least memory any plan can use.

Every memory planner answers the same question: which entries may share a block? Two
entries may share one when they are never alive at the same time. This module says when
an entry is alive, once, for every planner and for the lower bound:

* an entry is **alive from its producer to its last reader**, both inclusive, in the
  schedule (the graph's node order): a node's outputs are written while its inputs are
  still being read, so an output never shares a block with an input of its own node,
  except by an in-place pair;
* an entry that must outlive the graph (a head, ``keep``) is alive to the end (``END``);
* an entry nobody reads is never alive: it gets no memory (``BAD_STORAGE_ID``);
* external entries (bound arrays) are not planned, so they have no lifetime here.

An **in-place candidate** is an (input, output) pair an operator offers
(``inplace_option``) where the input's last reader is this node and it reads the input
once, the input is not mutated, both entries are planned, the output is read, and sizes
and dtype widths match: at that node the output may take over the input's block.
Each planner decides which candidates it takes (the MXNet planner also wants the block
to have no other pending reader and, with ``parallel_safe``, the branch rule).

The **lower bound** (:meth:`Liveness.lower_bound`) is the peak, over the schedule, of
the bytes of the entries alive at once, each in-place candidate pair counted once (its
input dies at the node that writes its output). No plan that gives simultaneously alive
entries separate blocks can use less, whatever it shares: at that node every one of
those entries sits in a different block at least as large as the entry.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .graph import IndexedGraph

#: ``last_use`` of an entry that stays alive after the last node (a graph output).
END = -1


@dataclass(frozen=True)
class Liveness:
    """Per entry: producer, readers and last use; per node: its in-place candidates."""

    #: Per entry id: the node that writes it.
    producer: list[int]
    #: Per entry id: the nodes that read it, in schedule order, a node once per read.
    readers: list[list[int]]
    #: Per entry id: the node after which it is dead; ``END`` when it is kept; None when
    #: it is not planned (external) or nobody reads it.
    last_use: list[int | None]
    #: Per entry id: its size in bytes.
    sizes: list[int]
    #: Per node: (input entry, output entry) pairs that may be done in place, in the order offered.
    inplace_candidates: list[list[tuple[int, int]]]
    num_nodes: int

    def is_planned(self, eid: int) -> bool:
        """Does the entry need a block (internal and alive at some point)?"""
        return self.last_use[eid] is not None

    def interval(self, eid: int) -> tuple[int, int]:
        """The first and last node (inclusive) during which a planned entry is alive."""
        last = self.last_use[eid]
        assert last is not None, "only planned entries have an interval"
        return self.producer[eid], self.num_nodes if last == END else last

    def lower_bound(self) -> int:
        """Peak bytes alive at once in the schedule, each in-place candidate pair counted once."""
        delta = [0] * (self.num_nodes + 2)  # bytes that come alive at a node, minus those that died before it
        for eid, size in enumerate(self.sizes):
            if not self.is_planned(eid):
                continue
            first, last = self.interval(eid)
            delta[first] += size
            delta[last + 1] -= size
        for nid, pairs in enumerate(self.inplace_candidates):
            for e_in, _ in one_to_one(pairs):  # the input and output share bytes at this node only
                delta[nid] -= self.sizes[e_in]
                delta[nid + 1] += self.sizes[e_in]
        peak = alive = 0
        for change in delta:
            alive += change
            peak = max(peak, alive)
        return peak


def one_to_one(pairs: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The pairs in order, skipping any whose input or output an earlier pair already took."""
    taken_in: set[int] = set()
    taken_out: set[int] = set()
    chosen = []
    for e_in, e_out in pairs:
        if e_in in taken_in or e_out in taken_out:
            continue
        taken_in.add(e_in)
        taken_out.add(e_out)
        chosen.append((e_in, e_out))
    return chosen


def liveness(
    graph: IndexedGraph,
    sizes: Sequence[int],
    dtypes: Sequence[str | None],
    external: Iterable[int],
    keep: Iterable[int],
    inplace: bool = True,
) -> Liveness:
    """Lifetimes of the internal entries of ``graph`` in its node order.

    Args:
        sizes: bytes per entry id; dtypes: per entry id (in-place needs equal widths).
        external: entry ids not planned (variables, argument gradients).
        keep: entry ids alive to the end (the heads).
        inplace: False lists no in-place candidates (``PlanOptions.inplace``).
    """
    n_entries = graph.num_entries
    external_set = set(external)
    keep_set = set(keep)
    producer = list(graph.entry_nodes)
    readers: list[list[int]] = [[] for _ in range(n_entries)]
    for nid, inputs in enumerate(graph.input_entries):
        for eid in inputs:
            readers[eid].append(nid)
    last_use: list[int | None] = [None] * n_entries
    for eid in range(n_entries):
        if eid in external_set:
            continue
        if eid in keep_set:
            last_use[eid] = END
        elif readers[eid]:
            last_use[eid] = readers[eid][-1]

    candidates: list[list[tuple[int, int]]] = [[] for _ in graph.nodes]
    if inplace:
        for nid, node in enumerate(graph.nodes):
            if node.op is None:
                continue
            inputs, outs = graph.input_entries[nid], list(graph.output_entries(nid))
            mutated = set(node.op.mutate_inputs(node.attrs))
            for i, o in node.op.inplace_option(node.attrs):
                if i >= len(inputs) or o >= len(outs) or i in mutated:
                    continue
                e_in, e_out = inputs[i], outs[o]
                if (
                    last_use[e_in] == nid
                    and inputs.count(e_in) == 1  # read once: no other read of it is pending here
                    and last_use[e_out] is not None
                    and sizes[e_in] == sizes[e_out]
                    and np.dtype(dtypes[e_in]).itemsize == np.dtype(dtypes[e_out]).itemsize
                ):
                    candidates[nid].append((e_in, e_out))
    return Liveness(
        producer=producer,
        readers=readers,
        last_use=last_use,
        sizes=list(sizes),
        inplace_candidates=candidates,
        num_nodes=len(graph.nodes),
    )
