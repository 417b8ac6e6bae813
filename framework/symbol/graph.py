"""Reading and copying a symbol's graph of nodes, independent of the ``Symbol`` class.

The helpers here work on output entries and nodes only: naming an output, finding the
variables operators mutate (auxiliary states), deep-copying a graph. ``VAR_VERSIONS`` is the
one table of mutated variables' versions that node creation, loading and copying share.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..operator.node import Entry, Node, NodeAttrs, topo_sort

# Version counters of variables that operators mutate (NNVM keeps them in the variable's
# parameters). An entry reads a variable at its current version; a mutation bumps it.
VAR_VERSIONS: dict[int, int] = {}


def output_name(entry: Entry) -> str:
    node = entry.node
    if node.is_variable:
        return node.name
    names = node.op.list_output_names(node.attrs)
    suffix = names[entry.index] if entry.index < len(names) else f"output{entry.index}"
    return f"{node.name}_{suffix}" if node.name else suffix


def mutated_ids(order: Sequence[Node]) -> set[int]:
    """Ids of the variables some operator of the graph writes (auxiliary states)."""
    mutated: set[int] = set()
    for node in order:
        if node.op is not None:
            for i in node.op.mutate_inputs(node.attrs):
                if i < len(node.inputs):
                    mutated.add(node.inputs[i].node.id)
    return mutated


def copy_graph(outputs: Sequence[Entry]) -> list[Entry]:
    """A deep copy of the graph (new nodes, same operators and parameters)."""
    mapping: dict[int, Node] = {}
    for node in topo_sort(list(outputs)):
        attrs = node.attrs
        new = Node(node.op, NodeAttrs(attrs.name, attrs.op, attrs.parsed, dict(attrs.extra)))
        new.inputs = [Entry(mapping[e.node.id], e.index, e.version) for e in node.inputs]
        new.control_deps = [mapping[d.id] for d in node.control_deps]
        if node.id in VAR_VERSIONS:
            VAR_VERSIONS[new.id] = VAR_VERSIONS[node.id]
        mapping[node.id] = new
    return [Entry(mapping[e.node.id], e.index, e.version) for e in outputs]
