"""Looking at a symbol: a Graphviz drawing (``plot_network``) and a table of layers (``print_summary``).

Both walk the graph the way its JSON lists it: every node after its inputs
(:func:`~framework.operator.node.topo_sort`). With input shapes given, both first run shape
inference over ``symbol.get_internals()``, which gives the shape of every output of every
node by name (``fc1_output``, ``data``), and show each shape without its first (batch)
dimension.

``plot_network`` builds a ``graphviz.Digraph``: a DOT description of boxes and arrows.
Building it needs only the ``graphviz`` Python package; drawing it to a PDF or PNG
(``dot.render()``) needs the Graphviz ``dot`` program as well, and the browser UI renders
the DOT text (``dot.source``) by itself. Variables are ovals; operators are boxes
coloured by kind (convolution and fully-connected layers red, activations yellow,
normalisation purple, pooling blue, reshaping orange, everything else pink), labelled with
their key parameters (``Convolution\\n5x5/1, 20``); weights and biases are hidden by
default. Arrows point from a node back to its inputs (``dir=back``), labelled with the
shape flowing along them. A control-flow node (``_foreach``, ``_while_loop``, ``_cond``) gets
its subgraphs drawn the same way inside dashed clusters beside it (``<node>/body/<name>``),
with dashed arrows from each body output to the node. A subgraph node made by a library's
partitioner (``sym.optimize_for(backend)``) is drawn as a dashed group around the operators it runs.

``print_summary`` prints one row per layer: name and operator, output shape, parameter
count and the layers feeding it, then the total. The layout and the numbers are MXNet
1.9.1's, including its shortcuts, which a reader should know:

* parameters are counted for Convolution (``in_channels * num_filter / num_group *
  kernel`` + bias), FullyConnected (``(in_features + 1) * num_hidden``, or without the
  +1 when ``no_bias``), BatchNorm (gamma and beta: ``2 * channels``) and Embedding
  (``input_dim * output_dim``) only; every other operator counts 0;
* the "input features" of a layer are the sum of the second dimension of the layers
  feeding it, so a FullyConnected layer fed a 4-d tensor (without Flatten) counts only
  its channels, and a layer fed by a multi-output node (``SliceChannel``) counts 0;
* the variables listed are the first one (normally ``data``) only, and it is the only
  variable that counts as a previous layer.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from graphviz import Digraph

from .operator.control_flow import Subgraph, SubgraphParams
from .operator.node import Entry, Node, topo_sort
from .symbol import Symbol
from .symbol.json_format import attr_strings

__all__ = ["plot_network", "print_summary"]

# MXNet's palette (ColorBrewer Set3), in the order plot_network uses it.
_PALETTE = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69", "#fccde5")
_VARIABLE_COLOR = _PALETTE[0]
_OTHER_COLOR = _PALETTE[7]
_SUBGRAPH_COLOR = "#d9d9d9"
_OP_COLORS = {
    "Convolution": _PALETTE[1],
    "FullyConnected": _PALETTE[1],
    "Activation": _PALETTE[2],
    "LeakyReLU": _PALETTE[2],
    "BatchNorm": _PALETTE[3],
    "Pooling": _PALETTE[4],
    "Concat": _PALETTE[5],
    "Flatten": _PALETTE[5],
    "Reshape": _PALETTE[5],
    "Softmax": _PALETTE[6],
}
# Variables whose names end like this are parameters and auxiliary states, not data.
_WEIGHT_SUFFIXES = ("_weight", "_bias", "_beta", "_gamma")
_WEIGHT_SUFFIXES += ("_moving_var", "_moving_mean", "_running_var", "_running_mean")
# Operators whose later inputs only describe a shape: draw the first input only.
_FIRST_INPUT_ONLY = frozenset({"_contrib_BilinearResize2D"})
_DEFAULT_NODE_ATTRS = {"shape": "box", "fixedsize": "true", "width": "1.3", "height": "0.8034", "style": "filled"}


# ----------------------------------------------------------------------------- shared helpers
def _check_symbol(symbol: Any, who: str) -> None:
    if not isinstance(symbol, Symbol):
        raise TypeError(f"{who}: symbol must be a Symbol, got {type(symbol).__name__}")


def _digits(text: str) -> list[str]:
    """The numbers in a tuple attribute string: ``"(5, 5)"`` -> ``["5", "5"]``."""
    return re.findall(r"\d+", text)


def _output_name(entry: Entry) -> str:
    """The name ``get_internals().list_outputs()`` gives this entry (``fc1_output``, ``data``)."""
    return Symbol([entry]).list_outputs()[0]


def _op_name(node: Node) -> str:
    return "null" if node.is_variable else node.op.name


def _infer_internals(symbol: Symbol, kind: str, given: Mapping[str, Any], who: str) -> dict[str, Any]:
    """Shape (or type) of every output of every node, by output name, from the given inputs."""
    internals = symbol.get_internals()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        infer = internals.infer_shape if kind == "shape" else internals.infer_type
        _, values, _ = infer(**dict(given))
    if values is None:
        detail = "; ".join(str(w.message) for w in caught)
        raise ValueError(f"{who}: Input {kind} is incomplete (given {dict(given)}). {detail}")
    return dict(zip(internals.list_outputs(), values, strict=True))


def _shape_text(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape)


# ----------------------------------------------------------------------------- print_summary
def _print_row(fields: Sequence[Any], positions: Sequence[int]) -> None:
    """One table row: each field cut or padded so that the next starts at its position."""
    line = ""
    for field, end in zip(fields, positions, strict=True):
        line = (line + str(field))[:end]
        line += " " * (end - len(line))
    print(line)


def _layer_params(node: Node, attrs: dict[str, str], in_features: int, shapes: dict[str, Any] | None) -> int:
    """Trainable parameters of one layer, counted as MXNet's print_summary counts them."""
    op = _op_name(node)
    no_bias = attrs.get("no_bias") == "True"
    if op == "Convolution":
        num_filter = int(attrs["num_filter"])
        count = in_features * num_filter // int(attrs.get("num_group", "1"))
        count *= math.prod(int(k) for k in _digits(attrs["kernel"]))
        return count if no_bias else count + num_filter
    if op == "FullyConnected":
        return (in_features + (0 if no_bias else 1)) * int(attrs["num_hidden"])
    if op == "BatchNorm":  # gamma and beta; the moving statistics are not trained
        return 2 * int(shapes[f"{node.name}_output"][1]) if shapes is not None else 0
    if op == "Embedding":
        return int(attrs["input_dim"]) * int(attrs["output_dim"])
    return 0


def print_summary(
    symbol: Symbol,
    shape: Mapping[str, Sequence[int]] | None = None,
    line_length: int = 120,
    positions: Sequence[float] = (0.44, 0.64, 0.74, 1.0),
) -> None:
    """Print a table of the layers of ``symbol``: type, output shape, parameters, inputs; then the total.

    ``shape`` maps input names to shapes (``{"data": (64, 1, 28, 28)}``); without it the
    shapes column is empty and parameter counts that need shapes are 0. ``positions``
    are where the columns end, as fractions of ``line_length`` (or absolute when the last
    one is greater than 1).
    """
    _check_symbol(symbol, "print_summary")
    shapes = _infer_internals(symbol, "shape", shape, "print_summary") if shape is not None else None
    nodes = topo_sort(symbol.outputs)
    index = {node.id: i for i, node in enumerate(nodes)}
    # MXNet takes the set of numbers in the first head, [node index, output index, version];
    # in practice that holds node 0 (the data variable) and the output node.
    first = symbol.outputs[0]
    heads = {index[first.node.id], first.index, first.version}
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]

    def single_output_shape(node: Node) -> tuple | None:
        """The shape of ``node``'s output named ``<name>_output`` (or the variable's); None if unknown."""
        if shapes is None:
            return None
        return shapes.get(node.name if node.is_variable else f"{node.name}_output")

    print("_" * line_length)
    _print_row(["Layer (type)", "Output Shape", "Param #", "Previous Layer"], positions)
    print("=" * line_length)
    total = 0
    for i, node in enumerate(nodes):
        if node.is_variable and i > 0:
            continue
        previous, in_features = [], 0
        for e in [] if node.is_variable else node.inputs:
            if not e.node.is_variable or index[e.node.id] in heads:
                previous.append(e.node.name)
                in_shape = single_output_shape(e.node)
                if in_shape is not None and len(in_shape) > 1:
                    in_features += int(in_shape[1])
        out_shape = single_output_shape(node) if (not node.is_variable or i in heads) else None
        params = _layer_params(node, attr_strings(node), in_features, shapes)
        total += params
        fields = [f"{node.name}({_op_name(node)})", _shape_text(out_shape[1:] if out_shape else ()), params]
        _print_row([*fields, previous[0] if previous else ""], positions)
        for name in previous[1:]:
            _print_row(["", "", "", name], positions)
        print(("=" if i == len(nodes) - 1 else "_") * line_length)
    print(f"Total params: {total}")
    print("_" * line_length)


# ----------------------------------------------------------------------------- plot_network
def _node_label(node: Node, attrs: dict[str, str]) -> str:
    """The text in a node's box: the operator and its key parameters where MXNet shows them."""
    op = _op_name(node)
    if op == "Convolution":
        stride = "x".join(_digits(attrs["stride"])) if "stride" in attrs else "1"
        return f"Convolution\n{'x'.join(_digits(attrs['kernel']))}/{stride}, {attrs['num_filter']}"
    if op == "FullyConnected":
        return f"FullyConnected\n{attrs['num_hidden']}"
    if op == "Activation":
        return f"Activation\n{attrs['act_type']}"
    if op == "LeakyReLU":
        return f"LeakyReLU\n{attrs.get('act_type', 'Leaky')}"
    if op == "Pooling":
        kernel = "x".join(_digits(attrs["kernel"])) if "kernel" in attrs else "[]"
        stride = "x".join(_digits(attrs["stride"])) if "stride" in attrs else "1"
        return f"Pooling\n{attrs.get('pool_type', 'max')}, {kernel}/{stride}"
    if op == "Custom":
        return attrs["op_type"]
    return node.name


def _draw_subgraph_node(dot: Any, name: str, op: str, graph: Subgraph, style: dict[str, str]) -> None:
    """A subgraph node (``optimize_for`` with a partitioner) as a group: a dashed cluster holding
    the node itself, where the outer graph's arrows attach, and the operators of its subgraph."""
    nodes = topo_sort(graph.heads)
    number = {n.id: k for k, n in enumerate(nodes)}
    with dot.subgraph(name=f"cluster_{name}") as group:
        group.attr(label=f"{name} ({op})", style="dashed", color="#555555")
        group.node(name=name, label=f"{op}\n{name}", **{**style, "fillcolor": _SUBGRAPH_COLOR})
        for n in nodes:
            if n.is_variable:
                continue
            inner_style = {**style, "fillcolor": _OP_COLORS.get(n.op.name, _OTHER_COLOR)}
            group.node(name=f"{name}/{number[n.id]}", label=f"{_op_name(n)}\n{n.name}", **inner_style)
            for e in n.inputs:
                if not e.node.is_variable:
                    tail, head = f"{name}/{number[n.id]}", f"{name}/{number[e.node.id]}"
                    group.edge(tail_name=tail, head_name=head, dir="back", arrowtail="open")
        # the group's results come out of the subgraph node
        for e in graph.heads:
            if not e.node.is_variable:
                head = f"{name}/{number[e.node.id]}"
                group.edge(tail_name=name, head_name=head, dir="back", arrowtail="open", style="dotted")


def plot_network(
    symbol: Symbol,
    title: str = "plot",
    save_format: str = "pdf",
    shape: Mapping[str, Sequence[int]] | None = None,
    dtype: Mapping[str, Any] | None = None,
    node_attrs: Mapping[str, str] | None = None,
    hide_weights: bool = True,
) -> Any:
    """A ``graphviz.Digraph`` of ``symbol``: ``.source`` is the DOT text, ``.render()`` draws it.

    ``shape`` / ``dtype`` map input names to shapes / types and label every arrow with the
    shape (and type) flowing along it. ``node_attrs`` overrides Graphviz node attributes
    (``{"shape": "oval", "fixedsize": "false"}``). With ``hide_weights`` variables named
    ``*_weight``, ``*_bias``, ``*_gamma``, ... and their arrows are left out; without it
    their arrows are drawn to plain unnamed ovals.
    """
    _check_symbol(symbol, "plot_network")
    shapes = _infer_internals(symbol, "shape", shape, "plot_network") if shape is not None else None
    types = _infer_internals(symbol, "type", dtype, "plot_network") if dtype is not None else None
    nodes = topo_sort(symbol.outputs)
    names = [node.name for node in nodes]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        warnings.warn(
            "There are multiple variables with the same name in your graph, this may result in cyclic graph. "
            f"Repeated names: {','.join(repeated)}",
            RuntimeWarning,
            stacklevel=2,
        )
    base_attrs = {**_DEFAULT_NODE_ATTRS, **dict(node_attrs or {})}
    dot = Digraph(name=title, format=save_format)
    _draw(dot, nodes, "", base_attrs, hide_weights, shapes, types)
    return dot


#: What each subgraph of a control-flow operator is, in the order the node holds them.
_SUBGRAPH_ROLES = {"_foreach": ("body",), "_while_loop": ("cond", "func"), "_cond": ("cond", "then", "else")}


def _draw(
    dot: Any,
    nodes: list[Node],
    prefix: str,
    base_attrs: dict[str, str],
    hide_weights: bool,
    shapes: dict | None,
    types: dict | None,
) -> None:
    """Boxes and arrows of ``nodes`` (DOT names prefixed by ``prefix``); control-flow bodies as clusters."""
    hidden: set[str] = set()
    for node in nodes:
        attrs = attr_strings(node)
        style = dict(base_attrs)
        if node.is_variable:
            if node.name.endswith(_WEIGHT_SUFFIXES):
                if hide_weights:
                    hidden.add(node.name)
                continue  # not drawn; unless hidden, its arrows still lead to a default oval
            style["shape"] = "oval"
            style["fillcolor"] = _VARIABLE_COLOR
        else:
            style["fillcolor"] = _OP_COLORS.get(node.op.name, _OTHER_COLOR)
        parsed = node.attrs.parsed
        holds = isinstance(parsed, SubgraphParams) and parsed.holds_subgraphs()
        if holds and node.op.name not in _SUBGRAPH_ROLES:
            # a partitioner's subgraph node (its one subgraph in ``subgraphs``): a group around the operators it runs
            _draw_subgraph_node(dot, prefix + node.name, _op_name(node), parsed.subgraphs[0], style)
            continue
        dot.node(name=prefix + node.name, label=_node_label(node, attrs), **style)
        if holds:
            _draw_subgraphs(dot, node, prefix, base_attrs, hide_weights)

    for node in nodes:
        if node.is_variable:
            continue
        inputs = node.inputs[:1] if node.op.name in _FIRST_INPUT_ONLY else node.inputs
        for e in inputs:
            if e.node.name in hidden:
                continue
            label = ""
            key = _output_name(e)
            if shapes is not None:
                label = _shape_text(shapes[key][1:])
            if types is not None:
                label += f"({types[key].__name__})"
            dot.edge(
                tail_name=prefix + node.name, head_name=prefix + e.node.name, label=label, dir="back", arrowtail="open"
            )


def _draw_subgraphs(dot: Any, node: Node, prefix: str, base_attrs: dict[str, str], hide_weights: bool) -> None:
    """A loop's body (or a cond's branches) drawn inside a dashed cluster next to its node.

    Body nodes are named ``<node>/<role>/<name>`` (a body reads outer variables by their own
    names, which must not merge with the outer nodes); a dashed arrow leads from each body
    output to the control-flow node.
    """
    roles = _SUBGRAPH_ROLES.get(node.op.name, ())
    for k, graph in enumerate(node.attrs.parsed.subgraphs):
        role = roles[k] if k < len(roles) else f"subgraph{k}"
        inner_prefix = f"{prefix}{node.name}/{role}/"
        with dot.subgraph(name=f"cluster_{inner_prefix}") as cluster:
            cluster.attr(label=f"{node.name}: {role}", style="dashed")
            _draw(cluster, topo_sort(graph.heads), inner_prefix, base_attrs, hide_weights, None, None)
        for head in graph.heads:
            if head.node.is_variable and head.node.name.endswith(_WEIGHT_SUFFIXES) and hide_weights:
                continue
            dot.edge(
                tail_name=prefix + node.name,
                head_name=inner_prefix + head.node.name,
                style="dashed",
                dir="back",
                arrowtail="open",
            )
