"""Steps and bulk segments: how the executor hands a graph's nodes to the engine.

A *step* is one node made ready to run: its compute function, the raw arrays it reads
and writes, the write request per output and the engine variables of the storage
blocks it touches. Pushing every step as its own engine operation costs one scheduling
round trip per node; MXNet therefore groups chains of nodes into *bulk segments*
(``MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN`` nodes at most) and pushes each segment as one
operation that runs its steps in order.

How many nodes a segment may hold follows MXNet's rules (:func:`bulk_sizes`): an executor
that computes gradients bulks each pass in segments of at most
``MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD`` / ``_BWD`` nodes (both default to
``..._MAX_NODE_TRAIN``, 15), an inference executor bulks its whole graph, and
``MXNET_EXEC_BULK_EXEC_TRAIN`` / ``_INFERENCE`` turn each of the two off.

Grouping must not cost parallelism: :func:`group_segments` lets a step join the open
segment only when that delays no other branch. An asynchronous operator (``Custom``)
is always a segment of its own, pushed with ``push_async``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import config
from ..context import Context
from ..engine import Engine, FnProperty, RunContext, Var
from ..operator.kernel import OpContext, Req
from ..operator.node import Node
from ..resource import RandomResource, TempSpace
from .graph import IndexedGraph


# ----------------------------------------------------------------------------- steps
class Step:
    """One node, ready to run: its compute function and the arrays it touches."""

    __slots__ = (
        "nid",
        "name",
        "op_name",
        "compute",
        "attrs",
        "inputs",
        "outputs",
        "req",
        "requested",
        "ctx",
        "reads",
        "writes",
        "is_async",
    )

    def __init__(self, nid: int, node: Node, ctx: Context) -> None:
        op = node.op
        assert op is not None, "a variable is a bound array, not a step"
        self.nid = nid
        self.name = node.name
        self.op_name = op.name
        self.compute = op.get_compute(ctx.device_type)
        self.is_async = op.is_async
        self.attrs = node.attrs
        self.ctx = ctx
        self.inputs: list[Any] = []
        self.outputs: list[Any] = []
        self.req: list[Req] = []
        self.requested: list[RandomResource | TempSpace] = []
        self.reads: list[Var] = []
        self.writes: list[Var] = []

    def run(self, run_ctx: RunContext, is_train: bool) -> None:
        try:
            self.compute(
                self.attrs,
                OpContext(is_train, self.ctx, run_ctx.stream, self.requested),
                self.inputs,
                self.req,
                self.outputs,
            )
        except BaseException as err:
            self._note(err)
            raise

    def run_async(self, run_ctx: RunContext, is_train: bool, on_complete: Callable[..., None]) -> None:
        """Start an asynchronous operator; ``on_complete`` is called when it has finished."""

        def complete(error: BaseException | None = None) -> None:
            if error is not None:
                self._note(error)
            on_complete(error)

        op_ctx = OpContext(is_train, self.ctx, run_ctx.stream, self.requested, complete)
        try:
            self.compute(self.attrs, op_ctx, self.inputs, self.req, self.outputs)
        except BaseException as err:  # the engine completes the operation with it
            self._note(err)
            raise

    def _note(self, err: BaseException) -> None:
        try:
            err.add_note(f"(in executor node {self.name!r}, operator {self.op_name})")
        except AttributeError:
            pass


class Segment:
    """Consecutive steps pushed as one engine operation (a bulk segment)."""

    __slots__ = ("steps", "reads", "writes", "name")

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps
        writes = list(dict.fromkeys(v for s in steps for v in s.writes))
        written = set(writes)
        self.reads = [v for v in dict.fromkeys(v for s in steps for v in s.reads) if v not in written]
        self.writes = writes
        self.name = steps[0].name if len(steps) == 1 else f"{steps[0].name}..{steps[-1].name} [{len(steps)} nodes]"

    def push(self, engine: Engine, ctx: Context, is_train: bool) -> None:
        steps = self.steps
        if steps[0].is_async:  # an asynchronous operator is always a segment of its own

            def run_async(run_ctx: RunContext, on_complete: Callable[..., None]) -> None:
                steps[0].run_async(run_ctx, is_train, on_complete)

            engine.push_async(run_async, ctx, self.reads, self.writes, prop=FnProperty.ASYNC, name=self.name)
            return

        def run(run_ctx: RunContext) -> None:
            for step in steps:
                step.run(run_ctx, is_train)

        engine.push_sync(run, ctx, self.reads, self.writes, name=self.name)


#: A caller's segment sizes: ``bind``'s ``bulk_size`` (one number for both passes, used as given),
#: or CachedOp's ``(forward_bulk_size, backward_bulk_size)`` (None: the setting's), or None.
BulkSizes = int | tuple[int | None, int | None] | None


def bulk_sizes(given: BulkSizes, training: bool, num_nodes: int) -> tuple[int, int]:
    """Nodes per bulk segment of the forward and of the backward pass (1: every node alone).

    MXNet's rules (its graph executor's and its CachedOp's):

    * an executor that computes gradients (``training``) uses ``..._MAX_NODE_TRAIN_FWD`` and
      ``..._MAX_NODE_TRAIN_BWD``, each ``..._MAX_NODE_TRAIN`` when unset, or the CachedOp's
      per-pass sizes; with ``MXLAB_EXEC_BULK_EXEC_TRAIN`` off, 1 whatever the sizes say;
    * an inference executor (no backward pass) is one segment of all ``num_nodes`` nodes
      (cut only where :func:`group_segments` keeps branches apart); with
      ``MXLAB_EXEC_BULK_EXEC_INFERENCE`` off, 1.

    ``bind(bulk_size=n)``, an MXLab extra, overrides all of it: ``n`` for both passes. 0 means 1.
    """
    if isinstance(given, int):
        return max(given, 1), max(given, 1)
    if not training:
        return (num_nodes if config.get("MXLAB_EXEC_BULK_EXEC_INFERENCE") else 1), 1
    if not config.get("MXLAB_EXEC_BULK_EXEC_TRAIN"):
        return 1, 1
    forward, backward = given if given is not None else (None, None)
    default = config.get("MXLAB_EXEC_BULK_EXEC_MAX_NODE_TRAIN")
    if forward is None:
        forward = config.get("MXLAB_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD")
    if backward is None:
        backward = config.get("MXLAB_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD")
    return max(default if forward is None else forward, 1), max(default if backward is None else backward, 1)


def group_segments(steps: list[Step], graph: IndexedGraph, ancestors: list[int], max_nodes: int) -> list[Segment]:
    """Group chains of steps into segments without delaying independent branches.

    A segment's outputs are all ready only when the whole segment has run, so a step
    joins the open segment only when that delays nobody: it reads the output of the
    segment's last node, which no other step of this pass reads (no fork), and
    everything else it depends on was already a dependency of the segment's first
    node. Otherwise it starts a new segment.
    """
    in_pass = {step.nid for step in steps}
    readers: dict[int, set[int]] = {}
    for step in steps:
        for e in graph.input_entries[step.nid]:
            src = graph.entry_nodes[e]
            if src in in_pass:
                readers.setdefault(src, set()).add(step.nid)
    variables = 0
    for nid in graph.input_nodes:
        variables |= 1 << nid
    segments: list[Segment] = []
    current: list[Step] = []
    members = 0
    for step in steps:
        # asynchronous operators are pushed alone (push_async): they never join a segment
        if current and len(current) < max_nodes and not (step.is_async or current[-1].is_async):
            first, last = current[0].nid, current[-1].nid
            continues_chain = readers.get(last, set()) == {step.nid}
            outside = ancestors[step.nid] & ~(members | ancestors[first] | variables)
            if continues_chain and outside == 0:
                current.append(step)
                members |= 1 << step.nid
                continue
        if current:
            segments.append(Segment(current))
        current, members = [step], 1 << step.nid
    if current:
        segments.append(Segment(current))
    return segments
