"""Node creation: one operator applied to symbols becomes one node of the graph.

How a node is made (:func:`create_node`, behind every ``mx.sym.<op>`` function through
:func:`~.symbol.create_symbol`):

1. keyword arguments that are not symbols are the operator's parameters, kept as the
   strings they become in JSON (``num_hidden="10"``) and parsed into the operator's
   typed parameter struct; ``attr={...}`` and ``__key__=`` arguments add hidden
   attributes (``__lr_mult__``). As in NNVM's ``attrs.dict``, the node's ``attrs.extra``
   holds all these strings (parameters as given, hidden attributes); ``attrs.parsed``
   holds the typed values the operator computes with;
2. the node's name comes from ``name=`` or the current :mod:`naming` manager
   (``fullyconnected0``);
3. the operator lists its input names for these parameters (``no_bias=True`` drops
   ``bias``); symbols given positionally or by input name fill them, and every missing
   input becomes a variable ``<node name>_<input name>``;
4. inputs the operator mutates (BatchNorm's ``moving_mean``) must be variables: they are
   *auxiliary states*, listed apart from the arguments, and read at a new version.

Only a symbol's outputs are needed here (:class:`~.outputs.SymbolOutputs`), so this module sits
below :class:`~.symbol.Symbol`, whose operators (``a + b``, ``x.reshape(...)``) are made here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..operator import registry
from ..operator.node import Entry, Node, NodeAttrs
from ..operator.params import NoParams, OperatorParamError
from ..operator.registry import OpDef
from ..operator.signature import declared_input_names
from . import attribute, naming
from .attr_keys import is_dunder, normalize_attr_key, param_string
from .errors import SymbolError, SymbolTypeError
from .graph import VAR_VERSIONS
from .json_format import set_input_var_attrs
from .outputs import SymbolOutputs, single_output


def _split_kwargs(op: OpDef, kwargs: dict[str, Any], attr: dict | None):
    """Sort keyword arguments into input symbols, parameter values, hidden attributes, others."""
    symbols: dict[str, SymbolOutputs] = {}
    params: dict[str, Any] = {}
    hidden: dict[str, str] = {}
    others: dict[str, Any] = {}
    merged = dict(kwargs)
    if attr is not None:
        if not isinstance(attr, dict):
            raise SymbolTypeError(f"{op.name}: attr must be a dict of strings, got {attr!r}")
        merged.update(attr)
    for given, value in merged.items():
        if isinstance(value, SymbolOutputs):
            symbols[given] = value
            continue
        key = normalize_attr_key(given)
        # MXNet keeps any attribute on an operator without parameters (nothing parses them); one
        # with parameters refuses keys that are not its own, unless they are __dunder__ ones
        if is_dunder(key) or (op.params is NoParams and value is not None):
            hidden[key] = str(value)
        elif key in op.params.fields:
            params[key] = value
        else:
            others[key] = value
    return symbols, params, hidden, others


def _positional(op: OpDef, args: Sequence[Any], symbols: dict[str, Any], params: dict[str, Any]) -> list[Any]:
    """Sort positional arguments: inputs first, then parameters in declaration order (MXNet).

    Inputs go into ``symbols`` by name and parameters into ``params``; only a variadic
    operator's inputs are returned, as a list.
    """
    if op.key_var_num_args:
        return [a for a in args if a is not None]
    slots = declared_input_names(op)
    param_names = [k for k in op.params.fields if k != op.key_var_num_args]
    if len(args) > len(slots) + len(param_names):
        raise SymbolError(
            f"{op.name}: takes at most {len(slots) + len(param_names)} positional arguments "
            f"(inputs {', '.join(slots)}, then parameters), got {len(args)}"
        )
    for i, value in enumerate(args):
        if i < len(slots):
            key, target = slots[i], symbols
            if value is None:
                continue
            if not isinstance(value, SymbolOutputs):
                raise SymbolTypeError(f"{op.name}: argument {key!r} must be a Symbol, got {value!r}")
        else:
            key, target = param_names[i - len(slots)], params
        if key in symbols or key in params:
            raise SymbolError(f"{op.name}: got multiple values for argument {key!r}")
        target[key] = value
    return []


def create_node(
    op_name: str,
    hint: str,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    name: str | None = None,
    attr: dict | None = None,
) -> list[Entry]:
    """One operator node applied to symbols; returns its visible outputs (a Symbol's ``outputs``).

    Positional arguments are the inputs, then the parameters (in declaration order), as
    in MXNet's generated functions; variadic operators (``Concat``) take any number of
    positional inputs. ``hint`` (the lower-cased function name) names the node when
    ``name`` is None.
    """
    op = registry.get(op_name)
    symbols, params, hidden, others = _split_kwargs(op, kwargs, attr)
    for key, value in attribute.current_attrs().items():  # `with AttrScope(...)`; attr= wins
        hidden.setdefault(normalize_attr_key(key), value)
    args = _positional(op, args, symbols, params)
    if op.key_var_num_args:
        params.setdefault(op.key_var_num_args, len(args))
    node_name = naming.current().get(name, hint)
    strings = {k: param_string(op.params.fields.get(k), v) for k, v in params.items()}
    try:
        parsed = op.params.parse(op.name, strings)
    except OperatorParamError as err:
        if op.key_var_num_args and symbols:  # ``Concat(data=a)``: the count of positional inputs was 0
            raise SymbolError(
                f"{op.name} takes a variable number of inputs, given positionally; got keyword input(s) "
                f"{', '.join(symbols)} ({err})"
            ) from None
        raise OperatorParamError(f"{err} (node {node_name!r})") from None
    attrs = NodeAttrs(node_name, op, parsed, {**strings, **hidden})
    input_names = op.list_input_names(attrs)
    for key, value in others.items():
        if key in input_names:
            if value is not None:
                raise SymbolTypeError(f"{op.name}: input {key!r} must be a Symbol, got {value!r}")
            continue
        allowed = ", ".join(op.params.fields) or "none"
        raise OperatorParamError(
            f"{op.name}: unknown parameter {key!r} (node {node_name!r}); parameters: {allowed}; "
            f"inputs: {', '.join(input_names) or 'none'}"
        )

    inputs: list[Entry | None] = [None] * len(input_names)
    if len(args) > len(input_names):
        raise SymbolError(f"{op.name}: takes {len(input_names)} input(s) ({', '.join(input_names)}), got {len(args)}")
    for i, value in enumerate(args):
        inputs[i] = single_output(value, f"{op.name} input {input_names[i]!r}")
    for key, value in symbols.items():
        if key not in input_names:
            if op.key_var_num_args:  # Concat's inputs are counted, not named; Custom's are named by its prop
                raise SymbolError(
                    f"{op.name} takes a variable number of inputs, given positionally; got keyword input {key!r} "
                    f"(its inputs here: {', '.join(input_names) or 'none'})"
                )
            raise SymbolError(
                f"{op.name}: keyword argument {key!r} is not an input; candidate inputs: {', '.join(input_names)}"
            )
        if inputs[input_names.index(key)] is not None:
            raise SymbolError(f"{op.name}: got multiple values for input {key!r}")
        index = input_names.index(key)
        inputs[index] = single_output(value, f"{op.name} input {key!r}")
    for i, entry in enumerate(inputs):
        if entry is None:
            # NNVM copies the node's attributes onto variables it creates, so that
            # attr={'__lr_mult__': ...} given to an operator reaches its weights.
            var = Node(None, NodeAttrs(f"{node_name}_{input_names[i]}", None, None, dict(attrs.extra)))
            inputs[i] = Entry(var, 0, 0)

    set_input_var_attrs(op, inputs)
    entries = [e if not e.node.is_variable else e._replace(version=VAR_VERSIONS.get(e.node.id, 0)) for e in inputs]
    for i in op.mutate_inputs(attrs):
        entry = entries[i]
        if not entry.node.is_variable:
            raise SymbolError(
                f"{op.name} node {node_name!r}: input {input_names[i]!r} is written by the operator "
                f"(an auxiliary state), so it must be a variable, got the output of {entry.node.name!r}"
            )
        version = VAR_VERSIONS.get(entry.node.id, 0) + 1
        VAR_VERSIONS[entry.node.id] = version
        entries[i] = entry._replace(version=version)
    node = Node(op, attrs, entries)
    return [Entry(node, i) for i in range(op.get_num_visible_outputs(attrs))]
