"""IndexedGraph: a graph of nodes frozen into arrays that passes can index by integer.

Symbols, autograd tapes and gradient passes build graphs out of linked :class:`Node`
objects. Passes that run over a whole graph (shape inference, memory planning, the
executor) want the opposite: every node and every output *entry* numbered, so that a
per-entry fact (a shape, a storage id, a reference count) is just ``facts[entry_id]``.
This module makes that numbering, as NNVM's ``IndexedGraph`` does:

* ``nodes`` lists the nodes reachable from the heads in topological order (every node
  after its inputs and control dependencies), so node ``i`` is ``nodes[i]``;
* ``node_row_ptr[i]`` is the id of node ``i``'s first output entry (prefix sums of the
  output counts), so output ``k`` of node ``i`` is entry ``node_row_ptr[i] + k`` and the
  graph has ``node_row_ptr[-1]`` entries;
* ``input_entries[i]`` holds the entry ids node ``i`` reads, ``outputs`` the entry ids of
  the heads, ``input_nodes`` the variables (arguments and auxiliary states) and
  ``mutable_input_nodes`` the variables some operator writes (auxiliary states).

The graph does not copy nodes: ``graph.nodes[i]`` *is* the node of the symbol, so a
pass can read its operator and attributes directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..base import MXLabError
from ..operator.node import Entry, Node, topo_sort


class GraphError(MXLabError, KeyError):
    """A node or entry that the graph does not contain was looked up."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class IndexedGraph:
    """Nodes in topological order with integer ids for nodes and output entries."""

    def __init__(self, heads: Sequence[Entry]) -> None:
        """Index every node reachable from ``heads`` (inputs and control dependencies)."""
        self.heads: list[Entry] = list(heads)
        self.nodes: list[Node] = topo_sort(self.heads)
        self._index: dict[int, int] = {node.id: i for i, node in enumerate(self.nodes)}
        self.node_row_ptr: list[int] = [0]
        for node in self.nodes:
            self.node_row_ptr.append(self.node_row_ptr[-1] + node.num_outputs())
        #: For every entry id, the index of the node producing it.
        self.entry_nodes: list[int] = [nid for nid, node in enumerate(self.nodes) for _ in range(node.num_outputs())]
        self.input_entries: list[list[int]] = [[self.entry_id(e) for e in node.inputs] for node in self.nodes]
        self.control_deps: list[list[int]] = [[self._index[d.id] for d in node.control_deps] for node in self.nodes]
        self.outputs: list[int] = [self.entry_id(e) for e in self.heads]
        self.input_nodes: list[int] = [i for i, node in enumerate(self.nodes) if node.is_variable]
        mutable: set[int] = set()
        for node in self.nodes:
            if node.op is None:  # a variable
                continue
            for k in node.op.mutate_inputs(node.attrs):
                source = node.inputs[k].node
                if source.is_variable:
                    mutable.add(self._index[source.id])
        self.mutable_input_nodes: set[int] = mutable

    # ------------------------------------------------------------------ sizes
    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def num_entries(self) -> int:
        return self.node_row_ptr[-1]

    def __len__(self) -> int:
        return len(self.nodes)

    # ------------------------------------------------------------------ lookups
    def node_id(self, node: Node) -> int:
        """The index of ``node`` in the topological order."""
        found = self._index.get(node.id)
        if found is None:
            raise GraphError(f"node {node.name!r} is not part of this graph")
        return found

    def contains(self, node: Node) -> bool:
        return node.id in self._index

    def entry_id(self, entry: Entry | Node | int, index: int = 0) -> int:
        """The id of an entry: ``entry_id(Entry(node, k))``, ``entry_id(node, k)`` or ``entry_id(nid, k)``."""
        if isinstance(entry, Entry):
            node, index = entry.node, entry.index
            nid = self.node_id(node)
        elif isinstance(entry, Node):
            nid = self.node_id(entry)
        else:
            nid = int(entry)
        count = self.node_row_ptr[nid + 1] - self.node_row_ptr[nid]
        if not 0 <= index < count:
            raise GraphError(f"node {self.nodes[nid].name!r} has {count} output(s); no output {index}")
        return self.node_row_ptr[nid] + index

    def entry(self, eid: int) -> Entry:
        """The :class:`Entry` with id ``eid``."""
        nid = self.entry_node(eid)
        return Entry(self.nodes[nid], eid - self.node_row_ptr[nid])

    def entry_node(self, eid: int) -> int:
        """The index of the node that produces entry ``eid``."""
        if not 0 <= eid < self.num_entries:
            raise GraphError(f"entry id {eid} is out of range (the graph has {self.num_entries} entries)")
        return self.entry_nodes[eid]

    def output_entries(self, nid: int) -> range:
        """The entry ids of node ``nid``'s outputs."""
        return range(self.node_row_ptr[nid], self.node_row_ptr[nid + 1])

    def entry_name(self, eid: int) -> str:
        """A readable name: the variable's name, else ``<node>_<output name>`` as MXNet's ``list_outputs``."""
        nid = self.entry_node(eid)
        node = self.nodes[nid]
        if node.op is None:  # a variable
            return node.name
        index = eid - self.node_row_ptr[nid]
        names = node.op.list_output_names(node.attrs)
        return f"{node.name}_{names[index] if index < len(names) else index}"

    # ------------------------------------------------------------------ derived facts
    def consumers(self) -> list[list[int]]:
        """For every entry, the nodes that read it (once per read, in node order)."""
        readers: list[list[int]] = [[] for _ in range(self.num_entries)]
        for nid, inputs in enumerate(self.input_entries):
            for eid in inputs:
                readers[eid].append(nid)
        return readers

    def argument_nodes(self) -> list[int]:
        """Variables that no operator mutates (MXNet's arguments), in topological order."""
        return [i for i in self.input_nodes if i not in self.mutable_input_nodes]

    def auxiliary_nodes(self) -> list[int]:
        """Variables some operator mutates (MXNet's auxiliary states), in topological order."""
        return [i for i in self.input_nodes if i in self.mutable_input_nodes]

    def ancestors(self) -> list[int]:
        """For every node, a bit set (Python int) of the nodes it depends on, itself excluded.

        Dependencies are data inputs and control dependencies. Passes use this to ask
        "must node ``a`` have finished before node ``b`` starts?" in O(1).
        """
        masks: list[int] = []
        for nid in range(len(self.nodes)):
            mask = 0
            for eid in self.input_entries[nid]:
                src = self.entry_nodes[eid]
                mask |= masks[src] | (1 << src)
            for src in self.control_deps[nid]:
                mask |= masks[src] | (1 << src)
            masks.append(mask)
        return masks

    def subgraph_nodes(self, heads: Iterable[Entry]) -> set[int]:
        """Indices of the nodes needed to compute ``heads`` (a prefix-closed subset)."""
        needed: set[int] = set()
        stack = [self.node_id(e.node) for e in heads]
        while stack:
            nid = stack.pop()
            if nid in needed:
                continue
            needed.add(nid)
            stack.extend(self.entry_node(e) for e in self.input_entries[nid])
            stack.extend(self.control_deps[nid])
        return needed

    def __repr__(self) -> str:
        return f"<IndexedGraph {len(self.nodes)} nodes, {self.num_entries} entries, {len(self.outputs)} outputs>"
