"""What an executor tells about its memory: the ``executor.plan`` event, ``plan_with``, ``debug_str``.

Reports only read: the graph, the storage id and size of every entry, the in-place pairs
and the totals of the plan (planned bytes, the lower bound, the naive total). The
``executor.plan`` event carries them to subscribers (the server's memory view) once per
bind, and only when someone listens; ``debug_str`` prints them in MXNet's layout, ending
in its ``Total N MB allocated`` line; ``plan_with`` answers "how much would another
planner, or other switches, use for this graph?" without allocating anything.

Separate from building and running: nothing here changes the executor.
"""

from __future__ import annotations

from .. import events
from ..operator.node import Entry
from . import plan_memory as planner
from . import planners
from .arguments import Shape
from .graph import IndexedGraph


class PlanReport:
    """The memory reports of an executor (mixed into ``Executor``)."""

    _heads: list[Entry]
    _mirror: str
    # set by BoundGraph._build_graph (bound_graph.py)
    plan: planner.MemoryPlan
    _graph: IndexedGraph
    _shapes: list[Shape]
    _types: list[str]
    _grad_eids: dict[int, int]
    _head_eids: list[int]
    _is_forward: list[bool]

    def _publish_plan(self) -> None:
        if not events.enabled:
            return
        graph, plan = self._graph, self.plan
        nodes = [
            {
                "id": nid,
                "name": node.name,
                "op": "null" if node.op is None else node.op.name,
                "inputs": [
                    [graph.entry_nodes[e], e - graph.node_row_ptr[graph.entry_nodes[e]]]
                    for e in graph.input_entries[nid]
                ],
                "backward": not self._is_forward[nid],
            }
            for nid, node in enumerate(graph.nodes)
        ]
        entries = [
            {"id": eid, "name": graph.entry_name(eid), "node": graph.entry_nodes[eid], "bytes": plan.entry_bytes[eid]}
            for eid in range(graph.num_entries)
        ]
        events.publish(
            "executor.plan",
            graph=nodes,
            storage=list(plan.storage),
            inplace=[list(p) for p in plan.inplace],
            bytes_planned=plan.bytes_planned,
            bytes_naive=plan.bytes_naive,
            bytes_lower_bound=plan.bytes_lower_bound,
            strategy=plan.options.strategy,
            entries=entries,
            blocks=list(plan.block_bytes),
            mirror=self._mirror,
        )

    def plan_with(self, options: planner.PlanOptions) -> planner.MemoryPlan:
        """The plan ``options`` (another strategy, other switches) give this executor's graph.

        Nothing is allocated: this answers "how much would the other planner use here?".
        """
        return planners.plan(
            self._graph,
            self._shapes,
            self._types,
            external=self._grad_eids.values(),
            keep=self._head_eids,
            options=options,
        )

    def debug_str(self) -> str:
        """The graph with each entry's storage and size, then planned versus naive memory."""
        graph, plan = self._graph, self.plan
        inplace_of = {out: src for src, out in plan.inplace}
        lines = ["Symbol Outputs:"]
        for i, e in enumerate(self._heads):
            lines.append(f"\toutput[{i}]={e.node.name}({e.index})")
        for nid, node in enumerate(graph.nodes):
            if node.op is None:  # a variable
                eid = graph.node_row_ptr[nid]
                lines.append(f"Variable:{node.name}")
                lines.append(f"\t{node.name}: external (bound array), {plan.entry_bytes[eid]} bytes")
                continue
            lines.append("--------------------")
            lines.append(f"Op:{node.op.name}, Name={node.name}")
            lines.append("Inputs:")
            for k, e in enumerate(node.inputs):
                lines.append(f"\targ[{k}]={e.node.name}({e.index})" + (" version=0" if e.node.is_variable else ""))
            params = node.attrs.parsed.to_strings() if node.attrs.parsed is not None else {}
            if params:
                lines.append("Attrs:")
                lines.extend(f"\t{k}={v}" for k, v in params.items())
            if node.control_deps:
                lines.append("Control deps:")
                lines.extend(f"\tcdep[{k}]={d.name}" for k, d in enumerate(node.control_deps))
            lines.append("Outputs:")
            for eid in graph.output_entries(nid):
                sid = plan.storage[eid]
                size = f"{plan.entry_bytes[eid]} bytes"
                if sid == planner.EXTERNAL_STORAGE_ID:
                    where = "external (bound array)"
                elif sid == planner.BAD_STORAGE_ID:
                    where = "not stored (no reader, req=null)"
                else:
                    where = f"storage {sid}"
                    if eid in inplace_of:
                        where += f" (in place of {graph.entry_name(inplace_of[eid])})"
                lines.append(f"\t{graph.entry_name(eid)}: {where}, {size}")
        planned, naive, bound = plan.bytes_planned, plan.bytes_naive, plan.bytes_lower_bound
        lines.append(
            f"Total {planned >> 20} MB allocated ({planned} bytes in {plan.num_blocks} blocks, "
            f"planner {plan.options.strategy})"
        )
        lines.append(f"Lower bound {bound >> 20} MB ({bound} bytes alive at once at the peak)")
        lines.append(f"Naive {naive >> 20} MB ({naive} bytes)")
        return "\n".join(lines) + "\n"
