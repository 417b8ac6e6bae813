"""``mx.sym.contrib.foreach``, ``while_loop`` and ``cond``: control flow as nodes holding subgraphs.

Each front end calls the user's Python function once, on new variables standing for the
per-step values (a data slice, the states, the loop variables), and so records the body as a
graph. That graph is then *cut* out of the surrounding symbol: nodes the function created
(node ids at or after a marker taken before the call) are copied into the subgraph, and
whatever they read from outside (a weight variable, another layer's output) becomes an input
of the control-flow node and a variable of the subgraph. Location parameters
(``in_data_locs``, ``func_input_locs``, ...) record which node input feeds which subgraph input,
as MXNet's do, so the JSON of these nodes is MXNet's.
"""

from __future__ import annotations

from typing import Any

from ..operator import registry
from ..operator.control_flow import Subgraph
from ..operator.control_flow.structure import (
    ControlFlowError,
    check_callable,
    check_same_count,
    check_while_loop_args,
    flatten,
    regroup,
    split_pair,
)
from ..operator.node import Entry, Node, NodeAttrs, variable
from . import naming
from .graph import output_name
from .symbol import Symbol, create_symbol


def _is_symbol(value: Any) -> bool:
    return isinstance(value, Symbol)


def _entries(leaves: list[Symbol]) -> list[Entry]:
    return [e for leaf in leaves for e in leaf.outputs]


def _locations(values: list[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"  # MXNet's Tuple format in JSON


class _Cutter:
    """Cuts subgraphs out of the graph built by a front end's function calls.

    ``inputs`` collects the control-flow node's inputs; ``fixed`` maps the ids of the variables
    standing for per-step values to the node input that feeds them.
    """

    def __init__(self, marker: int, inputs: list[Entry], fixed: dict[int, int]) -> None:
        self.marker = marker
        self.inputs = inputs
        self.fixed = fixed
        self._outer: dict[tuple[int, int], int] = {}

    def _outer_input(self, entry: Entry) -> int:
        key = (entry.node.id, entry.index)
        if key not in self._outer:
            self._outer[key] = len(self.inputs)
            self.inputs.append(entry)
        return self._outer[key]

    def cut(self, heads: list[Entry]) -> tuple[Subgraph, list[int]]:
        """The subgraph computing ``heads``, and per subgraph input the node input feeding it."""
        inner: dict[int, Node] = {}
        stack = [e.node for e in heads]
        while stack:
            node = stack.pop()
            if node.id in inner or node.id < self.marker or node.id in self.fixed or node.is_variable:
                continue  # variables (even ones the function created, e.g. a Gluon weight) are read from outside
            inner[node.id] = node
            stack.extend(e.node for e in node.inputs)
        source: dict[int, int] = dict(self.fixed)  # subgraph variable id -> node input
        cut_vars: dict[tuple[int, int], Node] = {}
        copies: dict[int, Node] = {}

        def convert(entry: Entry) -> Entry:
            node = entry.node
            if node.id in self.fixed:
                return entry
            if node.id in copies:
                return Entry(copies[node.id], entry.index, entry.version)
            if node.is_variable:  # a variable of the outer graph: the subgraph reads it by the same node
                source[node.id] = self._outer_input(entry)
                return entry
            key = (node.id, entry.index)
            if key not in cut_vars:  # an outer operator's output becomes a variable of the subgraph
                cut_vars[key] = variable(output_name(entry))
                source[cut_vars[key].id] = self._outer_input(entry)
            return Entry(cut_vars[key], 0)

        for node_id in sorted(inner):  # ids grow with creation: inputs come first
            node = inner[node_id]
            attrs = node.attrs
            copy = Node(node.op, NodeAttrs(attrs.name, attrs.op, attrs.parsed, dict(attrs.extra)))
            copy.inputs = [convert(e) for e in node.inputs]
            copy.control_deps = [copies[d.id] for d in node.control_deps if d.id in copies]
            copies[node_id] = copy
        graph = Subgraph([_not_a_variable(convert(e)) for e in heads])
        return graph, [source[n.id] for n in graph.inputs]


def _not_a_variable(head: Entry) -> Entry:
    """A subgraph output that is one of its inputs goes through ``_copy`` (``identity<n>``), as MXNet does."""
    if not head.node.is_variable:
        return head
    return create_symbol("_copy", "identity", [Symbol([head])], {}).outputs[0]


def _marker() -> int:
    """The id the next node will get: nodes created from now on belong to the body."""
    return variable("_control_flow_marker").id + 1


def _make_node(op_name: str, hint: str, name: str | None, params: dict[str, str], graphs: list, inputs: list) -> Node:
    op = registry.get(op_name)
    parsed = op.params.parse(op_name, params).with_subgraphs(graphs)
    node_name = naming.current().get(name, hint)
    return Node(op, NodeAttrs(node_name, op, parsed, dict(params)), list(inputs))


def _position(graph: Subgraph, node: Node, what: str) -> int:
    for i, n in enumerate(graph.inputs):
        if n is node:
            return i
    raise ControlFlowError(
        f"{what} is not used by the function; MXLab's symbolic control flow needs every per-step value "
        "to be read by the body (use it, or leave it out)"
    )


def foreach(body: Any, data: Any, init_states: Any, name: str = "foreach") -> tuple[Any, Any]:
    """A ``_foreach`` node running ``body(data[t], states) -> (outputs, states)`` along axis 0 of ``data``."""
    check_callable(body, "foreach: body")
    data_leaves, data_structure = flatten(data, _is_symbol, "foreach: data")
    state_leaves, state_structure = flatten(init_states, _is_symbol, "foreach: init_states")
    data_entries, state_entries = _entries(data_leaves), _entries(state_leaves)
    if not data_entries:
        raise ControlFlowError("foreach: data must hold at least one Symbol")
    marker = _marker()
    data_vars = [variable(f"{name}_data{i}") for i in range(len(data_entries))]
    state_vars = [variable(f"{name}_state{j}") for j in range(len(state_entries))]
    to_symbol = [Symbol([Entry(v, 0)]) for v in data_vars + state_vars]
    outs, new_states = split_pair(
        body(
            regroup(to_symbol[: len(data_vars)], data_structure), regroup(to_symbol[len(data_vars) :], state_structure)
        ),
        "foreach: body",
    )
    out_leaves, out_structure = flatten([] if outs is None else outs, _is_symbol, "foreach: the body's outputs")
    new_leaves, _ = flatten(new_states, _is_symbol, "foreach: the body's states")
    out_entries, new_entries = _entries(out_leaves), _entries(new_leaves)
    check_same_count(state_entries, new_entries, "foreach: the number of states")
    inputs = list(data_entries) + list(state_entries)
    fixed = {v.id: i for i, v in enumerate(data_vars + state_vars)}
    graph, sources = _Cutter(marker, inputs, fixed).cut(out_entries + new_entries)
    n_fixed = len(fixed)
    params = {
        "num_args": str(len(inputs) + 1),
        "num_outputs": str(len(out_entries) + len(new_entries)),
        "num_out_data": str(len(out_entries)),
        "in_data_locs": _locations([_position(graph, v, f"foreach: data {i}") for i, v in enumerate(data_vars)]),
        "in_state_locs": _locations([_position(graph, v, f"foreach: state {j}") for j, v in enumerate(state_vars)]),
        "remain_locs": _locations([sources.index(k) for k in range(n_fixed, len(inputs))]),
    }
    node = _make_node("_foreach", "_foreach", name if name != "foreach" else None, params, [graph], inputs)
    outputs = [Symbol([Entry(node, k)]) for k in range(len(out_entries))]
    states = [Symbol([Entry(node, len(out_entries) + j)]) for j in range(len(new_entries))]
    return (regroup(outputs, out_structure) if outputs else []), regroup(states, state_structure)


def while_loop(
    cond: Any, func: Any, loop_vars: Any, max_iterations: int | None = None, name: str = "while_loop"
) -> tuple[Any, Any]:
    """A ``_while_loop`` node: ``func(*loop_vars) -> (outputs, new_loop_vars)`` while ``cond(*loop_vars)``."""
    check_while_loop_args(cond, func, max_iterations)
    var_leaves, var_structure = flatten(loop_vars, _is_symbol, "while_loop: loop_vars")
    var_entries = _entries(var_leaves)
    marker = _marker()
    variables = [variable(f"{name}_var{j}") for j in range(len(var_entries))]
    as_symbols = [Symbol([Entry(v, 0)]) for v in variables]
    flag = cond(*as_symbols)
    if not isinstance(flag, Symbol) or len(flag.outputs) != 1:
        raise ControlFlowError(f"while_loop: cond must return a Symbol with one output, got {flag!r:.60}")
    outs, new_vars = split_pair(func(*as_symbols), "while_loop: func")
    out_leaves, out_structure = flatten([] if outs is None else outs, _is_symbol, "while_loop: func's outputs")
    new_leaves, _ = flatten(new_vars, _is_symbol, "while_loop: func's loop variables")
    out_entries, new_entries = _entries(out_leaves), _entries(new_leaves)
    check_same_count(var_entries, new_entries, "while_loop: the number of loop variables")
    inputs = list(var_entries)
    cutter = _Cutter(marker, inputs, {v.id: j for j, v in enumerate(variables)})
    cond_graph, cond_sources = cutter.cut(flag.outputs)
    func_graph, func_sources = cutter.cut(out_entries + new_entries)
    params = {
        "num_args": str(len(inputs) + 2),
        "num_outputs": str(len(out_entries) + len(new_entries)),
        "num_out_data": str(len(out_entries)),
        "max_iterations": str(max_iterations),
        "cond_input_locs": _locations(cond_sources),
        "func_input_locs": _locations(func_sources),
        "func_var_locs": _locations(
            [_position(func_graph, v, f"while_loop: loop variable {j}") for j, v in enumerate(variables)]
        ),
    }
    hint_name = name if name != "while_loop" else None
    node = _make_node("_while_loop", "_while_loop", hint_name, params, [cond_graph, func_graph], inputs)
    outputs = [Symbol([Entry(node, k)]) for k in range(len(out_entries))]
    final = [Symbol([Entry(node, len(out_entries) + j)]) for j in range(len(new_entries))]
    return (regroup(outputs, out_structure) if outputs else []), regroup(final, var_structure)


def cond(pred: Any, then_func: Any, else_func: Any, name: str = "cond") -> Any:
    """A ``_cond`` node: ``then_func()`` where the one-element ``pred`` is non-zero, else ``else_func()``."""
    check_callable(then_func, "cond: then_func")
    check_callable(else_func, "cond: else_func")
    if not isinstance(pred, Symbol) or len(pred.outputs) != 1:
        raise ControlFlowError(f"cond: pred must be a Symbol with one output, got {pred!r:.60}")
    marker = _marker()
    then_leaves, structure = flatten(then_func(), _is_symbol, "cond: then_func's outputs")
    else_leaves, _ = flatten(else_func(), _is_symbol, "cond: else_func's outputs")
    then_entries, else_entries = _entries(then_leaves), _entries(else_leaves)
    if len(then_entries) != len(else_entries):
        raise ControlFlowError(
            f"cond: then_func returns {len(then_entries)} outputs but else_func returns {len(else_entries)}"
        )
    inputs: list[Entry] = []
    cutter = _Cutter(marker, inputs, {})
    graphs, sources = zip(*(cutter.cut(heads) for heads in (pred.outputs, then_entries, else_entries)), strict=True)
    params = {
        "num_args": str(len(inputs) + 3),
        "num_outputs": str(len(then_entries)),
        "cond_input_locs": _locations(sources[0]),
        "then_input_locs": _locations(sources[1]),
        "else_input_locs": _locations(sources[2]),
    }
    node = _make_node("_cond", "_cond", name if name != "cond" else None, params, list(graphs), inputs)
    return regroup([Symbol([Entry(node, k)]) for k in range(len(then_entries))], structure)


#: The functions ``mx.sym.contrib`` gains (by name).
FUNCTIONS = {"foreach": foreach, "while_loop": while_loop, "cond": cond}
