"""The gradient pass: from forward nodes to the nodes that compute input gradients.

Walk the forward graph from the heads back towards the inputs (reverse topological
order). Each node whose outputs received gradient contributions asks its operator's
``gradient`` attribute for the entries computing its input gradients, and hands each one
to the corresponding input. An entry used by several consumers receives several
contributions, summed by one ``ElementWiseSum`` node. Nodes that do not lie on a path from
a requested input to a head are left alone, so, e.g., label processing needs no gradient.

Both ``mx.autograd`` (imperative) and the symbolic executor use this one function, so it lives
below both, next to the graph nodes it walks.
"""

from __future__ import annotations

from ..base import MXLabError
from . import registry
from .node import Entry, Node, NodeAttrs, topo_sort


class GradientError(MXLabError, NotImplementedError):
    """A gradient was requested through an operator that has none."""


def _key(entry: Entry) -> tuple[int, int]:
    return entry.node.id, entry.index


def sum_entries(entries: list[Entry], name: str) -> Entry:
    """One entry holding the sum of ``entries`` (itself when there is one)."""
    if len(entries) == 1:
        return entries[0]
    op = registry.get("ElementWiseSum")
    attrs = NodeAttrs(name, op, op.params.parse(op.name, {"num_args": len(entries)}))
    return Entry(Node(op, attrs, list(entries)), 0)


def zeros_like(entry: Entry, name: str) -> Entry:
    op = registry.get("zeros_like")
    return Entry(Node(op, NodeAttrs(name, op, op.params.parse(op.name, {})), [entry]), 0)


def _depends_on(order: list[Node], wrt: list[Entry]) -> set[int]:
    """Ids of nodes whose value depends on any of ``wrt`` (forward reachability)."""
    reached = {e.node.id for e in wrt}
    for node in order:
        if any(inp.node.id in reached for inp in node.inputs):
            reached.add(node.id)
    return reached


def build_gradient(heads: list[Entry], head_grads: list[Entry], wrt: list[Entry]) -> list[Entry | None]:
    """Entries computing d(sum of heads . head_grads)/d(each of wrt); None where no path exists."""
    if len(heads) != len(head_grads):
        raise GradientError(f"build_gradient: {len(heads)} heads but {len(head_grads)} head gradients")
    order = topo_sort(heads)
    relevant = _depends_on(order, wrt)
    contributions: dict[tuple[int, int], list[Entry]] = {}
    for head, grad in zip(heads, head_grads, strict=True):
        contributions.setdefault(_key(head), []).append(grad)

    for node in reversed(order):
        op = node.op
        if op is None or node.id not in relevant:  # a variable, or nothing to differentiate
            continue
        keys = [(node.id, i) for i in range(node.num_outputs())]
        if not any(k in contributions for k in keys):
            continue
        gradient = op.gradient
        if gradient is None:
            raise GradientError(
                f"operator {op.name} (node {node.name!r}) has no gradient; "
                "stop the gradient before it (BlockGrad) or do not differentiate through it"
            )
        out_grads = []
        for i, key in enumerate(keys):
            if key in contributions:
                out_grads.append(sum_entries(contributions.pop(key), f"{node.name}_out{i}_grad_sum"))
            else:
                out_grads.append(zeros_like(Entry(node, i), f"{node.name}_out{i}_zero_grad"))
        in_grads = gradient(node, out_grads)
        if in_grads and len(in_grads) != len(node.inputs):
            raise GradientError(f"gradient of {op.name} returned {len(in_grads)} entries for {len(node.inputs)} inputs")
        for inp, grad in zip(node.inputs, in_grads, strict=False):
            if grad is not None and inp.node.id in relevant:
                contributions.setdefault(_key(inp), []).append(grad)

    results: list[Entry | None] = []
    for entry in wrt:
        found = contributions.get(_key(entry))
        results.append(None if not found else sum_entries(found, f"{entry.node.name}_grad_sum"))
    return results
