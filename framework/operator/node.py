"""Graph nodes: the one representation shared by gradients, autograd and the executor.

A :class:`Node` is an operator applied to entries (or, with ``op`` None, a variable). An
:class:`Entry` names one output of one node. Gradient functions build backward nodes out
of these; autograd records them while ``record()`` is on; symbols are graphs of them.
A node's :class:`~framework.operator.registry.NodeAttrs` (name, operator, parsed parameters)
is defined next to the operators in registry.py, which creates them; this module imports it.
"""

from __future__ import annotations

import itertools
from typing import Any, NamedTuple

from .registry import NodeAttrs, OpDef

_node_ids = itertools.count()


class Node:
    """An operator application (or a variable when ``op`` is None)."""

    __slots__ = ("id", "op", "attrs", "inputs", "control_deps", "info")

    def __init__(self, op: OpDef | None, attrs: NodeAttrs, inputs: list[Entry] | None = None) -> None:
        self.id = next(_node_ids)
        self.op = op
        self.attrs = attrs
        self.inputs: list[Entry] = inputs or []
        self.control_deps: list[Node] = []
        #: Free slot for passes (autograd keeps the recorded arrays here).
        self.info: Any = None

    @property
    def name(self) -> str:
        return self.attrs.name

    @property
    def is_variable(self) -> bool:
        return self.op is None

    def num_outputs(self) -> int:
        return 1 if self.op is None else self.op.get_num_outputs(self.attrs)

    def __repr__(self) -> str:
        return f"<Node {self.op.name if self.op else 'null'} {self.name!r}>"


class Entry(NamedTuple):
    """Output ``index`` of ``node`` (``version`` counts writes to a variable, as NNVM does)."""

    node: Node
    index: int = 0
    version: int = 0


def variable(name: str) -> Node:
    """A variable node: a named input of a graph."""
    return Node(None, NodeAttrs(name, None, None))


def topo_sort(heads: list[Entry]) -> list[Node]:
    """Nodes reachable from ``heads``, every node after its inputs (iterative DFS)."""
    order: list[Node] = []
    visited: set[int] = set()
    for head in heads:
        stack: list[tuple[Node, bool]] = [(head.node, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if node.id in visited:
                continue
            visited.add(node.id)
            stack.append((node, True))
            for dep in reversed(node.control_deps):
                if dep.id not in visited:
                    stack.append((dep, False))
            for entry in reversed(node.inputs):
                if entry.node.id not in visited:
                    stack.append((entry.node, False))
    return order
