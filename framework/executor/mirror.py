"""Mirroring: recompute cheap activations in the backward pass instead of keeping them.

Training keeps every activation the backward pass reads alive from the forward pass
until its gradient is computed, so memory grows with depth. Mirroring trades compute
for memory: a forward node chosen for mirroring gets a clone, ``<name>_mirror``, and
the backward nodes read the clone's outputs instead of the original's. The original's
outputs then die as soon as the forward pass no longer needs them; the clone runs again
during the backward pass, just before its values are needed, from the nearest values
that were kept (MXNet's ``MXNET_BACKWARD_DO_MIRROR``).

Which nodes to mirror is a policy; two are provided:

* ``"node"`` (MXNet's rule, ``MXLAB_BACKWARD_DO_MIRROR=1``): every node except the
  expensive ones (``Convolution``, ``FullyConnected``, ``Concat``, ``SoftmaxOutput``), never
  ``Dropout``; a node with the attribute ``__force_mirroring__`` is always mirrored.
  It helps chains of cheap operators; for an MLP whose ``relu`` already runs in place it
  keeps the FC outputs instead of the relu outputs and saves nothing.
* ``"segment"`` (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost";
  ``MXLAB_BACKWARD_DO_MIRROR=segment``): cut the forward chain into about sqrt(N)
  segments, keep only each segment's last output (a checkpoint), mirror everything else.
  In backward each segment is recomputed once from the checkpoint before it, so about
  sqrt(N) checkpoints plus one segment of activations are alive at a time, for the price
  of roughly one extra forward pass.

Nodes whose recomputation would not give the same values or would change state are
never mirrored: operators that draw random numbers (Dropout) or write their inputs
(BatchNorm's moving averages), and stateful operator instances. The outputs of the
graph are kept anyway, so their nodes are not mirrored either.

The pass only rewires inputs of backward nodes built by the gradient pass
(:func:`~framework.operator.gradient_pass.build_gradient`); the forward graph is untouched.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from .. import config
from ..base import MXLabError
from ..operator.node import Entry, Node, NodeAttrs, topo_sort
from ..resource import ResourceRequest

#: Operators MXNet's rule never mirrors because recomputing them is expensive.
EXPENSIVE_OPS = frozenset({"Convolution", "FullyConnected", "Concat", "SoftmaxOutput"})
MODES = ("none", "node", "segment")


class MirrorError(MXLabError, ValueError):
    """An unknown mirroring mode was asked for."""


def parse_mode(value: str | bool | int | None) -> str:
    """Normalise a mode: None/False/0/"0" = "none", True/1/"1" = "node", "2"/"segment" = "segment"."""
    if value is None or value is False or value in (0, "0", "", "none"):
        return "none"
    if value is True or value in (1, "1", "node"):
        return "node"
    if value in (2, "2", "segment"):
        return "segment"
    raise MirrorError(f"mirror mode must be one of none, node (1), segment (2); got {value!r}")


def mode_from_env() -> str:
    """The mode set by ``MXLAB_BACKWARD_DO_MIRROR`` (or MXNet's ``MXNET_BACKWARD_DO_MIRROR``; unset: "none")."""
    return parse_mode(config.get("MXLAB_BACKWARD_DO_MIRROR"))


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("1", "true")


def recomputable(node: Node) -> bool:
    """Whether running ``node`` twice gives the same values and changes nothing else."""
    op = node.op
    if op is None:  # a variable
        return False
    if op.name == "Dropout" or ResourceRequest.RANDOM in op.resource_request(node.attrs):
        return False
    return not op.mutate_inputs(node.attrs) and op.create_state is None


def node_rule(node: Node) -> bool:
    """MXNet's per-node rule: mirror everything cheap, or what carries ``__force_mirroring__``."""
    op = node.op
    if op is None or not recomputable(node):
        return False
    if _truthy(node.attrs.extra.get("__force_mirroring__")):
        return True
    return op.name not in EXPENSIVE_OPS


def _units(
    order: Sequence[Node], consumers: dict[int, int], read_by_backward: set[tuple[int, int]]
) -> list[list[Node]]:
    """Group forward nodes into units that a checkpoint must not split.

    A node that will overwrite its input in place (``relu`` after ``FullyConnected``)
    joins the unit of the node producing that input: checkpointing between them would
    stop the in-place reuse and cost a block. In place happens when the input's only
    reader is this node, in the backward pass too (``relu``'s backward reads its output;
    ``sin``'s reads its input, so ``sin`` never overwrites it in a training graph).
    """
    units: list[list[Node]] = []
    for node in order:
        if node.op is None:  # a variable
            continue
        joined = False
        if units:
            previous = units[-1][-1]
            for i, _ in node.op.inplace_option(node.attrs):
                if i >= len(node.inputs):
                    continue
                src = node.inputs[i]
                if (
                    src.node is previous
                    and consumers.get(previous.id, 0) == 1
                    and (src.node.id, src.index) not in read_by_backward
                ):
                    units[-1].append(node)
                    joined = True
                    break
        if not joined:
            units.append([node])
    return units


def segment_rule(
    forward_heads: Sequence[Entry],
    grad_entries: Sequence[Entry | None],
    node_bytes: Callable[[Node], int],
    num_segments: int | None = None,
) -> Callable[[Node], bool]:
    """Chen et al.'s checkpointing: about sqrt(N) kept outputs, everything else mirrored.

    Walk the forward nodes in order, grouped into units (see :func:`_units`), adding up
    the bytes of their outputs; when the sum passes the budget (total / number of
    segments, sqrt(N) segments by default), the unit ends a segment and its output is
    kept. Nodes that cannot be recomputed are kept too and start a new segment. The
    segment nearest the outputs is kept as well: backward needs it first, while it is
    still in memory.
    """
    order = topo_sort(list(forward_heads))
    consumers: dict[int, int] = {}
    for node in order:
        for e in node.inputs:
            consumers[e.node.id] = consumers.get(e.node.id, 0) + 1
    head_ids = {e.node.id for e in forward_heads}
    forward_ids = {node.id for node in order}
    read_by_backward = {
        (e.node.id, e.index)
        for node in topo_sort([g for g in grad_entries if g is not None])
        if node.id not in forward_ids
        for e in node.inputs
    }
    units = _units(order, consumers, read_by_backward)
    sizes = [sum(node_bytes(n) for n in unit) for unit in units]
    candidates = [u for u, unit in enumerate(units) if all(recomputable(n) and n.id not in head_ids for n in unit)]
    if not candidates:
        return lambda node: False
    count = num_segments or max(1, round(math.sqrt(len(candidates))))
    budget = sum(sizes[u] for u in candidates) / count
    candidate_set = set(candidates)
    segments: list[list[int]] = [[]]  # units to recompute, one list per segment
    accumulated = 0.0
    for u in range(len(units)):
        if u not in candidate_set:  # kept anyway: the next segment starts after it
            accumulated = 0.0
            segments.append([])
            continue
        accumulated += sizes[u]
        if accumulated >= budget * (1 - 1e-9):  # this unit's output is the checkpoint
            accumulated -= budget  # carry the rest, so segments average the budget
            segments.append([])
            continue
        segments[-1].append(u)
    # The last segment is recomputed first thing in backward, right after the forward pass
    # computed it: keeping it costs no more peak memory than recomputing it, so keep it.
    last = max((i for i, seg in enumerate(segments) if seg), default=None)
    mirrored = {n.id for i, seg in enumerate(segments) if i != last for u in seg for n in units[u]}
    return lambda node: node.id in mirrored


def apply_mirror(
    forward_heads: Sequence[Entry], grad_entries: Sequence[Entry | None], should_mirror: Callable[[Node], bool]
) -> list[tuple[Node, Node]]:
    """Make backward nodes read ``<name>_mirror`` clones of the forward nodes chosen.

    A clone reads the clones of its inputs where those exist (so a mirrored chain is
    recomputed from the nearest kept value) and the originals otherwise. Backward nodes
    are rewired in place. Returns the (original, clone) pairs the backward pass uses.
    """
    forward = topo_sort(list(forward_heads))
    forward_ids = {node.id for node in forward}
    head_ids = {e.node.id for e in forward_heads}
    mirror_of: dict[int, Node] = {}
    clones: list[tuple[Node, Node]] = []
    for node in forward:
        if node.is_variable or node.id in head_ids or not should_mirror(node):
            mirror_of[node.id] = node
            continue
        attrs = NodeAttrs(f"{node.name}_mirror", node.op, node.attrs.parsed, dict(node.attrs.extra))
        inputs = [Entry(mirror_of[e.node.id], e.index, e.version) for e in node.inputs]
        clone = Node(node.op, attrs, inputs)
        clone.control_deps = [mirror_of.get(d.id, d) for d in node.control_deps]
        mirror_of[node.id] = clone
        clones.append((node, clone))
    if not clones:
        return []
    grads = [g for g in grad_entries if g is not None]
    for node in topo_sort(grads):
        if node.id in forward_ids or node.is_variable:
            continue
        node.inputs = [
            Entry(mirror_of[e.node.id], e.index, e.version) if e.node.id in forward_ids else e for e in node.inputs
        ]
    # Recompute just in time: a clone waits for the backward node scheduled before it, so
    # the recomputation neither runs early (holding memory) nor races the backward chain
    # for the blocks it reuses.
    clone_ids = {clone.id for _, clone in clones}
    used: set[int] = set()
    previous: Node | None = None
    for node in topo_sort(list(forward_heads) + grads):
        if node.id in clone_ids:
            used.add(node.id)
            if previous is not None and all(d is not previous for d in node.control_deps):
                node.control_deps.append(previous)
        elif not node.is_variable and node.id not in forward_ids:
            previous = node
    return [(original, clone) for original, clone in clones if clone.id in used]
