"""Scenario "data-parallel training through a KVStore": two devices, one set of weights.

The digits MLP of :mod:`.train_mlp` is trained by a Module on ``[cpu(0), cpu(1)]``: every
batch is cut in two halves, each device runs forward and backward on its half, and the
KVStore makes the two copies agree. With the optimizer inside the store (MXNet's default,
``update_on_kvstore``), one step is, per parameter:

* ``push(name, [grad_on_cpu0, grad_on_cpu1])``: one ``KVStoreReduce`` engine operation sums
  the two gradients, then the optimizer updates the stored weight;
* ``pull(name, [weight_on_cpu0, weight_on_cpu1])``: one ``KVStoreBroadcast`` copy per device.

Every array pushed or pulled is one ``kvstore.push`` / ``kvstore.pull`` event (key, bytes,
device). Before training, ``init`` stores each parameter and one pull gives both devices the
same initial weights. The two store types differ in *where* the sums run: ``local`` sums
every key on ``cpu(0)``; ``device`` spreads the keys over the devices the gradients live
on (the least-loaded one first), so the reductions of different layers run on different
devices. The result lists the device that summed each key, read from the engine's
``engine.push`` events of the ``KVStoreReduce`` operations.
"""

from __future__ import annotations

import gc
import re
import threading
from typing import Any, Literal

from pydantic import Field

import framework as mx
from framework import events

from . import digits
from .base import RunContext, Scenario, ScenarioParams, register
from .train_mlp import mlp_symbol, train_digits

DEVICES = (0, 1)
HIDDEN = 64
LEARNING_RATE = 0.1
_REDUCE_NAME = re.compile(r"KVStoreReduce\('?(?P<key>[^')]+)'?\)")


class KVStoreParallelParams(ScenarioParams):
    """Parameters of the data-parallel scenario (the network and optimizer are train_mlp's defaults)."""

    kvstore: Literal["local", "device"] = Field(
        "local", description="local: sum every key on cpu(0); device: spread the sums over cpu(0) and cpu(1)"
    )
    epochs: int = Field(2, ge=1, le=10, description="passes over the 1437 training images")
    batch_size: int = Field(
        32, ge=8, le=256, multiple_of=2, description="images per batch (even): each device gets half"
    )
    seed: int = Field(0, ge=0, le=2**31 - 1, description="seeds the initial weights and the batch order")


class _Traffic:
    """Counts the store's pushes and pulls (and where its reductions run) while training."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts = {"kvstore.push": 0, "kvstore.pull": 0}
        self.nbytes = {"kvstore.push": 0, "kvstore.pull": 0}
        self.keys: dict[str, dict[str, int]] = {}
        self.reduce_devices: dict[str, set[str]] = {}

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event["kind"]
        with self._lock:  # events arrive from the training thread and from engine workers
            if kind == "engine.push":
                match = _REDUCE_NAME.fullmatch(str(event["name"]))
                if match:
                    self.reduce_devices.setdefault(match["key"], set()).add(str(event["ctx"]))
                return
            verb = kind.split(".")[1]
            self.counts[kind] += 1
            self.nbytes[kind] += int(event["nbytes"])
            row = self.keys.setdefault(str(event["key"]), {"bytes": int(event["nbytes"]), "push": 0, "pull": 0})
            row[verb] += 1


def run(params: KVStoreParallelParams, ctx: RunContext) -> dict[str, Any]:
    """Train on two devices through the chosen store and report what went through it."""
    context = [mx.cpu(i) for i in DEVICES]
    per_device = params.batch_size // len(context)
    net = mlp_symbol(HIDDEN)
    ctx.set_graph(mx.viz.plot_network(net, title="mlp", shape={"data": (per_device, digits.NUM_FEATURES)}).source)
    traffic = _Traffic()
    with events.subscribe(traffic, kinds=("kvstore.push", "kvstore.pull", "engine.push")):
        outcome = train_digits(
            hidden=HIDDEN,
            epochs=params.epochs,
            batch_size=params.batch_size,
            learning_rate=LEARNING_RATE,
            optimizer="sgd",
            seed=params.seed,
            context=context,
            kvstore=params.kvstore,
            ctx=ctx,
        )
    last = outcome.history[-1]
    pushes, pulls = traffic.counts["kvstore.push"], traffic.counts["kvstore.pull"]
    result = {
        "kvstore": params.kvstore,
        "devices": [str(c) for c in context],
        # Whether the optimizer ran inside the store (MXNet's default; MXLAB_UPDATE_ON_KVSTORE=0 turns it off).
        "update_on_kvstore": bool(outcome.module._update_on_kvstore),
        "validation_accuracy": last["validation_accuracy"],
        "train_accuracy": last["train_accuracy"],
        "history": outcome.history,
        "batches_per_epoch": outcome.batches_per_epoch,
        "pushes": pushes,
        "pulls": pulls,
        "bytes_pushed": traffic.nbytes["kvstore.push"],
        "bytes_pulled": traffic.nbytes["kvstore.pull"],
        "bytes_moved": traffic.nbytes["kvstore.push"] + traffic.nbytes["kvstore.pull"],
        "keys": [
            {"key": key, **row, "reduced_on": sorted(traffic.reduce_devices.get(key, ()))}
            for key, row in traffic.keys.items()
        ],
        "seconds": round(outcome.seconds, 4),
    }
    # Free the module's and the store's arrays now, so their storage.free events belong to this run.
    del outcome
    gc.collect()
    mx.nd.waitall()
    return result


register(
    Scenario(
        name="kvstore_parallel",
        title="Data-parallel training through a KVStore",
        description="A Module trains the digits MLP on cpu(0) and cpu(1): gradients are pushed to the KVStore, "
        "summed and applied there, and the new weights pulled back to both devices.",
        params=KVStoreParallelParams,
        run=run,
        tutorial="tutorials/09-kvstore.md",
        panels=("graph", "training", "kvstore"),
    )
)
