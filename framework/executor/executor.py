"""The graph executor: a bound symbol that runs forward and backward through the engine.

``bind`` turns a symbol (a list of output entries) plus arrays into an :class:`Executor`
in five steps, each a pass over an explicit graph:

1. **Inference**: shapes and dtypes of every entry, from the bound arrays.
2. **Gradient**: when some argument wants a gradient, the gradient pass shared with
   autograd (:func:`~framework.operator.gradient_pass.build_gradient`) appends the backward
   nodes; optionally **mirroring** (:mod:`~framework.executor.mirror`) makes them
   recompute cheap activations instead of keeping them.
3. **Indexing**: forward and backward nodes become one :class:`IndexedGraph`; its order is
   the schedule (the forward nodes first).
4. **Memory planning** (:mod:`~framework.executor.plan_memory`): a storage id per entry.
5. **Allocation and steps**: one NDArray per storage block, a view of it per entry, and
   per node a prepared call of the operator's compute function with the right ``req``
   per output (``write``, ``inplace``, ``add`` for ``grad_req='add'``, ``null`` for
   outputs nobody reads). Chains of nodes are grouped into bulk segments; an asynchronous
   operator (``OpDef.is_async``, e.g. ``Custom``) is always a segment of its own, pushed
   with ``push_async``.

``forward`` and ``backward`` then only push: each segment goes to the engine with the
variables of the blocks it reads and writes, so the engine runs independent branches at
the same time on its workers and orders everything that shares memory. Nothing waits
until the user reads a result.

``bind`` and ``simple_bind`` are module functions here; ``Symbol.bind`` and
``Symbol.simple_bind`` call them.

Settings: ``MXLAB_BACKWARD_DO_MIRROR`` (0; 1 = MXNet's per-node rule, ``segment`` =
checkpointing), ``MXLAB_EXEC_BULK_EXEC_MAX_NODE_TRAIN`` (15 nodes per bulk segment; 0 or 1
turns bulking off), ``MXLAB_EXEC_ENABLE_INPLACE`` (1) and ``MXLAB_EXEC_MATCH_RANGE`` (16).

Where MXLab differs from MXNet 1.x: outputs nobody reads get no memory at all (MXNet
allocates and frees them at once); sharing never makes independent branches wait for
each other (``PlanOptions.parallel_safe``); bulk segments follow chains in inference too
(MXNet bulks the whole inference graph, which serializes branches); a graph runs on one
context (``group2ctx`` must map every group to it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import backend, events
from ..base import MXLabError, env_int
from ..context import Context, current_context
from ..engine import Engine, FnProperty, Var
from ..ndarray.creation import zeros
from ..ndarray.ndarray import NDArray, empty, normalize_dtype
from ..operator import registry
from ..operator.gradient_pass import build_gradient
from ..operator.infer import InferenceError, dtype_name
from ..operator.kernel import ADD, INPLACE, NULL, WRITE, OpContext, Req
from ..operator.node import Entry, Node, NodeAttrs, topo_sort, variable
from ..resource import ResourceManager
from . import infer as infer_pass
from . import mirror as mirror_pass
from . import plan_memory as planner
from .graph import IndexedGraph

GRAD_REQS = ("null", "write", "add")
#: MXNet's ``MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN``: nodes per bulk segment.
DEFAULT_BULK_NODES = 15
#: Output layers whose backward needs no head gradient: ``backward()`` may omit it.
LOSS_OPS = frozenset(
    {
        "SoftmaxOutput",
        "LinearRegressionOutput",
        "LogisticRegressionOutput",
        "MAERegressionOutput",
        "SVMOutput",
        "MakeLoss",
    }
)


class ExecutorError(MXLabError, ValueError):
    """Bad arguments to bind, forward or backward (the message names the argument)."""


class UnknownArgumentError(ExecutorError, TypeError):
    """``forward(**kwargs)`` was given a name that is not an argument (MXNet: TypeError)."""


# ----------------------------------------------------------------------------- symbol access
def _outputs_of(symbol: Any) -> list[Entry]:
    """The head entries of a Symbol (or of a list of entries)."""
    outputs = getattr(symbol, "outputs", symbol)
    if isinstance(outputs, Entry):
        outputs = [outputs]
    outputs = list(outputs)
    if not outputs or not all(isinstance(e, Entry) for e in outputs):
        raise ExecutorError(f"bind: expected a Symbol (or a list of Entry), got {type(symbol).__name__}")
    return outputs


def _output_names(symbol: Any, heads: list[Entry]) -> list[str]:
    lister = getattr(symbol, "list_outputs", None)
    if callable(lister):
        return list(lister())
    names = []
    for e in heads:
        node = e.node
        if node.is_variable:
            names.append(node.name)
        else:
            out_names = node.op.list_output_names(node.attrs)
            names.append(f"{node.name}_{out_names[e.index]}")
    return names


def _variables(symbol: Any, graph: IndexedGraph) -> tuple[list[Node], list[Node]]:
    """Argument and auxiliary-state variable nodes, in the symbol's listing order."""
    args = [graph.nodes[i] for i in graph.argument_nodes()]
    aux = [graph.nodes[i] for i in graph.auxiliary_nodes()]
    seen: dict[str, Node] = {}
    for node in args + aux:
        other = seen.get(node.name)
        if other is not None and other is not node:
            raise ExecutorError(f"bind: two different variables are named {node.name!r}; variable names must be unique")
        seen[node.name] = node
    for attr, nodes in (("list_arguments", args), ("list_auxiliary_states", aux)):
        lister = getattr(symbol, attr, None)
        if callable(lister):
            order = list(lister())
            if sorted(order) != sorted(n.name for n in nodes):
                raise ExecutorError(f"bind: symbol.{attr}() = {order} does not match the graph's variables")
            nodes[:] = [seen[name] for name in order]
    return args, aux


# ----------------------------------------------------------------------------- inference
def _infer(graph: IndexedGraph, shapes: list, dtypes: list) -> None:
    """Shape and type inference to a fixed point over ``graph``, in place on the per-entry lists."""
    for values, run in ((shapes, infer_pass.infer_shapes), (dtypes, infer_pass.infer_types)):
        known = {graph.entry(eid): value for eid, value in enumerate(values) if value is not None}
        table = run(graph.heads, known, nodes=graph.nodes)
        for eid in range(graph.num_entries):
            e = graph.entry(eid)
            values[eid] = table.get((e.node.id, e.index), values[eid])


def _known(shape: Any) -> bool:
    return shape is not None and 0 not in shape


# ----------------------------------------------------------------------------- steps
class _Step:
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
        self.nid = nid
        self.name = node.name
        self.op_name = node.op.name
        self.compute = node.op.get_compute(ctx.device_type)
        self.is_async = node.op.is_async
        self.attrs = node.attrs
        self.ctx = ctx
        self.inputs: list[Any] = []
        self.outputs: list[Any] = []
        self.req: list[Req] = []
        self.requested: list[Any] = []
        self.reads: list[Var] = []
        self.writes: list[Var] = []

    def run(self, run_ctx: Any, is_train: bool) -> None:
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

    def run_async(self, run_ctx: Any, is_train: bool, on_complete: Any) -> None:
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


class _Segment:
    """Consecutive steps pushed as one engine operation (a bulk segment)."""

    __slots__ = ("steps", "reads", "writes", "name")

    def __init__(self, steps: list[_Step]) -> None:
        self.steps = steps
        writes = list(dict.fromkeys(v for s in steps for v in s.writes))
        written = set(writes)
        self.reads = [v for v in dict.fromkeys(v for s in steps for v in s.reads) if v not in written]
        self.writes = writes
        self.name = steps[0].name if len(steps) == 1 else f"{steps[0].name}..{steps[-1].name} [{len(steps)} nodes]"

    def push(self, engine: Engine, ctx: Context, is_train: bool) -> None:
        steps = self.steps
        if steps[0].is_async:  # an asynchronous operator is always a segment of its own

            def run_async(run_ctx: Any, on_complete: Any) -> None:
                steps[0].run_async(run_ctx, is_train, on_complete)

            engine.push_async(run_async, ctx, self.reads, self.writes, prop=FnProperty.ASYNC, name=self.name)
            return

        def run(run_ctx: Any) -> None:
            for step in steps:
                step.run(run_ctx, is_train)

        engine.push_sync(run, ctx, self.reads, self.writes, name=self.name)


def _segments(steps: list[_Step], graph: IndexedGraph, ancestors: list[int], max_nodes: int) -> list[_Segment]:
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
    segments: list[_Segment] = []
    current: list[_Step] = []
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
            segments.append(_Segment(current))
        current, members = [step], 1 << step.nid
    if current:
        segments.append(_Segment(current))
    return segments


# ----------------------------------------------------------------------------- argument parsing
def _as_list(value: Any, names: list[str], what: str, allow_missing: bool) -> list[Any]:
    """Arrays given as a list (in order) or a dict (by name), as MXNet's ``bind`` accepts."""
    if value is None:
        if allow_missing:
            return [None] * len(names)
        raise ExecutorError(f"bind: {what} is required ({len(names)} arrays for {names})")
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(names))
        if unknown and what != "args_grad":
            raise ExecutorError(f"bind: {what} names {unknown}, which are not among {names}")
        result = []
        for name in names:
            if name in value:
                result.append(value[name])
            elif allow_missing:
                result.append(None)
            else:
                raise ExecutorError(f"bind: key `{name}` is missing in `{what}` (expected arrays for {names})")
        return result
    if isinstance(value, list | tuple):
        if len(value) != len(names):
            raise ExecutorError(
                f"bind: length of {what} ({len(value)}) does not match the number of {what} needed "
                f"({len(names)}: {names})"
            )
        return list(value)
    raise ExecutorError(f"bind: {what} must be a list or a dict of NDArrays, got {type(value).__name__}")


def _grad_reqs(grad_req: Any, names: list[str]) -> list[str]:
    """One request per argument from a string, a list or a dict (missing names: null)."""
    if isinstance(grad_req, str):
        reqs = [grad_req] * len(names)
    elif isinstance(grad_req, Mapping):
        unknown = sorted(set(grad_req) - set(names))
        if unknown:
            raise ExecutorError(f"bind: grad_req names {unknown}, which are not arguments ({names})")
        reqs = [grad_req.get(name, "null") for name in names]
    elif isinstance(grad_req, list | tuple):
        if len(grad_req) != len(names):
            raise ExecutorError(f"bind: grad_req has {len(grad_req)} entries for {len(names)} arguments {names}")
        reqs = list(grad_req)
    else:
        raise ExecutorError(f"bind: grad_req must be a str, list or dict, got {type(grad_req).__name__}")
    for name, req in zip(names, reqs, strict=True):
        if req not in GRAD_REQS:
            raise ExecutorError(f"bind: unknown grad_req {req!r} for argument {name!r}; use one of {GRAD_REQS}")
    return reqs


def _check_array(array: Any, name: str, what: str, ctx: Context) -> NDArray:
    if not isinstance(array, NDArray):
        raise ExecutorError(f"bind: {what} {name!r} must be an NDArray, got {type(array).__name__}")
    if array.context != ctx:
        raise ExecutorError(f"bind: {what} {name!r} is on {array.context}, but the executor is bound to {ctx}")
    return array


# ----------------------------------------------------------------------------- the executor
class Executor:
    """A symbol bound to arrays on one context: ``forward``, ``backward``, the plan.

    Build it with :func:`bind` or :func:`simple_bind` (``Symbol.bind`` / ``simple_bind``).
    """

    def __init__(
        self,
        symbol: Any,
        ctx: Context,
        arg_arrays: list[NDArray],
        grad_arrays: list[NDArray | None],
        grad_reqs: list[str],
        aux_arrays: list[NDArray],
        mirror: str | bool | int | None = None,
        plan_options: planner.PlanOptions | None = None,
        shared_exec: Executor | None = None,
        bulk_size: int | None = None,
    ) -> None:
        self._symbol = symbol
        self._ctx = ctx
        self._engine = Engine.get()
        self._heads = _outputs_of(symbol)
        forward_graph = IndexedGraph(self._heads)
        arg_nodes, aux_nodes = _variables(symbol, forward_graph)
        self._arg_nodes, self._aux_nodes = arg_nodes, aux_nodes
        self._arg_names = [n.name for n in arg_nodes]
        self._aux_names = [n.name for n in aux_nodes]
        self._output_names = _output_names(symbol, self._heads)
        self.arg_arrays = list(arg_arrays)
        self.aux_arrays = list(aux_arrays)
        self.grad_arrays = list(grad_arrays)
        self._grad_reqs = [r if g is not None else "null" for g, r in zip(grad_arrays, grad_reqs, strict=True)]
        self._mirror = mirror_pass.parse_mode(mirror) if mirror is not None else mirror_pass.mode_from_env()
        self._plan_options = plan_options or planner.PlanOptions.from_env()
        self._bulk_size = (
            env_int("MXLAB_EXEC_BULK_EXEC_MAX_NODE_TRAIN", DEFAULT_BULK_NODES, 0) if bulk_size is None else bulk_size
        )

        # 1. inference over the forward graph, from the bound arrays
        fwd_shapes: list[Any] = [None] * forward_graph.num_entries
        fwd_types: list[Any] = [None] * forward_graph.num_entries
        for node, array in zip(arg_nodes + aux_nodes, self.arg_arrays + self.aux_arrays, strict=True):
            eid = forward_graph.entry_id(node, 0)
            fwd_shapes[eid], fwd_types[eid] = tuple(array.shape), dtype_name(array.dtype)
        self._infer_bound(forward_graph, fwd_shapes, fwd_types)
        known = {}
        for eid in range(forward_graph.num_entries):
            e = forward_graph.entry(eid)
            known[(e.node.id, e.index)] = (fwd_shapes[eid], fwd_types[eid])

        # 2. gradient (+ mirroring)
        self._head_grad_nodes: list[Node | None] = []
        wrt = [(i, Entry(node, 0)) for i, node in enumerate(arg_nodes) if self._grad_reqs[i] != "null"]
        grad_entries: list[Entry | None] = []
        self._grad_entry_of: dict[int, Entry] = {}  # argument index -> its gradient entry
        self.num_mirror_nodes = 0
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
            grad_entries = self._private_grad_entries(wrt, grad_entries)
            for (i, _), g in zip(wrt, grad_entries, strict=True):
                if g is not None:
                    self._grad_entry_of[i] = g

        # 3. the full graph: forward nodes first, then backward nodes
        graph = self._graph = IndexedGraph(self._heads + [g for g in grad_entries if g is not None])
        forward_ids = {n.id for n in forward_graph.nodes}
        self._is_forward = [n.id in forward_ids for n in graph.nodes]
        shapes: list[Any] = [None] * graph.num_entries
        types: list[Any] = [None] * graph.num_entries
        for eid in range(graph.num_entries):
            e = graph.entry(eid)
            shapes[eid], types[eid] = known.get((e.node.id, e.index), (None, None))
        self._infer_bound(graph, shapes, types)
        self._shapes, self._types = shapes, types

        # 4. the memory plan
        self._grad_eids = {i: graph.entry_id(g) for i, g in self._grad_entry_of.items()}
        head_eids = [graph.entry_id(e) for e in self._heads]
        self.plan = planner.plan_memory(
            graph, shapes, types, external=self._grad_eids.values(), keep=head_eids, options=self._plan_options
        )
        self._publish_plan()

        # 5. arrays, steps, segments
        self._allocate(shared_exec)
        self._build_steps()
        self.outputs = [self._entry_array(eid) for eid in head_eids]

    # ------------------------------------------------------------------ construction helpers
    def _infer_bound(self, graph: IndexedGraph, shapes: list, types: list) -> None:
        """Inference from the bound arrays; a conflict names the variables of the node involved."""
        try:
            _infer(graph, shapes, types)
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
        missing = [e for e in range(graph.num_entries) if not _known(shapes[e]) or types[e] is None]
        if missing:
            shown = ", ".join(f"{graph.entry_name(e)} (shape {shapes[e]}, dtype {types[e]})" for e in missing[:5])
            raise ExecutorError(f"bind: cannot infer the shape or dtype of {len(missing)} entries: {shown}")

    def _apply_mirror(self, grad_entries: list[Entry | None], known: dict) -> list[Entry | None]:
        """Rewire backward nodes to recompute mirrored forward nodes (see :mod:`.mirror`)."""

        def node_bytes(node: Node) -> int:
            total = 0
            for i in range(node.num_outputs()):
                shape, dtype = known[(node.id, i)]
                total += math.prod(shape) * np.dtype(dtype).itemsize
            return total

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

    def _allocate(self, shared_exec: Executor | None) -> None:
        """One uint8 NDArray per storage block; per entry a NumPy/CuPy view and its variable."""
        plan, graph = self.plan, self._graph
        reusable = sorted(
            (b for b in (shared_exec._blocks if shared_exec is not None else []) if b.context == self._ctx),
            key=lambda b: b.size,
        )
        blocks = []
        for nbytes in plan.block_bytes:
            index = next((i for i, b in enumerate(reusable) if b.size >= nbytes), None)
            if index is not None:
                blocks.append(reusable.pop(index))  # the smallest of the other executor's blocks that fits
            else:
                blocks.append(empty((max(nbytes, 1),), self._ctx, "uint8"))
        self._blocks = blocks

        external: dict[int, NDArray] = {}
        for node, array in zip(self._arg_nodes + self._aux_nodes, self.arg_arrays + self.aux_arrays, strict=True):
            external[graph.entry_id(node, 0)] = array
        for i, eid in self._grad_eids.items():
            external[eid] = self.grad_arrays[i]
        self._head_grad_arrays: list[NDArray | None] = []
        for leaf in self._head_grad_nodes:
            if graph.contains(leaf):
                eid = graph.entry_id(leaf, 0)
                array = empty(self._shapes[eid], self._ctx, self._types[eid])
                external[eid] = array
                self._head_grad_arrays.append(array)
            else:
                self._head_grad_arrays.append(None)
        self._external = external
        self._ones_in_head_grads = [False] * len(self._head_grad_arrays)

    def _entry_data(self, eid: int) -> tuple[Any, Var | None]:
        """The raw array an entry lives in (a view of its block) and the block's variable."""
        sid = self.plan.storage[eid]
        shape, dtype = self._shapes[eid], np.dtype(self._types[eid])
        if sid == planner.EXTERNAL:
            array = self._external.get(eid)
            if array is None:
                return None, None
            return array._data, array._chunk.var
        if sid == planner.NULL:
            xp = backend.array_module(self._ctx)
            return xp.broadcast_to(xp.zeros((), dtype=dtype), shape), None  # read-only, no memory
        block = self._blocks[sid]
        nbytes = math.prod(shape) * dtype.itemsize
        return block._data[:nbytes].view(dtype).reshape(shape), block._chunk.var

    def _entry_array(self, eid: int) -> NDArray:
        sid = self.plan.storage[eid]
        if sid == planner.EXTERNAL:
            return self._external[eid]
        data, _ = self._entry_data(eid)
        return NDArray(self._blocks[sid]._chunk, data)

    def _build_steps(self) -> None:
        graph, plan = self._graph, self.plan
        data = [self._entry_data(eid) for eid in range(graph.num_entries)]
        inplace_outputs = {out for _, out in plan.inplace}
        add_outputs = {eid for i, eid in self._grad_eids.items() if self._grad_reqs[i] == "add"}
        manager = ResourceManager.get()
        forward, backward = [], []
        for nid, node in enumerate(graph.nodes):
            if node.is_variable:
                continue
            step = _Step(nid, node, self._ctx)
            ins, outs = graph.input_entries[nid], list(graph.output_entries(nid))
            step.inputs = [data[e][0] for e in ins]
            step.outputs = [data[e][0] for e in outs]
            for eid in outs:
                if plan.storage[eid] == planner.NULL:
                    step.req.append(NULL)
                elif eid in inplace_outputs:
                    step.req.append(INPLACE)
                elif eid in add_outputs:
                    step.req.append(ADD)
                else:
                    step.req.append(WRITE)
            writes = [data[e][1] for e in outs if data[e][1] is not None]
            for k in node.op.mutate_inputs(node.attrs):
                writes.append(data[ins[k]][1])
            step.requested = [manager.request(self._ctx, r) for r in node.op.resource_request(node.attrs)]
            writes.extend(r.var for r in step.requested)
            step.writes = list(dict.fromkeys(w for w in writes if w is not None))
            written = set(step.writes)
            step.reads = list(
                dict.fromkeys(data[e][1] for e in ins if data[e][1] is not None and data[e][1] not in written)
            )
            (forward if self._is_forward[nid] else backward).append(step)
        ancestors = graph.ancestors()
        size = max(self._bulk_size, 1)
        self._forward_segments = _segments(forward, graph, ancestors, size)
        self._backward_segments = _segments(backward, graph, ancestors, size)
        self._zero_grads = [i for i, r in enumerate(self._grad_reqs) if r == "write" and i not in self._grad_eids]

    def _publish_plan(self) -> None:
        if not events.enabled:
            return
        graph, plan = self._graph, self.plan
        nodes = [
            {
                "id": nid,
                "name": node.name,
                "op": "null" if node.is_variable else node.op.name,
                "inputs": [
                    [graph.entry_nodes[e], e - graph.node_row_ptr[graph.entry_nodes[e]]]
                    for e in graph.input_entries[nid]
                ],
                "backward": not self._is_forward[nid],
            }
            for nid, node in enumerate(graph.nodes)
        ]
        entries = [
            {"id": eid, "name": graph.entry_name(eid), "node": graph.entry_nodes[eid], "bytes": plan.entry_bytes[eid]}
            for eid in range(graph.num_entries)
        ]
        events.publish(
            "executor.plan",
            graph=nodes,
            storage=list(plan.storage),
            inplace=[list(p) for p in plan.inplace],
            bytes_planned=plan.bytes_planned,
            bytes_naive=plan.bytes_naive,
            entries=entries,
            blocks=list(plan.block_bytes),
            mirror=self._mirror,
        )

    # ------------------------------------------------------------------ running
    def forward(self, is_train: bool = False, **kwargs: Any) -> list[NDArray]:
        """Run the forward pass (asynchronously); keyword arguments first overwrite arguments."""
        for name, value in kwargs.items():
            if name not in self.arg_dict:
                raise UnknownArgumentError(f"forward: unknown argument {name!r}; arguments are {self._arg_names}")
            target = self.arg_dict[name]
            shape = tuple(value.shape) if hasattr(value, "shape") else np.shape(value)
            if tuple(shape) != tuple(target.shape):
                raise ExecutorError(
                    f"forward: shape mismatch for argument {name!r}: bound with {tuple(target.shape)}, "
                    f"got {tuple(shape)}; use reshape() to change shapes"
                )
            target[:] = value
        for segment in self._forward_segments:
            segment.push(self._engine, self._ctx, bool(is_train))
        return self.outputs

    def backward(
        self, out_grads: NDArray | Sequence[NDArray] | Mapping[str, NDArray] | None = None, is_train: bool = True
    ) -> None:
        """Run the backward pass: gradients land in ``grad_arrays`` as each ``grad_req`` says."""
        if not self._grad_eids and not self._zero_grads:
            return
        self._set_head_grads(out_grads)
        for i in self._zero_grads:
            self.grad_arrays[i][:] = 0
        for segment in self._backward_segments:
            segment.push(self._engine, self._ctx, bool(is_train))

    def _set_head_grads(self, out_grads: Any) -> None:
        if out_grads is None:
            grads: list[Any] = [None] * len(self._heads)
        elif isinstance(out_grads, NDArray):
            grads = [out_grads]
        elif isinstance(out_grads, Mapping):
            grads = [out_grads.get(name) for name in self._output_names]
        else:
            grads = list(out_grads)
        if len(grads) != len(self._heads):
            raise ExecutorError(f"backward: {len(self._heads)} outputs but {len(grads)} out_grads")
        for i, (array, grad) in enumerate(zip(self._head_grad_arrays, grads, strict=True)):
            if array is None:
                continue
            if grad is None:
                head = self._heads[i].node
                if head.is_variable or head.op.name not in LOSS_OPS:
                    raise ExecutorError(
                        f"backward: output {self._output_names[i]!r} is not a loss function, so its head gradient "
                        "is required when calling backward (pass out_grads, or end the network in a loss such "
                        "as MakeLoss)"
                    )
                if not self._ones_in_head_grads[i]:
                    array[:] = 1
                    self._ones_in_head_grads[i] = True
                continue
            if tuple(grad.shape) != tuple(array.shape):
                raise ExecutorError(
                    f"backward: out_grads[{i}] for output {self._output_names[i]!r} has shape {tuple(grad.shape)}, "
                    f"expected {tuple(array.shape)}"
                )
            array[:] = grad
            self._ones_in_head_grads[i] = False

    # ------------------------------------------------------------------ views
    @property
    def arg_dict(self) -> dict[str, NDArray]:
        return dict(zip(self._arg_names, self.arg_arrays, strict=True))

    @property
    def grad_dict(self) -> dict[str, NDArray | None]:
        return dict(zip(self._arg_names, self.grad_arrays, strict=True))

    @property
    def aux_dict(self) -> dict[str, NDArray]:
        return dict(zip(self._aux_names, self.aux_arrays, strict=True))

    @property
    def output_dict(self) -> dict[str, NDArray]:
        return dict(zip(self._output_names, self.outputs, strict=True))

    @property
    def grad_req(self) -> dict[str, str]:
        return dict(zip(self._arg_names, self._grad_reqs, strict=True))

    @property
    def graph(self) -> IndexedGraph:
        """The forward + backward graph the plan and the steps were made from."""
        return self._graph

    def copy_params_from(
        self,
        arg_params: Mapping[str, NDArray],
        aux_params: Mapping[str, NDArray] | None = None,
        allow_extra_params: bool = False,
    ) -> None:
        """Copy parameter values into the bound arrays (converting dtypes)."""
        targets = (
            ("arg_params", arg_params, self.arg_dict, "arguments"),
            ("aux_params", aux_params or {}, self.aux_dict, "auxiliary states"),
        )
        for what, params, bound, kind in targets:
            for name, array in params.items():
                if name not in bound:
                    if allow_extra_params:
                        continue
                    raise ExecutorError(f"copy_params_from: found name {name!r} in {what} that is not in the {kind}")
                dst = bound[name]
                if tuple(array.shape) != tuple(dst.shape):
                    raise ExecutorError(
                        f"copy_params_from: {name!r} has shape {tuple(array.shape)}, bound array {tuple(dst.shape)}"
                    )
                source = array if array.dtype == dst.dtype else array.astype(dst.dtype)
                dst[:] = source

    def reshape(self, partial_shaping: bool = False, allow_up_sizing: bool = False, **kwargs: Any) -> Executor:
        """A new executor for new input shapes, sharing arrays and memory with this one."""
        for name in kwargs:
            if name not in self._arg_names:
                raise ExecutorError(f"reshape: {name!r} is not an argument ({self._arg_names})")
        arg_shapes, aux_shapes = _infer_variable_shapes(
            self._symbol, kwargs, {n: a.dtype for n, a in self.arg_dict.items()}
        )

        def fit(name: str, old: NDArray | None, shape: tuple, kind: str) -> NDArray | None:
            if old is None:
                return None
            if tuple(old.shape) == shape:
                return old
            if name not in kwargs and not partial_shaping:
                raise ExecutorError(
                    f"reshape: shape of unspecified array {kind}:{name} changed from {tuple(old.shape)} to {shape}; "
                    "this can cause the new executor to not share parameters with the old one. Please check "
                    "for error in network. If this is intended, set partial_shaping=True"
                )
            if math.prod(shape) > old.size:
                if not allow_up_sizing:
                    raise ExecutorError(
                        f"reshape: new shape {shape} of {kind}:{name} is larger than the original {tuple(old.shape)}; "
                        "set allow_up_sizing=True to allocate new arrays"
                    )
                return zeros(shape, self._ctx, old.dtype)
            return NDArray(old._chunk, old._data.reshape(-1)[: math.prod(shape)].reshape(shape))

        args = [fit(n, a, arg_shapes[n], "arg") for n, a in self.arg_dict.items()]
        grads = [fit(n, g, arg_shapes[n], "grad") for n, g in self.grad_dict.items()]
        aux = [fit(n, a, aux_shapes[n], "aux") for n, a in self.aux_dict.items()]
        return Executor(
            self._symbol,
            self._ctx,
            args,
            grads,
            list(self._grad_reqs),
            aux,
            mirror=self._mirror,
            plan_options=self._plan_options,
            shared_exec=self,
            bulk_size=self._bulk_size,
        )

    # ------------------------------------------------------------------ reports
    def debug_str(self) -> str:
        """The graph with each entry's storage and size, then planned versus naive memory."""
        graph, plan = self._graph, self.plan
        inplace_of = {out: src for src, out in plan.inplace}
        lines = ["Symbol Outputs:"]
        for i, e in enumerate(self._heads):
            lines.append(f"\toutput[{i}]={e.node.name}({e.index})")
        for nid, node in enumerate(graph.nodes):
            if node.is_variable:
                eid = graph.node_row_ptr[nid]
                lines.append(f"Variable:{node.name}")
                lines.append(f"\t{node.name}: external (bound array), {plan.entry_bytes[eid]} bytes")
                continue
            lines.append("--------------------")
            lines.append(f"Op:{node.op.name}, Name={node.name}")
            lines.append("Inputs:")
            for k, e in enumerate(node.inputs):
                lines.append(f"\targ[{k}]={e.node.name}({e.index})" + (" version=0" if e.node.is_variable else ""))
            params = node.attrs.parsed.to_strings() if node.attrs.parsed is not None else {}
            if params:
                lines.append("Attrs:")
                lines.extend(f"\t{k}={v}" for k, v in params.items())
            if node.control_deps:
                lines.append("Control deps:")
                lines.extend(f"\tcdep[{k}]={d.name}" for k, d in enumerate(node.control_deps))
            lines.append("Outputs:")
            for eid in graph.output_entries(nid):
                sid = plan.storage[eid]
                size = f"{plan.entry_bytes[eid]} bytes"
                if sid == planner.EXTERNAL:
                    where = "external (bound array)"
                elif sid == planner.NULL:
                    where = "not stored (no reader, req=null)"
                else:
                    where = f"storage {sid}"
                    if eid in inplace_of:
                        where += f" (in place of {graph.entry_name(inplace_of[eid])})"
                lines.append(f"\t{graph.entry_name(eid)}: {where}, {size}")
        planned, naive = plan.bytes_planned, plan.bytes_naive
        lines.append(f"Total {planned >> 20} MB allocated ({planned} bytes in {plan.num_blocks} blocks)")
        lines.append(f"Naive {naive >> 20} MB ({naive} bytes)")
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        return (
            f"<Executor {len(self._graph.nodes)} nodes on {self._ctx}: "
            f"{self.plan.bytes_planned} bytes planned, {self.plan.bytes_naive} naive>"
        )


# ----------------------------------------------------------------------------- bind / simple_bind
def _infer_variable_shapes(
    symbol: Any, shapes: Mapping[str, Any], types: Mapping[str, Any] | None = None
) -> tuple[dict[str, tuple], dict[str, tuple]]:
    """Shapes of every argument and auxiliary state from the given ones (simple_bind, reshape)."""
    arg_shapes, aux_shapes, _, _ = _infer_variables(symbol, shapes, types or {})
    return arg_shapes, aux_shapes


def _infer_variables(symbol: Any, shapes: Mapping[str, Any], types: Mapping[str, Any]) -> tuple[dict, dict, dict, dict]:
    heads = _outputs_of(symbol)
    graph = IndexedGraph(heads)
    arg_nodes, aux_nodes = _variables(symbol, graph)
    names = [n.name for n in arg_nodes + aux_nodes]
    unknown = sorted(set(shapes) - set(names))
    if unknown:
        raise ExecutorError(f"simple_bind: {unknown} are not arguments or auxiliary states of the symbol ({names})")
    unknown = sorted(set(types) - set(names))
    if unknown:
        raise ExecutorError(f"simple_bind: type_dict names {unknown}, which are not arguments ({names})")
    n = graph.num_entries
    shape_vals: list[Any] = [None] * n
    type_vals: list[Any] = [None] * n
    for node in arg_nodes + aux_nodes:
        eid = graph.entry_id(node, 0)
        if node.name in shapes:
            shape_vals[eid] = tuple(int(d) for d in shapes[node.name])
        if node.name in types:
            type_vals[eid] = normalize_dtype(types[node.name], f"simple_bind type_dict[{node.name!r}]").name
    _infer(graph, shape_vals, type_vals)
    for node in arg_nodes + aux_nodes:  # MXNet's default dtype for what nothing determines
        eid = graph.entry_id(node, 0)
        if type_vals[eid] is None:
            type_vals[eid] = "float32"
    _infer(graph, shape_vals, type_vals)
    missing = [n.name for n in arg_nodes + aux_nodes if not _known(shape_vals[graph.entry_id(n, 0)])]
    if missing:
        raise ExecutorError(
            f"simple_bind: cannot infer the shape of {missing} from the shapes given "
            f"({dict(shapes)}); pass their shapes as keyword arguments"
        )

    def take(nodes: list[Node], values: list) -> dict[str, Any]:
        return {node.name: values[graph.entry_id(node, 0)] for node in nodes}

    return (
        take(arg_nodes, shape_vals),
        take(aux_nodes, shape_vals),
        take(arg_nodes, type_vals),
        take(aux_nodes, type_vals),
    )


def _check_group2ctx(group2ctx: Any, ctx: Context) -> None:
    if not group2ctx:
        return
    others = sorted({str(c) for c in group2ctx.values() if c != ctx})
    if others:
        raise ExecutorError(
            f"bind: group2ctx places groups on {others}, but MXLab's executor runs a graph on one context ({ctx})"
        )


def bind(
    symbol: Any,
    ctx: Context,
    args: Sequence[NDArray] | Mapping[str, NDArray],
    args_grad: Sequence[NDArray | None] | Mapping[str, NDArray] | None = None,
    grad_req: str | Sequence[str] | Mapping[str, str] = "write",
    aux_states: Sequence[NDArray] | Mapping[str, NDArray] | None = None,
    group2ctx: Mapping[str, Context] | None = None,
    shared_exec: Executor | None = None,
    *,
    mirror: str | bool | int | None = None,
    plan_options: planner.PlanOptions | None = None,
    bulk_size: int | None = None,
) -> Executor:
    """Bind ``symbol`` to arrays (MXNet's ``Symbol.bind``).

    ``args``/``args_grad``/``aux_states`` are lists in ``list_arguments()`` /
    ``list_auxiliary_states()`` order or dicts by name; an argument without a gradient
    array gets no gradient whatever ``grad_req`` says. MXLab extras (keyword-only):
    ``mirror`` ("node", "segment" or None for ``MXLAB_BACKWARD_DO_MIRROR``),
    ``plan_options`` (planner switches) and ``bulk_size`` (nodes per bulk segment).
    """
    ctx = ctx or current_context()
    if not isinstance(ctx, Context):
        raise ExecutorError(f"bind: ctx must be a Context such as mx.cpu(), got {ctx!r}")
    _check_group2ctx(group2ctx, ctx)
    graph = IndexedGraph(_outputs_of(symbol))
    arg_nodes, aux_nodes = _variables(symbol, graph)
    arg_names, aux_names = [n.name for n in arg_nodes], [n.name for n in aux_nodes]
    arg_arrays = [
        _check_array(a, n, "argument", ctx)
        for a, n in zip(_as_list(args, arg_names, "args", False), arg_names, strict=True)
    ]
    grad_list = _as_list(args_grad, arg_names, "args_grad", True)
    grad_arrays = [
        None if g is None else _check_array(g, n, "gradient of", ctx) for g, n in zip(grad_list, arg_names, strict=True)
    ]
    reqs = _grad_reqs(grad_req, arg_names)
    for name, arg, grad in zip(arg_names, arg_arrays, grad_arrays, strict=True):
        if grad is not None and tuple(grad.shape) != tuple(arg.shape):
            raise ExecutorError(
                f"bind: gradient array of {name!r} has shape {tuple(grad.shape)}, the argument has {tuple(arg.shape)}"
            )
    aux_arrays = [
        _check_array(a, n, "auxiliary state", ctx)
        for a, n in zip(
            _as_list(aux_states if aux_names else aux_states or [], aux_names, "aux_states", False),
            aux_names,
            strict=True,
        )
    ]
    return Executor(
        symbol,
        ctx,
        arg_arrays,
        grad_arrays,
        reqs,
        aux_arrays,
        mirror=mirror,
        plan_options=plan_options,
        shared_exec=shared_exec,
        bulk_size=bulk_size,
    )


def simple_bind(
    symbol: Any,
    ctx: Context,
    grad_req: str | Sequence[str] | Mapping[str, str] = "write",
    type_dict: Mapping[str, Any] | None = None,
    stype_dict: Mapping[str, str] | None = None,
    group2ctx: Mapping[str, Context] | None = None,
    shared_arg_names: Sequence[str] | None = None,
    shared_exec: Executor | None = None,
    shared_buffer: dict[str, NDArray] | None = None,
    *,
    mirror: str | bool | int | None = None,
    plan_options: planner.PlanOptions | None = None,
    bulk_size: int | None = None,
    **shapes: Any,
) -> Executor:
    """Infer every shape from ``**shapes``, allocate the arrays, bind (MXNet's ``Symbol.simple_bind``).

    Arguments and auxiliary states start at zero; gradient arrays are allocated for the
    arguments whose ``grad_req`` is not ``null``. ``shared_arg_names`` reuse the arrays
    (and gradients) of ``shared_exec``; ``shared_buffer`` holds other arrays to reuse by
    name, and receives the ones allocated.
    """
    ctx = ctx or current_context()
    if not isinstance(ctx, Context):
        raise ExecutorError(f"simple_bind: ctx must be a Context such as mx.cpu(), got {ctx!r}")
    _check_group2ctx(group2ctx, ctx)
    for name, stype in (stype_dict or {}).items():
        if stype != "default":
            raise ExecutorError(f"simple_bind: {name!r} asks for storage type {stype!r}; MXLab has dense arrays only")
    arg_shapes, aux_shapes, arg_types, aux_types = _infer_variables(symbol, shapes, dict(type_dict or {}))
    arg_names = list(arg_shapes)
    reqs = _grad_reqs(grad_req, arg_names)
    shared_names = set(shared_arg_names or [])

    def reuse(name: str, shape: tuple, dtype: str, pool: Mapping[str, NDArray] | None) -> NDArray | None:
        found = (pool or {}).get(name)
        if found is None or found.dtype != np.dtype(dtype) or found.context != ctx:
            return None
        if tuple(found.shape) == shape:
            return found
        if found.size >= math.prod(shape):
            return NDArray(found._chunk, found._data.reshape(-1)[: math.prod(shape)].reshape(shape))
        return None

    args, grads = [], []
    for name, req in zip(arg_names, reqs, strict=True):
        shape, dtype = arg_shapes[name], arg_types[name]
        array = grad = None
        if shared_exec is not None and name in shared_names:
            array = reuse(name, shape, dtype, shared_exec.arg_dict)
            grad = reuse(name, shape, dtype, {k: v for k, v in shared_exec.grad_dict.items() if v is not None})
        elif shared_buffer is not None:
            array = reuse(name, shape, dtype, shared_buffer)
        if array is None:
            array = zeros(shape, ctx, dtype)
            if shared_buffer is not None and name not in shared_names:
                shared_buffer[name] = array
        if req != "null" and grad is None:
            grad = zeros(shape, ctx, dtype)
        args.append(array)
        grads.append(grad if req != "null" else None)
    aux = []
    for name, shape in aux_shapes.items():
        found = reuse(name, shape, aux_types[name], shared_exec.aux_dict) if shared_exec is not None else None
        aux.append(found if found is not None else zeros(shape, ctx, aux_types[name]))
    return Executor(
        symbol,
        ctx,
        args,
        grads,
        reqs,
        aux,
        mirror=mirror,
        plan_options=plan_options,
        shared_exec=shared_exec,
        bulk_size=bulk_size,
    )
