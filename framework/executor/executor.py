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

This module holds what an executor *is*: ``__init__``, which walks the five steps, then
running (``forward``, ``backward``, ``run_inline``, the monitor) and the bound arrays by name
(``arg_dict``, ``copy_params_from``, ``reshape``). The steps themselves are bases of
:class:`Executor` in modules of their own, mixed in so that their methods are the
executor's: :mod:`.bound_graph` (steps 1 to 4), :mod:`.allocation` (step 5) and
:mod:`.plan_report` (the ``executor.plan`` event, ``plan_with``, ``debug_str``). Below them:
:mod:`.arguments` (the symbol's variables, argument checks, variable inference),
:mod:`.segments` (steps and bulk segments) and the graph passes; ``bind`` and
``simple_bind``, which build an Executor from user arguments, are in :mod:`.binding`, above
this one.

Settings: ``MXLAB_BACKWARD_DO_MIRROR`` (0; 1 = MXNet's per-node rule, ``segment`` =
checkpointing), the bulk settings ``MXLAB_EXEC_BULK_EXEC_TRAIN`` / ``_INFERENCE`` and
``..._MAX_NODE_TRAIN[_FWD|_BWD]`` (15 nodes per bulk segment in training, the whole graph
in inference: :func:`.segments.bulk_sizes`), ``MXLAB_EXEC_ENABLE_INPLACE`` (1),
``MXLAB_EXEC_MATCH_RANGE`` (16), ``MXLAB_MEMORY_PLANNER`` (``mxnet``; ``greedy_by_size``) and
``MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS`` (``auto``: split where a core is idle and the plan does
not grow; ``1``; ``0``), and
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

from ..context import Context
from ..engine import Engine, RunContext
from ..ndarray.creation import zeros
from ..ndarray.ndarray import NDArray
from ..operator.infer import dtype_name
from ..operator.node import Entry
from . import mirror as mirror_pass
from . import plan_memory as planner
from . import split_backward
from .allocation import Allocation
from .arguments import (
    ExecutorError,
    Shape,
    UnknownArgumentError,
    head_entries,
    infer_variable_shapes,
    output_names,
    variable_nodes,
)
from .bound_graph import BoundGraph
from .graph import IndexedGraph
from .plan_report import PlanReport
from .segments import BulkSizes, Segment

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
class Executor(BoundGraph, Allocation, PlanReport):
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
        bulk_size: BulkSizes = None,
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
        self._bulk_size = bulk_size  # None: the settings' sizes (segments.bulk_sizes)
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

    def __repr__(self) -> str:
        return (
            f"<Executor {len(self._graph.nodes)} nodes on {self._ctx}: "
            f"{self.plan.bytes_planned} bytes planned, {self.plan.bytes_naive} naive>"
        )
