"""Step 5 of binding: memory for the plan, a view per entry, and a prepared step per node.

The memory plan (bound_graph.py) gives every entry a storage id. Here each block becomes one
uint8 NDArray (reusing a shared executor's blocks where they fit, as ``reshape`` and
bucketing do), each entry a NumPy/CuPy view of its block with the block's engine variable,
and each operator node a :class:`~framework.executor.segments.Step`: its compute call with
the ``req`` of every output and the variables it reads and writes, grouped into the bulk
segments that ``forward`` and ``backward`` push.

Separate from the graph steps because it is the only part of binding that allocates, and
from running because it runs once per bind. It sets ``_blocks``, ``_external`` (the bound
arrays and gradient arrays by entry), ``_head_grad_arrays``, ``_ones_in_head_grads``, the
segments (``_forward_segments``, ``_forward_pushes``, ``_backward_segments``), the split
forward products and ``_zero_grads``. An entry whose storage id is ``BAD_STORAGE_ID`` has no
memory: its view is a read-only broadcast zero, and its step's ``req`` is ``null``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import backend
from ..context import Context
from ..engine import Engine, Var
from ..ndarray.ndarray import NDArray, empty
from ..operator.kernel import Req
from ..operator.node import Node
from ..resource import ResourceManager
from . import plan_memory as planner
from . import split_backward, split_forward
from .arguments import Shape
from .graph import IndexedGraph
from .segments import BulkSizes, Step, bulk_sizes, group_segments


class Allocation:
    """Blocks, entry views and steps of an executor (mixed into ``Executor``)."""

    _ctx: Context
    _engine: Engine
    _bulk_size: BulkSizes
    arg_arrays: list[NDArray]
    aux_arrays: list[NDArray]
    grad_arrays: list[NDArray | None]
    _grad_reqs: list[str]
    _arg_nodes: list[Node]
    _aux_nodes: list[Node]
    # set by BoundGraph._build_graph (bound_graph.py)
    plan: planner.MemoryPlan
    _graph: IndexedGraph
    _shapes: list[Shape]
    _types: list[str]
    _grad_eids: dict[int, int]
    _head_grad_nodes: list[Node]
    _is_forward: list[bool]

    def _allocate(self, shared_exec: Allocation | None) -> None:
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
        forward_size, backward_size = bulk_sizes(self._bulk_size, training=bool(backward), num_nodes=len(forward))
        self._forward_segments = group_segments(forward, graph, ancestors, forward_size)
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
        self._backward_segments = group_segments(backward, graph, ancestors, backward_size)
        # Gradient arrays with req write that no backward node writes (the output does not depend on them).
        self._zero_grads = [
            g
            for i, (g, r) in enumerate(zip(self.grad_arrays, self._grad_reqs, strict=True))
            if g is not None and r == "write" and i not in self._grad_eids
        ]
