"""What a bound symbol takes: its variables, the arrays given for them, their shapes.

Binding starts from a symbol (a list of head entries) and arrays given the way MXNet's
``bind`` accepts them: a list in ``list_arguments()`` order or a dict by name, and a
``grad_req`` as a string, list or dict. This module turns those into one list per
variable, in the symbol's order, and checks them (every message names the argument);
and it infers the shapes and dtypes of every variable from the ones given, which
``simple_bind`` and ``Executor.reshape`` need before any array exists.

It sits below the :class:`~framework.executor.executor.Executor` (which reads the
symbol's variables and runs inference on its own graphs) and :mod:`.binding` (which
parses the user's arguments), so both import it and it imports neither.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..base import MXLabError
from ..context import Context
from ..ndarray.ndarray import NDArray, normalize_dtype
from ..operator.node import Entry, Node
from . import infer as infer_pass
from .graph import IndexedGraph

#: The gradient requests ``bind`` accepts per argument.
GRAD_REQS = ("null", "write", "add")

Shape = tuple[int, ...]
_Value = TypeVar("_Value")  # a shape or a dtype name
#: Arrays for a list of variables, as ``bind`` accepts them: in order, or by name.
ArraysArg = Sequence[NDArray | None] | Mapping[str, NDArray]
#: A gradient request for every argument, per argument in order, or by name.
GradReqArg = str | Sequence[str] | Mapping[str, str]


class ExecutorError(MXLabError, ValueError):
    """Bad arguments to bind, forward or backward (the message names the argument)."""


class UnknownArgumentError(ExecutorError, TypeError):
    """``forward(**kwargs)`` was given a name that is not an argument (MXNet: TypeError)."""


# ----------------------------------------------------------------------------- symbol access
def head_entries(symbol: Any) -> list[Entry]:
    """The head entries of a Symbol (or of a list of entries)."""
    outputs = getattr(symbol, "outputs", symbol)
    if isinstance(outputs, Entry):
        outputs = [outputs]
    outputs = list(outputs)
    if not outputs or not all(isinstance(e, Entry) for e in outputs):
        raise ExecutorError(f"bind: expected a Symbol (or a list of Entry), got {type(symbol).__name__}")
    return outputs


def output_names(symbol: Any, heads: list[Entry]) -> list[str]:
    """The names of the heads: the symbol's ``list_outputs()``, or ``<node>_<output>``."""
    lister = getattr(symbol, "list_outputs", None)
    if callable(lister):
        return list(lister())
    names = []
    for e in heads:
        node = e.node
        if node.op is None:  # a variable
            names.append(node.name)
        else:
            out_names = node.op.list_output_names(node.attrs)
            names.append(f"{node.name}_{out_names[e.index]}")
    return names


def variable_nodes(symbol: Any, graph: IndexedGraph) -> tuple[list[Node], list[Node]]:
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
def infer_entries(graph: IndexedGraph, shapes: list[Shape | None], dtypes: list[str | None]) -> None:
    """Shape and type inference to a fixed point over ``graph``, in place on the per-entry lists."""
    _infer_into(graph, shapes, infer_pass.infer_shapes)
    _infer_into(graph, dtypes, infer_pass.infer_types)


def _infer_into(graph: IndexedGraph, values: list[_Value | None], run: Callable[..., dict[Any, Any]]) -> None:
    """One inference pass (shapes or dtypes) from the known values of ``values``, written back into it."""
    known: dict[infer_pass.KnownKey, Any] = {
        graph.entry(eid): value for eid, value in enumerate(values) if value is not None
    }
    table = run(graph.heads, known, nodes=graph.nodes)
    for eid in range(graph.num_entries):
        e = graph.entry(eid)
        values[eid] = table.get((e.node.id, e.index), values[eid])


def is_known_shape(shape: Shape | None) -> bool:
    return shape is not None and 0 not in shape


def value_shaped_reason(graph: IndexedGraph) -> str:
    """Why some shapes cannot be known before running, when operators of the graph say so ('' if not).

    An operator registered with ``set_shape_from_values`` (``_contrib_boolean_mask``) has an
    output shape that depends on its input values, which a bound graph must know in advance to
    plan its memory; MXNet's graph executor refuses such operators too.
    """
    ops = [(n.name, n.op) for n in graph.nodes if n.op is not None and n.op.shape_from_values is not None]
    if not ops:
        return ""
    named = ", ".join(f"{name} ({op.name})" for name, op in ops)
    return (
        f"; the output shape of {named} depends on the values of its inputs, which a bound graph "
        "cannot know before it runs: call the operator imperatively (mx.nd) instead"
    )


# ----------------------------------------------------------------------------- argument parsing
def ordered_arrays(value: ArraysArg | None, names: list[str], what: str, allow_missing: bool) -> list[Any]:
    """Arrays given as a list (in order) or a dict (by name), as MXNet's ``bind`` accepts."""
    if value is None:
        if allow_missing:
            return [None] * len(names)
        raise ExecutorError(f"bind: {what} is required ({len(names)} arrays for {names})")
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(names))
        if unknown and what != "args_grad":
            raise ExecutorError(f"bind: {what} names {unknown}, which are not among {names}")
        result: list[Any] = []
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


def parse_grad_reqs(grad_req: GradReqArg, names: list[str]) -> list[str]:
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


def check_array(array: Any, name: str, what: str, ctx: Context) -> NDArray:
    if not isinstance(array, NDArray):
        raise ExecutorError(f"bind: {what} {name!r} must be an NDArray, got {type(array).__name__}")
    if array.context != ctx:
        raise ExecutorError(f"bind: {what} {name!r} is on {array.context}, but the executor is bound to {ctx}")
    return array


# ----------------------------------------------------------------------------- variable inference
def infer_variable_shapes(
    symbol: Any, shapes: Mapping[str, Sequence[int]], types: Mapping[str, Any] | None = None
) -> tuple[dict[str, Shape], dict[str, Shape]]:
    """Shapes of every argument and auxiliary state from the given ones (simple_bind, reshape)."""
    arg_shapes, aux_shapes, _, _ = infer_variables(symbol, shapes, types or {})
    return arg_shapes, aux_shapes


def infer_variables(
    symbol: Any, shapes: Mapping[str, Sequence[int]], types: Mapping[str, Any]
) -> tuple[dict[str, Shape], dict[str, Shape], dict[str, str], dict[str, str]]:
    """Shapes and dtypes (arguments, auxiliary states) from the given ones, by inference over the graph."""
    heads = head_entries(symbol)
    graph = IndexedGraph(heads)
    arg_nodes, aux_nodes = variable_nodes(symbol, graph)
    names = [n.name for n in arg_nodes + aux_nodes]
    unknown = sorted(set(shapes) - set(names))
    if unknown:
        raise ExecutorError(f"simple_bind: {unknown} are not arguments or auxiliary states of the symbol ({names})")
    unknown = sorted(set(types) - set(names))
    if unknown:
        raise ExecutorError(f"simple_bind: type_dict names {unknown}, which are not arguments ({names})")
    n = graph.num_entries
    shape_vals: list[Shape | None] = [None] * n
    type_vals: list[str | None] = [None] * n
    for node in arg_nodes + aux_nodes:
        eid = graph.entry_id(node, 0)
        if node.name in shapes:
            shape_vals[eid] = tuple(int(d) for d in shapes[node.name])
        if node.name in types:
            type_vals[eid] = normalize_dtype(types[node.name], f"simple_bind type_dict[{node.name!r}]").name
    infer_entries(graph, shape_vals, type_vals)
    for node in arg_nodes + aux_nodes:  # MXNet's default dtype for what nothing determines
        eid = graph.entry_id(node, 0)
        if type_vals[eid] is None:
            type_vals[eid] = "float32"
    infer_entries(graph, shape_vals, type_vals)
    missing = [n.name for n in arg_nodes + aux_nodes if not is_known_shape(shape_vals[graph.entry_id(n, 0)])]
    if missing:
        raise ExecutorError(
            f"simple_bind: cannot infer the shape of {missing} from the shapes given "
            f"({dict(shapes)}); pass their shapes as keyword arguments" + value_shaped_reason(graph)
        )

    def take(nodes: list[Node], values: list) -> dict[str, Any]:
        return {node.name: values[graph.entry_id(node, 0)] for node in nodes}

    return (
        take(arg_nodes, shape_vals),
        take(aux_nodes, shape_vals),
        take(arg_nodes, type_vals),
        take(aux_nodes, type_vals),
    )


def check_group2ctx(group2ctx: Mapping[str, Context] | None, ctx: Context) -> None:
    if not group2ctx:
        return
    others = sorted({str(c) for c in group2ctx.values() if c != ctx})
    if others:
        raise ExecutorError(
            f"bind: group2ctx places groups on {others}, but MXLab's executor runs a graph on one context ({ctx})"
        )
