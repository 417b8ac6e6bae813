"""Scenario "hybridize": one Gluon network trained imperatively, then hybridized, side by side.

The same ``HybridSequential`` (64 pixels -> Dense(hidden, relu) x 2 -> Dense(10)) learns the
digits with ``Trainer`` (SGD) for ``steps`` batches imperatively, then ``net.hybridize()``
and ``steps`` more. What changes is how the work reaches the engine:

* **Imperatively** every operator call in ``hybrid_forward`` (and every gradient operator
  in ``backward``) is one engine push, made by Python as it reaches the call.
* **Hybridized**, the first call traces the network into a Symbol (published as the graph),
  binds it once (shape inference, the memory plan: an ``executor.plan`` event) and every
  later call runs the CachedOp's planned graph: one push per bulk segment of nodes, and no
  Python between the operators.

The result compares the two phases per step: engine pushes of the network's forward call
(imperatively one per layer operator; hybridized, the copy of the input, the graph's bulk
segments and the copy of the output) and of the whole step (the loss, backward, and the
Trainer's updates; hybridized, the executor writes the parameters' gradients straight into
their ``.grad``), the Python-side time to issue the step (before waiting for the engine), the
whole step's time, and memory: the peak bytes the imperative step held in the storage pool
against the CachedOp's planned bytes. Loss
and step times are also published as ``train.metric`` events (one curve per phase).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from pydantic import Field

import framework as mx
from framework import events
from framework.gluon import Trainer, loss, nn

from .base import RunContext, Scenario, ScenarioParams, register
from .digits import load

SEED = 0
PHASES = ("imperative", "hybridized")


class HybridizeParams(ScenarioParams):
    """Parameters of the hybridize scenario."""

    steps: int = Field(4, ge=2, le=50, description="training steps in each phase (imperative, then hybridized)")
    batch_size: int = Field(32, ge=1, le=256, description="images per step")
    hidden: int = Field(64, ge=1, le=512, description="units of each of the two hidden Dense layers")
    bulk_size: int = Field(
        0, ge=0, le=64, description="nodes per engine push in the hybridized graph (0: the executor's default)"
    )
    static_alloc: bool = Field(False, description="hybridize(static_alloc=True): keep the planned buffers")


def build_net(hidden: int) -> nn.HybridSequential:
    """The network both phases train (created in a fresh name scope: stable parameter names)."""
    with mx.name.NameManager():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(hidden, activation="relu"), nn.Dense(hidden, activation="relu"), nn.Dense(10))
    return net


class _StepWatch:
    """Counts engine pushes and tracks the storage pool's live bytes (and their peak) while recording."""

    def __init__(self) -> None:
        self.pushes = 0
        self.live = 0
        self.peak = 0

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event["kind"]
        if kind == "engine.push":
            self.pushes += 1
        elif kind == "storage.alloc":
            self.live += event["rounded"]
            self.peak = max(self.peak, self.live)
        elif kind == "storage.free":
            self.live -= event["rounded"]

    def reset(self) -> None:
        self.pushes = 0
        self.live = self.peak = 0


def run(params: HybridizeParams, ctx: RunContext) -> dict[str, Any]:
    """Train ``steps`` imperative then ``steps`` hybridized steps; compare pushes, time and memory."""
    digits = load()
    mx.random.seed(SEED)
    net = build_net(params.hidden)
    net.initialize(mx.init.Xavier())
    trainer = Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = loss.SoftmaxCrossEntropyLoss()
    rng = np.random.default_rng(SEED)
    watch = _StepWatch()
    rows: list[dict[str, Any]] = []
    traced_graph = None
    step_number = 0
    mx.nd.waitall()
    with events.subscribe(watch, ("engine.push", "storage.alloc", "storage.free")):
        for phase in PHASES:
            if phase == "hybridized":
                kwargs: dict[str, Any] = {"static_alloc": params.static_alloc}
                if params.bulk_size:
                    kwargs.update(forward_bulk_size=params.bulk_size, backward_bulk_size=params.bulk_size)
                net.hybridize(**kwargs)
                ctx.log(f"hybridize({', '.join(f'{k}={v}' for k, v in kwargs.items())})")
            for i in range(params.steps):
                rows_idx = rng.integers(0, len(digits.x_train), params.batch_size)
                x = mx.nd.array(digits.x_train[rows_idx], dtype="float32")
                y = mx.nd.array(digits.y_train[rows_idx], dtype="float32")
                mx.nd.waitall()
                watch.reset()
                start = time.perf_counter()
                with mx.autograd.record():
                    out = net(x)
                    forward_pushes = watch.pushes
                    batch_loss = loss_fn(out, y)
                batch_loss.backward()
                trainer.step(params.batch_size)
                issued = time.perf_counter() - start
                mean_loss = float(batch_loss.mean().asscalar())  # waits for the step
                mx.nd.waitall()
                total = time.perf_counter() - start
                row = {
                    "phase": phase,
                    "step": i,
                    "loss": round(mean_loss, 6),
                    "forward_pushes": forward_pushes,
                    "engine_pushes": watch.pushes,
                    "issue_ms": round(issued * 1e3, 3),
                    "step_ms": round(total * 1e3, 3),
                    "peak_pool_bytes": watch.peak,
                }
                rows.append(row)
                for name, value in (("loss", mean_loss), ("step-ms", total * 1e3)):
                    events.publish(
                        "train.metric", epoch=0, batch=step_number, name=f"{phase}-{name}", value=value, phase="train"
                    )
                step_number += 1
                if phase == "hybridized" and traced_graph is None:
                    _, traced_graph = net._get_graph(x)
                    shape = {"data": tuple(x.shape)}
                    ctx.set_graph(mx.viz.plot_network(traced_graph, title="traced", shape=shape).source)
    executors = net._cached_op.executors()
    planned = [exe.plan.bytes_planned for exe in executors]
    naive = [exe.plan.bytes_naive for exe in executors]
    summary = {phase: _summarise([r for r in rows if r["phase"] == phase]) for phase in PHASES}
    # the first hybridized step traces and binds: steady-state figures skip it
    result = {
        "steps": rows,
        "summary": summary,
        "cached_op_executors": len(executors),
        "cached_graph_nodes": len(traced_graph.get_internals().list_outputs()) if traced_graph is not None else 0,
        "planned_bytes": sum(planned),
        "naive_bytes": sum(naive),
        "imperative_peak_pool_bytes": summary["imperative"]["peak_pool_bytes"],
        "forward_push_ratio": round(
            summary["imperative"]["forward_pushes"] / max(1, summary["hybridized"]["forward_pushes"]), 3
        ),
        "debug_str": executors[-1].debug_str() if executors else "",
    }
    ctx.log(
        f"forward pushes: imperative {summary['imperative']['forward_pushes']}, hybridized "
        f"{summary['hybridized']['forward_pushes']}; whole step: {summary['imperative']['engine_pushes']} vs "
        f"{summary['hybridized']['engine_pushes']}; planned {result['planned_bytes']} bytes vs imperative peak "
        f"{result['imperative_peak_pool_bytes']} bytes in the pool"
    )
    mx.nd.waitall()
    return result


def _summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Median figures of a phase's steps after its first (which, hybridized, includes tracing and binding)."""
    steady = rows[1:] or rows
    return {
        "first_step_ms": rows[0]["step_ms"],
        "forward_pushes": int(np.median([r["forward_pushes"] for r in steady])),
        "engine_pushes": int(np.median([r["engine_pushes"] for r in steady])),
        "issue_ms": round(float(np.median([r["issue_ms"] for r in steady])), 3),
        "step_ms": round(float(np.median([r["step_ms"] for r in steady])), 3),
        "peak_pool_bytes": int(max(r["peak_pool_bytes"] for r in steady)),
        "final_loss": rows[-1]["loss"],
    }


register(
    Scenario(
        name="hybridize",
        title="Gluon: imperative versus hybridized",
        description="Train one Gluon network a few steps imperatively, then hybridize it and train on: compare "
        "engine pushes per step, Python-side time, and the imperative peak memory with the CachedOp's plan; "
        "the traced Symbol is drawn as the graph.",
        params=HybridizeParams,
        run=run,
        tutorial="tutorials/15-gluon-and-hybridize.md",
        panels=("timeline", "graph", "plan", "memory", "training"),
    )
)
