"""The graph executor: a bound symbol that runs forward and backward through the engine.

``bind`` turns a symbol (a list of output entries) plus arrays into an :class:`Executor`
in five steps, each a pass over an explicit graph:

1. **Inference**: shapes and dtypes of every entry, from the bound arrays.
2. **Gradient**: when some argument wants a gradient, the gradient pass shared with
   autograd (:func:`~framework.operator.gradient_pass.build_gradient`) appends the backward
   nodes; optionally **mirroring** (:mod:`~framework.executor.mirror`) makes them
   recompute cheap activations instead of keeping them, and the **split**
   (:mod:`~framework.executor.split_backward`) gives large layers' weight gradients nodes
   of their own that run beside the chain.
3. **Indexing**: forward and backward nodes become one :class:`IndexedGraph`; its order is
   the schedule (the forward nodes first).
4. **Memory planning** (:mod:`~framework.executor.plan_memory`, or
   :mod:`~framework.executor.greedy_by_size` with ``MXLAB_MEMORY_PLANNER=greedy_by_size``
   or ``PlanOptions(strategy=...)``): a storage id per entry.
5. **Allocation and steps**: one NDArray per storage block, a view of it per entry, and
   per node a prepared call of the operator's compute function with the right ``req``
   per output (``write``, ``inplace``, ``add`` for ``grad_req='add'``, ``null`` for
   outputs nobody reads). Chains of nodes are grouped into bulk segments; an asynchronous
   operator (``OpDef.is_async``, e.g. ``Custom``) is always a segment of its own, pushed
   with ``push_async``. When asked to, :mod:`~framework.executor.split_forward` pushes a
   large FullyConnected forward product with a helper operation on the second worker.

``forward`` and ``backward`` then only push: each segment goes to the engine with the
variables of the blocks it reads and writes, so the engine runs independent branches at
the same time on its workers and orders everything that shares memory. Nothing waits
until the user reads a result.

The pieces live in modules of their own, each below this one: :mod:`.arguments` (the
symbol's variables, argument checks, variable inference), :mod:`.segments` (steps and
bulk segments) and the graph passes; ``bind`` and ``simple_bind``, which build an
Executor from user arguments, are in :mod:`.binding`, above this one.

Settings: ``MXLAB_BACKWARD_DO_MIRROR`` (0; 1 = MXNet's per-node rule, ``segment`` =
checkpointing), ``MXLAB_EXEC_BULK_EXEC_MAX_NODE_TRAIN`` (15 nodes per bulk segment; 0 or 1
turns bulking off), ``MXLAB_EXEC_ENABLE_INPLACE`` (1), ``MXLAB_EXEC_MATCH_RANGE`` (16),
``MXLAB_MEMORY_PLANNER`` (``mxnet``; ``greedy_by_size``) and ``MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS``
(``auto``: split where a core is idle and the plan does not grow; ``1``; ``0``), and
``MXLAB_EXEC_SPLIT_FORWARD_PRODUCTS`` (``auto``: where a core is idle; ``1``; ``0``).

Where MXLab differs from MXNet 1.x: outputs nobody reads get no memory at all (MXNet
allocates and frees them at once); sharing never makes independent branches wait for
each other (``PlanOptions.parallel_safe``); bulk segments follow chains in inference too
(MXNet bulks the whole inference graph, which serializes branches); a graph runs on one
context (``group2ctx`` must map every group to it).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import backend, config, events
from ..context import Context
from ..engine import Engine, RunContext, Var
from ..ndarray.creation import zeros
from ..ndarray.ndarray import NDArray, empty
from ..operator import registry
from ..operator.gradient_pass import build_gradient
from ..operator.infer import InferenceError, dtype_name
from ..operator.kernel import Req
from ..operator.node import Entry, Node, NodeAttrs, topo_sort, variable
from ..resource import ResourceManager
from . import mirror as mirror_pass
from . import plan_memory as planner
from . import planners, split_backward, split_forward
from .arguments import (
    ExecutorError,
    Shape,
    UnknownArgumentError,
    head_entries,
    infer_entries,
    infer_variable_shapes,
    is_known_shape,
    output_names,
    value_shaped_reason,
    variable_nodes,
)
from .graph import IndexedGraph
from .segments import Segment, Step, group_segments

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
        split_weight_gradients: bool | str | None = None,
    ) -> None:
        self._symbol = symbol
        self._ctx = ctx
        self._engine = Engine.get()
        self._heads = head_entries(symbol)
        forward_graph = IndexedGraph(self._heads)
        arg_nodes, aux_nodes = variable_nodes(symbol, forward_graph)
        self._arg_nodes, self._aux_nodes = arg_nodes, aux_nodes
        self._arg_names = [n.name for n in arg_nodes]
        self._aux_names = [n.name for n in aux_nodes]
        self._output_names = output_names(symbol, self._heads)
        self.arg_arrays = list(arg_arrays)
        self.aux_arrays = list(aux_arrays)
        self.grad_arrays = list(grad_arrays)
        self._grad_reqs = [r if g is not None else "null" for g, r in zip(grad_arrays, grad_reqs, strict=True)]
        self._mirror = mirror_pass.parse_mode(mirror) if mirror is not None else mirror_pass.mode_from_env()
        self._plan_options = plan_options or planner.PlanOptions.from_env()
        self._bulk_size = config.get("MXLAB_EXEC_BULK_EXEC_MAX_NODE_TRAIN") if bulk_size is None else bulk_size
        self._monitor_callback: Callable[[str, NDArray], None] | None = None
        self._monitor_all = False

        # 1. inference over the forward graph, from the bound arrays
        fwd_shapes: list[Shape | None] = [None] * forward_graph.num_entries
        fwd_types: list[str | None] = [None] * forward_graph.num_entries
        for node, array in zip(arg_nodes + aux_nodes, self.arg_arrays + self.aux_arrays, strict=True):
            eid = forward_graph.entry_id(node, 0)
            fwd_shapes[eid], fwd_types[eid] = tuple(array.shape), dtype_name(array.dtype)
        self._infer_bound(forward_graph, fwd_shapes, fwd_types)
        known: dict[tuple[int, int], tuple[Shape | None, str | None]] = {}
        for eid in range(forward_graph.num_entries):
            e = forward_graph.entry(eid)
            known[(e.node.id, e.index)] = (fwd_shapes[eid], fwd_types[eid])

        # 2-4. gradient (+ mirroring, + split weight gradients), the full graph, the memory plan
        wrt = [(i, Entry(node, 0)) for i, node in enumerate(arg_nodes) if self._grad_reqs[i] != "null"]
        split = split_backward.setting() if split_weight_gradients is None else split_weight_gradients
        if split not in (True, False, "auto"):
            raise ExecutorError(f"bind: split_weight_gradients must be True, False or 'auto', got {split!r}")
        if split == "auto":  # split only where a second core is free, and only if it plans no more memory
            split = bool(wrt) and split_backward.cores_to_spare(ctx.device_type, self._engine)
            if split:
                self._build_graph(forward_graph, wrt, known, split=False)
                whole_bytes = self.plan.bytes_planned
                self._build_graph(forward_graph, wrt, known, split=True)
                if self.plan.bytes_planned > whole_bytes:  # the clones pin blocks the chain would reuse
                    split = False
            if not split:
                self._build_graph(forward_graph, wrt, known, split=False)
        else:
            self._build_graph(forward_graph, wrt, known, split=bool(split))
        self._publish_plan()

        # 5. arrays, steps, segments
        self._allocate(shared_exec)
        self._build_steps()
        self.outputs = [self._entry_array(eid) for eid in self._head_eids]

    # ------------------------------------------------------------------ construction helpers
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

    def _allocate(self, shared_exec: Executor | None) -> None:
        """One uint8 NDArray per storage block; per entry a NumPy/CuPy view and its variable."""
        plan, graph = self.plan, self._graph
        reusable = sorted(
            (b for b in (shared_exec._blocks if shared_exec is not None else []) if b.context == self._ctx),
            key=lambda b: b.size,
        )
        blocks: list[NDArray] = []
        for nbytes in plan.block_bytes:
            index = next((i for i, b in enumerate(reusable) if b.size >= nbytes), None)
            if index is not None:
                blocks.append(reusable.pop(index))  # the smallest of the other executor's blocks that fits
            else:
                blocks.append(empty((max(nbytes, 1),), self._ctx, "uint8"))
        self._blocks: list[NDArray] = blocks

        external: dict[int, NDArray] = {}
        for node, array in zip(self._arg_nodes + self._aux_nodes, self.arg_arrays + self.aux_arrays, strict=True):
            external[graph.entry_id(node, 0)] = array
        for i, eid in self._grad_eids.items():
            grad = self.grad_arrays[i]
            assert grad is not None, "only arguments with a gradient array have a gradient entry"
            external[eid] = grad
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
        if sid == planner.EXTERNAL_STORAGE_ID:
            array = self._external.get(eid)
            if array is None:
                return None, None
            return array._data, array._chunk.var
        if sid == planner.BAD_STORAGE_ID:
            xp = backend.array_module(self._ctx)
            return xp.broadcast_to(xp.zeros((), dtype=dtype), shape), None  # read-only, no memory
        block = self._blocks[sid]
        nbytes = math.prod(shape) * dtype.itemsize
        return block._data[:nbytes].view(dtype).reshape(shape), block._chunk.var

    def _entry_array(self, eid: int) -> NDArray:
        sid = self.plan.storage[eid]
        if sid == planner.EXTERNAL_STORAGE_ID:
            return self._external[eid]
        data, _ = self._entry_data(eid)
        return NDArray(self._blocks[sid]._chunk, data)

    def _build_steps(self) -> None:
        graph, plan = self._graph, self.plan
        data = [self._entry_data(eid) for eid in range(graph.num_entries)]
        inplace_outputs = {out for _, out in plan.inplace}
        add_outputs = {eid for i, eid in self._grad_eids.items() if self._grad_reqs[i] == "add"}
        manager = ResourceManager.get()
        forward: list[Step] = []
        backward: list[Step] = []
        for nid, node in enumerate(graph.nodes):
            op = node.op
            if op is None:  # a variable: a bound array, not a step
                continue
            step = Step(nid, node, self._ctx)
            ins, outs = graph.input_entries[nid], list(graph.output_entries(nid))
            step.inputs = [data[e][0] for e in ins]
            step.outputs = [data[e][0] for e in outs]
            for eid in outs:
                if plan.storage[eid] == planner.BAD_STORAGE_ID:
                    step.req.append(Req.NULL)
                elif eid in inplace_outputs:
                    step.req.append(Req.INPLACE)
                elif eid in add_outputs:
                    step.req.append(Req.ADD)
                else:
                    step.req.append(Req.WRITE)
            writes: list[Var | None] = [data[e][1] for e in outs]
            for k in op.mutate_inputs(node.attrs):
                writes.append(data[ins[k]][1])
            step.requested = [manager.request(self._ctx, r) for r in op.resource_request(node.attrs)]
            writes.extend(r.var for r in step.requested)
            step.writes = list(dict.fromkeys(w for w in writes if w is not None))
            written = set(step.writes)
            read_vars = (data[e][1] for e in ins)
            step.reads = list(dict.fromkeys(v for v in read_vars if v is not None and v not in written))
            (forward if self._is_forward[nid] else backward).append(step)
        ancestors = graph.ancestors()
        size = max(self._bulk_size, 1)
        self._forward_segments = group_segments(forward, graph, ancestors, size)
        # what forward() pushes: the same segments, large products split by rows where a core is idle
        self._forward_pushes = self._forward_segments
        self.shared_products: list[split_forward.SharedProduct] = []
        split = split_forward.setting()
        if split == "auto":
            split = split_backward.cores_to_spare(self._ctx.device_type, self._engine)
        if split:
            self._forward_pushes, self.shared_products = split_forward.split_products(
                self._forward_segments, self._engine.new_variable
            )
        self.num_split_products = len(self.shared_products)
        self._backward_segments = group_segments(backward, graph, ancestors, size)
        # Gradient arrays with req write that no backward node writes (the output does not depend on them).
        self._zero_grads = [
            g
            for i, (g, r) in enumerate(zip(self.grad_arrays, self._grad_reqs, strict=True))
            if g is not None and r == "write" and i not in self._grad_eids
        ]

    def _publish_plan(self) -> None:
        if not events.enabled:
            return
        graph, plan = self._graph, self.plan
        nodes = [
            {
                "id": nid,
                "name": node.name,
                "op": "null" if node.op is None else node.op.name,
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
            bytes_lower_bound=plan.bytes_lower_bound,
            strategy=plan.options.strategy,
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
        if self._monitor_callback is not None:
            self._forward_monitored(bool(is_train))
            return self.outputs
        for segment in self._forward_pushes:
            segment.push(self._engine, self._ctx, bool(is_train))
        return self.outputs

    def run_inline(self, run_ctx: RunContext, is_train: bool, head_grads: Sequence[Any] | None = None) -> None:
        """Run the steps on the calling thread, without the engine: a control-flow body inside an operator.

        The caller (an operator's compute function) already holds the engine's permission for
        everything it reads and writes, and this executor's memory is private to it. With
        ``head_grads`` (raw arrays, one per output) the backward steps run after the forward ones.
        """
        for segment in self._forward_segments:
            for step in segment.steps:
                if step.is_async:
                    raise ExecutorError(
                        f"{step.op_name} (node {step.name!r}) is asynchronous and cannot run in a loop body"
                    )
                step.run(run_ctx, is_train)
        if head_grads is None:
            return
        for array, grad in zip(self._head_grad_arrays, head_grads, strict=True):
            if array is not None:
                array._data[...] = grad
        for zero in self._zero_grads:
            zero._data[...] = 0
        for segment in self._backward_segments:
            for step in segment.steps:
                step.run(run_ctx, is_train)

    # ------------------------------------------------------------------ monitoring
    def set_monitor_callback(self, callback: Callable[[str, NDArray], None] | None, monitor_all: bool = False) -> None:
        """Call ``callback(name, array)`` for every node output during each forward pass.

        Names are MXNet's: ``<node>_<output>`` (``fc1_output``); with ``monitor_all`` each
        node's inputs come first, as ``<node>_<input>`` (``fc1_weight``; ``<node>_input<i>``
        for operators that do not name their inputs), each variable input also under its own
        name just before (``data``), as MXNet reports them. ``None`` removes the callback.

        While one is set, forward runs node by node (no bulk segments): the callback sees
        each output right after its node is pushed, so whatever it pushes to read the array
        (a statistic, a copy) runs before a later node reuses that memory.
        """
        if callback is not None and not callable(callback):
            raise ExecutorError(f"set_monitor_callback: callback must be callable(name, array), got {callback!r}")
        self._monitor_callback = callback
        self._monitor_all = bool(monitor_all)

    def _forward_monitored(self, is_train: bool) -> None:
        graph, callback = self._graph, self._monitor_callback
        assert callback is not None
        for segment in self._forward_segments:
            for step in segment.steps:
                node = graph.nodes[step.nid]
                op = node.op
                if self._monitor_all and op is not None:  # steps are operator nodes; variables are not steps
                    declared = op._input_names is not None
                    input_names = op.list_input_names(node.attrs) if declared else []
                    for i, eid in enumerate(graph.input_entries[step.nid]):
                        source = graph.nodes[graph.entry_node(eid)]
                        if source.op is None:
                            self._report(callback, source.name, eid)
                        label = input_names[i] if i < len(input_names) else f"input{i}"
                        self._report(callback, f"{node.name}_{label}", eid)
                Segment([step]).push(self._engine, self._ctx, is_train)
                for eid in graph.output_entries(step.nid):
                    self._report(callback, graph.entry_name(eid), eid)

    def _report(self, callback: Callable[[str, NDArray], None], name: str, eid: int) -> None:
        if self.plan.storage[eid] == planner.BAD_STORAGE_ID:  # an output nobody reads: never written
            return
        callback(name, self._entry_array(eid))

    def backward(
        self, out_grads: NDArray | Sequence[NDArray] | Mapping[str, NDArray] | None = None, is_train: bool = True
    ) -> None:
        """Run the backward pass: gradients land in ``grad_arrays`` as each ``grad_req`` says."""
        if not self._grad_eids and not self._zero_grads:
            return
        self._set_head_grads(out_grads)
        for grad in self._zero_grads:
            grad[:] = 0
        for segment in self._backward_segments:
            segment.push(self._engine, self._ctx, bool(is_train))

    def _set_head_grads(self, out_grads: NDArray | Sequence[NDArray] | Mapping[str, NDArray] | None) -> None:
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
                if head.op is None or head.op.name not in LOSS_OPS:
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

    def gradient_segments(self) -> dict[str, int]:
        """For each argument with a gradient, the backward bulk segment that finishes it (push order).

        Gradients finished by one segment become ready at the same moment, so sending them to a
        store apart overlaps nothing with the backward pass; the Module groups its distributed
        pushes by this. An argument whose gradient no backward step writes is left out.
        """
        last_writer = {}
        for index, segment in enumerate(self._backward_segments):
            for var in segment.writes:
                last_writer[var] = index  # a later segment that adds to the gradient finishes it
        found = {}
        for name, grad in self.grad_dict.items():
            if grad is not None and grad._chunk.var in last_writer:
                found[name] = last_writer[grad._chunk.var]
        return found

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

    def get_optimized_symbol(self) -> Any:
        """The symbol this executor runs, as a copy.

        MXNet returns the graph after its subgraph backends (MKLDNN, TensorRT) rewrote it;
        MXLab has none, so the bound symbol is already the one that runs.
        """
        return copy.copy(self._symbol)

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
                # astype is installed on NDArray by ndarray/methods.py, which mypy cannot follow
                source = array if array.dtype == dst.dtype else array.astype(dst.dtype)  # type: ignore[attr-defined]
                dst[:] = source

    def reshape(self, partial_shaping: bool = False, allow_up_sizing: bool = False, **kwargs: Any) -> Executor:
        """A new executor for new input shapes, sharing arrays and memory (and a monitor callback) with this one."""
        for name in kwargs:
            if name not in self._arg_names:
                raise ExecutorError(f"reshape: {name!r} is not an argument ({self._arg_names})")
        arg_shapes, aux_shapes = infer_variable_shapes(
            self._symbol, kwargs, {n: a.dtype for n, a in self.arg_dict.items()}
        )

        def fit(name: str, old: NDArray, shape: tuple, kind: str) -> NDArray:
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
        grads = [None if g is None else fit(n, g, arg_shapes[n], "grad") for n, g in self.grad_dict.items()]
        aux = [fit(n, a, aux_shapes[n], "aux") for n, a in self.aux_dict.items()]
        reshaped = Executor(
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
        # A monitored executor stays monitored: a Module reshapes for a validation batch of
        # another size and back, and its Monitor should go on seeing the layer outputs.
        if self._monitor_callback is not None:
            reshaped.set_monitor_callback(self._monitor_callback, self._monitor_all)
        return reshaped

    # ------------------------------------------------------------------ reports
    def plan_with(self, options: planner.PlanOptions) -> planner.MemoryPlan:
        """The plan ``options`` (another strategy, other switches) give this executor's graph.

        Nothing is allocated: this answers "how much would the other planner use here?".
        """
        return planners.plan(
            self._graph,
            self._shapes,
            self._types,
            external=self._grad_eids.values(),
            keep=self._head_eids,
            options=options,
        )

    def debug_str(self) -> str:
        """The graph with each entry's storage and size, then planned versus naive memory."""
        graph, plan = self._graph, self.plan
        inplace_of = {out: src for src, out in plan.inplace}
        lines = ["Symbol Outputs:"]
        for i, e in enumerate(self._heads):
            lines.append(f"\toutput[{i}]={e.node.name}({e.index})")
        for nid, node in enumerate(graph.nodes):
            if node.op is None:  # a variable
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
                if sid == planner.EXTERNAL_STORAGE_ID:
                    where = "external (bound array)"
                elif sid == planner.BAD_STORAGE_ID:
                    where = "not stored (no reader, req=null)"
                else:
                    where = f"storage {sid}"
                    if eid in inplace_of:
                        where += f" (in place of {graph.entry_name(inplace_of[eid])})"
                lines.append(f"\t{graph.entry_name(eid)}: {where}, {size}")
        planned, naive, bound = plan.bytes_planned, plan.bytes_naive, plan.bytes_lower_bound
        lines.append(
            f"Total {planned >> 20} MB allocated ({planned} bytes in {plan.num_blocks} blocks, "
            f"planner {plan.options.strategy})"
        )
        lines.append(f"Lower bound {bound >> 20} MB ({bound} bytes alive at once at the peak)")
        lines.append(f"Naive {naive >> 20} MB ({naive} bytes)")
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        return (
            f"<Executor {len(self._graph.nodes)} nodes on {self._ctx}: "
            f"{self.plan.bytes_planned} bytes planned, {self.plan.bytes_naive} naive>"
        )
