"""Symbol JSON: MXNet 1.x's file format for graphs, written and read byte for byte alike.

A graph is saved as its nodes in topological order (every node after its inputs)::

    {
      "nodes": [
        {"op": "null", "name": "data", "inputs": []},
        {"op": "FullyConnected", "name": "fc1", "attrs": {"num_hidden": "32"},
         "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]},
        ...
      ],
      "arg_nodes": [0, 1, 2],          indices of the variables (auxiliary states too)
      "node_row_ptr": [0, 1, 2, 3, 4], prefix sums of each node's number of outputs
      "heads": [[3, 0, 0]],            the graph's outputs
      "attrs": {"mxnet_version": ["int", 10901]}
    }

An input is ``[node index, output index, version]`` (the version counts writes to a
variable: BatchNorm's moving mean is read as version 1). Attribute values are strings:
the operator's parameters as the caller gave them, plus hidden ones (``__shape__``,
``__lr_mult__``, ...). ``to_json`` reproduces dmlc's ``JSONWriter`` layout (containers of
more than 10 numbers or of objects go on several lines; ", " ends each item), so a graph
built here gives the same text as the same graph built in MXNet.

Reading also accepts files older than MXNet 0.9 (``param`` / ``attr`` instead of
``attrs``, no ``mxnet_version``, auxiliary states missing from the graph) and upgrades
them the way MXNet's ``legacy_json_util.cc`` does (hidden keys renamed, missing
auxiliary states created, BatchNorm's statistics given their initializers).
"""

from __future__ import annotations

import json
from typing import Any

from ..base import MXLabError
from ..operator import registry
from ..operator.control_flow import Subgraph, SubgraphParams
from ..operator.node import Entry, Node, NodeAttrs, topo_sort
from ..operator.params import REQUIRED, NoParams, OperatorParamError
from ..operator.registry import OperatorError
from ..shape_mode import is_np_shape
from .graph import VAR_VERSIONS

#: The version this format is written as (MXNet 1.9.1).
MXNET_VERSION = 10901
#: Attributes MXNet stores as ``__key__`` but also shows as ``key`` (c_api_symbolic.cc).
HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")


# MXNet's FSetInputVarAttrOnCompose: attributes an operator puts on its variable inputs
# when it is composed (unless already set). The batch norms ask for their moving statistics to
# be initialised with zeros and ones, PReLU for its gamma to start at 0.25 (not at the ones a
# "_gamma" name would get), the KL sparseness penalty for its moving average to start at zero.
# The operator registry has no such attribute yet.
INPUT_VAR_ATTRS: dict[str, dict[int, dict[str, str]]] = {
    "BatchNorm": {3: {"__init__": '["zero", {}]'}, 4: {"__init__": '["one", {}]'}},
    "BatchNorm_v1": {3: {"__init__": '["zero", {}]'}, 4: {"__init__": '["one", {}]'}},
    "_contrib_BatchNormWithReLU": {3: {"__init__": '["zero", {}]'}, 4: {"__init__": '["one", {}]'}},
    "LeakyReLU": {1: {"__init__": '["Constant", {"value": 0.25}]'}},  # prelu's gamma
    "IdentityAttachKLSparseReg": {1: {"__init__": '["zero", {}]'}},
}


def set_input_var_attrs(op: registry.OpDef, inputs: list[Entry]) -> None:
    """Give ``op``'s variable inputs the attributes it asks for (see INPUT_VAR_ATTRS)."""
    for index, attrs in INPUT_VAR_ATTRS.get(op.name, {}).items():
        if index < len(inputs) and inputs[index].node.is_variable:
            for key, value in attrs.items():
                inputs[index].node.attrs.extra.setdefault(key, value)


class SymbolJSONError(MXLabError, ValueError):
    """A symbol JSON document is malformed or names something MXLab does not have."""


# ---------------------------------------------------------------------------- attributes
def attr_strings(node: Node) -> dict[str, str]:
    """Every attribute of ``node`` as the strings JSON stores.

    Nodes built by ``mx.sym`` or read from JSON keep the strings they were given in
    ``attrs.extra`` (as NNVM's ``attrs.dict``); nodes built elsewhere (autograd, gradient
    pass) only have parsed parameters, so those that are required or differ from their
    default are written out.
    """
    strings = dict(node.attrs.extra)
    parsed = node.attrs.parsed
    if isinstance(parsed, SubgraphParams) and parsed.holds_subgraphs() and parsed.subgraph_attribute:
        strings.pop(parsed.subgraph_attribute, None)  # the subgraph is written as ``subgraphs``
    if node.op is not None and parsed is not None:
        for name, field in node.op.params.fields.items():
            if name in strings:
                continue
            value = getattr(parsed, name)
            if field.default is REQUIRED or value != field.default:
                strings[name] = field.format(value)
    return strings


# ---------------------------------------------------------------------------- writing
class _Writer:
    """dmlc::JSONWriter's layout: two-space indent, ", " between items, newline when multi-line."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.scopes: list[list] = []  # [multi_line, item count]

    def _separator(self) -> None:
        if not self.scopes or self.scopes[-1][0]:
            self.parts.append("\n" + "  " * len(self.scopes))

    def _item(self) -> None:
        if self.scopes[-1][1]:
            self.parts.append(", ")
        self._separator()
        self.scopes[-1][1] += 1

    def begin(self, bracket: str, multi_line: bool) -> None:
        self.parts.append(bracket)
        self.scopes.append([multi_line, 0])

    def end(self, bracket: str) -> None:
        multi_line, count = self.scopes.pop()
        if multi_line and count:
            self._separator()
        self.parts.append(bracket)

    def key(self, name: str) -> None:
        self._item()
        self.parts.append(json.dumps(name, ensure_ascii=False) + ": ")

    def array_item(self) -> None:
        self._item()

    def scalar(self, value: Any) -> None:
        self.parts.append(json.dumps(value, ensure_ascii=False))

    def ints(self, values: list[int]) -> None:
        self.begin("[", len(values) > 10)
        for v in values:
            self.array_item()
            self.scalar(int(v))
        self.end("]")

    def entries(self, values: list[list[int]]) -> None:
        self.begin("[", len(values) > 10)
        for entry in values:
            self.array_item()
            self.ints(entry)
        self.end("]")

    def strings(self, mapping: dict[str, str]) -> None:
        self.begin("{", len(mapping) > 1)
        for k in sorted(mapping):
            self.key(k)
            self.scalar(mapping[k])
        self.end("}")

    def text(self) -> str:
        return "".join(self.parts)


def _write_graph(w: _Writer, outputs: list[Entry]) -> None:
    """The keys of one graph object (``nodes`` to ``heads``); a control-flow node's subgraphs nest inside it."""
    order = topo_sort(list(outputs))
    index = {node.id: i for i, node in enumerate(order)}
    w.key("nodes")
    w.begin("[", True)
    for node in order:
        w.array_item()
        w.begin("{", True)
        w.key("op")
        w.scalar("null" if node.op is None else node.op.name)
        w.key("name")
        w.scalar(node.name)
        attrs = attr_strings(node)
        if attrs:
            w.key("attrs")
            w.strings(attrs)
        w.key("inputs")
        w.entries([[index[e.node.id], e.index, e.version] for e in node.inputs])
        if node.control_deps:
            w.key("control_deps")
            w.ints([index[d.id] for d in node.control_deps])
        if isinstance(node.attrs.parsed, SubgraphParams) and node.attrs.parsed.holds_subgraphs():
            w.key("subgraphs")
            w.begin("[", True)
            for graph in node.attrs.parsed.subgraphs:
                w.array_item()
                w.begin("{", True)
                _write_graph(w, graph.heads)
                w.end("}")
            w.end("]")
        w.end("}")
    w.end("]")
    w.key("arg_nodes")
    w.ints([i for i, node in enumerate(order) if node.is_variable])
    row_ptr = [0]
    for node in order:
        row_ptr.append(row_ptr[-1] + node.num_outputs())
    w.key("node_row_ptr")
    w.ints(row_ptr)
    w.key("heads")
    w.entries([[index[e.node.id], e.index, e.version] for e in outputs])


def to_json(outputs: list[Entry]) -> str:
    """The MXNet 1.x JSON text of the graph whose outputs are ``outputs``."""
    w = _Writer()
    w.begin("{", True)
    _write_graph(w, outputs)
    # The graph's own attributes, sorted by key as MXNet writes them: the version that wrote the
    # file, and is_np_shape when NumPy shape semantics were on (a 0 in a shape is then a size).
    graph_attrs = {"mxnet_version": MXNET_VERSION}
    if is_np_shape():
        graph_attrs["is_np_shape"] = 1
    w.key("attrs")
    w.begin("{", len(graph_attrs) > 1)
    for key in sorted(graph_attrs):
        w.key(key)
        w.begin("[", False)
        w.array_item()
        w.scalar("int")
        w.array_item()
        w.scalar(graph_attrs[key])
        w.end("]")
    w.end("}")
    w.end("}")
    return w.text()


# ---------------------------------------------------------------------------- reading
#: A node may have a few more inputs than the file lists (pre-0.9 files omit auxiliary
#: states); an operator claiming far more is a corrupt count, refused before listing names.
_MAX_MISSING_INPUTS = 8


class SymbolJSONParamError(SymbolJSONError, OperatorParamError):
    """A node's operator parameters in a symbol JSON document are invalid."""


def _fail(message: str) -> SymbolJSONError:
    return SymbolJSONError(message)


def _read_entry(raw: Any, where: str, nodes: list[Node]) -> tuple[int, int, int]:
    """``[node, index, version]`` naming an output of an earlier node that exists."""
    if not isinstance(raw, list) or len(raw) not in (2, 3) or not all(type(v) is int for v in raw):
        raise _fail(f"{where} must be [node, index, version], got {raw!r:.80}")
    node_id, index = raw[0], raw[1]
    version = raw[2] if len(raw) == 3 else 0
    if not 0 <= node_id < len(nodes):
        raise _fail(f"{where} refers to node {node_id}, which is not an earlier node")
    node = nodes[node_id]
    if not 0 <= index < node.num_outputs():
        raise _fail(f"{where} is output {index} of {node.name!r}, which has {node.num_outputs()} output(s)")
    if version < 0:
        raise _fail(f"{where} has version {version}; versions count writes and are >= 0")
    return node_id, index, version


def _read_attrs(raw: dict, where: str) -> dict[str, str]:
    """A node's attribute strings, from ``attrs`` (0.9 and later) or ``param`` + ``attr``."""
    attrs: dict[str, str] = {}
    for key in ("param", "attr", "attrs"):
        value = raw.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise _fail(f"{where}.{key}: {key!r} must be an object of strings")
        for k, v in value.items():
            if isinstance(v, dict | list):
                raise _fail(f"{where}.{key}.{k}: attribute values are strings, got {type(v).__name__}")
            attrs[k] = str(v)
    return attrs


def _upgrade_hidden_keys(name: str, attrs: dict[str, str]) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Before 0.9, ``lr_mult`` was stored plainly and ``weight_lr_mult`` meant input weight's.

    Returns the node's attributes with ``key`` renamed ``__key__``, and attributes to move
    onto inputs (by input name).
    """
    kept: dict[str, str] = {}
    for_inputs: dict[str, dict[str, str]] = {}
    for key, value in attrs.items():
        hidden = next(
            (h for h in HIDDEN_KEYS if key == h or (key.endswith("_" + h) and not key.startswith("__"))), None
        )
        if hidden is None:
            kept[key] = value
        elif key == hidden:
            kept[f"__{hidden}__"] = value
        else:
            for_inputs.setdefault(key[: -len(hidden) - 1], {})[f"__{hidden}__"] = value
    return kept, for_inputs


def _parse_node_attrs(
    op: registry.OpDef, name: str, i: int, attrs: dict[str, str], subgraphs: list[Subgraph] | None = None
) -> NodeAttrs:
    params: dict[str, Any] = {k: v for k, v in attrs.items() if not (k.startswith("__") and k.endswith("__"))}
    if op.params is NoParams:  # an operator without parameters keeps any attribute (creation.py)
        params = {}
    if subgraphs is not None:  # parsed with the parameters: a library's parseAttrs sees them
        params["subgraphs"] = subgraphs
    try:
        parsed = op.params.parse(op.name, params)
    except OperatorParamError as err:
        raise SymbolJSONParamError(f"nodes[{i}].attrs: node #{i} ({name!r}): {err}") from None
    return NodeAttrs(name, op, parsed, dict(attrs))


def from_json(text: str, source: str | None = None) -> tuple[list[Entry], dict[int, int]]:
    """Read a graph: its output entries, and the highest version seen per variable node id.

    Every problem raises :class:`SymbolJSONError` naming ``source`` (the file, if any) and the
    JSON path of the offending value (``nodes[3].inputs[0]``), whatever went wrong inside.
    """
    prefix = "symbol JSON" + (f" file {source!r}" if source else "")
    position = ["the document"]  # where reading is, for errors nobody anticipated
    try:
        return _from_json(text, position)
    except SymbolJSONError as err:
        raise type(err)(f"{prefix}: {err}") from None
    except RecursionError:
        raise SymbolJSONError(f"{prefix}: {position[0]}: nested too deeply to read") from None
    except Exception as err:  # a malformed value an operator's own code tripped over
        raise SymbolJSONError(f"{prefix}: {position[0]}: cannot read it ({type(err).__name__}: {err})") from err


def read_graph(text: str, source: str | None = None) -> list[Entry]:
    """The output entries of the graph in ``text``, its variables' versions recorded in ``VAR_VERSIONS``.

    Recording the versions is what lets later node creation read a mutated variable (an
    auxiliary state) at its current version, as in a graph built in this process.
    """
    outputs, versions = from_json(text, source=source)
    VAR_VERSIONS.update(versions)
    return outputs


def _from_json(text: str, position: list[str]) -> tuple[list[Entry], dict[int, int]]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise _fail(f"not valid JSON ({err})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list):
        raise _fail("expected an object with a 'nodes' list")
    version = 800  # files without a version were written before MXNet 0.9
    top_attrs = doc.get("attrs") or {}
    mx_version = top_attrs.get("mxnet_version") if isinstance(top_attrs, dict) else None
    if isinstance(mx_version, list) and len(mx_version) == 2 and type(mx_version[1]) is int:
        version = mx_version[1]

    return _read_graph(doc, position, version, "")


def _read_graph(doc: dict, position: list[str], version: int, path: str) -> tuple[list[Entry], dict[int, int]]:
    """The output entries and variable versions of one graph object; ``path`` prefixes nested ones."""
    legacy = version < MXNET_VERSION
    raw_nodes = doc["nodes"]
    nodes: list[Node] = []
    versions: dict[int, int] = {}
    for i, raw in enumerate(raw_nodes):
        where = position[0] = f"{path}nodes[{i}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("op"), str) or not isinstance(raw.get("name"), str):
            raise _fail(f"{where}: node #{i} must be an object with string 'op' and 'name', got {raw!r:.80}")
        op_name, name = raw["op"], raw["name"]
        attrs = _read_attrs(raw, where)
        for_inputs: dict[str, dict[str, str]] = {}
        if legacy:
            attrs, for_inputs = _upgrade_hidden_keys(name, attrs)
        raw_inputs = raw.get("inputs", [])
        if not isinstance(raw_inputs, list):
            raise _fail(f"{where}.inputs: node #{i} ({name!r}): 'inputs' must be a list")
        inputs = []
        for j, item in enumerate(raw_inputs):
            label = f"{where}.inputs[{j}]: node #{i} ({name!r}) input {j}"
            node_id, index, entry_version = _read_entry(item, label, nodes)
            inputs.append(Entry(nodes[node_id], index, entry_version))
        if op_name == "null":
            node = Node(None, NodeAttrs(name, None, None, attrs))
            if inputs:
                raise _fail(f"{where}.inputs: node #{i} ({name!r}) is a variable but has inputs")
        else:
            try:
                op = registry.get(op_name)
            except OperatorError:
                raise _fail(
                    f"{where}.op: node #{i} ({name!r}) uses operator {op_name!r}, which is not registered in MXLab"
                ) from None
            if version < 905 and op.name in ("argmax", "argmin") and attrs.get("axis") == "-1":
                del attrs["axis"]  # before 0.9.5 axis=-1 meant "no axis"
            subgraphs = _read_subgraphs(op, name, raw, where, position, version)
            node = Node(op, _parse_node_attrs(op, name, i, attrs, subgraphs), inputs)
            _complete_inputs(node, i, version, for_inputs)
            if version < 904:  # before 0.9.4, files lacked these (MXNet's upgrade adds them)
                set_input_var_attrs(op, node.inputs)
        for entry in node.inputs:
            if entry.node.is_variable and entry.version:
                versions[entry.node.id] = max(versions.get(entry.node.id, 0), entry.version)
        control = raw.get("control_deps", [])
        if not isinstance(control, list):
            raise _fail(f"{where}.control_deps: node #{i} ({name!r}): 'control_deps' must be a list")
        for k, dep in enumerate(control):
            if type(dep) is not int or not 0 <= dep < i:
                raise _fail(
                    f"{where}.control_deps[{k}]: node #{i} ({name!r}): control dependency {dep!r:.40} "
                    "is not an earlier node"
                )
            node.control_deps.append(nodes[dep])
        nodes.append(node)

    position[0] = f"{path}heads"
    heads = doc.get("heads")
    if not isinstance(heads, list) or not heads:
        raise _fail(f"{path}heads: expected a non-empty 'heads' list")
    outputs = []
    for j, item in enumerate(heads):
        node_id, index, entry_version = _read_entry(item, f"{path}heads[{j}]: head {j}", nodes)
        outputs.append(Entry(nodes[node_id], index, entry_version))
    return outputs, versions


def _read_subgraphs(
    op: registry.OpDef, name: str, raw: dict, where: str, position: list[str], version: int
) -> list[Subgraph] | None:
    """A node's ``subgraphs`` (control flow, a partitioner's subgraph node): each a graph object,
    read like the document itself. None when the file gives none."""
    raw_graphs = raw.get("subgraphs")
    takes = isinstance(op.params, type) and issubclass(op.params, SubgraphParams)
    if not raw_graphs:
        if takes and op.params.needs_subgraphs:
            raise _fail(f"{where}: node {name!r} ({op.name}) needs its 'subgraphs', the file has none")
        return None
    if not takes:
        raise _fail(f"{where}.subgraphs: node {name!r}: operator {op.name} takes no subgraphs")
    if not isinstance(raw_graphs, list):
        raise _fail(f"{where}.subgraphs: node {name!r}: 'subgraphs' must be a list of graphs")
    graphs = []
    for k, raw_graph in enumerate(raw_graphs):
        path = f"{where}.subgraphs[{k}]."
        if not isinstance(raw_graph, dict) or not isinstance(raw_graph.get("nodes"), list):
            raise _fail(f"{path[:-1]}: expected an object with a 'nodes' list")
        heads, _ = _read_graph(raw_graph, position, version, path)
        graphs.append(Subgraph(heads))
    position[0] = where
    return graphs


def _complete_inputs(node: Node, i: int, version: int, for_inputs: dict[str, dict[str, str]]) -> None:
    """Check the input count; add the auxiliary states files before 0.9 left out."""
    op, attrs = node.op, node.attrs
    expected = op.get_num_inputs(attrs)
    if expected > len(node.inputs) + _MAX_MISSING_INPUTS:
        raise _fail(
            f"nodes[{i}].inputs: node #{i} ({node.name!r}): operator {op.name} takes {expected} inputs, "
            f"the file gives {len(node.inputs)}"
        )
    names = op.list_input_names(attrs)
    if len(node.inputs) < expected and version < 900:
        for name in names[len(node.inputs) : expected]:
            extra = {k: v for k, v in attrs.extra.items()}
            node.inputs.append(Entry(Node(None, NodeAttrs(f"{node.name}_{name}", None, None, extra)), 0, 0))
    if len(node.inputs) != expected:
        raise _fail(
            f"nodes[{i}].inputs: node #{i} ({node.name!r}): operator {op.name} takes {expected} input(s) "
            f"({', '.join(names)}), the file gives {len(node.inputs)}"
        )
    for name, moved in for_inputs.items():
        if name in names and node.inputs[names.index(name)].node.is_variable:
            node.inputs[names.index(name)].node.attrs.extra.update(moved)
        else:
            node.attrs.extra.update({f"{name}_{k.strip('_')}": v for k, v in moved.items()})
