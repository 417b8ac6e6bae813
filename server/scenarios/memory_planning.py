"""Scenario "memory planning": where every intermediate array of a network lives.

The executor's planner (``framework/executor/plan_memory.py``) gives every intermediate
entry of the graph a *storage block*; entries whose lifetimes do not overlap share one.
This scenario binds a network with the planner's switches set by the user, runs one
forward pass (and one backward pass in training mode) on random data, and returns the
plan as a table: per block, its size and the entries that lived in it, in schedule
order, with when each was produced and when it was read for the last time.

What the switches do (all measured on the networks below, see ``docs/scenarios.md``):

* ``planner``: ``mxnet`` (MXNet's walk over the schedule) or ``greedy_by_size`` (largest
  arrays first over known lifetimes, ``framework/executor/greedy_by_size.py``). Either way
  the result also reports both totals and the lower bound (``strategies``): the peak of the
  bytes alive at once, which no plan can beat;

* ``sharing`` off: no block is ever reused, so the plan costs exactly the naive total
  minus what in-place reuse saved (``bytes_planned == bytes_naive - bytes_inplace``);
  with in-place off as well, ``bytes_planned == bytes_naive``, one block per entry;
* ``inplace`` off: ``relu`` and ``tanh`` (and their gradients) get blocks of their own;
* ``mirror`` on (training): segment checkpointing (Chen et al. 2016,
  ``MXLAB_BACKWARD_DO_MIRROR=segment``) keeps about sqrt(N) activations and recomputes
  the others in the backward pass. The MLP here has six equal hidden layers because that
  is the shape where checkpointing pays (about 40% less planned memory); on the classic
  two-layer 128-64 MLP or on LeNet there is nothing worth recomputing and the plan does
  not change (the result says how many nodes were mirrored).
"""

from __future__ import annotations

import dataclasses
import gc
import time
from typing import Any, Literal

import numpy as np
from pydantic import Field

import framework as mx
from framework import symbol as sym
from framework.executor import Executor, simple_bind
from framework.executor.plan_memory import BAD_STORAGE_ID, EXTERNAL_STORAGE_ID, STRATEGIES, PlanOptions

from .base import RunContext, Scenario, ScenarioParams, register

#: Hidden layers of the MLP: equal widths, deep enough for checkpointing to save memory.
MLP_HIDDEN = (128, 128, 128, 128, 128, 128)
#: Inputs that are data, not parameters: no gradient is computed for them (as in a Module).
INPUT_NAMES = ("data", "softmax_label")
SEED = 0


class MemoryPlanningParams(ScenarioParams):
    """Parameters of the memory planning scenario: a network, a mode and the planner's switches."""

    network: Literal["mlp", "lenet", "rnn"] = Field(
        "mlp",
        description="mlp: 784 -> 6 x (FullyConnected(128) + relu) -> 10 softmax; "
        "lenet: MXNet's LeNet on 1x28x28 images (two convolution + tanh + max-pool stages, two dense layers); "
        "rnn: a tanh RNN reading the 28 rows of each image with foreach (a loop whose body is a subgraph), "
        "then 10 softmax",
    )
    mode: Literal["inference", "training"] = Field(
        "training", description="inference plans the forward pass only; training adds the backward pass"
    )
    batch_size: int = Field(32, ge=1, le=512, description="images per batch: every activation scales with it")
    inplace: bool = Field(
        True, description="let an operator (relu, tanh) overwrite its input when it is that input's last reader"
    )
    sharing: bool = Field(True, description="reuse the block of a dead entry for a new one of similar size")
    planner: Literal["mxnet", "greedy_by_size"] = Field(
        "mxnet",
        description="mxnet: MXNet's planner, walking the schedule and reusing blocks freed so far; "
        "greedy_by_size: knowing every lifetime first, place the largest arrays first, each into the first "
        "block free for its whole lifetime (MXLAB_MEMORY_PLANNER)",
    )
    mirror: bool = Field(
        False,
        description="training only: checkpoint about sqrt(N) activations and recompute the others in backward "
        "(segment mirroring, MXLAB_BACKWARD_DO_MIRROR=segment)",
    )


def mlp() -> sym.Symbol:
    """A multilayer perceptron on flattened 28x28 images."""
    x = sym.Variable("data")
    for i, hidden in enumerate(MLP_HIDDEN, start=1):
        x = sym.FullyConnected(x, num_hidden=hidden, name=f"fc{i}")
        x = sym.Activation(x, act_type="relu", name=f"relu{i}")
    x = sym.FullyConnected(x, num_hidden=10, name="fc_out")
    return sym.SoftmaxOutput(x, name="softmax")


def lenet() -> sym.Symbol:
    """LeNet as in MXNet's ``example/image-classification/symbols/lenet.py``."""
    x = sym.Variable("data")
    x = sym.Convolution(x, kernel=(5, 5), num_filter=20, name="conv1")
    x = sym.Activation(x, act_type="tanh", name="tanh1")
    x = sym.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    x = sym.Convolution(x, kernel=(5, 5), num_filter=50, name="conv2")
    x = sym.Activation(x, act_type="tanh", name="tanh2")
    x = sym.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
    x = sym.Flatten(x, name="flatten")
    x = sym.FullyConnected(x, num_hidden=500, name="fc1")
    x = sym.Activation(x, act_type="tanh", name="tanh3")
    x = sym.FullyConnected(x, num_hidden=10, name="fc2")
    return sym.SoftmaxOutput(x, name="softmax")


#: Units of the rnn network's state (equal to a row's width, so the zero state is shaped like a row).
RNN_HIDDEN = 28


def rnn() -> sym.Symbol:
    """A tanh RNN over the rows of 28x28 images: ``mx.sym.contrib.foreach`` with a two-layer body.

    The ``_foreach`` node holds its body as a subgraph, run by a nested executor that the
    planner plans like any graph (see docs/control-flow.md).
    """
    x = sym.Variable("data")
    rows = sym.transpose(sym.reshape(x, shape=(0, 28, 28)), axes=(1, 0, 2), name="rows")  # (28, batch, 28)
    h0 = sym.zeros_like(sym.sum(rows, axis=0), name="h0")

    def step(row: sym.Symbol, states: list) -> tuple:
        i2h = sym.FullyConnected(row, num_hidden=RNN_HIDDEN, name="rnn_i2h")
        h2h = sym.FullyConnected(states[0], num_hidden=RNN_HIDDEN, name="rnn_h2h")
        h = sym.Activation(i2h + h2h, act_type="tanh", name="rnn_tanh")
        return [], [h]

    _, (last,) = sym.contrib.foreach(step, rows, [h0])
    x = sym.FullyConnected(last, num_hidden=10, name="fc_out")
    return sym.SoftmaxOutput(x, name="softmax")


NETWORKS = {"mlp": (mlp, (784,)), "lenet": (lenet, (1, 28, 28)), "rnn": (rnn, (784,))}


def _fill_random(exe: Executor, rng: np.random.Generator) -> None:
    """Random images, labels and small weights: the values do not matter, the storage does."""
    for name, array in exe.arg_dict.items():
        if name == "softmax_label":
            array[:] = rng.integers(0, 10, array.shape).astype(np.float32)
        elif name == "data":
            array[:] = rng.uniform(0, 1, array.shape).astype(np.float32)
        else:
            array[:] = rng.normal(0, 0.05, array.shape).astype(np.float32)


def plan_report(exe: Executor, net: sym.Symbol) -> dict[str, Any]:
    """The executor's plan as JSON: blocks with their entries, in-place pairs, the schedule."""
    graph, plan = exe.graph, exe.plan
    inplace_of = {out: src for src, out in plan.inplace}
    # Nodes needed for the outputs run in the forward pass; the rest (gradients, and the
    # mirrored clones that recompute activations) run in the backward pass.
    forward = graph.subgraph_nodes(net.outputs)

    def pass_of(nid: int) -> str:
        return "forward" if nid in forward else "backward"

    def node_name(nid: int | None) -> str | None:
        return None if nid is None else graph.nodes[nid].name

    rows: list[dict[str, Any]] = [
        # The block's storage handle links this row to its storage.alloc / storage.free events.
        {"block": sid, "bytes": nbytes, "handle": exe._blocks[sid]._chunk.handle.id, "entries": []}
        for sid, nbytes in enumerate(plan.block_bytes)
    ]
    not_stored: list[dict[str, Any]] = []
    for eid in range(graph.num_entries):  # entry ids follow the schedule (node order)
        sid = plan.storage[eid]
        if sid == EXTERNAL_STORAGE_ID:
            continue
        if sid == BAD_STORAGE_ID:
            not_stored.append({"name": graph.entry_name(eid), "bytes": plan.entry_bytes[eid]})
            continue
        producer = graph.entry_nodes[eid]
        rows[sid]["entries"].append(
            {
                "entry": eid,
                "name": graph.entry_name(eid),
                "bytes": plan.entry_bytes[eid],
                "node": node_name(producer),
                "produced_at": producer,
                "last_read_at": plan.last_reader[eid],
                "pass": pass_of(producer),
                "inplace_of": graph.entry_name(inplace_of[eid]) if eid in inplace_of else None,
            }
        )
    schedule = [
        {
            "node": nid,
            "name": node.name,
            "op": node.op.name,
            "pass": pass_of(nid),
            "frees_blocks": list(plan.released_after[nid]),
        }
        for nid, node in enumerate(graph.nodes)
        if not node.is_variable
    ]
    inplace = [
        {"input": graph.entry_name(src), "output": graph.entry_name(out), "bytes": plan.entry_bytes[out]}
        for src, out in plan.inplace
    ]
    external = sum(
        plan.entry_bytes[eid] for eid in range(graph.num_entries) if plan.storage[eid] == EXTERNAL_STORAGE_ID
    )
    return {
        "planner": plan.options.strategy,
        "bytes_planned": plan.bytes_planned,
        "bytes_lower_bound": plan.bytes_lower_bound,
        "bytes_naive": plan.bytes_naive,
        "bytes_saved": plan.bytes_naive - plan.bytes_planned,
        "bytes_inplace": sum(pair["bytes"] for pair in inplace),
        "bytes_not_stored": sum(entry["bytes"] for entry in not_stored),
        "bytes_external": external,
        "num_blocks": plan.num_blocks,
        "blocks": rows,
        "inplace": inplace,
        "not_stored": not_stored,
        "schedule": schedule,
    }


def compare_strategies(exe: Executor) -> dict[str, int]:
    """Planned bytes of this graph under each strategy (same switches), and the lower bound they share."""
    options = exe.plan.options
    totals = {name: exe.plan_with(dataclasses.replace(options, strategy=name)).bytes_planned for name in STRATEGIES}
    return {**totals, "lower_bound": exe.plan.bytes_lower_bound}


def run(params: MemoryPlanningParams, ctx: RunContext) -> dict[str, Any]:
    """Bind, run one step, report the plan, then free the executor's memory."""
    build, item_shape = NETWORKS[params.network]
    net = build()
    data_shape = (params.batch_size, *item_shape)
    ctx.set_graph(mx.viz.plot_network(net, title=params.network, shape={"data": data_shape}).source)
    training = params.mode == "training"
    grad_req = {name: "write" if training and name not in INPUT_NAMES else "null" for name in net.list_arguments()}
    mirror_mode = "segment" if params.mirror and training else "none"
    ctx.log(
        f"binding {params.network} ({params.mode}, batch {params.batch_size}): inplace={params.inplace}, "
        f"sharing={params.sharing}, planner={params.planner}, mirror={mirror_mode}"
    )
    exe = simple_bind(
        net,
        mx.cpu(),
        grad_req=grad_req,
        mirror=mirror_mode,
        plan_options=PlanOptions(inplace=params.inplace, sharing=params.sharing, strategy=params.planner),
        # One engine operation per graph node (no bulk segments): the timeline then shows the
        # executor's pass node by node. Bulking changes how work is pushed, not the plan.
        bulk_size=1,
        data=data_shape,
    )
    _fill_random(exe, np.random.default_rng(SEED))
    mx.nd.waitall()
    start = time.perf_counter()
    exe.forward(is_train=training)
    if training:
        exe.backward()
    mx.nd.waitall()
    seconds = time.perf_counter() - start

    report = plan_report(exe, net)
    result = {
        "network": params.network,
        "mode": params.mode,
        "data_shape": list(data_shape),
        "options": {
            "inplace": params.inplace,
            "sharing": params.sharing,
            "planner": params.planner,
            "mirror": params.mirror,
        },
        **report,
        "strategies": compare_strategies(exe),
        "saved_fraction": round(report["bytes_saved"] / report["bytes_naive"], 4) if report["bytes_naive"] else 0.0,
        "mirror_mode": mirror_mode,
        "mirror_nodes": exe.num_mirror_nodes,
        "step_seconds": round(seconds, 6),
        "debug_str": exe.debug_str(),
    }
    ctx.log(
        f"planned {report['bytes_planned']} bytes in {report['num_blocks']} blocks by {params.planner} "
        f"(lower bound {report['bytes_lower_bound']}, naive {report['bytes_naive']}); "
        f"{len(report['inplace'])} in-place pairs, "
        f"{exe.num_mirror_nodes} mirrored nodes"
    )
    # Free the executor's blocks now, so their storage.free events belong to this run.
    del exe
    gc.collect()
    mx.nd.waitall()
    return result


register(
    Scenario(
        name="memory_planning",
        title="Memory planning: in-place, sharing and mirroring",
        description="Bind an MLP, LeNet or a foreach RNN, run one step, and see which storage block each "
        "intermediate array lived in. Switch in-place reuse, block sharing and mirroring on and off and "
        "compare planned with naive bytes.",
        params=MemoryPlanningParams,
        run=run,
        tutorial="tutorials/05-executor-memory.md",
        panels=("memory", "plan", "graph"),
    )
)
