"""Steps 1 to 4 of binding: from the bound arrays to the full graph and its memory plan.

An :class:`~framework.executor.executor.Executor` is built in five steps (its module
docstring lists them). This module holds the first four, which only compute: inference from
the bound arrays (:meth:`BoundGraph._infer_bound`), the gradient nodes with mirroring and
the weight-gradient split (:meth:`BoundGraph._build_graph`), the full :class:`IndexedGraph`
in schedule order, and the memory plan. Nothing is allocated here; step 5 (allocation.py)
turns the plan into memory and steps.

Separate because ``bind`` with ``split_weight_gradients='auto'`` runs these steps twice, to
compare the plans with and without the split, and each run must replace everything the
previous one set: ``_head_grad_nodes``, ``_grad_entry_of``, ``num_mirror_nodes``,
``num_split_nodes``, ``_graph``, ``_is_forward``, ``_shapes``, ``_types``, ``_grad_eids``,
``_head_eids`` and ``plan``, all set by :meth:`BoundGraph._build_graph` and by nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..ndarray.ndarray import NDArray
from ..operator import registry
from ..operator.gradient_pass import build_gradient
from ..operator.infer import InferenceError
from ..operator.node import Entry, Node, NodeAttrs, topo_sort, variable
from . import mirror as mirror_pass
from . import plan_memory as planner
from . import split_backward
from .arguments import ExecutorError, Shape, infer_entries, is_known_shape, value_shaped_reason
from .graph import IndexedGraph


class BoundGraph:
    """The graph-building steps of an executor (mixed into ``Executor``, which sets what it reads)."""

    _heads: list[Entry]
    _arg_nodes: list[Node]
    _aux_nodes: list[Node]
    _arg_names: list[str]
    arg_arrays: list[NDArray]
    aux_arrays: list[NDArray]
    _mirror: str
    _plan_options: planner.PlanOptions
    # provided by PlanReport (plan_report.py)
    plan_with: Callable[[planner.PlanOptions], planner.MemoryPlan]

    def _infer_bound(
        self, graph: IndexedGraph, shapes: list[Shape | None], types: list[str | None]
    ) -> tuple[list[Shape], list[str]]:
        """Inference from the bound arrays, in place; returns the lists, now complete.

        A conflict names the variables of the node involved; an entry left unknown is an error.
        """
        try:
            infer_entries(graph, shapes, types)
        except InferenceError as err:
            message = str(err)
            culprit = next(
                (
                    n
                    for n in graph.nodes
                    if not n.is_variable and (message.startswith(f"{n.name}:") or f"operator {n.name!r}" in message)
                ),
                None,
            )
            bound = dict(
                zip([n.name for n in self._arg_nodes + self._aux_nodes], self.arg_arrays + self.aux_arrays, strict=True)
            )
            names = [e.node.name for e in culprit.inputs if e.node.is_variable] if culprit is not None else []
            shown = ", ".join(f"{n} {tuple(bound[n].shape)} {bound[n].dtype}" for n in names if n in bound)
            raise ExecutorError(f"bind: {message}" + (f" (bound arrays: {shown})" if shown else "")) from None
        missing = [e for e in range(graph.num_entries) if not is_known_shape(shapes[e]) or types[e] is None]
        if missing:
            shown = ", ".join(f"{graph.entry_name(e)} (shape {shapes[e]}, dtype {types[e]})" for e in missing[:5])
            raise ExecutorError(
                f"bind: cannot infer the shape or dtype of {len(missing)} entries: {shown}" + value_shaped_reason(graph)
            )
        return [s for s in shapes if s is not None], [t for t in types if t is not None]  # none is None now

    def _build_graph(self, forward_graph: IndexedGraph, wrt: list[tuple[int, Entry]], known: dict, split: bool) -> None:
        """Steps 2 to 4 of the module docstring: gradient nodes, the full graph, its memory plan.

        ``known`` maps forward entries to (shape, dtype). Called twice when
        ``MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS`` is ``auto``, to compare the plans with and without
        the split; each call replaces everything the previous one set.
        """
        # 2. gradient (+ mirroring, + split weight gradients)
        self._head_grad_nodes: list[Node] = []
        grad_entries: list[Entry | None] = []
        self._grad_entry_of: dict[int, Entry] = {}  # argument index -> its gradient entry
        self.num_mirror_nodes = 0
        self.num_split_nodes = 0
        if wrt:
            head_grads = []
            for i, head in enumerate(self._heads):
                leaf = variable(f"_head_grad_{i}")
                head_grads.append(Entry(leaf, 0))
                self._head_grad_nodes.append(leaf)
                known[(leaf.id, 0)] = known[(head.node.id, head.index)]
            grad_entries = build_gradient(self._heads, head_grads, [e for _, e in wrt])
            if self._mirror != "none":
                grad_entries = self._apply_mirror(grad_entries, known)
            if split:  # weight gradients beside the backward chain (see .split_backward)
                grad_entries, self.num_split_nodes = split_backward.split_weight_gradients(
                    self._heads, grad_entries, lambda e: known.get((e.node.id, e.index), (None, None))[0]
                )
            grad_entries = self._private_grad_entries(wrt, grad_entries)
            for (i, _), g in zip(wrt, grad_entries, strict=True):
                if g is not None:
                    self._grad_entry_of[i] = g

        # 3. the full graph: forward nodes first, then backward nodes
        graph = self._graph = IndexedGraph(self._heads + [g for g in grad_entries if g is not None])
        forward_ids = {n.id for n in forward_graph.nodes}
        self._is_forward = [n.id in forward_ids for n in graph.nodes]
        shapes: list[Shape | None] = [None] * graph.num_entries
        types: list[str | None] = [None] * graph.num_entries
        for eid in range(graph.num_entries):
            e = graph.entry(eid)
            shapes[eid], types[eid] = known.get((e.node.id, e.index), (None, None))
        self._shapes, self._types = self._infer_bound(graph, shapes, types)

        # 4. the memory plan
        self._grad_eids = {i: graph.entry_id(g) for i, g in self._grad_entry_of.items()}
        self._head_eids = [graph.entry_id(e) for e in self._heads]
        self.plan = self.plan_with(self._plan_options)

    def _apply_mirror(self, grad_entries: list[Entry | None], known: dict) -> list[Entry | None]:
        """Rewire backward nodes to recompute mirrored forward nodes (see :mod:`.mirror`)."""

        def node_bytes(node: Node) -> int:
            total = 0
            for i in range(node.num_outputs()):
                shape, dtype = known[(node.id, i)]
                total += math.prod(shape) * np.dtype(dtype).itemsize
            return total

        rule: Callable[[Node], bool]
        if self._mirror == "node":
            rule = mirror_pass.node_rule
        else:
            rule = mirror_pass.segment_rule(self._heads, grad_entries, node_bytes)
        clones = mirror_pass.apply_mirror(self._heads, grad_entries, rule)
        for original, clone in clones:  # a clone has the shapes of its original
            for i in range(clone.num_outputs()):
                known[(clone.id, i)] = known[(original.id, i)]
        self.num_mirror_nodes = len(clones)
        return grad_entries

    def _private_grad_entries(self, wrt: list[tuple[int, Entry]], grads: list[Entry | None]) -> list[Entry | None]:
        """Give every argument gradient its own node output, copying where it is shared.

        A gradient lands directly in the user's array (``write`` or ``add``), so its entry
        must be written by exactly one node and read by none: an entry that is a variable
        (a head gradient passed straight through), a forward output, the gradient of
        another argument too, or read by another backward node gets a ``_copy``.
        """
        readers: dict[tuple[int, int], int] = {}
        nodes = topo_sort(self._heads + [g for g in grads if g is not None])
        for node in nodes:
            for e in node.inputs:
                readers[(e.node.id, e.index)] = readers.get((e.node.id, e.index), 0) + 1
        forward_ids = {n.id for n in topo_sort(self._heads)}
        claimed: set[tuple[int, int]] = set()
        result: list[Entry | None] = []
        copy_op = registry.get("_copy")
        for (i, _), grad in zip(wrt, grads, strict=True):
            if grad is None:
                result.append(None)
                continue
            entry, key = grad, (grad.node.id, grad.index)
            if grad.node.is_variable or grad.node.id in forward_ids or key in claimed or readers.get(key, 0) > 0:
                name = f"{self._arg_names[i]}_grad_copy"
                entry = Entry(Node(copy_op, NodeAttrs(name, copy_op, copy_op.params.parse("_copy", {})), [grad]), 0)
                key = (entry.node.id, 0)
            claimed.add(key)
            result.append(entry)
        return result
