"""A partitioner of a 1.9.1-API library (``REGISTER_PARTITIONER``) as an ``optimize_for`` backend.

Partitioning replaces groups of nodes by single *subgraph nodes*, MXNet 1.9.1's way:

1. **choose** the nodes a strategy supports: either ``supportedOps`` marks them all at once
   (``-2`` no, ``-1`` any subgraph, ``k >= 0`` subgraph ``k``), or a ``CustomOpSelector``
   grows each subgraph from a seed node along edges (``Select``, ``SelectInput``,
   ``SelectOutput``, then ``Filter`` and ``Reset``);
2. **group** chosen neighbours into subgraphs, keeping each one *convex*: no path may leave
   a subgraph and come back into it, or the new node would depend on itself (nodes after
   such a detour are dropped from the group and may start another one);
3. **review**: ``reviewSubgraph`` sees each subgraph's JSON, may reject it, and may add
   attributes to its node;
4. **rewrite**: each accepted group becomes one node of the strategy's subgraph operator
   (registered by the library, e.g. ``_custom_subgraph_op``) whose inputs are the values
   flowing into the group, in the order its subgraph lists its inputs (depth first from its
   outputs), and whose outputs are the values read outside it. The subgraph is kept in the
   node's ``subgraphs`` field, as in MXNet's symbol JSON; the operator receives it as the
   attribute ``subgraph_sym_json`` (``MX_STR_SUBGRAPH_SYM_JSON``) whenever it is called
   (:mod:`.adapter`).

Strategies are tried in the order the library added them; each works on the previous one's result.
"""

from __future__ import annotations

import copy
import ctypes
import json
from collections.abc import Callable
from typing import Any

from ..operator import registry
from ..symbol import load_json
from .abi import Library, LibraryError, LibraryMetadataError
from .graph_json import NamedTensors, annotated_json, c_options, strip_annotations

SUPPORTED, SELECTOR, REVIEW = 1, 2, 4  # _partRegGetStrategy flags
MAX_STRATEGIES = 64  # more is a corrupt count, not an ambitious partitioner


class Strategy:
    """One ``addStrategy(name, subgraph_op)`` of a partitioner."""

    def __init__(self, index: int, name: str, op_name: str, flags: int) -> None:
        self.index, self.name, self.op_name, self.flags = index, name, op_name, flags


class LibraryPartitioner:
    """Partitioner ``index`` of ``lib``, called as ``sym.optimize_for(name, ...)``."""

    def __init__(self, lib: Library, index: int, name: str) -> None:
        self.lib, self.index, self.name = lib, index, name
        self.strategies = []
        count = int(lib._partRegGetStrategyCount(index))
        where = f"load: library {lib.name}: partitioner {name!r}"
        if not 1 <= count <= MAX_STRATEGIES:
            raise LibraryMetadataError(f"{where} has {count} strategies (addStrategy); expected 1 to {MAX_STRATEGIES}")
        for j in range(count):
            sname, op_name, flags = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_int()
            lib._partRegGetStrategy(index, j, sname, op_name, flags)
            if sname.value is None or op_name.value is None:
                raise LibraryMetadataError(f"{where}: strategy {j} has no name or no subgraph operator (NULL)")
            try:
                names = sname.value.decode(), op_name.value.decode()
            except UnicodeDecodeError:
                raise LibraryMetadataError(f"{where}: strategy {j}: names are not UTF-8") from None
            self.strategies.append(Strategy(j, *names, flags.value))

    def validate(self) -> None:
        """Every strategy can choose nodes (supportedOps or a selector)."""
        for s in self.strategies:
            if not s.flags & (SUPPORTED | SELECTOR):
                raise LibraryError(
                    f"library {self.lib.name}: partitioner {self.name!r}: strategy {s.name!r} has neither "
                    "setSupportedOps nor setCreateSelector"
                )

    def __call__(
        self,
        symbol: Any,
        args: dict,
        aux: dict,
        ctx: Any,
        shape_dict: dict,
        type_dict: dict,
        skip_infer: bool,
        options: dict[str, str],
    ) -> tuple[Any, dict, dict]:
        known = {**args, **aux}
        params = NamedTensors(known, f"library {self.lib.name}: partitioner {self.name!r}")
        for strategy in self.strategies:
            if not registry.exists(strategy.op_name):
                raise LibraryError(
                    f"library {self.lib.name}: partitioner {self.name!r}, strategy {strategy.name!r}: subgraph "
                    f"operator {strategy.op_name!r} is not registered (the library must REGISTER_OP it)"
                )
            doc = annotated_json(symbol, known, shape_dict, type_dict, skip_infer)
            doc = _Run(self, strategy, doc, options, params).partition()
            symbol = load_json(json.dumps(strip_annotations(doc)))
        return symbol, {}, {}


class _Run:
    """One strategy applied to one graph document."""

    def __init__(
        self, part: LibraryPartitioner, strategy: Strategy, doc: dict, options: dict[str, str], params: NamedTensors
    ) -> None:
        self.part, self.lib, self.strategy, self.doc = part, part.lib, strategy, doc
        self.options, self.params = options, params
        self.text = json.dumps(doc).encode()
        self.nodes = doc["nodes"]
        self.inputs = [[e[0] for e in n["inputs"]] for n in self.nodes]
        self.consumers: list[list[int]] = [[] for _ in self.nodes]
        for i, ins in enumerate(self.inputs):
            for j in ins:
                if i not in self.consumers[j]:
                    self.consumers[j].append(i)
        self.where = f"library {self.lib.name}: partitioner {part.name!r}, strategy {strategy.name!r}"

    def check(self, ok: int, step: str) -> None:
        self.lib.check(ok, None, f"partitioner {self.part.name!r} ({self.strategy.name}): {step}")

    # ---------------------------------------------------------------- 1. choose
    def _supported_groups(self) -> list[set[int]]:
        n = len(self.nodes)
        ids = (ctypes.c_int * max(n, 1))(*([-2] * n))
        ok = self.lib._partCallSupportedOps(
            self.part.index, self.strategy.index, self.text, *c_options(self.options), *self.params.args, ids, n
        )
        self.check(ok, "supportedOps")
        # -1: any subgraph, k >= 0: subgraph k; anything below -1 (the preset -2): not chosen
        label = {i: int(ids[i]) for i in range(n) if int(ids[i]) >= -1 and self.nodes[i]["op"] != "null"}

        def joinable(group_label: int, j: int) -> bool:
            return j in label and (label[j] == -1 or group_label == -1 or label[j] == group_label)

        groups, taken = [], set()
        for seed in sorted(label):
            if seed in taken:
                continue
            group_label = label[seed]
            group, frontier = {seed}, [seed]
            while frontier:
                node = frontier.pop()
                for j in self.inputs[node] + self.consumers[node]:
                    if j not in group and j not in taken and joinable(group_label, j):
                        group_label = label[j] if group_label == -1 else group_label
                        group.add(j)
                        frontier.append(j)
            group = self._convex(group)
            taken |= group
            groups.append(group)
        return groups

    def _selector_groups(self) -> list[set[int]]:
        handle = ctypes.c_void_p()
        ok = self.lib._partCallCreateSelector(
            self.part.index, self.strategy.index, self.text, *c_options(self.options), *self.params.args, handle
        )
        self.check(ok, "createSelector")
        try:
            return self._grow_with_selector(handle)
        finally:
            self.lib._graphFree(handle)

    def _grow_with_selector(self, handle: ctypes.c_void_p) -> list[set[int]]:
        def ask(fn: Callable, step: str, *ids: int) -> bool:
            result = ctypes.c_int(0)
            self.check(fn(handle, *ids, result), step)
            return bool(result.value)

        groups, taken = [], set()
        for seed in range(len(self.nodes)):
            if seed in taken or self.nodes[seed]["op"] == "null" or not ask(self.lib._selSelect, "Select", seed):
                continue
            group, frontier = {seed}, [seed]
            while frontier:
                node = frontier.pop()
                steps = [(j, self.lib._selSelectInput, "SelectInput") for j in self.inputs[node]]
                steps += [(j, self.lib._selSelectOutput, "SelectOutput") for j in self.consumers[node]]
                for j, fn, step in steps:
                    if j in group or j in taken or self.nodes[j]["op"] == "null":
                        continue
                    if ask(fn, step, node, j):
                        group.add(j)
                        frontier.append(j)
            candidates = sorted(group)
            cand = (ctypes.c_int * len(candidates))(*candidates)
            keep, count = (ctypes.c_int * len(candidates))(), ctypes.c_int(0)
            self.check(self.lib._selFilter(handle, cand, len(candidates), keep, count), "Filter")
            kept = {int(keep[i]) for i in range(count.value)} & group
            self.check(self.lib._selReset(handle), "Reset")
            if kept:
                kept = self._convex(kept)
                taken |= kept
                groups.append(kept)
        return groups

    # ---------------------------------------------------------------- 2. convexity
    def _descendants(self, start: set[int]) -> set[int]:
        seen, stack = set(), list(start)
        while stack:
            for c in self.consumers[stack.pop()]:
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        return seen

    def _convex(self, group: set[int]) -> set[int]:
        """``group`` minus the nodes reached through a detour outside it (so no cycle can form)."""
        group = set(group)
        while True:
            outside = {c for g in group for c in self.consumers[g] if c not in group}
            detour = self._descendants(outside) | outside
            bad = detour & group
            if not bad:
                return group
            group -= bad

    # ---------------------------------------------------------------- 3 and 4. review, rewrite
    def partition(self) -> dict:
        if self.strategy.flags & SUPPORTED:
            groups = self._supported_groups()
        else:
            groups = self._selector_groups()
        replaced: dict[int, tuple[int, dict]] = {}  # node -> (group number, its subgraph node)
        accepted = 0
        for number, group in enumerate(sorted(groups, key=min)):
            sub_doc, in_entries, out_entries = self._subgraph(group)
            attrs = self._review(sub_doc, number)
            if attrs is None:
                continue
            node = {
                "op": self.strategy.op_name,
                "name": f"{self.strategy.op_name.strip('_')}{accepted}",
                **({"attrs": attrs} if attrs else {}),
                "inputs": in_entries,
                "subgraphs": [strip_annotations(copy.deepcopy(sub_doc))],
                "_outputs": out_entries,
            }
            accepted += 1
            for g in group:
                replaced[g] = (number, node)
        return self._rewrite(replaced) if replaced else self.doc

    def _subgraph(self, group: set[int]) -> tuple[dict, list, list]:
        """The group's own JSON document, the entries flowing in, and the entries read outside it."""
        members = sorted(group)
        in_entries: list[list[int]] = []
        for g in members:
            for e in self.nodes[g]["inputs"]:
                if e[0] not in group and [e[0], e[1], 0] not in in_entries:
                    in_entries.append([e[0], e[1], 0])
        out_entries: list[list[int]] = []
        readers = [e for i, n in enumerate(self.nodes) if i not in group for e in n["inputs"]] + self.doc["heads"]
        for e in readers:
            if e[0] in group and [e[0], e[1], 0] not in out_entries:
                out_entries.append([e[0], e[1], 0])
        sub_doc = self._subgraph_doc(members, in_entries, out_entries)
        # the node's inputs follow the subgraph's own input order (depth first from its outputs),
        # the order the operator is handed them in; the group's first-seen order may differ
        names = [n["name"] for n in sub_doc["nodes"][: len(in_entries)]]
        listed = load_json(json.dumps(strip_annotations(copy.deepcopy(sub_doc)))).list_inputs()
        if listed != names:
            in_entries = [in_entries[names.index(name)] for name in listed]
            sub_doc = self._subgraph_doc(members, in_entries, out_entries)
        return sub_doc, in_entries, out_entries

    def _subgraph_doc(self, members: list[int], in_entries: list[list[int]], out_entries: list[list[int]]) -> dict:
        """The JSON document of the group ``members``: a variable per entry flowing in, then its nodes."""
        group = set(members)
        nodes, position = [], {}
        for k, (src, idx, _) in enumerate(in_entries):
            name = (
                self.nodes[src]["name"] if self.nodes[src]["op"] == "null" else f"{self.nodes[src]['name']}_output{idx}"
            )
            nodes.append({"op": "null", "name": name, "inputs": []})
            position[(src, idx)] = k
        index = {}
        for g in members:
            index[g] = len(nodes)
            copy = {k: v for k, v in self.nodes[g].items() if k != "inputs"}
            copy["inputs"] = [
                [index[e[0]], e[1], 0] if e[0] in group else [position[(e[0], e[1])], 0, 0]
                for e in self.nodes[g]["inputs"]
            ]
            nodes.append(copy)
        rows = [0]
        for k, _node in enumerate(nodes):
            width = 1 if k < len(in_entries) else self._width(members[k - len(in_entries)])
            rows.append(rows[-1] + width)
        return {
            "nodes": nodes,
            "arg_nodes": list(range(len(in_entries))),
            "node_row_ptr": rows,
            "heads": [[index[e[0]], e[1], 0] for e in out_entries],
            "attrs": self.doc.get("attrs", {}),
        }

    def _width(self, i: int) -> int:
        rows = self.doc["node_row_ptr"]
        return rows[i + 1] - rows[i]

    def _review(self, sub_doc: dict, number: int) -> dict | None:
        """The attributes the review adds, or None when it rejects the subgraph."""
        if not self.strategy.flags & REVIEW:
            return {}
        accept, attrs_json = ctypes.c_int(0), ctypes.c_char_p()
        ok = self.lib._partCallReviewSubgraph(
            self.part.index,
            self.strategy.index,
            json.dumps(sub_doc).encode(),
            number,
            *c_options(self.options),
            *self.params.args,
            accept,
            attrs_json,
        )
        self.check(ok, f"reviewSubgraph (subgraph {number})")
        if not accept.value:
            return None
        return json.loads(attrs_json.value.decode("utf-8")) if attrs_json.value else {}

    def _rewrite(self, replaced: dict[int, tuple[int, dict]]) -> dict:
        """The graph with every accepted group replaced by its node, in a valid (topological) order."""

        def source(entry: list[int]) -> tuple[Any, int]:
            """(record, output index) that now produces ``entry``'s value."""
            if entry[0] in replaced:
                node = replaced[entry[0]][1]
                return id(node), node["_outputs"].index([entry[0], entry[1], 0])
            return entry[0], entry[1]

        records: dict[Any, dict] = {}
        for i, n in enumerate(self.nodes):
            if i in replaced:
                node = replaced[i][1]
                records.setdefault(id(node), {**node, "inputs": [source(e) for e in node["inputs"]]})
            else:
                records[i] = {**n, "inputs": [source(e) for e in n["inputs"]]}
        heads = [source(e) for e in self.doc["heads"]]
        order, seen = [], set()
        for key, _ in heads:  # depth first from the outputs, inputs before their readers
            stack = [(key, 0)]
            while stack:
                key_, pos = stack.pop()
                if pos == 0 and key_ in seen:
                    continue
                seen.add(key_)
                ins = records[key_]["inputs"]
                if pos < len(ins):
                    stack.append((key_, pos + 1))
                    if ins[pos][0] not in seen:
                        stack.append((ins[pos][0], 0))
                else:
                    order.append(key_)
        index = {key: k for k, key in enumerate(order)}
        nodes, rows = [], [0]
        for key in order:
            rec = records[key]
            out = {k: v for k, v in rec.items() if k not in ("inputs", "_outputs")}
            out["inputs"] = [[index[src], idx, 0] for src, idx in rec["inputs"]]
            nodes.append(out)
            rows.append(rows[-1] + (len(rec["_outputs"]) if "_outputs" in rec else self._width(key)))
        return {
            "nodes": nodes,
            "arg_nodes": [k for k, n in enumerate(nodes) if n["op"] == "null"],
            "node_row_ptr": rows,
            "heads": [[index[src], idx, 0] for src, idx in heads],
            "attrs": self.doc.get("attrs", {}),
        }
