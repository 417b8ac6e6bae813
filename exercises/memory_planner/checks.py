"""Checks of the ``memory_planner`` exercise: the learner's ``FreeList`` alone, then inside the planner.

1. ``free_list_rules``: scripted adds and takes, each pick compared with MXNet's rule.
2. ``plans``: ``plan_memory(..., free_list=FreeList)`` on an MLP and LeNet (training graphs,
   forward and backward) and on random chains: the plan must be *valid* (no two entries
   alive at the same time share a block) and plan exactly the reference planner's bytes.
"""

from __future__ import annotations

import random
from typing import Any

from framework import symbol as sym
from framework.executor import IndexedGraph, build_gradient, infer_shapes, infer_types
from framework.executor.plan_memory import plan_memory
from framework.operator.node import Entry, variable

from ..checker import Check, CheckFailure

# Each scenario: match_range, blocks added as (nbytes, sid), then takes as (nbytes, usable sids or None, expected).
SCENARIOS: list[tuple[str, str, int, list[tuple[int, int]], list[tuple[int, set[int] | None, int | None]]]] = [
    (
        "an empty free list",
        "with no dead block, take returns None (the planner makes a new block)",
        16,
        [],
        [(1024, None, None)],
    ),
    (
        "a taken block leaves the free list",
        "a block handed out holds a live entry: remove it, or two live entries would share it",
        16,
        [(1024, 0)],
        [(1024, None, 0), (1024, None, None)],
    ),
    (
        "the smallest block at least as large wins",
        "among blocks >= the request, take the smallest",
        16,
        [(4096, 0), (2048, 1), (8192, 2)],
        [(2000, None, 1), (2000, None, 0), (2000, None, 2)],
    ),
    (
        "too large a block is not taken",
        "a block larger than nbytes * match_range wastes too much: skip it",
        16,
        [(1700, 0)],
        [(100, None, None)],
    ),
    (
        "the largest smaller block comes next",
        "with no block large enough, take the largest smaller one (the planner grows it)",
        16,
        [(100, 0), (300, 1), (200, 2)],
        [(400, None, 1), (400, None, 2)],
    ),
    (
        "too small a block is not taken",
        "a block smaller than nbytes // match_range is skipped",
        16,
        [(10, 0)],
        [(400, None, None)],
    ),
    (
        "a larger block is preferred to a smaller one",
        "look upwards (>= nbytes) before downwards",
        16,
        [(900, 0), (1100, 1)],
        [(1000, None, 1), (1000, None, 0)],
    ),
    (
        "only usable blocks are taken",
        "skip blocks for which usable(sid) is False, and keep them for later",
        16,
        [(1024, 0), (2048, 1)],
        [(1000, {1}, 1), (1000, None, 0)],
    ),
    (
        "match_range 1: exact sizes only",
        "with match_range 1 the range is [nbytes, nbytes]",
        1,
        [(100, 0), (101, 1)],
        [(99, None, None), (100, None, 0), (102, None, None), (101, None, 1)],
    ),
    (
        "match_range 4",
        "the range is [nbytes // 4, nbytes * 4]",
        4,
        [(50, 0), (1000, 1)],
        [(200, None, 0), (200, None, None), (250, None, 1)],
    ),
]


def _free_list_class(attempt: Any) -> type:
    cls = getattr(attempt, "FreeList", None)
    if not isinstance(cls, type):
        raise CheckFailure(
            "looking up FreeList in your file",
            "a class named FreeList",
            "nothing" if cls is None else repr(cls),
            "keep the class name of the stub: the checker plugs FreeList into plan_memory",
        )
    return cls


def check_free_list_rules(attempt: Any) -> None:
    cls = _free_list_class(attempt)
    for title, rule, match_range, blocks, takes in SCENARIOS:
        free = cls(match_range)
        history = [f"add({n}, sid={s})" for n, s in blocks]
        for n, s in blocks:
            free.add(n, s)
        for nbytes, allowed, expected in takes:
            usable = (lambda sid: True) if allowed is None else (lambda sid, allowed=allowed: sid in allowed)
            call = f"take({nbytes}" + ("" if allowed is None else f", usable=only {sorted(allowed)}") + ")"
            got = free.take(nbytes, usable)
            if got != expected:
                raise CheckFailure(
                    f"{title}: FreeList(match_range={match_range}), after {', '.join(history) or 'nothing'}, {call}",
                    f"{call} to return {expected!r}",
                    repr(got),
                    rule,
                )
            history.append(call)


# ----------------------------------------------------------------------------- plans
def _training_graph(net: Any, shapes: dict[str, tuple]) -> tuple[Any, list, list, list[int]]:
    """(graph, shapes, dtypes, external gradient entries) of forward + backward, as the executor builds it."""
    heads = net.outputs
    args = [n for n in IndexedGraph(heads).nodes if n.is_variable and not n.name.endswith("label")]
    grads = build_gradient(
        heads, [Entry(variable(f"head_grad{i}"), 0) for i in range(len(heads))], [Entry(n, 0) for n in args]
    )
    grads = [g for g in grads if g is not None]
    graph = IndexedGraph(heads + grads)
    known_shapes = infer_shapes(graph.heads, shapes)
    known_types = infer_types(graph.heads, dict.fromkeys(shapes, "float32"))
    keys = [(graph.entry(e).node.id, graph.entry(e).index) for e in range(graph.num_entries)]
    return graph, [known_shapes[k] for k in keys], [known_types[k] for k in keys], [graph.entry_id(g) for g in grads]


def _networks() -> list[tuple[str, Any, dict[str, tuple]]]:
    nets = []
    data = sym.Variable("data")
    mlp = data
    for i, hidden in enumerate((128, 64, 32)):
        mlp = sym.Activation(sym.FullyConnected(mlp, num_hidden=hidden, name=f"fc{i}"), act_type="relu", name=f"r{i}")
    mlp = sym.SoftmaxOutput(sym.FullyConnected(mlp, num_hidden=10, name="out"), name="softmax")
    nets.append(("an MLP (64-128-64-32-10, batch 32), forward and backward", mlp, {"data": (32, 64)}))

    x = sym.Variable("data")
    x = sym.Pooling(
        sym.Activation(sym.Convolution(x, kernel=(5, 5), num_filter=8, name="c1"), act_type="tanh"),
        kernel=(2, 2),
        stride=(2, 2),
        pool_type="max",
    )
    x = sym.Pooling(
        sym.Activation(sym.Convolution(x, kernel=(5, 5), num_filter=16, name="c2"), act_type="tanh"),
        kernel=(2, 2),
        stride=(2, 2),
        pool_type="max",
    )
    x = sym.Activation(sym.FullyConnected(sym.Flatten(x), num_hidden=100, name="f1"), act_type="tanh")
    lenet = sym.SoftmaxOutput(sym.FullyConnected(x, num_hidden=10, name="f2"), name="softmax")
    nets.append(("LeNet (batch 4, 1x28x28), forward and backward", lenet, {"data": (4, 1, 28, 28)}))

    rng = random.Random(7)
    for trial in range(6):
        h = sym.Variable("data")
        sizes = [rng.choice([1, 2, 3, 8, 16, 40, 64, 100, 300, 700]) for _ in range(rng.randint(3, 9))]
        for i, size in enumerate(sizes):
            h = sym.FullyConnected(h, num_hidden=size, name=f"l{i}")
            if rng.random() < 0.5:
                h = sym.Activation(h, act_type=rng.choice(["relu", "sigmoid", "tanh"]), name=f"a{i}")
        nets.append(
            (
                f"random chain {trial} (FullyConnected sizes {sizes}, batch 4)",
                sym.MakeLoss(sym.sum(h)),
                {"data": (4, 16)},
            )
        )
    return nets


def _conflict(graph: Any, plan: Any, keep: set[int]) -> str | None:
    """The first pair of entries alive at the same time in one block, described; None if the plan is valid.

    An entry lives from the node that writes it to its last reader (forever if it is kept).
    Two entries of one block must not overlap; they may only touch (one born at the node
    that reads the other for the last time) when the planner chose that in place.
    """
    producer = {eid: nid for nid in range(len(graph.nodes)) for eid in graph.output_entries(nid)}
    last_read: dict[int, int] = {}
    for nid, inputs in enumerate(graph.input_entries):
        for eid in inputs:
            last_read[eid] = max(last_read.get(eid, -1), nid)
    inplace = set(plan.inplace)  # (input entry, output entry): the output overwrites its input on purpose
    spans: dict[int, list[tuple[int, float, int]]] = {}
    for eid, sid in enumerate(plan.storage):
        if sid >= 0:
            birth = producer[eid]
            spans.setdefault(sid, []).append((birth, float("inf") if eid in keep else last_read.get(eid, birth), eid))
    for sid, entries in sorted(spans.items()):
        entries.sort()
        for a, (b1, d1, e1) in enumerate(entries):
            for b2, d2, e2 in entries[a + 1 :]:
                if b1 == b2 or b2 < d1 or (b2 == d1 and (e1, e2) not in inplace):
                    return (
                        f"block {sid} holds {graph.entry_name(e1)} (alive from node {b1} to {d1}) and "
                        f"{graph.entry_name(e2)} (alive from node {b2} to {d2}) at the same time"
                    )
    return None


def check_plans(attempt: Any) -> None:
    cls = _free_list_class(attempt)
    for title, net, shapes in _networks():
        graph, entry_shapes, entry_types, external = _training_graph(net, shapes)
        reference = plan_memory(graph, entry_shapes, entry_types, external=external)
        plan = plan_memory(graph, entry_shapes, entry_types, external=external, free_list=cls)
        conflict = _conflict(graph, plan, set(graph.outputs))
        if conflict is not None:
            raise CheckFailure(
                f"plan_memory(free_list=FreeList) on {title}",
                "a valid plan: entries alive at the same time never share a block",
                conflict,
                "take must remove the block it returns: a handed-out block holds a live entry until the planner "
                "gives it back with add",
            )
        if plan.bytes_planned != reference.bytes_planned:
            more = plan.bytes_planned > reference.bytes_planned
            raise CheckFailure(
                f"plan_memory(free_list=FreeList) on {title}",
                f"{reference.bytes_planned} planned bytes in {reference.num_blocks} blocks (the reference planner)",
                f"{plan.bytes_planned} bytes in {plan.num_blocks} blocks",
                "reuse fails where it should succeed: look upwards first (smallest block >= nbytes within "
                "nbytes * match_range), then downwards (largest block >= nbytes // match_range)"
                if more
                else "the plan reuses blocks the rule would not pick: respect both ends of the match range",
            )


CHECKS = [
    Check("free_list_rules", "the free list against MXNet's matching rule", check_free_list_rules),
    Check("plans", "valid plans of the reference's size on MLP, LeNet and random chains", check_plans),
]
