"""How the executor runs a control-flow body: a nested executor per body and signature.

A ``_foreach``, ``_while_loop`` or ``_cond`` node holds its body as a
:class:`~framework.operator.control_flow.Subgraph`. Its compute function runs on an engine
worker with raw arrays and calls the :class:`BodyRunner` installed here, which:

1. infers the body's shapes and dtypes with the graph inference pass (:mod:`.infer`);
2. binds the body once per input signature into an :class:`~.executor.Executor`, so the body
   gets the same memory plan, in-place reuse and steps as any bound graph, and keeps it in the
   subgraph's cache (a separate executor for forward-only and for forward + backward runs; the
   ``MAX_SIGNATURES`` most recently used are kept);
3. copies the step's inputs into the nested executor's arguments and runs its steps *on the
   calling thread* (:meth:`~.executor.Executor.run_inline`): the outer node already holds the
   engine's permission to read its inputs and write its outputs, and the nested executor's
   memory is private to it, so pushing the body to the engine would only add a wait;
4. returns fresh copies of the outputs (the nested memory is reused by the next step).

The body's lock serialises the runs of one body (its forward and backward nodes may run on two
workers at once). See docs/control-flow.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..context import Context
from ..engine import RunContext
from ..ndarray.ndarray import NDArray, empty
from ..operator.control_flow import Subgraph, install_runner
from ..operator.infer import InferenceError, ShapeT, dtype_name
from ..operator.kernel import OpContext
from .arguments import variable_nodes
from .executor import Executor
from .graph import IndexedGraph
from .infer import KnownKey, infer_shapes, infer_types

#: Nested executors kept per body (signatures: shapes, dtypes, context, with or without gradient).
MAX_SIGNATURES = 8


def _in_body(graph: Subgraph, err: InferenceError) -> InferenceError:
    return InferenceError(f"in a control-flow body with inputs {graph.input_names}: {err}")


class BodyRunner:
    """The :class:`~framework.operator.control_flow.SubgraphRunner` the executor installs."""

    def infer_shapes(self, graph: Subgraph, in_shapes: list[ShapeT]) -> tuple[list[ShapeT], list[ShapeT]]:
        known: dict[KnownKey, Any] = {
            node: tuple(s) for node, s in zip(graph.inputs, in_shapes, strict=True) if s is not None
        }
        try:
            table = infer_shapes(graph.heads, known)
        except InferenceError as err:
            raise _in_body(graph, err) from None
        return [table[(n.id, 0)] for n in graph.inputs], [table[(e.node.id, e.index)] for e in graph.heads]

    def infer_types(self, graph: Subgraph, in_types: list[str | None]) -> tuple[list[str | None], list[str | None]]:
        known: dict[KnownKey, Any] = {node: t for node, t in zip(graph.inputs, in_types, strict=True) if t is not None}
        try:
            table = infer_types(graph.heads, known)
        except InferenceError as err:
            raise _in_body(graph, err) from None
        return [table[(n.id, 0)] for n in graph.inputs], [table[(e.node.id, e.index)] for e in graph.heads]

    def forward(self, graph: Subgraph, op_ctx: OpContext, inputs: list[Any]) -> list[Any]:
        with graph.lock:
            bound = self._bound(graph, op_ctx.ctx, inputs, with_grad=False)
            bound.load(inputs)
            bound.executor.run_inline(RunContext(op_ctx.ctx, op_ctx.stream, "subgraph"), op_ctx.is_train)
            return [op_ctx.xp.array(out._data, copy=True) for out in bound.executor.outputs]

    def backward(self, graph: Subgraph, op_ctx: OpContext, inputs: list[Any], head_grads: list[Any]) -> list[Any]:
        if len(head_grads) != graph.num_outputs:
            raise InferenceError(f"control-flow body: {graph.num_outputs} outputs but {len(head_grads)} gradients")
        with graph.lock:
            bound = self._bound(graph, op_ctx.ctx, inputs, with_grad=True)
            bound.load(inputs)
            run_ctx = RunContext(op_ctx.ctx, op_ctx.stream, "subgraph")
            bound.executor.run_inline(run_ctx, op_ctx.is_train, head_grads=head_grads)
            xp = op_ctx.xp
            return [
                xp.zeros_like(x) if grad is None else xp.array(grad._data, copy=True)
                for x, grad in zip(inputs, bound.grads, strict=True)
            ]

    def _bound(self, graph: Subgraph, ctx: Context, inputs: list[Any], with_grad: bool) -> _BoundBody:
        key = (with_grad, ctx, tuple((tuple(x.shape), np.dtype(x.dtype).name) for x in inputs))
        bound = graph.cache.pop(key, None)
        if bound is None:
            bound = _BoundBody(graph, ctx, inputs, with_grad)
            while len(graph.cache) >= MAX_SIGNATURES:  # the least recently used signature goes
                del graph.cache[next(iter(graph.cache))]
        graph.cache[key] = bound  # most recently used last
        return bound


class _BoundBody:
    """One nested executor of a body for one input signature, and its arrays by body input."""

    def __init__(self, graph: Subgraph, ctx: Context, inputs: list[Any], with_grad: bool) -> None:
        if len(inputs) != len(graph.inputs):
            raise InferenceError(
                f"control-flow body: {len(graph.inputs)} inputs {graph.input_names}, got {len(inputs)}"
            )
        arrays = {
            n.id: empty(tuple(x.shape), ctx, dtype_name(x.dtype)) for n, x in zip(graph.inputs, inputs, strict=True)
        }
        arg_nodes, aux_nodes = variable_nodes(graph.heads, IndexedGraph(graph.heads))
        differentiable = (
            {n.id for n in arg_nodes if np.issubdtype(arrays[n.id].dtype, np.floating)} if with_grad else set()
        )
        grads = {nid: empty(arrays[nid].shape, ctx, arrays[nid].dtype) for nid in differentiable}
        self.executor = Executor(
            graph.heads,
            ctx,
            [arrays[n.id] for n in arg_nodes],
            [grads.get(n.id) for n in arg_nodes],
            ["write"] * len(arg_nodes),
            [arrays[n.id] for n in aux_nodes],
        )
        self.inputs: list[NDArray] = [arrays[n.id] for n in graph.inputs]
        self.grads: list[NDArray | None] = [grads.get(n.id) for n in graph.inputs]

    def load(self, inputs: list[Any]) -> None:
        for target, value in zip(self.inputs, inputs, strict=True):
            target._data[...] = value


install_runner(BodyRunner())
