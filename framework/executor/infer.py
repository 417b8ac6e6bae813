"""Shape and type inference over a whole graph: every operator's rule, iterated to a fixed point.

Each operator knows a *local* rule (seed 004): given the shapes of its inputs and outputs,
some possibly unknown, fill in what it can, in both directions. This pass applies those
rules over a graph until nothing changes:

1. Seed a table ``(node id, output index) -> value`` with what is known: the values the
   caller passes, else the hidden ``__shape__`` / ``__dtype__`` attributes of variables
   (``Variable('a', shape=(2, 0))``; 0 marks an unknown dimension).
2. Sweep the operator nodes forwards (inputs to outputs), then backwards (outputs to
   inputs), running each operator's rule on the current table and merging what it
   fills in. A rule may fill an *input* from an output, so the backward sweep carries
   information upstream, then the next forward sweep carries it across.
3. Stop when a full sweep changes nothing: the fixed point. What is still unknown cannot
   be inferred from what was given.

Seed 004's example: ``a`` is (2, 0), ``c`` is (0, 3), ``b`` unknown, ``d = a * b + b * c``.
The rule of ``a * b`` makes ``b`` (2, 0); the rule of ``b * c`` makes it (2, 3); then both
products, ``a``, ``c`` and ``d`` become (2, 3).

A rule that meets two different known values raises :class:`InferenceError`; the message
names the node, its operator, the input or output, and both values.

API (plain functions; ``outputs`` are the graph's head entries)::

    infer_shapes(outputs, known) -> {(node.id, index): shape or None}
    infer_types(outputs, known)  -> {(node.id, index): dtype name or None}

``known`` maps a variable :class:`Node`, a variable name or an :class:`Entry` to a value.
The result holds every output of every node reachable from ``outputs`` (hidden outputs
too); entries still unknown are None (shapes may also keep 0 dimensions).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..base import FLAG_TO_DTYPE
from ..operator.infer import InferenceError, dtype_name, merge_shapes, shape_known
from ..operator.node import Entry, Node, topo_sort

Key = tuple[int, int]
KnownKey = Node | str | Entry

__all__ = ["InferenceError", "infer_shapes", "infer_types", "parse_dtype_hint", "parse_shape_hint"]


# ---------------------------------------------------------------------------- hints
def parse_shape_hint(text: str, where: str) -> tuple[int, ...] | None:
    """A ``__shape__`` attribute ("(2, 0)", "[2, 0]", "()") as a shape; () means unknown."""
    try:
        value = ast.literal_eval(text.strip())
        shape = (int(value),) if isinstance(value, int) else tuple(int(v) for v in value)
    except (ValueError, TypeError, SyntaxError):
        raise InferenceError(f"{where}: __shape__ must be a tuple of integers such as (2, 0), got {text!r}") from None
    if any(d < 0 for d in shape):
        raise InferenceError(f"{where}: __shape__ dimensions must be >= 0 (0 = unknown), got {text!r}")
    return shape or None


def parse_dtype_hint(text: str, where: str) -> str | None:
    """A ``__dtype__`` attribute as a dtype name: MXNet writes type flags ("0" is float32)."""
    text = text.strip()
    try:
        flag = int(text)
    except ValueError:
        try:
            return dtype_name(text)
        except TypeError:
            raise InferenceError(f"{where}: __dtype__ must be a type flag or a dtype name, got {text!r}") from None
    if flag == -1:
        return None
    if flag not in FLAG_TO_DTYPE:
        known = ", ".join(f"{f} ({d.name})" for f, d in FLAG_TO_DTYPE.items())
        raise InferenceError(f"{where}: __dtype__ type flag {flag} is not one of {known}")
    return FLAG_TO_DTYPE[flag].name


# ---------------------------------------------------------------------------- one attribute kind
class _Kind:
    """What differs between shape and type inference: hint key, merge rule, operator rule."""

    def __init__(
        self,
        noun: str,
        hint_key: str,
        parse_hint: Callable[[str, str], Any],
        normalize: Callable[[Any], Any],
        merge: Callable[[Any, Any], Any],
        known: Callable[[Any], bool],
        run: Callable[[Any, Any, list, list], bool],
    ) -> None:
        self.noun = noun
        self.hint_key = hint_key
        self.parse_hint = parse_hint
        self.normalize = normalize
        self.merge = merge
        self.known = known
        self.run = run


def _normalize_shape(value: Any) -> tuple[int, ...] | None:
    if value is None:
        return None
    shape = tuple(int(v) for v in value)
    return shape or None  # () is MXNet 1.x's "unknown shape"


def _merge_types(a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None or a == b:
        return a
    raise ValueError


_SHAPE = _Kind(
    "shape",
    "__shape__",
    parse_shape_hint,
    _normalize_shape,
    merge_shapes,
    shape_known,
    lambda op, attrs, ins, outs: op.run_infer_shape(attrs, ins, outs),
)
_TYPE = _Kind(
    "type",
    "__dtype__",
    parse_dtype_hint,
    lambda value: None if value is None else dtype_name(value),
    _merge_types,
    lambda value: value is not None,
    lambda op, attrs, ins, outs: op.run_infer_type(attrs, ins, outs),
)


# ---------------------------------------------------------------------------- the pass
def infer_shapes(
    outputs: Sequence[Entry],
    known: Mapping[KnownKey, Any] | None = None,
    nodes: Sequence[Node] | None = None,
) -> dict[Key, tuple[int, ...] | None]:
    """Shapes of every entry of the graph, inferred to a fixed point from ``known`` and hints.

    ``nodes`` may pass ``topo_sort(outputs)`` when the caller has it already.
    """
    return _infer(_SHAPE, outputs, known or {}, nodes)


def infer_types(
    outputs: Sequence[Entry],
    known: Mapping[KnownKey, Any] | None = None,
    nodes: Sequence[Node] | None = None,
) -> dict[Key, str | None]:
    """Dtype names of every entry of the graph, inferred to a fixed point (see infer_shapes)."""
    return _infer(_TYPE, outputs, known or {}, nodes)


def _label(node: Node) -> str:
    return f"{node.name!r} ({node.op.name})" if node.op is not None else f"variable {node.name!r}"


def _seed(kind: _Kind, order: Sequence[Node], known: Mapping[KnownKey, Any]) -> dict[Key, Any]:
    """The starting table: given values first, then the variables' hidden hints."""
    table: dict[Key, Any] = {}
    for node in order:
        for i in range(node.num_outputs()):
            table[(node.id, i)] = None
    by_name: dict[str, list[Node]] = {}
    for node in order:
        if node.is_variable:
            by_name.setdefault(node.name, []).append(node)
    given: set[Key] = set()
    for key, value in known.items():
        if isinstance(key, Entry):
            keys = [(key.node.id, key.index)]
        elif isinstance(key, Node):
            keys = [(key.id, 0)]
        elif isinstance(key, str):
            keys = [(n.id, 0) for n in by_name.get(key, [])]
        else:
            raise TypeError(f"infer_{kind.noun}s: known values are keyed by Node, name or Entry, got {key!r}")
        for k in keys:
            if k in table:
                table[k] = kind.normalize(value)
                given.add(k)
    for node in order:
        hint = node.attrs.extra.get(kind.hint_key) if node.is_variable else None
        if hint is not None and (node.id, 0) not in given:
            table[(node.id, 0)] = kind.parse_hint(hint, f"variable {node.name!r}")
    return table


def _step(kind: _Kind, node: Node, table: dict[Key, Any]) -> bool:
    """Run one node's rule on the table; returns True if the table changed."""
    op = node.op
    assert op is not None, "variables have no rule; callers skip them"
    in_keys = [(e.node.id, e.index) for e in node.inputs]
    out_keys = [(node.id, i) for i in range(op.get_num_outputs(node.attrs))]
    ins = [table[k] for k in in_keys]
    outs = [table[k] for k in out_keys]
    try:
        kind.run(op, node.attrs, ins, outs)
    except InferenceError as err:
        message = str(err)
        for prefix in (f"{node.name}: ", f"{op.name}: "):  # the rule may name itself; say it once
            message = message.removeprefix(prefix)
        names = _input_names(node)
        given = ", ".join(f"{n}={v}" for n, v in zip(names, (table[k] for k in in_keys), strict=False))
        raise InferenceError(f"Error in operator {_label(node)}: {message} (input {kind.noun}s: {given})") from None
    changed = False
    for where, keys, values in (("input", in_keys, ins), ("output", out_keys, outs)):
        for i, (key, value) in enumerate(zip(keys, values, strict=True)):
            changed |= _merge(kind, table, key, kind.normalize(value), node, f"{where} {i}{_name_of(node, where, i)}")
    # NNVM's rule for backward nodes: the gradient of forward input i has input i's value.
    if op.is_backward and node.control_deps:
        forward = node.control_deps[0]
        if forward.op is not None and len(forward.inputs) == len(out_keys):
            for i, (entry, key) in enumerate(zip(forward.inputs, out_keys, strict=True)):
                fkey = (entry.node.id, entry.index)
                if fkey in table:
                    changed |= _merge(kind, table, key, table[fkey], node, f"output {i} (gradient of input {i})")
                    changed |= _merge(kind, table, fkey, table[key], forward, f"input {i}")
    return changed


def _merge(kind: _Kind, table: dict[Key, Any], key: Key, value: Any, node: Node, where: str) -> bool:
    old = table[key]
    try:
        new = kind.merge(old, value)
    except ValueError:
        raise InferenceError(
            f"Error in operator {_label(node)}: {kind.noun} inconsistent for {where}: "
            f"the operator inferred {value}, but it is already known as {old}"
        ) from None
    if new != old:
        table[key] = new
        return True
    return False


def _input_names(node: Node) -> list[str]:
    by_position = [str(i) for i in range(len(node.inputs))]
    if node.op is None:
        return by_position
    try:
        return node.op.list_input_names(node.attrs)
    except Exception:
        return by_position


def _name_of(node: Node, where: str, i: int) -> str:
    op = node.op
    if op is None:
        return ""
    try:
        names = op.list_input_names(node.attrs) if where == "input" else op.list_output_names(node.attrs)
    except Exception:
        return ""
    return f" ({names[i]})" if i < len(names) else ""


def _infer(
    kind: _Kind, outputs: Sequence[Entry], known: Mapping[KnownKey, Any], nodes: Sequence[Node] | None
) -> dict[Key, Any]:
    order = list(nodes) if nodes is not None else topo_sort(list(outputs))
    table = _seed(kind, order, known)
    ops = [node for node in order if not node.is_variable]
    settled: set[int] = set()  # nodes whose inputs and outputs were all known after their rule ran

    def sweep(sequence: Sequence[Node]) -> bool:
        changed = False
        for node in sequence:
            if node.id in settled:
                continue
            changed |= _step(kind, node, table)
            keys = [(e.node.id, e.index) for e in node.inputs]
            keys += [(node.id, i) for i in range(node.num_outputs())]
            if all(kind.known(table[k]) for k in keys):
                settled.add(node.id)
        return changed

    while True:
        changed = sweep(ops)
        changed |= sweep(ops[::-1])
        if not changed:
            return table
