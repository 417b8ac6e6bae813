"""``mx.autograd``: record imperative operations, then differentiate them.

While ``record()`` is active, every operator call adds a node to a graph (the "tape"):
the operator, its parameters, the input entries and the arrays involved. ``backward``
runs the same gradient pass as the symbolic executor over that graph and executes the
resulting backward nodes imperatively, through the engine like any other operation.
Gradients land in the ``.grad`` of arrays marked with ``attach_grad`` according to their
``grad_req`` (``write`` overwrites, ``add`` accumulates, ``null`` skips).
"""

from __future__ import annotations

import contextlib
import itertools
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

from .base import MXLabError
from .errors import check_stype
from .ndarray import imperative, op
from .ndarray.creation import ones, zeros
from .ndarray.ndarray import NDArray, _push_copy, copy_values, empty
from .operator.gradient_pass import build_gradient
from .operator.kernel import Req
from .operator.node import Entry, Node, NodeAttrs, topo_sort, variable
from .operator.registry import OpDef

_names = itertools.count()
#: Gradient buffers written by ``backward`` and not yet consumed (MXNet's ``NDArray._fresh_grad``,
#: which Gluon's Trainer checks to find parameters that backward did not reach), by id.
_fresh_grads: weakref.WeakValueDictionary[int, NDArray] = weakref.WeakValueDictionary()
#: Left in a tape node's ``info`` once backward() has released its arrays.
_FREED = object()


class AutogradError(MXLabError, ValueError):
    """Differentiation was asked for something that was not recorded (or already freed)."""


class _Recorded:
    """What a tape node remembers: the arrays it read and produced."""

    __slots__ = ("inputs", "outputs")

    def __init__(self, inputs: list[NDArray], outputs: list[NDArray]) -> None:
        self.inputs = inputs
        self.outputs = outputs


# ---------------------------------------------------------------------- scopes
def is_recording() -> bool:
    return imperative.STATE.recording


def is_training() -> bool:
    return imperative.STATE.training


def set_recording(is_recording: bool) -> bool:
    """Turn recording on or off; returns the previous state."""
    previous, imperative.STATE.recording = imperative.STATE.recording, bool(is_recording)
    return previous


def set_training(train_mode: bool) -> bool:
    """Set training mode (Dropout, BatchNorm behave accordingly); returns the previous state."""
    previous, imperative.STATE.training = imperative.STATE.training, bool(train_mode)
    return previous


@contextlib.contextmanager
def _scope(recording: bool | None, training: bool | None) -> Iterator[None]:
    old_recording = set_recording(recording) if recording is not None else None
    old_training = set_training(training) if training is not None else None
    try:
        yield
    finally:
        if old_recording is not None:
            set_recording(old_recording)
        if old_training is not None:
            set_training(old_training)


def record(train_mode: bool = True) -> contextlib.AbstractContextManager[None]:
    """``with autograd.record():`` records operations for differentiation."""
    return _scope(True, train_mode)


def pause(train_mode: bool = False) -> contextlib.AbstractContextManager[None]:
    """``with autograd.pause():`` stops recording inside a ``record`` block."""
    return _scope(False, train_mode)


def train_mode() -> contextlib.AbstractContextManager[None]:
    """Training behaviour (Dropout active, BatchNorm batch statistics) without recording."""
    return _scope(None, True)


def predict_mode() -> contextlib.AbstractContextManager[None]:
    """Inference behaviour inside a ``record`` block."""
    return _scope(None, False)


# ---------------------------------------------------------------------- the tape
def _entry_of(array: NDArray) -> Entry:
    """The graph entry of ``array``, making it a constant leaf if it has none."""
    if array._entry is None:
        leaf = variable(f"const{next(_names)}")
        leaf.info = array
        return Entry(leaf, 0)
    return array._entry


def _record(op: OpDef, attrs: NodeAttrs, inputs: list[NDArray], outputs: list[NDArray]) -> None:
    """Put one operator call on the tape, if any input is on it (MXNet's rule: a result computed
    from constants only, ``nd.zeros`` or ``nd.ones(3) * 2``, is a constant, and may be written into)."""
    if not any(a._entry is not None for a in inputs):
        for out in outputs:
            out._entry = None
        return
    node = Node(
        op, NodeAttrs(f"{op.name.lower()}{next(_names)}", op, attrs.parsed, attrs.extra), [_entry_of(a) for a in inputs]
    )
    node.info = _Recorded(list(inputs), list(outputs))
    for i, out in enumerate(outputs):
        out._entry = Entry(node, i)


imperative.tape_hook = _record


def mark_variables(
    variables: Sequence[NDArray], gradients: Sequence[NDArray], grad_reqs: str | Sequence[str] = "write"
) -> None:
    """Make ``variables`` differentiable, with ``gradients`` as their ``.grad`` buffers (one array
    and its gradient may be given without a list, as in MXNet)."""
    if isinstance(variables, NDArray):
        if not isinstance(gradients, NDArray):
            raise AutogradError("mark_variables: one variable needs one gradient array, got a sequence")
        variables, gradients = [variables], [gradients]
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    if not (len(variables) == len(gradients) == len(grad_reqs)):
        raise AutogradError("mark_variables: variables, gradients and grad_reqs must have the same length")
    for array, grad, req in zip(variables, gradients, grad_reqs, strict=True):
        Req.parse(req)
        if grad.shape != array.shape:
            raise AutogradError(
                f"mark_variables: gradient shape {grad.shape} differs from variable shape {array.shape}"
            )
        leaf = variable(f"var{next(_names)}")
        leaf.info = array
        array._entry = Entry(leaf, 0)
        array._grad = grad
        array._grad_req = req


# ---------------------------------------------------------------------- differentiation
def _heads_and_grads(heads: Any, head_grads: Any) -> tuple[list[NDArray], list[NDArray]]:
    heads = [heads] if isinstance(heads, NDArray) else list(heads)
    if head_grads is None:
        head_grads = [None] * len(heads)
    elif isinstance(head_grads, NDArray):
        head_grads = [head_grads]
    if len(head_grads) != len(heads):
        raise AutogradError(f"backward: {len(heads)} heads but {len(head_grads)} head gradients")
    filled = []
    for head, grad in zip(heads, head_grads, strict=True):
        if not isinstance(head, NDArray):
            raise AutogradError(f"backward: heads must be NDArrays, got {type(head).__name__}")
        if head._entry is None or head._entry.node.is_variable:
            raise AutogradError(
                "cannot differentiate: the array was not computed inside autograd.record() "
                "from arrays marked with attach_grad()"
            )
        if head._entry.node.info is _FREED:
            raise AutogradError(
                "the graph behind this array was freed by an earlier backward(); "
                "pass retain_graph=True to differentiate twice"
            )
        if grad is None:
            grad = ones(head.shape, head.context, head.dtype)  # noqa: PLW2901 - the default head gradient
        elif grad.shape != head.shape:
            raise AutogradError(f"backward: head gradient shape {grad.shape} differs from head shape {head.shape}")
        filled.append(grad)
    return heads, filled


def _run_gradient_graph(
    heads: list[NDArray], head_grads: list[NDArray], wrt: list[Entry], train: bool, create_graph: bool
) -> list[NDArray | None]:
    """Build the backward graph and execute it imperatively; one array (or None) per ``wrt``."""
    head_grad_nodes = []
    values: dict[tuple[int, int], NDArray] = {}
    for grad in head_grads:
        leaf = variable(f"head_grad{next(_names)}")
        values[(leaf.id, 0)] = grad
        head_grad_nodes.append(Entry(leaf, 0))
    grad_entries = build_gradient([h._entry for h in heads], head_grad_nodes, wrt)
    targets = [e for e in grad_entries if e is not None]

    def value_of(entry: Entry) -> NDArray:
        key = (entry.node.id, entry.index)
        found = values.get(key)
        if found is not None:
            return found
        info = entry.node.info
        if entry.node.is_variable and isinstance(info, NDArray):
            return info
        if isinstance(info, _Recorded):
            return info.outputs[entry.index]
        raise AutogradError(
            f"the graph behind this gradient was freed by an earlier backward(); "
            f"pass retain_graph=True to differentiate twice (missing value of {entry.node.name!r})"
        )

    with _scope(create_graph, train):
        for node in topo_sort(targets):
            if node.is_variable or node.info is not None:  # recorded forward nodes already ran
                continue
            args = _on_one_context(node, [value_of(e) for e in node.inputs])
            if node.op is _FUNCTION_BACKWARD:
                outputs = _run_function_backward(node, args)
            else:
                outputs = imperative.invoke(node.op, args, attrs=node.attrs)
            for i, out in enumerate(outputs):
                values[(node.id, i)] = out
    return [None if e is None else value_of(e) for e in grad_entries]


def _on_one_context(node: Node, args: list[NDArray]) -> list[NDArray]:
    """``args`` on one context: that of the forward node ``node`` belongs to (else its first input).

    A gradient that came back through a copy between contexts (``x.as_in_context(other)``)
    arrives on the copy's context; MXNet places each backward node where its forward node ran
    and copies what comes from elsewhere, and so does this.
    """
    if len(args) < 2:
        return args
    first = args[0].context
    if all(a.context == first for a in args):
        return args
    forward = node.control_deps[0].info if node.control_deps else None
    home = first
    if isinstance(forward, _Recorded):
        home = (forward.inputs or forward.outputs)[0].context
    return [a if a.context == home else copy_values(a, home) for a in args]


def _free_graph(heads: list[NDArray]) -> None:
    for node in topo_sort([h._entry for h in heads]):
        if isinstance(node.info, _Recorded):
            node.info = _FREED


def backward(heads: Any, head_grads: Any = None, retain_graph: bool = False, train_mode: bool = True) -> None:
    """Compute gradients of ``heads`` into the ``.grad`` of every marked array they depend on."""
    heads, head_grads = _heads_and_grads(heads, head_grads)
    leaves = [
        node
        for node in topo_sort([h._entry for h in heads])
        if node.is_variable
        and isinstance(node.info, NDArray)
        and node.info._grad is not None
        and node.info._grad_req != "null"
    ]
    if not leaves:
        raise AutogradError("backward: no array marked with attach_grad() contributes to these heads")
    # The .grad buffers this pass overwrites: a graph operator may write a gradient there directly
    # (the CachedOp's executor, bound to a Parameter's .grad) and hand back .grad itself.
    previous = imperative.STATE.grads_written
    imperative.STATE.grads_written = frozenset(id(n.info) for n in leaves if n.info._grad_req == "write")
    try:
        grads = _run_gradient_graph(heads, head_grads, [Entry(n, 0) for n in leaves], train_mode, create_graph=False)
    finally:
        imperative.STATE.grads_written = previous
    for node, grad in zip(leaves, grads, strict=True):
        array = node.info
        if grad is None:
            if array._grad_req == "write":
                array._grad[:] = 0
            continue
        if array._grad_req == "add":
            op.broadcast_add(array._grad, grad, out=array._grad)
        elif grad is not array._grad:  # already there when an operator wrote it in place
            _push_copy(grad, array._grad)
        _fresh_grads[id(array._grad)] = array._grad
    if not retain_graph:
        _free_graph(heads)


class ArrayMethods:
    """``NDArray.attach_grad`` and ``NDArray.backward``, copied onto ``NDArray`` below (``self`` is an NDArray).

    They are this module's calls on one array. The array class lives in framework/ndarray/,
    under this module (autograd records NDArrays and runs operators on them), so it cannot
    import them; like the operator methods of ndarray/methods.py they are installed from
    above, when this module is imported (framework/__init__.py imports it with the rest).
    """

    def attach_grad(self, grad_req: str = "write", stype: str | None = None) -> None:
        """Allocate ``.grad`` and mark this array as a variable to differentiate against."""
        check_stype(stype, "attach_grad")
        grad = empty(self.shape, self.context, self.dtype)  # not zeros(): zero-size arrays have gradients too
        grad[...] = 0
        mark_variables([self], [grad], grad_reqs=grad_req)

    def backward(self, out_grad: NDArray | None = None, retain_graph: bool = False, train_mode: bool = True) -> None:
        # ``backward`` below is the module's function (a method body does not see the class's names)
        backward([self], [out_grad] if out_grad is not None else None, retain_graph, train_mode)


NDArray.attach_grad = ArrayMethods.attach_grad
NDArray.backward = ArrayMethods.backward


def take_fresh_grad(gradient: NDArray) -> bool:
    """Whether ``backward`` wrote ``gradient`` since the last call for it (the mark is consumed)."""
    return _fresh_grads.pop(id(gradient), None) is gradient


def grad(
    heads: Any,
    variables: Any,
    head_grads: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    train_mode: bool = True,
) -> list[NDArray]:
    """Gradients of ``heads`` with respect to ``variables``, returned (``.grad`` is untouched).

    With ``create_graph=True`` the gradient computation is itself recorded, so it can be
    differentiated again.
    """
    single = isinstance(variables, NDArray)
    variables = [variables] if single else list(variables)
    for array in variables:
        if array._entry is None:
            raise AutogradError("grad: every variable must be marked with attach_grad() before recording")
    heads, head_grads = _heads_and_grads(heads, head_grads)
    grads = _run_gradient_graph(heads, head_grads, [a._entry for a in variables], train_mode, create_graph)
    results = [
        g if g is not None else zeros(v.shape, v.context, v.dtype) for g, v in zip(grads, variables, strict=True)
    ]
    if not (create_graph if retain_graph is None else retain_graph):
        _free_graph(heads)
    return results


# ---------------------------------------------------------------------- user-defined differentiable functions
# A Function call is recorded as one tape node of operator _FUNCTION; its gradient is one node
# of _FUNCTION_BACKWARD that hands the output gradients to the user's ``backward``. Neither is
# in the operator registry: they exist only on the tape, and _run_gradient_graph calls the
# user's Python code for the backward node instead of invoking an engine operator.
def _function_gradient(node: Node, out_grads: list[Entry]) -> list[Entry | None]:
    attrs = NodeAttrs(f"{node.name}_backward", _FUNCTION_BACKWARD, None, node.attrs.extra)
    backward_node = Node(_FUNCTION_BACKWARD, attrs, list(out_grads))
    return [Entry(backward_node, i) for i in range(len(node.inputs))]


_FUNCTION = OpDef("_CustomFunction").set_num_outputs(lambda attrs: int(attrs.extra["num_outputs"]))
_FUNCTION.set_gradient(_function_gradient)
_FUNCTION_BACKWARD = OpDef("_backward_CustomFunction").set_num_outputs(lambda attrs: int(attrs.extra["num_inputs"]))


def is_custom_function(node: Node) -> bool:
    """Whether a tape node is an :class:`Function` call (it has no operator outside the tape)."""
    return node.op is _FUNCTION


def _run_function_backward(node: Node, out_grads: list[NDArray]) -> list[NDArray]:
    function = node.attrs.extra["function"]
    with pause():
        grads = function.backward(*out_grads)
    grads = [grads] if isinstance(grads, NDArray) else list(grads)
    expected = int(node.attrs.extra["num_inputs"])
    if len(grads) != expected or not all(isinstance(g, NDArray) for g in grads):
        raise AutogradError(
            f"{type(function).__name__}.backward must return {expected} NDArray(s), one per forward input; "
            f"got {[type(g).__name__ for g in grads]}"
        )
    return grads


class Function:
    """A differentiable function with a hand-written gradient, as MXNet 1.x's ``mx.autograd.Function``.

    Subclass it and define ``forward(*inputs)`` and ``backward(*output_grads)`` on NDArrays;
    ``backward`` returns one gradient per input. Keep what backward needs with
    ``save_for_backward(...)``; it is ``self.saved_tensors`` there. Calling the instance runs
    ``forward`` without recording its inside and, under ``record()``, records the call as one
    node of the autograd graph: backward then calls your ``backward`` (useful for numerically
    stable or non-differentiable formulas). An instance keeps the state of one call: make a
    new instance for each call you differentiate.
    """

    def __init__(self) -> None:
        self.saved_tensors: tuple[Any, ...] = ()
        self._used = False

    def save_for_backward(self, *args: Any) -> None:
        """Keep ``args`` for ``backward`` (as ``self.saved_tensors``)."""
        self.saved_tensors = args

    def forward(self, *inputs: NDArray) -> NDArray | tuple[NDArray, ...]:
        raise NotImplementedError(f"{type(self).__name__} must define forward(*inputs)")

    def backward(self, *output_grads: NDArray) -> NDArray | tuple[NDArray, ...]:
        raise NotImplementedError(f"{type(self).__name__} must define backward(*output_grads)")

    def __call__(self, *inputs: NDArray) -> NDArray | tuple[NDArray, ...]:
        for i, array in enumerate(inputs):
            if not isinstance(array, NDArray):
                raise AutogradError(f"{type(self).__name__}: input {i} is a {type(array).__name__}, not an NDArray")
        with _scope(False, None):  # the inside is not recorded; training mode stays as it is
            result = self.forward(*inputs)
        outputs = [result] if isinstance(result, NDArray) else list(result)
        if not outputs or not all(isinstance(out, NDArray) for out in outputs):
            raise AutogradError(f"{type(self).__name__}.forward must return NDArray(s), got {result!r}")
        if not is_recording():
            return result
        if self._used:
            raise AutogradError(
                f"this {type(self).__name__} instance was already recorded once; "
                "create a new instance for each call (saved_tensors belongs to one call)"
            )
        if any(out is array for out in outputs for array in inputs):
            raise AutogradError(f"{type(self).__name__}.forward must return new arrays, not its inputs")
        self._used = True
        extra = {"function": self, "num_inputs": len(inputs), "num_outputs": len(outputs)}
        node = Node(_FUNCTION, NodeAttrs(f"{type(self).__name__.lower()}{next(_names)}", _FUNCTION, None, extra))
        node.inputs = [_entry_of(array) for array in inputs]
        node.info = _Recorded(list(inputs), outputs)
        for i, out in enumerate(outputs):
            out._entry = Entry(node, i)
        return result
