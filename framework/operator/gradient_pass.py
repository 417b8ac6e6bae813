"""The gradient pass: from forward nodes to the nodes that compute input gradients.

Walk the forward graph from the heads back towards the inputs (reverse topological
order). Each node whose outputs received gradient contributions asks its operator's
``gradient`` attribute for the entries computing its input gradients, and hands each one
to the corresponding input. Nodes that do not lie on a path from a requested input to a
head are left alone, so, e.g., label processing needs no gradient.

An entry used by several consumers receives several contributions, summed as MXNet sums
them (:func:`sum_entries`): fewer than ``MXLAB_EXEC_INPLACE_GRAD_SUM_CAP`` (8) by one
``ElementWiseSum``, which needs them all alive at once; more by a chain of in-place
``_grad_add`` nodes, each contribution computed only after the sum so far, so a weight
shared by many steps of an unrolled network keeps one running sum instead of every
contribution.

Both ``mx.autograd`` (imperative) and the symbolic executor use this one function, so it lives
below both, next to the graph nodes it walks.
"""

from __future__ import annotations

from .. import config
from ..base import MXLabError
from . import registry
from .node import Entry, Node, NodeAttrs, topo_sort


class GradientError(MXLabError, NotImplementedError):
    """A gradient was requested through an operator that has none."""


def _key(entry: Entry) -> tuple[int, int]:
    return entry.node.id, entry.index


def _node(op_name: str, name: str, inputs: list[Entry], params: dict | None = None) -> Node:
    op = registry.get(op_name)
    return Node(op, NodeAttrs(name, op, op.params.parse(op.name, params or {})), inputs)


def _add_ancestry(node: Node, known: set[int]) -> None:
    """Add the ids of ``node`` and of every node it depends on (inputs, control dependencies) to ``known``.

    The walk stops at ids already known, so growing one set along a chain visits each node once.
    """
    stack = [node]
    while stack:
        current = stack.pop()
        if current.id in known:
            continue
        known.add(current.id)
        stack.extend(e.node for e in current.inputs)
        stack.extend(current.control_deps)


def sum_entries(entries: list[Entry], name: str) -> Entry:
    """One entry holding the sum of ``entries`` (itself when there is one), by MXNet's rule.

    Fewer than ``MXLAB_EXEC_INPLACE_GRAD_SUM_CAP`` contributions: one ``ElementWiseSum``.
    Otherwise a chain ``name_1 = e0 + e1``, ``name_2 = name_1 + e2``, ... of ``_grad_add``
    (the planner runs each in place), closed by an identity ``name_final`` so that the
    chain's memory is never the bound gradient array itself. Each contribution's node gets
    a control dependency on the sum so far: it is computed only when the previous ones are
    folded in, so one running sum is alive instead of all of them. The dependency is left
    out where it would make a cycle (the contribution already feeds the sum so far, or is a
    variable), and never put first on a backward node, whose first control dependency names
    its forward node.
    """
    if len(entries) == 1:
        return entries[0]
    if len(entries) < config.get("MXLAB_EXEC_INPLACE_GRAD_SUM_CAP"):
        return Entry(_node("ElementWiseSum", name, list(entries), {"num_args": len(entries)}), 0)
    total = entries[0]
    behind: set[int] = set()  # the nodes the sum so far depends on: a contribution among them would make a cycle
    _add_ancestry(total.node, behind)
    for i, entry in enumerate(entries[1:], start=1):
        node = entry.node
        backward_without_forward = node.op is not None and node.op.is_backward and not node.control_deps
        if not (node.op is None or backward_without_forward or node.id in behind):
            node.control_deps.append(total.node)
        total = Entry(_node("_grad_add", f"{name}_{i}", [total, entry]), 0)
        _add_ancestry(total.node, behind)
    return Entry(_node("identity", f"{name}_final", [total]), 0)


def zeros_like(entry: Entry, name: str) -> Entry:
    return Entry(_node("zeros_like", name, [entry]), 0)


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
