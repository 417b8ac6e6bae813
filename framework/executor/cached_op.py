"""The CachedOp: a symbol run like one imperative operator, on the graph executor.

``op = mx.nd.CachedOp(sym)`` makes a graph callable on NDArrays: ``op(x, w, b)`` takes the
symbol's inputs in ``sym.list_inputs()`` order and returns its outputs (one NDArray, or a
list when the symbol has several). Gluon's ``hybridize`` is built on it. What it caches:

* **One bound executor per call signature** (input shapes, dtypes, context and which
  inputs need a gradient). Binding is the expensive part: shape/type inference, the
  gradient pass, the memory plan, the allocation of the planned blocks and the steps.
  Later calls with the same signature reuse all of it; each call only copies its data
  inputs into the bound arrays and pushes the executor's steps (one engine operation per
  node, or per bulk segment), exactly as ``Executor.forward`` does.
* **Inference versus training.** A call made while autograd is not recording binds a
  forward-only executor (its plan frees activations as soon as they are read). A call made
  while recording, with inputs that carry gradients, binds an executor that also holds the
  backward graph, and is recorded on the autograd tape as ONE node of the operator
  ``_CachedOp``. Its gradient is one ``_backward_CachedOp`` node whose run pushes the
  executor's planned backward steps and returns the input gradients. ``is_training()``
  is passed to the executor's forward (Dropout, BatchNorm).
* **Which arrays are bound in place.** Inputs listed in the ``param_indices`` flag (Gluon
  passes its parameters there) and auxiliary states (BatchNorm's running statistics,
  which the graph updates) are bound directly: no copy, and updates land in the caller's
  arrays. Every other input is copied into an array the executor owns, so the caller's
  arrays are never written. Outputs are copied out into fresh arrays, because the
  executor's blocks are overwritten by the next call.
* **Where the gradients land.** A parameter that is an autograd leaf with
  ``grad_req='write'`` (a Gluon Parameter) gets its ``.grad`` array bound as the executor's
  gradient array: ``loss.backward()`` writes the gradient there and the backward node hands
  ``.grad`` itself to autograd, so nothing is copied (MXNet's CachedOp also writes into the
  arrays autograd gives it). While ``autograd.backward`` runs it names the ``.grad`` arrays
  it overwrites (``imperative.STATE.grads_written``); in any other pass
  (``autograd.grad``, or ``grad_req`` changed to ``'add'`` after the call) the executor's
  write is undone and a copy returned, so ``.grad`` is untouched. Every other gradient
  (data inputs, ``'add'``) comes from the executor's own array, copied out. Only one
  pending recorded call may write a given ``.grad``: a second one (the same block applied
  twice, or two blocks sharing parameters) binds an executor with its own gradient arrays,
  whose results autograd sums.
* **Executors per recorded call.** A recorded call keeps its executor (its activations)
  until its backward has run or its part of the tape is dropped; a second recorded call
  before that (the same block applied twice) binds a second executor of the same
  signature.

Flags (MXNet's ``flags=[("static_alloc", True), ...]``; values may be strings):

* ``static_alloc``: keep the executors (and their planned memory) of every signature
  seen. Without it, only the latest signature's executors are kept: a call with new
  shapes releases the old ones' blocks to the storage pool.
* ``static_shape``: the inputs keep their shapes; only one signature is kept (a change
  of shapes still works by binding again, the slow path).
* ``data_indices`` / ``param_indices``: which inputs are data and which are parameters
  (bound in place, see above). Given together they must cover every input once.
* ``forward_bulk_size`` / ``backward_bulk_size``: nodes per bulk segment of each pass of a
  recorded call (a pass left out follows ``MXLAB_EXEC_BULK_EXEC_*``). As in MXNet, a call
  outside ``autograd.record`` bulks its whole graph, and ``MXLAB_EXEC_BULK_EXEC_TRAIN=0``
  turns bulking off whatever the flags say.
* ``inline_limit``: accepted for MXNet's code; it has nothing to do here. MXNet uses it to
  decide whether a hybridized child's own CachedOp is inlined into its parent's graph;
  MXLab traces children into the parent's graph always, so there is never a nested one.

**Graphs with value-dependent shapes.** A graph holding an operator whose output shape depends
on its input values (``_contrib_boolean_mask``) cannot be bound: shapes must be known before it
runs. Such a CachedOp runs its graph node by node instead, each node one imperative call (which
autograd records on its own), as MXNet's CachedOp does for dynamic shapes; nothing is cached.

**Operator hooks.** ``register_op_hook(callback, monitor_all)`` (Gluon's
``Block.register_op_hook``) calls ``callback(name, op_name, array)`` for each node output as
the forward pass runs (``dense0_fwd_output``, ``"FullyConnected"``), and with ``monitor_all``
for each node input first (``dense0_fwd_weight``). It rides on the executor's monitor
callback (:meth:`Executor.set_monitor_callback`), which runs the graph node by node.

Where MXLab differs from MXNet 1.x: MXNet's default (not static) CachedOp allocates each
call's memory from the storage pool; here the executor's planned blocks stay with the
executor between calls of the same signature in both modes. See docs/gluon.md.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..base import MXLabError
from ..context import Context
from ..ndarray import imperative
from ..ndarray.creation import zeros
from ..ndarray.ndarray import NDArray, copy_values
from ..operator import registry
from ..operator.grad import make_backward_node
from ..operator.node import Entry, Node, NodeAttrs, topo_sort
from ..operator.params import ParamSet
from .arguments import head_entries
from .binding import bind
from .executor import Executor


class CachedOpError(MXLabError, ValueError):
    """Bad flags or inputs for a CachedOp (the message names what was wrong)."""


_BOOL_FLAGS = ("static_alloc", "static_shape")
_INDEX_FLAGS = ("data_indices", "param_indices")
_INT_FLAGS = ("forward_bulk_size", "backward_bulk_size", "inline_limit")


def _parse_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "1", "false", "0"):
        return value.strip().lower() in ("true", "1")
    raise CachedOpError(f"CachedOp: flag {name!r} expects a boolean, got {value!r}")


def _parse_int(name: str, value: Any) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise CachedOpError(f"CachedOp: flag {name!r} expects a non-negative integer, got {value!r}") from None
    if number < 0 or isinstance(value, bool):
        raise CachedOpError(f"CachedOp: flag {name!r} expects a non-negative integer, got {value!r}")
    return number


def _parse_indices(name: str, value: Any, count: int) -> list[int]:
    if isinstance(value, str):  # MXNet passes "[0, 1]" strings through the C API
        text = value.strip().strip("[]()")
        value = [int(v) for v in text.split(",") if v.strip()]
    try:
        indices = [int(v) for v in value]
    except (TypeError, ValueError):
        raise CachedOpError(f"CachedOp: flag {name!r} expects a list of input indices, got {value!r}") from None
    bad = [i for i in indices if not 0 <= i < count]
    if bad:
        raise CachedOpError(f"CachedOp: flag {name!r} has indices {bad} out of range for {count} inputs")
    return indices


class _Bound:
    """One executor of the graph and the input arrays it is bound to."""

    __slots__ = ("executor", "inputs", "grads", "busy", "generation")

    def __init__(self, executor: Executor, inputs: list[NDArray], grads: tuple[NDArray | None, ...]) -> None:
        self.executor = executor
        self.inputs = inputs
        #: Per input, the caller's ``.grad`` array the executor writes that gradient into (None: its own array).
        self.grads = grads
        #: True while a recorded call still needs this executor's activations for backward.
        self.busy = False
        #: Counts the calls that used this executor; a call's backward checks it is still its own.
        self.generation = 0


class _Call:
    """One call of a CachedOp: the executor it ran on and the inputs that get gradients."""

    __slots__ = ("cached_op", "bound", "generation", "grad_inputs", "__weakref__")

    def __init__(self, cached_op: CachedOp) -> None:
        self.cached_op = cached_op
        self.bound: _Bound | None = None
        self.generation = 0
        self.grad_inputs: tuple[int, ...] = ()


class CachedOpCall(ParamSet):
    """The parameters of a ``_CachedOp`` node: the call it stands for (not a user parameter)."""

    def to_strings(self) -> dict[str, str]:
        return {}  # nothing of a call is stored in symbol JSON


def _release(bound: _Bound, generation: int) -> None:
    """Hand the executor back once a recorded call no longer needs it."""
    if bound.generation == generation:
        bound.busy = False


#: ``.grad`` arrays (by id) that an executor writes directly, and the recorded call that ran it
#: (weakly): a second executor must not write the same ``.grad`` while that call can still be
#: differentiated, or the two partial gradients would overwrite each other before they are summed.
_claims: dict[int, weakref.ref[_Call]] = {}


def _claimed_elsewhere(grad: NDArray, candidate: _Bound | None) -> bool:
    """Whether a recorded call that can still run its backward writes ``grad`` through an executor
    other than ``candidate`` (reusing the claiming executor itself ends that call's backward)."""
    ref = _claims.get(id(grad))
    call = ref() if ref is not None else None
    if call is None or call.bound is None or call.bound.generation != call.generation:
        _claims.pop(id(grad), None)  # that call is gone or its executor ran again: no claim left
        return False
    # A valid claim keeps its executor, and so the claimed array, alive: the id is still grad's.
    return call.bound is not candidate


class CachedOp:
    """A symbol bound lazily, per input signature, and run like an operator (MXNet's ``CachedOp``)."""

    #: MXNet's C handle; MXLab's CachedOp is a Python object and holds none (as ``NDArray.handle``).
    handle = None
    #: Whether the graph uses MXNet's NumPy front end (``mx.np``), which MXLab does not have.
    is_np_sym = False

    def __init__(self, sym: Any, flags: Sequence[tuple[str, Any]] | Mapping[str, Any] = ()) -> None:
        lister = getattr(sym, "list_inputs", None)
        if not callable(lister):
            raise CachedOpError(f"CachedOp: expected a Symbol, got {type(sym).__name__}")
        self._symbol = sym
        self._input_names: list[str] = list(lister())
        self._arg_names: list[str] = list(sym.list_arguments())
        self._aux_names: list[str] = list(sym.list_auxiliary_states())
        self._num_outputs = len(sym.list_outputs())
        count = len(self._input_names)
        items = list(flags.items()) if isinstance(flags, Mapping) else list(flags)
        self.static_alloc = False
        self.static_shape = False
        indices: dict[str, list[int]] = {}
        sizes: dict[str, int] = {}
        for item in items:
            if not (isinstance(item, tuple | list) and len(item) == 2):
                raise CachedOpError(f"CachedOp: flags must be (name, value) pairs, got {item!r}")
            name, value = item
            if name in _BOOL_FLAGS:
                setattr(self, name, _parse_bool(name, value))
            elif name in _INDEX_FLAGS:
                indices[name] = _parse_indices(name, value, count)
            elif name in _INT_FLAGS:
                sizes[name] = _parse_int(name, value)
            else:
                allowed = ", ".join(_BOOL_FLAGS + _INDEX_FLAGS + _INT_FLAGS)
                raise CachedOpError(f"CachedOp: unknown flag {name!r}; MXLab's CachedOp accepts {allowed}")
        if len(indices) == 2 and sorted(indices["data_indices"] + indices["param_indices"]) != list(range(count)):
            raise CachedOpError(
                f"CachedOp: data_indices {indices['data_indices']} and param_indices {indices['param_indices']} "
                f"must together list each of the {count} inputs {self._input_names} exactly once"
            )
        #: Nodes per bulk segment of each pass; None leaves a pass to the settings (segments.bulk_sizes).
        self.bulk_size: tuple[int | None, int | None] = (
            sizes.get("forward_bulk_size"),
            sizes.get("backward_bulk_size"),
        )
        aux = set(self._aux_names)
        self._aux_indices = frozenset(i for i, n in enumerate(self._input_names) if n in aux)
        #: Inputs bound in place: parameters and auxiliary states (which the graph updates).
        self._params = frozenset(indices.get("param_indices", [])) - self._aux_indices
        self._direct = self._params | self._aux_indices
        #: Input index -> position among the executor's arguments (inputs with gradients are arguments).
        args = {name: k for k, name in enumerate(self._arg_names)}
        self._arg_position = {i: args[n] for i, n in enumerate(self._input_names) if n in args}
        self._pools: dict[tuple, list[_Bound]] = {}
        self._heads = head_entries(sym)
        #: The graph has an operator whose output shapes follow its input values: run it node by node.
        self.dynamic_shapes = any(
            node.op is not None and node.op.shape_from_values is not None for node in topo_sort(self._heads)
        )
        self._op_hook: tuple[Callable[[str, str, NDArray], None], bool] | None = None
        self._node_ops: dict[str, str] | None = None  # operator node name -> operator name
        self._entry_ops: dict[str, str | None] = {}  # reported name -> operator (None: a variable)

    # ------------------------------------------------------------------ operator hooks
    def register_op_hook(self, callback: Callable[[str, str, NDArray], None] | None, monitor_all: bool = False) -> None:
        """From the next call on, ``callback(name, op_name, array)`` for every node output (inputs too with
        ``monitor_all``); ``None`` removes the hook."""
        if callback is not None and not callable(callback):
            raise CachedOpError(f"CachedOp: register_op_hook needs callable(name, op_name, array), got {callback!r}")
        self._op_hook = None if callback is None else (callback, bool(monitor_all))

    def _report_to_hook(self, name: str, array: NDArray) -> None:
        """The executor's monitor callback: add the operator of the node that ``name`` belongs to."""
        assert self._op_hook is not None
        if name not in self._entry_ops:
            if self._node_ops is None:
                nodes = json.loads(self._symbol.tojson())["nodes"]
                self._node_ops = {n["name"]: n["op"] for n in nodes if n["op"] != "null"}
            # "<node>_<entry>": the longest operator node name that prefixes it; none for a variable's own name
            owners = [node for node in self._node_ops if name.startswith(node + "_")]
            self._entry_ops[name] = self._node_ops[max(owners, key=len)] if owners else None
        op_name = self._entry_ops[name]
        if op_name is None:
            return
        self._op_hook[0](name, op_name, array)

    # ------------------------------------------------------------------ calling
    def __call__(self, *args: NDArray, out: NDArray | Sequence[NDArray] | None = None, **kwargs: Any) -> Any:
        """Run the graph on ``args`` (in ``list_inputs()`` order); one NDArray or a list of them."""
        kwargs.pop("default_ctx", None)  # MXNet's context for graphs without inputs; the inputs' context decides
        if kwargs:
            raise CachedOpError(f"CachedOp: unknown keyword argument(s) {sorted(kwargs)}; only out= is accepted")
        if not self._input_names:
            raise CachedOpError("CachedOp: the symbol has no inputs; MXLab's CachedOp runs graphs with inputs")
        if len(args) != len(self._input_names):
            raise CachedOpError(
                f"CachedOp: expected {len(self._input_names)} inputs {self._input_names}, got {len(args)}"
            )
        if self.dynamic_shapes:
            outputs = self._run_node_by_node(list(args), out)
        else:
            call = _Call(self)
            attrs = NodeAttrs("_cachedop", CACHED_OP, CachedOpCall({"call": call}))
            given = out if out is None or isinstance(out, NDArray) else list(out)
            outputs = imperative.invoke(CACHED_OP, list(args), out=given, attrs=attrs)
        return outputs[0] if len(outputs) == 1 else list(outputs)

    def _run_node_by_node(self, inputs: list[NDArray], out: NDArray | Sequence[NDArray] | None) -> list[NDArray]:
        """Every node one imperative call, in topological order (graphs with value-dependent shapes)."""
        by_name = dict(zip(self._input_names, inputs, strict=True))
        values: dict[tuple[int, int], NDArray] = {}
        for node in topo_sort(self._heads):
            if node.op is None:  # a variable: the caller's array (auxiliary states are updated in place)
                values[(node.id, 0)] = by_name[node.name]
                continue
            args = []
            for entry in node.inputs:
                value = values.get((entry.node.id, entry.index))
                if value is None:
                    raise CachedOpError(
                        f"CachedOp: {node.name} reads hidden output {entry.index} of {entry.node.name}, which a "
                        "graph with value-dependent shapes cannot provide (it runs operator by operator)"
                    )
                args.append(value)
            if self._op_hook is not None and self._op_hook[1]:  # monitor_all: the node's inputs first
                declared = node.op.list_input_names(node.attrs) if node.op._input_names is not None else []
                for i, value in enumerate(args):
                    label = declared[i] if i < len(declared) else f"input{i}"
                    self._op_hook[0](f"{node.name}_{label}", node.op.name, value)
            output_names = node.op.list_output_names(node.attrs)
            for i, result in enumerate(imperative.invoke(node.op, args, attrs=node.attrs)):
                values[(node.id, i)] = result
                if self._op_hook is not None:  # the same "<node>_<output>" names as the bound executor's
                    label = output_names[i] if i < len(output_names) else str(i)
                    self._op_hook[0](f"{node.name}_{label}", node.op.name, result)
        results = [values[(e.node.id, e.index)] for e in self._heads]
        if out is None:
            return results
        targets = [out] if isinstance(out, NDArray) else list(out)
        if len(targets) != len(results):
            raise CachedOpError(f"CachedOp: out= must hold {len(results)} arrays, got {len(targets)}")
        for result, target in zip(results, targets, strict=True):
            result.copyto(target)  # on autograd's tape when recording: out= stays differentiable
        return targets

    def _forward(self, call: _Call, inputs: list[NDArray], out: NDArray | Sequence[NDArray] | None) -> list[NDArray]:
        """Pick (or bind) the executor for this signature, copy data in, push the forward steps."""
        ctx = inputs[0].context
        recording = imperative.STATE.recording
        grad_inputs = tuple(
            i for i, a in enumerate(inputs) if recording and a._entry is not None and i not in self._aux_indices
        )
        bound = self._acquire(inputs, grad_inputs, ctx, self._writable_grads(inputs, grad_inputs))
        for i, array in enumerate(inputs):
            if array is not bound.inputs[i]:
                copy_values(array, bound.inputs[i])  # plumbing, not on autograd's tape
        if self._op_hook is not None:
            bound.executor.set_monitor_callback(self._report_to_hook, self._op_hook[1])
        elif bound.executor._monitor_callback is not None:
            bound.executor.set_monitor_callback(None)
        results = bound.executor.forward(is_train=imperative.STATE.training)
        if out is None:
            outputs = [copy_values(r, r.context) for r in results]
        else:
            outputs = [out] if isinstance(out, NDArray) else list(out)
            if len(outputs) != len(results):
                raise CachedOpError(f"CachedOp: out= must hold {len(results)} arrays, got {len(outputs)}")
            for result, target in zip(results, outputs, strict=True):
                copy_values(result, target)
        bound.generation += 1
        call.bound, call.generation, call.grad_inputs = bound, bound.generation, grad_inputs
        if grad_inputs:  # the backward needs this executor's activations: keep it until then
            bound.busy = True
            weakref.finalize(call, _release, bound, bound.generation)
            for grad in bound.grads:
                if grad is not None:
                    _claims[id(grad)] = weakref.ref(call)
        return outputs

    def _backward(self, call: _Call, out_grads: list[NDArray]) -> list[NDArray]:
        """Push the planned backward steps of the call's executor; the input gradients, copied out."""
        bound = call.bound
        if bound is None or bound.generation != call.generation:
            raise CachedOpError(
                "CachedOp: the executor of this recorded call has since run another call, so its forward "
                "state is gone; differentiate before calling the CachedOp again (or record the calls together)"
            )
        executor = bound.executor
        # A .grad the executor writes directly, which this pass does not overwrite (autograd.grad, or
        # grad_req changed to 'add' since the call): keep its values and hand back a copy instead.
        written = imperative.STATE.grads_written
        kept = {
            i: (grad, copy_values(grad, grad.context))
            for i, grad in enumerate(bound.grads)
            if grad is not None and id(bound.inputs[i]) not in written
        }
        executor.backward(list(out_grads), is_train=imperative.STATE.training)
        grads = []
        for i in call.grad_inputs:
            grad = self._grad_array(executor, i)
            if bound.grads[i] is None or i in kept:
                # the executor's array is overwritten by its next backward
                grads.append(copy_values(grad, grad.context))
            else:
                grads.append(grad)  # the caller's .grad itself, already final for this pass
        for target, values in kept.values():
            copy_values(values, target)
        # Free for the next call; a second backward (retain_graph) works until another call runs on it.
        bound.busy = False
        return grads

    def _grad_array(self, executor: Executor, index: int) -> NDArray:
        """The executor's gradient array of input ``index`` (inputs are arguments or auxiliary states)."""
        grad = executor.grad_arrays[self._arg_position[index]]
        assert grad is not None, "every input with a gradient was bound with a gradient array"
        return grad

    def _writable_grads(self, inputs: list[NDArray], grad_inputs: tuple[int, ...]) -> tuple[NDArray | None, ...]:
        """Per input, the ``.grad`` its executor may write directly (None: a private gradient array).

        That is a parameter's (``param_indices``) gradient buffer when the parameter is an autograd
        leaf with ``grad_req='write'`` (as Gluon marks it): backward then needs no copy, as MXNet's
        CachedOp writes straight into the arrays autograd hands it. Not for data inputs, ``'add'``,
        an array passed twice, nor a ``.grad`` that another pending recorded call writes already.
        """
        grads: list[NDArray | None] = [None] * len(inputs)
        taken: set[int] = set()
        for i in grad_inputs:
            array = inputs[i]
            grad = array._grad
            if (
                i not in self._params
                or grad is None
                or array._grad_req != "write"
                or array._entry is None
                or array._entry.node.info is not array  # not a leaf marked with attach_grad/mark_variables
                or grad.shape != array.shape
                or grad.dtype != array.dtype
                or grad.context != array.context
                or id(grad) in taken
            ):
                continue
            taken.add(id(grad))
            grads[i] = grad
        return tuple(grads)

    def _acquire(
        self, inputs: list[NDArray], grad_inputs: tuple[int, ...], ctx: Context, grads: tuple[NDArray | None, ...]
    ) -> _Bound:
        """A free executor of this signature whose in-place inputs (and directly written ``.grad``
        arrays, ``grads``) are these arrays, or a new one."""
        key = (tuple((a.shape, np.dtype(a.dtype).name) for a in inputs), ctx, grad_inputs)
        pool = self._pools.get(key)
        if pool is None:
            if not self.static_alloc or self.static_shape:
                # one signature per kind of call and context: the executors (and blocks) of other
                # shapes go, unless a recorded call still holds them
                for other, executors in list(self._pools.items()):
                    if other[1] == ctx and other[2] == grad_inputs:
                        executors[:] = [b for b in executors if b.busy]
                        if not executors:
                            del self._pools[other]
            pool = self._pools[key] = []
        for bound in pool:
            if (
                not bound.busy
                and all(bound.inputs[i] is inputs[i] for i in self._direct)
                and all(g is w for g, w in zip(bound.grads, self._unclaimed(grads, bound), strict=True))
            ):
                return bound
        pool[:] = [b for b in pool if b.busy]  # the free ones are bound to arrays no longer passed
        bound = self._bind(inputs, grad_inputs, ctx, self._unclaimed(grads, None))
        pool.append(bound)
        return bound

    @staticmethod
    def _unclaimed(grads: tuple[NDArray | None, ...], candidate: _Bound | None) -> tuple[NDArray | None, ...]:
        """``grads`` without those a pending call writes through an executor other than ``candidate``."""
        return tuple(None if g is None or _claimed_elsewhere(g, candidate) else g for g in grads)

    def _bind(
        self,
        inputs: list[NDArray],
        grad_inputs: tuple[int, ...],
        ctx: Context,
        direct_grads: tuple[NDArray | None, ...],
    ) -> _Bound:
        arrays = [a if i in self._direct else zeros(a.shape, ctx, a.dtype) for i, a in enumerate(inputs)]
        by_name = dict(zip(self._input_names, arrays, strict=True))
        grads: dict[str, NDArray] = {}
        for i in grad_inputs:
            direct = direct_grads[i]
            grads[self._input_names[i]] = direct if direct is not None else zeros(inputs[i].shape, ctx, inputs[i].dtype)
        executor = bind(
            self._symbol,
            ctx,
            {n: by_name[n] for n in self._arg_names},
            args_grad=grads,
            grad_req={n: "write" for n in grads},
            aux_states={n: by_name[n] for n in self._aux_names},
            bulk_size=self.bulk_size,
        )
        return _Bound(executor, arrays, direct_grads)

    # ------------------------------------------------------------------ views
    @property
    def symbol(self) -> Any:
        return self._symbol

    def executors(self) -> list[Executor]:
        """The executors bound so far (one per signature, more while recorded calls hold theirs)."""
        return [b.executor for pool in self._pools.values() for b in pool]

    def __repr__(self) -> str:
        return f"<CachedOp {self._input_names} -> {self._num_outputs} output(s), {len(self.executors())} executor(s)>"


# ---------------------------------------------------------------------- the operators on the tape
def _call_of(attrs: NodeAttrs) -> _Call:
    return attrs.parsed.call  # type: ignore[union-attr]


def _run_forward(attrs: NodeAttrs, inputs: list[NDArray], out: Any) -> list[NDArray]:
    call = _call_of(attrs)
    return call.cached_op._forward(call, inputs, out)


def _run_backward(attrs: NodeAttrs, inputs: list[NDArray], out: Any) -> list[NDArray]:
    if out is not None:
        raise CachedOpError("_backward_CachedOp: out= is not supported")
    call = _call_of(attrs)
    return call.cached_op._backward(call, inputs)


def _gradient(node: Node, out_grads: list[Entry]) -> list[Entry | None]:
    """One backward node for the whole graph; it yields the gradients of the inputs that need them."""
    call = _call_of(node.attrs)
    backward = make_backward_node(node, "_backward_CachedOp", list(out_grads))
    grads: list[Entry | None] = [None] * len(node.inputs)
    for k, i in enumerate(call.grad_inputs):
        grads[i] = Entry(backward, k)
    return grads


def _register() -> registry.OpDef:
    forward = (
        registry.register("_CachedOp", override=True)
        .describe("A whole graph run by the CachedOp's executor (recorded by autograd as one node).")
        .set_num_inputs(lambda attrs: len(_call_of(attrs).cached_op._input_names))
        .set_num_outputs(lambda attrs: _call_of(attrs).cached_op._num_outputs)
        .set_subgraph_exec(_run_forward)
        .set_gradient(_gradient)
    )
    (
        registry.register("_backward_CachedOp", override=True)
        .describe("The planned backward graph of one CachedOp call.")
        .set_num_inputs(lambda attrs: _call_of(attrs).cached_op._num_outputs)
        .set_num_outputs(lambda attrs: len(_call_of(attrs).grad_inputs))
        .set_subgraph_exec(_run_backward)
        .set_is_backward()
    )
    return forward


#: The ``_CachedOp`` operator record every call is invoked (and recorded) as.
CACHED_OP = _register()
